# 802.11b at 1 Mbit/s: MAC overhead of one transmission attempt, added to the IP
# packet's serialization at 1 Mbit/s. From the standard's timing (docs/wireless.md):
#   DIFS 50 us + backoff k x 20 us slots, k uniform in 0..15 (16 slots, as the paper's AP)
#   + long PLCP preamble and header 192 us
#   + MAC header, FCS and LLC/SNAP (36 bytes) at 1 Mbit/s
#   + SIFS 10 us + ACK (192 us PLCP + 14 bytes at 1 Mbit/s)
#   = 844.000 us + k x 20 us
name 802.11b-1Mbit
samples 1024
prob delay
0 0.844000
0.0625 0.844000
0.0625 0.864000
0.125 0.864000
0.125 0.884000
0.1875 0.884000
0.1875 0.904000
0.25 0.904000
0.25 0.924000
0.3125 0.924000
0.3125 0.944000
0.375 0.944000
0.375 0.964000
0.4375 0.964000
0.4375 0.984000
0.5 0.984000
0.5 1.004000
0.5625 1.004000
0.5625 1.024000
0.625 1.024000
0.625 1.044000
0.6875 1.044000
0.6875 1.064000
0.75 1.064000
0.75 1.084000
0.8125 1.084000
0.8125 1.104000
0.875 1.104000
0.875 1.124000
0.9375 1.124000
0.9375 1.144000
1 1.144000
