#!/bin/sh
# tests/compare.sh — ./lab compare and the plots it feeds, without a GPU.
#
#   compare.sh lab COURSE      ./lab compare without PyTorch, and with a
#                              PyTorch that sees no GPU (stand-ins from
#                              tests/compare_stubs first on PYTHONPATH): one
#                              line, exit 0; bad arguments: exit 2; lesson 04:
#                              skipped with its reason; ./lab help lists it
#   compare.sh plots COURSE    every lesson's plot.gp on the committed
#                              reference CSV: without a compare CSV (as
#                              before), with one given as a third argument,
#                              with one beside the input, and with one of
#                              another GPU (left out, with a note). Exits 77
#                              without gnuplot.
set -u
[ $# -eq 2 ] || { echo "usage: $0 lab|plots COURSE" >&2; exit 2; }
mode=$1
root=$(cd "$2" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/fusionlab-compare.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT
failed=0
fail() { echo "FAIL: $*"; failed=1; }
ok() { echo "ok: $*"; }

# run DESC EXPECTED_RC CMD...: output in $work/out, rc checked
run() {
    desc=$1 want=$2
    shift 2
    "$@" >"$work/out" 2>&1
    rc=$?
    if [ "$rc" != "$want" ]; then
        fail "$desc: exit $rc, want $want; it printed:"
        sed 's/^/    /' "$work/out"
        return 1
    fi
    return 0
}

# one_line DESC PATTERN: $work/out is exactly one line, matching PATTERN
one_line() {
    n=$(wc -l <"$work/out")
    if [ "$n" -ne 1 ]; then
        fail "$1: $n lines, want one:"
        sed 's/^/    /' "$work/out"
    elif ! grep -q -- "$2" "$work/out"; then
        fail "$1: '$(cat "$work/out")' does not say '$2'"
    else
        ok "$1: $(cat "$work/out")"
    fi
}

case $mode in
lab)
    command -v python3 >/dev/null 2>&1 || { echo "SKIP: no python3 here (./lab compare then says so itself)"; exit 77; }
    stubs=$root/tests/compare_stubs
    for what in "" " 02" " 4"; do
        # shellcheck disable=SC2086
        run "./lab compare$what without PyTorch" 0 env PYTHONPATH="$stubs/no-torch" "$root/lab" compare $what &&
            case $what in
                " 4") one_line "./lab compare 4 without PyTorch" "lesson 04-memory-traffic is skipped: .*no fused operation" ;;
                *) one_line "./lab compare$what without PyTorch" "PyTorch was not found.*pip install torch" ;;
            esac
    done
    run "./lab compare 03 with a PyTorch that sees no GPU" 0 env PYTHONPATH="$stubs/no-gpu" "$root/lab" compare 03 &&
        one_line "./lab compare 03 without a GPU" "no CUDA GPU visible to PyTorch"
    for bad in "99" "02 03" "fused"; do
        # shellcheck disable=SC2086
        if run "./lab compare $bad" 2 env PYTHONPATH="$stubs/no-torch" "$root/lab" compare $bad; then
            if grep -q "usage: ./lab compare" "$work/out" || grep -q "no lesson" "$work/out"; then
                ok "./lab compare $bad: $(head -n 1 "$work/out")"
            else
                fail "./lab compare $bad: no usage or reason: $(cat "$work/out")"
            fi
        fi
    done
    run "./lab help" 0 "$root/lab" help &&
        if grep -q "^  compare \[NN\]" "$work/out" && grep -q "pip install torch" "$work/out"; then
            ok "./lab help documents compare"
        else
            fail "./lab help does not document compare"
        fi
    ;;
