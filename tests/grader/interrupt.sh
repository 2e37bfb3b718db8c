#!/bin/sh
# tests/grader/interrupt.sh — ctest grader/interrupt: a batch stopped in the
# middle of a lesson (SIGTERM while lesson 01's suites run) writes that
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
"$grader" "$out/sub" --course "$course" --manifest "$manifest" --lessons 01,02 --no-gpu \
    --no-sandbox --jobs 2 --out "$out/g" --work "$out/work" >"$out/grade.log" 2>&1 &
pid=$!
# wait for lesson 01's second suite to start: the lesson is half done
i=0
until grep -q "01-vector-add: running B_fused_elementwise" "$out/grade.log" 2>/dev/null; do
    i=$((i + 1))
    [ $i -le 6000 ] || { kill "$pid"; fail "lesson 01's second suite never started: $(tail -3 "$out/grade.log")"; }
    kill -0 "$pid" 2>/dev/null || fail "the grader ended before lesson 01's second suite: $(tail -3 "$out/grade.log")"
    sleep 0.05
done
kill -TERM "$pid"
wait "$pid"
rc=$?
[ "$rc" -ne 0 ] || fail "the interrupted grader exited 0"
r=$out/g/submissions/sub/results.json
[ -f "$r" ] || fail "no results.json after the interruption: $(tail -5 "$out/grade.log")"
line=$(grep "01-vector-add:" "$out/grade.log" | grep " / " | tail -n 1)
case $line in
    *"0.00 / 100.00"*"not graded: grading was interrupted"*) ;;
    *) fail "lesson 01 after the interruption: '$line' (want 0 points, not graded: interrupted)" ;;
esac
grep -q '"state":[[:space:]]*"interrupted"' "$r" || fail "results.json does not say the lesson was interrupted"
grep -q '"state":[[:space:]]*"graded"' "$r" && fail "results.json calls a lesson graded: $(grep '"state"' "$r")"
grep -q 'incomplete' "$out/grade.log" || fail "the summary does not call the submission incomplete"
echo "PASS: a lesson stopped halfway is 'interrupted' with 0 points, and its submission incomplete"
