# lessons/03-layernorm/plot.gp — LayerNorm forward and backward, unfused vs fused.
#   gnuplot -c lessons/03-layernorm/plot.gp plots/03-layernorm.csv plots/03-layernorm.svg
# CSV columns: device,date,rows,cols,fwd_unfused_us,fwd_fused_us,fwd_speedup,
#              fwd_unfused_gbs,fwd_fused_gbs,bwd_unfused_us,bwd_fused_us,
#              bwd_atomic_us,bwd_speedup,bwd_unfused_gbs,bwd_fused_gbs,
#              bwd_atomic_gbs,ceiling_gbs,fwd_fused_pct_of_ceiling,
#              bwd_fused_pct_of_ceiling
here = system(sprintf("dirname '%s'", ARG0))
load here.'/../../plots/style.gp'
call here.'/../../plots/args.gp' ARG1 ARG2

do for [fl_fmt in fl_formats] {
    eval fl_term(fl_fmt, 1200, 480)
    set multiplot layout 1,2 title fl_title("Lesson 03: LayerNorm, 4096 rows") font ',14'

    set logscale x 2
    set format x '2^{%L}'
    set xlabel 'cols (floats per row)'
    set ylabel 'achieved bandwidth (GB/s, bytes each version must move)'
    set yrange [0:*]
    set key bottom right
    set title 'forward'
    plot fl_in using 4:17 with lines lt 3 title 'measured copy ceiling', \
         ''    using 4:8 with linespoints lt 1 title 'unfused: 8 kernels, 48 B/element', \
         ''    using 4:9 with linespoints lt 2 title 'fused: 1 kernel, 8 B/element'

    set title 'backward'
    plot fl_in using 4:17 with lines lt 3 title 'measured copy ceiling', \
         ''    using 4:14 with linespoints lt 1 title 'unfused: 15 kernels, 100 B/element', \
         ''    using 4:15 with linespoints lt 2 title 'fused, deterministic (2 kernels), 12 B/element', \
         ''    using 4:16 with linespoints lt 4 title 'fused, atomic (1 kernel)'
    unset multiplot
    unset title
    unset logscale x
    set format x '% h'
}
