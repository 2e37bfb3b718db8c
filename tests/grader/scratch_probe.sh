#!/bin/sh
# tests/grader/scratch_probe.sh plant|look — run by ctest grader/sandbox as a
# test step (fusionlab_grade --sandbox-probe), twice on one --work: `plant`
# leaves in its scratch folder what a step of one submission might leave for
# the next one's step of the same name (answers in a folder it cannot read,
# a file it cannot write, the scratch folder itself not writable); `look`
# must find its own scratch folder empty and writable.
set -u
case ${1:-} in
plant)
    mkdir -p keep/deeper && echo "answers for the batch's inputs" >keep/answers &&
        echo "{}" >report.json && chmod 0444 report.json && chmod 0 keep/deeper &&
        chmod 0 keep && chmod 0555 . || { echo "plant: could not leave the folder so"; exit 1; }
    echo "plant: left keep/ (mode 0), report.json (0444), . (0555)"
    ;;
look)
    left=$(ls -A | grep -vx "probe.sh") # (the probe's own copy of this script)
    if [ -n "$left" ]; then echo "FAIL the scratch folder holds what an earlier step left: $left"; exit 1; fi
    if ! echo x >probe.txt; then echo "FAIL the scratch folder is not writable"; exit 1; fi
    echo "ok   a step's scratch folder is empty and writable after a step that left one locked"
    ;;
*) echo "usage: $0 plant|look" >&2; exit 2 ;;
esac
exit 0
