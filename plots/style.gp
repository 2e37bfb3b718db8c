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
# ./lab compare (tools/compare.py), drawn where a lesson's plot has a compare CSV
set linetype 6 lc rgb '#ff7f0e' lw 1.8 dt 2 pt 8 ps 0.9   # PyTorch eager, op by op
set linetype 7 lc rgb '#8c564b' lw 1.8 pt 13 ps 1.0       # PyTorch's fused op
set linetype 8 lc rgb '#e377c2' lw 1.8 pt 3 ps 1.0        # Triton
set linetype 9 lc rgb '#17becf' lw 1.8 dt 4 pt 12 ps 1.0  # your kernel (the student's)

fl_formats = 'svg png'

# "set terminal ...; set output ..." for one format of the output base name
fl_term(fmt, w, h) = (fmt eq 'svg') \
    ? sprintf("set terminal svg size %d,%d dynamic enhanced font 'Helvetica,13' background '#ffffff'; set output '%s.svg'", w, h, fl_base) \
    : sprintf("set terminal pngcairo size %d,%d enhanced font 'Helvetica,11' background '#ffffff'; set output '%s.png'", w, h, fl_base)

# in a compare CSV (tools/compare.py): column `col` of the rows of variant
# `v` whose output was right (check = ok), NaN elsewhere; vcol and chk are the
# CSV's variant and check columns, which each lesson's plot.gp names
fl_cmp_col(v, col, vcol, chk) = (strcol(vcol) eq v && strcol(chk) eq 'ok') ? column(col) : NaN

# the key of a lesson's panel: `where` inside it, or below it when a compare
# CSV adds its series (fl_cmp, plots/args.gp), which need the room; a plot
# with one is drawn wider (fl_width)
fl_key(where) = strlen(fl_cmp) ? 'set key outside right top samplen 2' : 'set key '.where
fl_width(w) = strlen(fl_cmp) ? w + 500 : w

# the value of column `col` on the first data row (quotes removed)
fl_field(file, col) = system(sprintf("awk -F, 'NR==2 { gsub(/\"/, \"\"); print $%d }' '%s'", col, file))

# "[label] ([device], [date])" for titles
fl_title(label) = sprintf("%s\n{/*0.8 %s, measured %s}", label, fl_device, fl_date)
