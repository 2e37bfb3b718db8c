# plots/style.gp — the one look of every plot in the course.
#
# A lesson's plot.gp starts with
#   here = system(sprintf("dirname '%s'", ARG0))
#   load here.'/../../plots/style.gp'
#   call here.'/../../plots/args.gp' ARG1 ARG2   (sets fl_in, fl_base, fl_device, fl_date)
# and draws inside   do for [fl_fmt in fl_formats] { eval fl_term(fl_fmt, 1100, 450) ... }
# so that one run writes both BASE.svg and BASE.png.

set datafile separator ','
set datafile missing 'nan'
set grid lc rgb '#e0e0e0' lw 1
set border lw 1.2
set key top left box opaque samplen 2 spacing 1.2
set tics nomirror
set mxtics 2

# series colours, the same meaning in every plot
set linetype 1 lc rgb '#d62728' lw 2.2 pt 7 ps 0.9   # unfused (PyTorch-style)
set linetype 2 lc rgb '#1f77b4' lw 2.2 pt 5 ps 0.9   # fused
set linetype 3 lc rgb '#555555' lw 1.6 dt 2 pt -1    # measured copy ceiling
set linetype 4 lc rgb '#2ca02c' lw 2.2 pt 9 ps 0.9   # a further variant
set linetype 5 lc rgb '#9467bd' lw 2.2 pt 11 ps 0.9  # another

fl_formats = 'svg png'

# "set terminal ...; set output ..." for one format of the output base name
fl_term(fmt, w, h) = (fmt eq 'svg') \
    ? sprintf("set terminal svg size %d,%d dynamic enhanced font 'Helvetica,13' background '#ffffff'; set output '%s.svg'", w, h, fl_base) \
    : sprintf("set terminal pngcairo size %d,%d enhanced font 'Helvetica,11' background '#ffffff'; set output '%s.png'", w, h, fl_base)

# the value of column `col` on the first data row (quotes removed)
fl_field(file, col) = system(sprintf("awk -F, 'NR==2 { gsub(/\"/, \"\"); print $%d }' '%s'", col, file))

# "[label] ([device], [date])" for titles
fl_title(label) = sprintf("%s\n{/*0.8 %s, measured %s}", label, fl_device, fl_date)
