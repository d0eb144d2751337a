# 802.11g at 36 Mbit/s: MAC overhead of one transmission attempt, added to the IP
# packet's serialization at 36 Mbit/s. From the standard's timing (docs/wireless.md):
#   DIFS 28 us + backoff k x 9 us slots, k uniform in 0..15 (CWmin 15)
#   + preamble and SIGNAL 20 us + SERVICE, tail and MAC framing (22 bits + 36 bytes)
#   at 36 Mbit/s + half a symbol of padding 2 us + signal extension 6 us
#   + SIFS 10 us + ACK at 6 Mbit/s 44 us + signal extension 6 us
#   = 124.611 us + k x 9 us
name 802.11g-36Mbit
samples 1024
prob delay
0 0.124611
0.0625 0.124611
0.0625 0.133611
0.125 0.133611
0.125 0.142611
0.1875 0.142611
0.1875 0.151611
0.25 0.151611
0.25 0.160611
0.3125 0.160611
0.3125 0.169611
0.375 0.169611
0.375 0.178611
0.4375 0.178611
0.4375 0.187611
0.5 0.187611
0.5 0.196611
0.5625 0.196611
0.5625 0.205611
0.625 0.205611
0.625 0.214611
0.6875 0.214611
0.6875 0.223611
0.75 0.223611
0.75 0.232611
0.8125 0.232611
0.8125 0.241611
0.875 0.241611
0.875 0.250611
0.9375 0.250611
0.9375 0.259611
1 0.259611