plots)
    gp=$(command -v gnuplot) || { echo "SKIP: gnuplot is not installed (apt-get install gnuplot-nox)"; exit 77; }
    command -v python3 >/dev/null 2>&1 || { echo "SKIP: no python3 here (the made-up compare CSVs come from tests/test_compare.py)"; exit 77; }
    for d in "$root"/lessons/[0-9][0-9]-*/; do
        lesson=$(basename "$d")
        ref=$root/plots/reference/$lesson.csv
        [ -f "$ref" ] || { fail "$lesson: no reference CSV $ref"; continue; }
        mkdir -p "$work/$lesson"
        cp "$root"/plots/reference/"$lesson"*.csv "$work/$lesson/"
        rm -f "$work/$lesson/$lesson-compare.csv"
        in=$work/$lesson/$lesson.csv
        # 1. as before: no compare CSV anywhere
        if run "$lesson: plot.gp IN OUT" 0 "$gp" -c "$d/plot.gp" "$in" "$work/$lesson/plain.svg"; then
            if [ ! -s "$work/$lesson/plain.svg" ] || [ ! -s "$work/$lesson/plain.png" ]; then
                fail "$lesson: no SVG and PNG"
            elif grep -q "Triton\|your kernel" "$work/$lesson/plain.svg"; then
                fail "$lesson: a plot without a compare CSV draws PyTorch"
            elif [ -s "$work/out" ]; then
                fail "$lesson: gnuplot said something: $(cat "$work/out")"
            else
                ok "$lesson: plots as before without a compare CSV"
            fi
        fi
        python3 -c "import sys; sys.path.insert(0, '$root/tools'); import compare; sys.exit(0 if '$lesson' in compare.LESSONS else 3)"
        case $? in 0) ;; 3) continue ;; *) fail "$lesson: tools/compare.py does not import"; continue ;; esac
        device=$(awk -F, 'NR == 2 { gsub(/"/, ""); print $1 }' "$ref")
        cmp=$work/$lesson/made-up-compare.csv
        python3 "$root/tests/test_compare.py" --fake-csv "$lesson" "$cmp" "$device" ||
            { fail "$lesson: no made-up compare CSV"; continue; }
        # 2. given as the third argument; 3. the sibling IN-compare.csv
        cp "$cmp" "$work/$lesson/$lesson-compare.csv"
        for how in given sibling; do
            if [ $how = given ]; then
                set -- "$cmp"
                rm -f "$work/$lesson/$lesson-compare.csv.off"
                mv "$work/$lesson/$lesson-compare.csv" "$work/$lesson/$lesson-compare.csv.off"
            else
                set --
                mv "$work/$lesson/$lesson-compare.csv.off" "$work/$lesson/$lesson-compare.csv"
            fi
            out=$work/$lesson/$how.svg
            run "$lesson: plot.gp IN OUT ($how compare CSV)" 0 "$gp" -c "$d/plot.gp" "$in" "$out" "$@" || continue
            case $lesson in
                05-*) want="SDPA flash float16" ;;
                *) want="Triton" ;;
            esac
            if ! grep -q "$want" "$out"; then
                fail "$lesson: the $how compare CSV is not drawn ('$want' is not in the SVG)"
            elif ! grep -q "your kernel" "$out"; then
                fail "$lesson: the student's series is not drawn with the $how compare CSV"
            elif [ "$(grep -c '<path\|<use' "$out")" -le "$(grep -c '<path\|<use' "$work/$lesson/plain.svg")" ]; then
                fail "$lesson: no more lines or points with the $how compare CSV than without"
            else
                ok "$lesson: draws the $how compare CSV"
            fi
        done
        # 4. a compare CSV of another GPU beside it: left out, with a note
        python3 "$root/tests/test_compare.py" --fake-csv "$lesson" "$work/$lesson/$lesson-compare.csv" "Another GPU"
        if run "$lesson: plot.gp beside another GPU's compare CSV" 0 "$gp" -c "$d/plot.gp" "$in" "$work/$lesson/other.svg"; then
            if grep -q "Triton\|your kernel" "$work/$lesson/other.svg"; then
                fail "$lesson: another GPU's compare CSV is drawn"
            elif ! grep -q "was measured on Another GPU.*drawn without the comparison" "$work/out"; then
                fail "$lesson: no note that another GPU's compare CSV is left out: $(cat "$work/out")"
            else
                ok "$lesson: another GPU's compare CSV is left out, with a note"
            fi
        fi
        # 5. a third argument that does not exist: an error, not a silent plot
        run "$lesson: plot.gp with a missing compare CSV" 1 "$gp" -c "$d/plot.gp" "$in" "$work/$lesson/x.svg" "$work/none.csv" &&
            ok "$lesson: a missing compare CSV is an error"
    done
    ;;
*)
    echo "usage: $0 lab|plots COURSE" >&2
    exit 2
    ;;
esac
[ $failed -eq 0 ] && echo "compare.sh $mode: all passed"
exit $failed
