# 802.11g at 24 Mbit/s: MAC overhead of one transmission attempt, added to the IP
# packet's serialization at 24 Mbit/s. From the standard's timing (docs/wireless.md):
#   DIFS 28 us + backoff k x 9 us slots, k uniform in 0..15 (CWmin 15)
#   + preamble and SIGNAL 20 us + SERVICE, tail and MAC framing (22 bits + 36 bytes)
#   at 24 Mbit/s + half a symbol of padding 2 us + signal extension 6 us
#   + SIFS 10 us + ACK at 6 Mbit/s 44 us + signal extension 6 us
#   = 128.917 us + k x 9 us
name 802.11g-24Mbit
samples 1024
prob delay
0 0.128917
0.0625 0.128917
0.0625 0.137917
0.125 0.137917
0.125 0.146917
0.1875 0.146917
0.1875 0.155917
0.25 0.155917
0.25 0.164917
0.3125 0.164917
0.3125 0.173917
0.375 0.173917
0.375 0.182917
0.4375 0.182917
0.4375 0.191917
0.5 0.191917
0.5 0.200917
0.5625 0.200917
0.5625 0.209917
0.625 0.209917
0.625 0.218917
0.6875 0.218917
0.6875 0.227917
0.75 0.227917
0.75 0.236917
0.8125 0.236917
0.8125 0.245917
0.875 0.245917
0.875 0.254917
0.9375 0.254917
0.9375 0.263917
1 0.263917
