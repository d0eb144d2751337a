# 802.11g at 9 Mbit/s: MAC overhead of one transmission attempt, added to the IP
# packet's serialization at 9 Mbit/s. From the standard's timing (docs/wireless.md):
#   DIFS 28 us + backoff k x 9 us slots, k uniform in 0..15 (CWmin 15)
#   + preamble and SIGNAL 20 us + SERVICE, tail and MAC framing (22 bits + 36 bytes)
#   at 9 Mbit/s + half a symbol of padding 2 us + signal extension 6 us
#   + SIFS 10 us + ACK at 6 Mbit/s 44 us + signal extension 6 us
#   = 150.444 us + k x 9 us
name 802.11g-9Mbit
samples 1024
prob delay
0 0.150444
0.0625 0.150444
0.0625 0.159444
0.125 0.159444
0.125 0.168444
0.1875 0.168444
0.1875 0.177444
0.25 0.177444
0.25 0.186444
0.3125 0.186444
0.3125 0.195444
0.375 0.195444
0.375 0.204444
0.4375 0.204444
0.4375 0.213444
0.5 0.213444
0.5 0.222444
0.5625 0.222444
0.5625 0.231444
0.625 0.231444
0.625 0.240444
0.6875 0.240444
0.6875 0.249444
0.75 0.249444
0.75 0.258444
0.8125 0.258444
0.8125 0.267444
0.875 0.267444
0.875 0.276444
0.9375 0.276444
0.9375 0.285444
1 0.285444
