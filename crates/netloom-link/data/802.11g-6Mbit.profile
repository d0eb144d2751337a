# 802.11g at 6 Mbit/s: MAC overhead of one transmission attempt, added to the IP
# packet's serialization at 6 Mbit/s. From the standard's timing (docs/wireless.md):
#   DIFS 28 us + backoff k x 9 us slots, k uniform in 0..15 (CWmin 15)
#   + preamble and SIGNAL 20 us + SERVICE, tail and MAC framing (22 bits + 36 bytes)
#   at 6 Mbit/s + half a symbol of padding 2 us + signal extension 6 us
#   + SIFS 10 us + ACK at 6 Mbit/s 44 us + signal extension 6 us
#   = 167.667 us + k x 9 us
name 802.11g-6Mbit
samples 1024
prob delay
0 0.167667
0.0625 0.167667
0.0625 0.176667
0.125 0.176667
0.125 0.185667
0.1875 0.185667
0.1875 0.194667
0.25 0.194667
0.25 0.203667
0.3125 0.203667
0.3125 0.212667
0.375 0.212667
0.375 0.221667
0.4375 0.221667
0.4375 0.230667
0.5 0.230667
0.5 0.239667
0.5625 0.239667
0.5625 0.248667
0.625 0.248667
0.625 0.257667
0.6875 0.257667
0.6875 0.266667
0.75 0.266667
0.75 0.275667
0.8125 0.275667
0.8125 0.284667
0.875 0.284667
0.875 0.293667
0.9375 0.293667
0.9375 0.302667
1 0.302667
