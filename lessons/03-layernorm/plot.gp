# lessons/03-layernorm/plot.gp — LayerNorm forward and backward, unfused vs fused.
#   gnuplot -c lessons/03-layernorm/plot.gp plots/03-layernorm.csv plots/03-layernorm.svg \
#       [plots/03-layernorm-compare.csv]
# CSV columns: device,date,rows,cols,fwd_unfused_us,fwd_fused_us,fwd_speedup,
#              fwd_unfused_gbs,fwd_fused_gbs,bwd_unfused_us,bwd_fused_us,
#              bwd_atomic_us,bwd_speedup,bwd_unfused_gbs,bwd_fused_gbs,
#              bwd_atomic_gbs,ceiling_gbs,fwd_fused_pct_of_ceiling,
#              bwd_fused_pct_of_ceiling[,bwd_ceiling_gbs]
#   (ceiling_gbs: the copy ceiling of the forward's bytes, bwd_ceiling_gbs of
#   the backward's: common/timing.h, fl_copy_ceiling_for; CSVs before
#   2026-11-26 have one ceiling, of 256 MiB buffers, for both)
# With a compare CSV (./lab compare 03; by default the sibling *-compare.csv),
# PyTorch, Triton and your kernel are drawn too (its 4096-row shapes). Its
# columns: device,date,op,rows,cols,variant,kind,median_us,gbs,pct_of_ceiling,
# tflops,check,max_err,solution_speedup,note
# (PyTorch eager is left out: the plot counts the bytes each version must
# move, which the compare CSV does not give for it; ./lab compare 03 tables it.)
fl_arg3 = ARGC >= 3 ? ARG3 : ''   # (before `load`, after which ARG3 is no longer set)
here = system(sprintf("dirname '%s'", ARG0))
load here.'/../../plots/style.gp'
call here.'/../../plots/args.gp' ARG1 ARG2 fl_arg3

# the compare CSV's 4096-row shapes of operation op and variant v: GB/s where right
c03(op, v) = (strcol(3) eq op && column(4) == 4096) ? fl_cmp_col(v, 9, 6, 12) : NaN
cmp_fwd = strlen(fl_cmp) == 0 ? '' : sprintf(", '%s' using 5:(c03('layernorm_fwd', 'F.layer_norm')) with linespoints lt 7 title 'F.layer_norm' noenhanced, '' using 5:(c03('layernorm_fwd', 'triton')) with linespoints lt 8 title 'Triton (tutorial style)', '' using 5:(c03('layernorm_fwd', 'student')) with linespoints lt 9 title 'your kernel'", fl_cmp)
cmp_bwd = strlen(fl_cmp) == 0 ? '' : sprintf(", '%s' using 5:(c03('layernorm_bwd', 'F.layer_norm autograd')) with linespoints lt 7 title 'F.layer_norm backward (autograd)' noenhanced, '' using 5:(c03('layernorm_bwd', 'student')) with linespoints lt 9 title 'your kernel (deterministic)'", fl_cmp)

do for [fl_fmt in fl_formats] {
    eval fl_term(fl_fmt, fl_width(1200), 480)
    set multiplot layout 1,2 title fl_title("Lesson 03: LayerNorm, 4096 rows") font ',14'

    set logscale x 2
    set format x '2^{%L}'
    set xlabel 'cols (floats per row)'
    set ylabel 'achieved bandwidth (GB/s, bytes each version must move)'
    set yrange [0:*]
    eval fl_key('bottom right')
    set title 'forward'
    plot fl_in using 4:17 with lines lt 3 title 'measured copy ceiling', \
         ''    using 4:8 with linespoints lt 1 title 'unfused: 8 kernels, 48 B/element', \
         ''    using 4:9 with linespoints lt 2 title 'fused: 1 kernel, 8 B/element' @cmp_fwd

    set title 'backward'
    plot fl_in using 4:17 with lines lt 3 title 'measured copy ceiling', \
         ''    using 4:14 with linespoints lt 1 title 'unfused: 15 kernels, 100 B/element', \
         ''    using 4:15 with linespoints lt 2 title 'fused, deterministic (2 kernels), 12 B/element', \
         ''    using 4:16 with linespoints lt 4 title 'fused, atomic (1 kernel)' @cmp_bwd
    unset multiplot
    unset title
    unset logscale x
    set format x '% h'
}
