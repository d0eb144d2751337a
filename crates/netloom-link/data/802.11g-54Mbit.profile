# 802.11g at 54 Mbit/s: MAC overhead of one transmission attempt, added to the IP
# packet's serialization at 54 Mbit/s. From the standard's timing (docs/wireless.md):
#   DIFS 28 us + backoff k x 9 us slots, k uniform in 0..15 (CWmin 15)
#   + preamble and SIGNAL 20 us + SERVICE, tail and MAC framing (22 bits + 36 bytes)
#   at 54 Mbit/s + half a symbol of padding 2 us + signal extension 6 us
#   + SIFS 10 us + ACK at 6 Mbit/s 44 us + signal extension 6 us
#   = 121.741 us + k x 9 us
name 802.11g-54Mbit
samples 1024
prob delay
0 0.121741
0.0625 0.121741
0.0625 0.130741
0.125 0.130741
0.125 0.139741
0.1875 0.139741
0.1875 0.148741
0.25 0.148741
0.25 0.157741
0.3125 0.157741
0.3125 0.166741
0.375 0.166741
0.375 0.175741
0.4375 0.175741
0.4375 0.184741
0.5 0.184741
0.5 0.193741
0.5625 0.193741
0.5625 0.202741
0.625 0.202741
0.625 0.211741
0.6875 0.211741
0.6875 0.220741
0.75 0.220741
0.75 0.229741
0.8125 0.229741
0.8125 0.238741
0.875 0.238741
0.875 0.247741
0.9375 0.247741
0.9375 0.256741
1 0.256741
