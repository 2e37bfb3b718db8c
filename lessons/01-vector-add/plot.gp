# lessons/01-vector-add/plot.gp — unfused vs fused y = (a + b) * s + c.
#   gnuplot -c lessons/01-vector-add/plot.gp plots/01-vector-add.csv plots/01-vector-add.svg \
#       [plots/01-vector-add-compare.csv]
# CSV columns: device,date,n,unfused_us,fused_us,speedup,unfused_gbs,fused_gbs,
#              ceiling_gbs,fused_pct_of_ceiling
# With a compare CSV (./lab compare 01; by default the sibling *-compare.csv),
# PyTorch, Triton and your kernel are drawn too (PyTorch eager on the speedup side
# only: the bandwidth side counts the bytes each version must move, which
# the compare CSV does not give for it). Its columns: device,date,op,
# n,variant,kind,median_us,gbs,pct_of_ceiling,tflops,check,max_err,
# solution_speedup,note
fl_arg3 = ARGC >= 3 ? ARG3 : ''   # (before `load`, after which ARG3 is no longer set)
here = system(sprintf("dirname '%s'", ARG0))
load here.'/../../plots/style.gp'
call here.'/../../plots/args.gp' ARG1 ARG2 fl_arg3

# the compare CSV's y = (a + b) * s + c rows of variant v: column col where right
c01(v, col) = strcol(3) eq 'fused_elementwise' ? fl_cmp_col(v, col, 5, 11) : NaN
cmp_bw = strlen(fl_cmp) == 0 ? '' : sprintf(", '%s' using 4:(c01('triton', 8)) with linespoints lt 8 title 'Triton: 1 kernel', '' using 4:(c01('student', 8)) with linespoints lt 9 title 'your kernel'", fl_cmp)
cmp_x = strlen(fl_cmp) == 0 ? '' : sprintf(", '%s' using 4:(c01('torch eager', 13)) with linespoints lt 6 title 'over PyTorch eager'", fl_cmp)

do for [fl_fmt in fl_formats] {
    eval fl_term(fl_fmt, fl_width(1200), 480)
    set multiplot layout 1,2 title fl_title("Lesson 01: y = (a + b) * s + c") font ',14'

    set logscale x 2
    set format x '2^{%L}'
    set xlabel 'n (elements per array)'
    set ylabel 'achieved bandwidth (GB/s, bytes each version must move)'
    set yrange [0:*]
    eval fl_key('bottom right')
    plot fl_in using 3:9 with lines lt 3 title 'measured copy ceiling', \
         ''    using 3:7 with linespoints lt 1 title 'unfused: 3 kernels, 32 B/element', \
         ''    using 3:8 with linespoints lt 2 title 'fused: 1 kernel, 16 B/element' @cmp_bw

    set ylabel 'speedup of fused over unfused (×)'
    set yrange [0:3]
    eval fl_key('top left')
    plot fl_in using 3:6 with linespoints lt 2 title 'measured speedup', \
         2.0 with lines lt 3 title 'predicted by bytes moved (2×)' @cmp_x
    unset multiplot
    unset logscale x
    set format x '% h'
}
