set terminal pngcairo size 900,560 noenhanced
set output 'docs/sim-default.png'
set datafile separator ','
set key left top
set xlabel 'arrived GPU workload (% of capacity)'
set ylabel 'GPU allocation (% of capacity)'
set title 'openb default trace, 1,213 nodes / 6,212 GPUs, mean of seeds 42-51 (herd sim)'
set xrange [0:130]
set yrange [0:100]
set grid
plot for [i=2:8] 'docs/sim-default.csv' using 1:i with lines lw 2 title columnhead(i)
