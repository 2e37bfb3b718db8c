# lessons/02-fused-softmax/plot.gp — unfused vs fused row-wise softmax.
#   gnuplot -c lessons/02-fused-softmax/plot.gp plots/02-fused-softmax.csv plots/02-fused-softmax.svg
# CSV columns: device,date,rows,cols,unfused_us,fused_us,speedup,unfused_gbs,
#              fused_gbs,ceiling_gbs,fused_pct_of_ceiling,copy_us,copy_gbs
# Rows with rows = 4096 are the sweep (drawn as lines); the others are the
# long-row point (drawn on its own: the fused kernel reads x twice there).
here = system(sprintf("dirname '%s'", ARG0))
load here.'/../../plots/style.gp'
call here.'/../../plots/args.gp' ARG1 ARG2

sweep(v) = (column(3) == 4096) ? v : NaN
longrow(v) = (column(3) != 4096) ? v : NaN

do for [fl_fmt in fl_formats] {
    eval fl_term(fl_fmt, 1200, 480)
    set multiplot layout 1,2 title fl_title("Lesson 02: row-wise softmax, 4096 rows (long rows: 256 x 2^{18})") font ',14'

    set logscale x 2
    set format x '2^{%L}'
    set xrange [128:524288]
    set xlabel 'cols (floats per row)'
    set ylabel 'achieved bandwidth (GB/s, bytes each version must move)'
    set yrange [0:*]
    set key bottom right
    plot fl_in using 4:10 with lines lt 3 title 'copy ceiling (256 MiB cudaMemcpy)', \
         ''    using 4:(sweep($13)) with linespoints lt 4 dt 3 pt 1 title 'cudaMemcpy, same matrix', \
         ''    using 4:(sweep($8)) with linespoints lt 1 title 'unfused: 5 kernels, 32 B/elem', \
         ''    using 4:(sweep($9)) with linespoints lt 2 title 'fused: 1 kernel, 8 B/elem', \
         ''    using 4:(longrow($8)) with points lt 1 pt 6 ps 1.6 title 'unfused, long rows', \
         ''    using 4:(longrow($9)) with points lt 2 pt 4 ps 1.6 title 'fused, long rows (reads x twice)'

    set ylabel 'speedup of fused over unfused (×)'
    set yrange [0:6]
    set key top left
    plot fl_in using 4:(sweep($7)) with linespoints lt 2 title 'measured speedup', \
         ''    using 4:(longrow($7)) with points lt 2 pt 4 ps 1.6 title 'measured, long rows', \
         4.0 with lines lt 3 title 'predicted by bytes moved (4×)', \
         '<echo 262144,2.667' using 1:2 with points lt 3 pt 2 ps 1.6 title 'predicted, long rows (8/3×)'
    unset multiplot
    unset logscale x
    set format x '% h'
}
