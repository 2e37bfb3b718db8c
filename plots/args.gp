# plots/args.gp — read a lesson plot's arguments:
#   gnuplot -c plot.gp IN.csv OUT.svg [COMPARE.csv]
# (called from a plot script, which passes on its ARG1, ARG2 and ARG3).
# Sets fl_in, fl_base, fl_device, fl_date, and fl_cmp: the comparison with
# PyTorch and Triton that ./lab compare writes (tools/compare.py), or '' when
# there is none. Without a third argument it is IN's sibling IN-compare.csv,
# when there is one. Either is drawn only when it was measured on IN's GPU.
if (ARGC < 2) {
    print sprintf("usage: gnuplot -c %s IN.csv OUT.svg [COMPARE.csv]   (writes OUT.svg and OUT.png)", ARG0)
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

fl_cmp = ''
if (ARGC >= 3 && strlen(ARG3) > 0) {
    fl_cmp = ARG3
    if (system(sprintf("test -r '%s' && echo ok", fl_cmp)) ne 'ok') {
        print sprintf("%s: cannot read %s", ARG0, fl_cmp)
        exit status 1
    }
} else {
    if (strlen(fl_in) > 4 && fl_in[strlen(fl_in)-3:] eq '.csv') {
        fl_cmp = fl_in[1:strlen(fl_in)-4].'-compare.csv'
        if (system(sprintf("test -r '%s' && echo ok", fl_cmp)) ne 'ok') {
            fl_cmp = ''
        }
    }
}
if (strlen(fl_cmp) > 0 && fl_field(fl_cmp, 1) ne fl_device) {
    print sprintf("%s: %s was measured on %s, %s on %s: drawn without the comparison", \
                  ARG0, fl_cmp, fl_field(fl_cmp, 1), fl_in, fl_device)
    fl_cmp = ''
}
