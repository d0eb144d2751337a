# 802.11g at 18 Mbit/s: MAC overhead of one transmission attempt, added to the IP
# packet's serialization at 18 Mbit/s. From the standard's timing (docs/wireless.md):
#   DIFS 28 us + backoff k x 9 us slots, k uniform in 0..15 (CWmin 15)
#   + preamble and SIGNAL 20 us + SERVICE, tail and MAC framing (22 bits + 36 bytes)
#   at 18 Mbit/s + half a symbol of padding 2 us + signal extension 6 us
#   + SIFS 10 us + ACK at 6 Mbit/s 44 us + signal extension 6 us
#   = 133.222 us + k x 9 us
name 802.11g-18Mbit
samples 1024
prob delay
0 0.133222
0.0625 0.133222
0.0625 0.142222
0.125 0.142222
0.125 0.151222
0.1875 0.151222
0.1875 0.160222
0.25 0.160222
0.25 0.169222
0.3125 0.169222
0.3125 0.178222
0.375 0.178222
0.375 0.187222
0.4375 0.187222
0.4375 0.196222
0.5 0.196222
0.5 0.205222
0.5625 0.205222
0.5625 0.214222
0.625 0.214222
0.625 0.223222
0.6875 0.223222
0.6875 0.232222
0.75 0.232222
0.75 0.241222
0.8125 0.241222
0.8125 0.250222
0.875 0.250222
0.875 0.259222
0.9375 0.259222
0.9375 0.268222
1 0.268222
