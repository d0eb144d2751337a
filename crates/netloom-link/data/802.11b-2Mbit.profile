# 802.11b at 2 Mbit/s: MAC overhead of one transmission attempt, added to the IP
# packet's serialization at 2 Mbit/s. From the standard's timing (docs/wireless.md):
#   DIFS 50 us + backoff k x 20 us slots, k uniform in 0..15 (16 slots, as the paper's AP)
#   + short PLCP preamble and header 96 us
#   + MAC header, FCS and LLC/SNAP (36 bytes) at 2 Mbit/s
#   + SIFS 10 us + ACK (96 us PLCP + 14 bytes at 2 Mbit/s)
#   = 452.000 us + k x 20 us
name 802.11b-2Mbit
samples 1024
prob delay
0 0.452000
0.0625 0.452000
0.0625 0.472000
0.125 0.472000
0.125 0.492000
0.1875 0.492000
0.1875 0.512000
0.25 0.512000
0.25 0.532000
0.3125 0.532000
0.3125 0.552000
0.375 0.552000
0.375 0.572000
0.4375 0.572000
0.4375 0.592000
0.5 0.592000
0.5 0.612000
0.5625 0.612000
0.5625 0.632000
0.625 0.632000
0.625 0.652000
0.6875 0.652000
0.6875 0.672000
0.75 0.672000
0.75 0.692000
0.8125 0.692000
0.8125 0.712000
0.875 0.712000
0.875 0.732000
0.9375 0.732000
0.9375 0.752000
1 0.752000
