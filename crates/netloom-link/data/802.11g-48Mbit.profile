# 802.11g at 48 Mbit/s: MAC overhead of one transmission attempt, added to the IP
# packet's serialization at 48 Mbit/s. From the standard's timing (docs/wireless.md):
#   DIFS 28 us + backoff k x 9 us slots, k uniform in 0..15 (CWmin 15)
#   + preamble and SIGNAL 20 us + SERVICE, tail and MAC framing (22 bits + 36 bytes)
#   at 48 Mbit/s + half a symbol of padding 2 us + signal extension 6 us
#   + SIFS 10 us + ACK at 6 Mbit/s 44 us + signal extension 6 us
#   = 122.458 us + k x 9 us
name 802.11g-48Mbit
samples 1024
prob delay
0 0.122458
0.0625 0.122458
0.0625 0.131458
0.125 0.131458
0.125 0.140458
0.1875 0.140458
0.1875 0.149458
0.25 0.149458
0.25 0.158458
0.3125 0.158458
0.3125 0.167458
0.375 0.167458
0.375 0.176458
0.4375 0.176458
0.4375 0.185458
0.5 0.185458
0.5 0.194458
0.5625 0.194458
0.5625 0.203458
0.625 0.203458
0.625 0.212458
0.6875 0.212458
0.6875 0.221458
0.75 0.221458
0.75 0.230458
0.8125 0.230458
0.8125 0.239458
0.875 0.239458
0.875 0.248458
0.9375 0.248458
0.9375 0.257458
1 0.257458
