# 802.11b at 5.5 Mbit/s: MAC overhead of one transmission attempt, added to the IP
# packet's serialization at 5.5 Mbit/s. From the standard's timing (docs/wireless.md):
#   DIFS 50 us + backoff k x 20 us slots, k uniform in 0..15 (16 slots, as the paper's AP)
#   + short PLCP preamble and header 96 us
#   + MAC header, FCS and LLC/SNAP (36 bytes) at 5.5 Mbit/s
#   + SIFS 10 us + ACK (96 us PLCP + 14 bytes at 5.5 Mbit/s)
#   = 324.727 us + k x 20 us
name 802.11b-5.5Mbit
samples 1024
prob delay
0 0.324727
0.0625 0.324727
0.0625 0.344727
0.125 0.344727
0.125 0.364727
0.1875 0.364727
0.1875 0.384727
0.25 0.384727
0.25 0.404727
0.3125 0.404727
0.3125 0.424727
0.375 0.424727
0.375 0.444727
0.4375 0.444727
0.4375 0.464727
0.5 0.464727
0.5 0.484727
0.5625 0.484727
0.5625 0.504727
0.625 0.504727
0.625 0.524727
0.6875 0.524727
0.6875 0.544727
0.75 0.544727
0.75 0.564727
0.8125 0.564727
0.8125 0.584727
0.875 0.584727
0.875 0.604727
0.9375 0.604727
0.9375 0.624727
1 0.624727
