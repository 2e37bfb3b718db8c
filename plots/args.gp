# plots/args.gp — read a lesson plot's arguments:  gnuplot -c plot.gp IN.csv OUT.svg
# (called from a plot script: the script's ARG1/ARG2 are passed on)
if (ARGC < 2) {
    print sprintf("usage: gnuplot -c %s IN.csv OUT.svg   (writes OUT.svg and OUT.png)", ARG0)
    exit status 2
}
fl_in = ARG1
fl_base = ARG2
if (strlen(fl_base) > 4 && (fl_base[strlen(fl_base)-3:] eq '.svg' || fl_base[strlen(fl_base)-3:] eq '.png')) {
    fl_base = fl_base[1:strlen(fl_base)-4]
}
if (system(sprintf("test -r '%s' && echo ok", fl_in)) ne 'ok') {
    print sprintf("%s: cannot read %s", ARG0, fl_in)
    exit status 1
}
fl_device = fl_field(fl_in, 1)
fl_date = fl_field(fl_in, 2)
