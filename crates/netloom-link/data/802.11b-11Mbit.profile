# 802.11b at 11 Mbit/s: MAC overhead of one transmission attempt, added to the IP
# packet's serialization at 11 Mbit/s. From the standard's timing (docs/wireless.md):
#   DIFS 50 us + backoff k x 20 us slots, k uniform in 0..15 (16 slots, as the paper's AP)
#   + short PLCP preamble and header 96 us
#   + MAC header, FCS and LLC/SNAP (36 bytes) at 11 Mbit/s
#   + SIFS 10 us + ACK (96 us PLCP + 14 bytes at 11 Mbit/s)
#   = 288.364 us + k x 20 us
name 802.11b-11Mbit
samples 1024
prob delay
0 0.288364
0.0625 0.288364
0.0625 0.308364
0.125 0.308364
0.125 0.328364
0.1875 0.328364
0.1875 0.348364
0.25 0.348364
0.25 0.368364
0.3125 0.368364
0.3125 0.388364
0.375 0.388364
0.375 0.408364
0.4375 0.408364
0.4375 0.428364
0.5 0.428364
0.5 0.448364
0.5625 0.448364
0.5625 0.468364
0.625 0.468364
0.625 0.488364
0.6875 0.488364
0.6875 0.508364
0.75 0.508364
0.75 0.528364
0.8125 0.528364
0.8125 0.548364
0.875 0.548364
0.875 0.568364
0.9375 0.568364
0.9375 0.588364
1 0.588364
