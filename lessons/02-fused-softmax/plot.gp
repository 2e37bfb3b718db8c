# lessons/02-fused-softmax/plot.gp — unfused vs fused row-wise softmax.
#   gnuplot -c lessons/02-fused-softmax/plot.gp plots/02-fused-softmax.csv plots/02-fused-softmax.svg \
#       [plots/02-fused-softmax-compare.csv]
# CSV columns: device,date,rows,cols,unfused_us,fused_us,speedup,unfused_gbs,
#              fused_gbs,ceiling_gbs,fused_pct_of_ceiling,copy_us,copy_gbs
# Rows with rows = 4096 are the sweep (drawn as lines); the others are the
# long-row point (drawn on its own: the fused kernel reads x twice there).
# With a compare CSV (./lab compare 02; by default the sibling *-compare.csv),
# PyTorch, Triton and your kernel are drawn too (its 4096-row shapes) (PyTorch eager on the speedup side
# only: the bandwidth side counts the bytes each version must move, which
# the compare CSV does not give for it). Its
# columns: device,date,op,rows,cols,variant,kind,median_us,gbs,pct_of_ceiling,
# tflops,check,max_err,solution_speedup,note
fl_arg3 = ARGC >= 3 ? ARG3 : ''   # (before `load`, after which ARG3 is no longer set)
here = system(sprintf("dirname '%s'", ARG0))
load here.'/../../plots/style.gp'
call here.'/../../plots/args.gp' ARG1 ARG2 fl_arg3

sweep(v) = (column(3) == 4096) ? v : NaN
longrow(v) = (column(3) != 4096) ? v : NaN
# the compare CSV's 4096-row shapes of variant v: column col where right
c02(v, col) = column(4) == 4096 ? fl_cmp_col(v, col, 6, 12) : NaN
cmp_bw = strlen(fl_cmp) == 0 ? '' : sprintf(", '%s' using 5:(c02('torch.softmax', 9)) with linespoints lt 7 title 'torch.softmax', '' using 5:(c02('triton', 9)) with linespoints lt 8 title 'Triton (tutorial style)', '' using 5:(c02('student', 9)) with linespoints lt 9 title 'your kernel'", fl_cmp)
cmp_x = strlen(fl_cmp) == 0 ? '' : sprintf(", '%s' using 5:(c02('torch eager', 14)) with linespoints lt 6 title 'over PyTorch eager', '' using 5:(c02('torch.softmax', 14)) with linespoints lt 7 title 'over torch.softmax', '' using 5:(c02('triton', 14)) with linespoints lt 8 title 'over Triton', 1.0 with lines lt 3 dt 3 title 'as fast (1×)'", fl_cmp)

do for [fl_fmt in fl_formats] {
    eval fl_term(fl_fmt, fl_width(1200), 480)
    set multiplot layout 1,2 title fl_title("Lesson 02: row-wise softmax, 4096 rows (long rows: 256 x 2^{18})") font ',14'

    set logscale x 2
    set format x '2^{%L}'
    set xrange [128:524288]
    set xlabel 'cols (floats per row)'
    set ylabel 'achieved bandwidth (GB/s, bytes each version must move)'
    set yrange [0:*]
    eval fl_key('bottom right')
    plot fl_in using 4:10 with lines lt 3 title 'measured copy ceiling', \
         ''    using 4:(sweep($13)) with linespoints lt 4 dt 3 pt 1 title 'cudaMemcpy, same matrix', \
         ''    using 4:(sweep($8)) with linespoints lt 1 title 'unfused: 5 kernels, 32 B/elem', \
         ''    using 4:(sweep($9)) with linespoints lt 2 title 'fused: 1 kernel, 8 B/elem', \
         ''    using 4:(longrow($8)) with points lt 1 pt 6 ps 1.6 title 'unfused, long rows', \
         ''    using 4:(longrow($9)) with points lt 2 pt 4 ps 1.6 title 'fused, long rows (reads x twice)' @cmp_bw

    set ylabel 'speedup of fused over unfused (×)'
    set yrange [0:6]
    eval fl_key('top left')
    plot fl_in using 4:(sweep($7)) with linespoints lt 2 title 'measured speedup', \
         ''    using 4:(longrow($7)) with points lt 2 pt 4 ps 1.6 title 'measured, long rows', \
         4.0 with lines lt 3 title 'predicted by bytes moved (4×)', \
         '<echo 262144,2.667' using 1:2 with points lt 3 pt 2 ps 1.6 title 'predicted, long rows (8/3×)' @cmp_x
    unset multiplot
    unset logscale x
    set format x '% h'
}
