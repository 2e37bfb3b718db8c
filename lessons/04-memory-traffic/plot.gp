# lessons/04-memory-traffic/plot.gp — the four pictures of lesson 04 in one figure.
#   gnuplot -c lessons/04-memory-traffic/plot.gp plots/04-memory-traffic.csv plots/04-memory-traffic.svg
# reads IN.csv (launchers: predicted/measured bytes, roofline) and its siblings
# IN-stride.csv and IN-blocks.csv written by the same bench run.
here = system(sprintf("dirname '%s'", ARG0))
load here.'/../../plots/style.gp'
call here.'/../../plots/args.gp' ARG1 ARG2

stem = fl_in[1:strlen(fl_in)-4]
f_stride = stem.'-stride.csv'
f_blocks = stem.'-blocks.csv'
ceiling = real(fl_field(fl_in, 16))
peak = real(fl_field(fl_in, 17))

do for [fl_fmt in fl_formats] {
    eval fl_term(fl_fmt, 1400, 1000)
    set multiplot layout 2,2 title fl_title("Lesson 04: where the bytes go") font ',14'

    # 1. predicted vs measured bytes, per launcher
    unset xlabel
    set xrange [*:*]
    set title 'bytes moved per launcher: your model vs the DRAM counters'
    set style data histogram
    set style histogram clustered gap 1
    set style fill solid 0.85 border -1
    set boxwidth 0.9
    set ylabel 'MB read + written'
    set yrange [0:*]
    set xtics rotate by -30 scale 0 font ',10' noenhanced
    set key top right
    set offsets 0, 0, graph 0.2, 0
    plot fl_in skip 1 using ($8+$9):xtic(3) lt 1 title 'predicted (model)', \
         ''    skip 1 using ($10+$11) lt 2 title 'measured (DRAM counters, through ncu)'
    unset style data
    set offsets 0, 0, 0, 0
    set xtics norotate font '' enhanced
    unset title

    # 2. the roofline
    set title sprintf('roofline: %.0f GB/s copy, %.1f TFLOP/s FP32 FMA (both measured)', ceiling, peak/1000)
    set logscale xy 10
    set xlabel 'arithmetic intensity (FLOP per byte moved)'
    set ylabel 'GFLOP/s'
    set xrange [0.01:1000]
    set yrange [10:2*peak]
    set format x '10^{%L}'
    set format y '10^{%L}'
    set key bottom right
    roof(x) = (x*ceiling < peak) ? x*ceiling : peak
    plot roof(x) with lines lt 3 title 'ceiling: min(peak, bandwidth x intensity)', \
         fl_in using (strcol(5) eq 'unfused' ? $15 : 1/0):14 with points lt 1 pt 7 ps 1.4 title 'unfused', \
         ''    using (strcol(5) eq 'fused' ? $15 : 1/0):14 with points lt 2 pt 5 ps 1.4 title 'fused', \
         ''    using 15:14:3 with labels offset 0.8,0.6 left font ',8' noenhanced notitle
    unset logscale xy
    set format x '% h'
    set format y '% h'
    set xrange [*:*]
    set yrange [*:*]
    unset title

    # 3. bandwidth against stride
    set title 'reads with a stride: out[i] = in[i * stride]'
    set logscale x 2
    set xlabel 'stride (floats)'
    set ylabel 'useful GB/s'
    set yrange [0:*]
    set key top right
    plot f_stride using 3:5 with linespoints lt 1 title 'useful bandwidth', \
         ''       using 3:6 with lines lt 3 title 'copy ceiling'
    unset title

    # 4. time against threads per block
    set title 'launch shape: out = 2 * in, one element per thread, 2^{26} floats'
    set xlabel 'threads per block'
    set ylabel 'time (µs)'
    set yrange [0:*]
    plot f_blocks using 3:4 with linespoints lt 2 title 'median time'
    unset logscale x
    unset multiplot
}
