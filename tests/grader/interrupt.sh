#!/bin/sh
# tests/grader/interrupt.sh — ctest grader/interrupt: a batch stopped in the
# middle of a lesson (SIGTERM while lesson 01's suites run, or while it
# builds) writes that
# lesson as "interrupted" with no points, never as graded with the points of
# the stages that had finished (a sanitizer stage cut short once left a
# worked solution "graded" at 90 of 100), and the submission as incomplete.
#
#   interrupt.sh GRADER COURSE MANIFEST OUT
#
# The worked solutions of lessons 01 and 02, GPU hidden, no sandbox (only
# the course's own files run).
set -u
[ $# -eq 4 ] || { echo "usage: $0 GRADER COURSE MANIFEST OUT" >&2; exit 2; }
grader=$1 course=$2 manifest=$3 out=$4
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$out"
mkdir -p "$out/sub" || fail "cannot create $out"
for l in 01-vector-add 02-fused-softmax; do
    mkdir -p "$out/sub/$l"
    cp "$course/solutions/$l/"*.cu "$out/sub/$l/" || fail "no worked solution of $l"
done
# stop PATTERN NAME: grade into $out/NAME, SIGTERM when the log shows PATTERN,
# then check lesson 01 came out interrupted, with 0 points
stop() {
    pattern=$1 name=$2
    "$grader" "$out/sub" --course "$course" --manifest "$manifest" --lessons 01,02 --no-gpu \
        --no-sandbox --jobs 2 --out "$out/$name" --work "$out/work-$name" >"$out/$name.log" 2>&1 &
    pid=$!
    i=0
    until grep -q "$pattern" "$out/$name.log" 2>/dev/null; do
        i=$((i + 1))
        [ $i -le 6000 ] || { kill "$pid"; fail "$name: '$pattern' never came: $(tail -3 "$out/$name.log")"; }
        kill -0 "$pid" 2>/dev/null || fail "$name: the grader ended before '$pattern': $(tail -3 "$out/$name.log")"
        sleep 0.05
    done
    kill -TERM "$pid"
    wait "$pid"
    rc=$?
    [ "$rc" -ne 0 ] || fail "$name: the interrupted grader exited 0"
    r=$out/$name/submissions/sub/results.json
    [ -f "$r" ] || fail "$name: no results.json after the interruption: $(tail -5 "$out/$name.log")"
    line=$(grep "01-vector-add:" "$out/$name.log" | grep " / " | tail -n 1)
    case $line in
        *"0.00 / 100.00"*"not graded: grading was interrupted"*) ;;
        *) fail "$name: lesson 01 after the interruption: '$line' (want 0 points, not graded: interrupted)" ;;
    esac
    grep -q '"state":[[:space:]]*"interrupted"' "$r" || fail "$name: results.json does not say the lesson was interrupted"
    grep -q '"state":[[:space:]]*"graded"' "$r" && fail "$name: results.json calls a lesson graded: $(grep '"state"' "$r")"
    grep -q 'incomplete' "$out/$name.log" || fail "$name: the summary does not call the submission incomplete"
}
# halfway through lesson 01's suites (its second suite started) ...
stop "01-vector-add: running B_fused_elementwise" suites
# ... and during its build (once "build failed")
stop "01-vector-add: building" build
echo "PASS: a lesson stopped halfway through its suites or its build is 'interrupted' with 0 points, and its submission incomplete"
