# Throughput and p99 latency vs pipeline depth, deadbolt and redis-server side by side.
# bench/compare.py runs it as
#   gnuplot -e "datafile='bench/pipeline.dat'; outfile='bench/pipeline.png'; subtitle='...'" \
#           bench/pipeline.gnuplot
# The data file's columns: depth, deadbolt ops/s, redis ops/s, deadbolt p99 µs, redis p99 µs.

if (!exists("datafile")) datafile = "bench/pipeline.dat"
if (!exists("outfile")) outfile = "bench/pipeline.png"
if (!exists("subtitle")) subtitle = ""
if (!exists("keys")) keys = "10,000"

set terminal pngcairo size 1400,560 font "DejaVu Sans,12" enhanced
set output outfile
set multiplot layout 1,2 title "deadbolt vs redis-server: acquire (SET NX PX on ".keys." keys) by pipeline depth\n{/*0.8 ".subtitle."}"

set logscale x 2
set xtics (1, 4, 16, 64, 256)
set xrange [0.8:320]
set xlabel "pipeline depth (requests in flight per connection)"
set grid xtics ytics mytics lc rgb "#dddddd"
set key top left box opaque
set style line 1 lc rgb "#1f77b4" lw 2.5 pt 7 ps 1.4
set style line 2 lc rgb "#d62728" lw 2.5 pt 5 ps 1.4

set title "throughput (higher is better)"
set ylabel "requests/s (millions)"
set yrange [0:*]
plot datafile using 1:($2/1e6) with linespoints ls 1 title "deadbolt (1 reactor)", \
     ""       using 1:($3/1e6) with linespoints ls 2 title "redis-server"

set title "p99 latency (lower is better)"
set ylabel "p99 latency (ms, log scale)"
set logscale y 10
set yrange [*:*]
set format y "%g"
set ytics (0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000)
set key bottom right
plot datafile using 1:($4/1e3) with linespoints ls 1 title "deadbolt (1 reactor)", \
     ""       using 1:($5/1e3) with linespoints ls 2 title "redis-server"

unset multiplot
