# lessons/01-vector-add/plot.gp — unfused vs fused y = (a + b) * s + c.
#   gnuplot -c lessons/01-vector-add/plot.gp plots/01-vector-add.csv plots/01-vector-add.svg
# CSV columns: device,date,n,unfused_us,fused_us,speedup,unfused_gbs,fused_gbs,
#              ceiling_gbs,fused_pct_of_ceiling
here = system(sprintf("dirname '%s'", ARG0))
load here.'/../../plots/style.gp'
call here.'/../../plots/args.gp' ARG1 ARG2

do for [fl_fmt in fl_formats] {
    eval fl_term(fl_fmt, 1200, 480)
    set multiplot layout 1,2 title fl_title("Lesson 01: y = (a + b) * s + c") font ',14'

    set logscale x 2
    set format x '2^{%L}'
    set xlabel 'n (elements per array)'
    set ylabel 'achieved bandwidth (GB/s, bytes each version must move)'
    set yrange [0:*]
    set key bottom right
    plot fl_in using 3:9 with lines lt 3 title 'measured copy ceiling', \
         ''    using 3:7 with linespoints lt 1 title 'unfused: 3 kernels, 32 B/element', \
         ''    using 3:8 with linespoints lt 2 title 'fused: 1 kernel, 16 B/element'

    set ylabel 'speedup of fused over unfused (×)'
    set yrange [0:3]
    set key top left
    plot fl_in using 3:6 with linespoints lt 2 title 'measured speedup', \
         2.0 with lines lt 3 title 'predicted by bytes moved (2×)'
    unset multiplot
    unset logscale x
    set format x '% h'
}
