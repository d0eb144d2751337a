# 802.11g at 12 Mbit/s: MAC overhead of one transmission attempt, added to the IP
# packet's serialization at 12 Mbit/s. From the standard's timing (docs/wireless.md):
#   DIFS 28 us + backoff k x 9 us slots, k uniform in 0..15 (CWmin 15)
#   + preamble and SIGNAL 20 us + SERVICE, tail and MAC framing (22 bits + 36 bytes)
#   at 12 Mbit/s + half a symbol of padding 2 us + signal extension 6 us
#   + SIFS 10 us + ACK at 6 Mbit/s 44 us + signal extension 6 us
#   = 141.833 us + k x 9 us
name 802.11g-12Mbit
samples 1024
prob delay
0 0.141833
0.0625 0.141833
0.0625 0.150833
0.125 0.150833
0.125 0.159833
0.1875 0.159833
0.1875 0.168833
0.25 0.168833
0.25 0.177833
0.3125 0.177833
0.3125 0.186833
0.375 0.186833
0.375 0.195833
0.4375 0.195833
0.4375 0.204833
0.5 0.204833
0.5 0.213833
0.5625 0.213833
0.5625 0.222833
0.625 0.222833
0.625 0.231833
0.6875 0.231833
0.6875 0.240833
0.75 0.240833
0.75 0.249833
0.8125 0.249833
0.8125 0.258833
0.875 0.258833
0.875 0.267833
0.9375 0.267833
0.9375 0.276833
1 0.276833
