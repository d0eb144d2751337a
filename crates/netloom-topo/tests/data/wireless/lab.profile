# a measured profile: 300 to 700 us, uniform
name lab
prob delay
0 0.3
1 0.7
