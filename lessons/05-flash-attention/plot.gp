# lessons/05-flash-attention/plot.gp — unfused vs fused attention against seq.
#   gnuplot -c lessons/05-flash-attention/plot.gp plots/05-flash-attention.csv plots/05-flash-attention.svg \
#       [plots/05-flash-attention-compare.csv]
# CSV columns: device,date,dtype,seq,batch_heads,head_dim,unfused_us,fused_us,speedup,
#              unfused_tflops,fused_tflops,unfused_mib,fused_mib,device_mib
# (nan where the unfused path's S and P did not fit in device memory)
# With a compare CSV (./lab compare 05; by default the sibling *-compare.csv),
# PyTorch's SDPA backends, eager PyTorch, your kernel and the worked file's
# launchers of "Going further" (float32 on tensor cores, float16 on Hopper's
# wgmma, where this GPU ran it) are drawn as points
# at its head_dim 64, no-mask shapes (2 x 16 heads, the bench's 32). Its
# columns: device,date,op,dtype,batch,heads,seq,head_dim,causal,variant,kind,
# median_us,gbs,pct_of_ceiling,tflops,check,max_err,solution_speedup,note
fl_arg3 = ARGC >= 3 ? ARG3 : ''   # (before `load`, after which ARG3 is no longer set)
here = system(sprintf("dirname '%s'", ARG0))
load here.'/../../plots/style.gp'
call here.'/../../plots/args.gp' ARG1 ARG2 fl_arg3

# column c of the rows of one precision, NaN elsewhere (so each line joins one precision)
of(dt, c) = strcol(3) eq dt ? column(c) : NaN
# the compare CSV's rows of precision dt, d = 64, no mask, variant v: TFLOP/s where right
c05(dt, v) = (strcol(4) eq dt && column(8) == 64 && column(9) == 0) ? fl_cmp_col(v, 15, 10, 16) : NaN
cmp_tf = strlen(fl_cmp) == 0 ? '' : sprintf(", '%s' using 7:(c05('f16', 'sdpa flash')) with points lt 7 pt 13 ps 1.6 title 'SDPA flash float16', '' using 7:(c05('f16', 'sdpa efficient')) with points lt 7 pt 9 ps 1.6 title 'SDPA efficient float16', '' using 7:(c05('f16', 'sdpa cudnn')) with points lt 7 pt 11 ps 1.6 title 'SDPA cuDNN float16', '' using 7:(c05('f32', 'sdpa efficient')) with points lt 7 pt 8 ps 1.6 title 'SDPA efficient float32', '' using 7:(c05('f16', 'torch eager')) with points lt 6 pt 6 ps 1.6 title 'PyTorch eager float16', '' using 7:(c05('f32', 'torch eager')) with points lt 6 pt 7 ps 1.6 title 'PyTorch eager float32', '' using 7:(c05('f16', 'student')) with points lt 9 pt 12 ps 1.6 title 'your kernel float16', '' using 7:(c05('f32', 'student')) with points lt 9 pt 5 ps 1.6 title 'your kernel float32', '' using 7:(c05('f32', 'solution tensor cores')) with points lt 2 pt 3 ps 1.6 title 'going-further float32', '' using 7:(c05('f16', 'solution wgmma')) with points lt 2 pt 4 ps 1.6 title 'going-further float16'", fl_cmp)

do for [fl_fmt in fl_formats] {
    eval fl_term(fl_fmt, 1500, 500)
    set multiplot layout 1,3 title fl_title("Lesson 05: attention forward, 32 heads, d = 64 (head dimension), no mask") font ',14'

    set logscale x 2
    set format x '2^{%L}'
    set xlabel 'seq (tokens)'
    set key below maxrows 3 samplen 3
    eval sprintf('set bmargin %d', strlen(fl_cmp) ? 13 : 9)  # (the comparison's points need room)

    set ylabel 'TFLOP/s (4 seq^2 d per head)'
    set yrange [0:*]
    plot fl_in using 4:(of('f32', 10)) with linespoints lt 1 title 'unfused float32', \
         ''    using 4:(of('f32', 11)) with linespoints lt 2 title 'fused float32', \
         ''    using 4:(of('f16', 10)) with linespoints lt 1 dt 3 pt 6 title 'unfused float16', \
         ''    using 4:(of('f16', 11)) with linespoints lt 2 dt 3 pt 4 title 'fused float16' @cmp_tf

    set logscale y 10
    set format y '10^{%L}'
    set ylabel 'time per call (ms)'
    set yrange [*:*]
    plot fl_in using 4:(of('f32', 7) / 1e3) with linespoints lt 1 title 'unfused float32', \
         ''    using 4:(of('f32', 8) / 1e3) with linespoints lt 2 title 'fused float32', \
         ''    using 4:(of('f16', 7) / 1e3) with linespoints lt 1 dt 3 pt 6 title 'unfused float16', \
         ''    using 4:(of('f16', 8) / 1e3) with linespoints lt 2 dt 3 pt 4 title 'fused float16'

    set ylabel 'device memory needed (GiB)'
    set format y '%g'
    plot fl_in using 4:(of('f32', 14) / 1024) with lines lt 3 title 'this GPU''s memory', \
         ''    using 4:(of('f32', 12) / 1024) with linespoints lt 1 title 'unfused float32 (Q,K,V,O + S,P)', \
         ''    using 4:(of('f16', 12) / 1024) with linespoints lt 1 dt 3 pt 6 title 'unfused float16', \
         ''    using 4:(of('f32', 13) / 1024) with linespoints lt 2 title 'fused float32 (Q,K,V,O)', \
         ''    using 4:(of('f16', 13) / 1024) with linespoints lt 2 dt 3 pt 4 title 'fused float16'
    unset multiplot
    unset logscale x
    unset logscale y
    unset bmargin
    set key default
    set format x '% h'
    set format y '% h'
}
