#!/bin/sh
# tests/grader/split.sh — ctest grader/split: a lesson graded by a worker that
# shares its GPU (--gpu-lock, what --per-gpu gives each worker) comes out as
# one graded alone. There, each suite runs in a part beside the other
# workers (its tests not in the rubric's "alone" list), the tests whose
# cases did not pass again alone, and the "alone" tests alone; the parts'
# cases are put together in Criterion's order. Without a GPU every case
# skips, so every test of the shared part runs again: all three paths run.
# FUSIONLAB_GRADE_SPLIT_TEST=1 makes a grader without a GPU take them.
#
#   split.sh GRADER COURSE MANIFEST OUT
#
# Grades the worked solutions of lessons 01, 02 and 04 four ways (GPU hidden,
# no sandbox: only the course's own files run): directly, as a worker
# sharing its GPU, and as one worker running its tests side by side
# (--test-jobs 3, which takes the same paths without a lock), and compares
# every check's score and output, and the logs' account of the parts; and
# a second worker on the same GPU lock reads the reference the first one
# measured (gpu-lock/reference.json) instead of measuring its own, and an
# empty measurement (no time recorded) is not shared.
set -u
[ $# -eq 4 ] || { echo "usage: $0 GRADER COURSE MANIFEST OUT" >&2; exit 2; }
grader=$1 course=$2 manifest=$3 out=$4
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$out"
mkdir -p "$out/sub" "$out/lock" || fail "cannot create $out"
for l in 01-vector-add 02-fused-softmax 04-memory-traffic; do
    mkdir -p "$out/sub/$l"
    cp "$course/solutions/$l/"* "$out/sub/$l/" || fail "no worked solution of $l"
done
common="--course $course --manifest $manifest --lessons 01,02,04 --no-gpu --no-sandbox --jobs 2"
# shellcheck disable=SC2086 # $common: options, split on purpose
"$grader" "$out/sub" $common --out "$out/direct" --work "$out/work-direct" >"$out/direct.log" 2>&1 ||
    fail "the direct run failed: $(tail -3 "$out/direct.log")"
# shellcheck disable=SC2086
FUSIONLAB_GRADE_SPLIT_TEST=1 "$grader" "$out/sub" $common --shard 0/1 --gpu-lock "$out/lock" \
    --out "$out/shared" --work "$out/work-shared" >"$out/shared.log" 2>&1 ||
    fail "the run as a worker sharing its GPU failed: $(tail -3 "$out/shared.log")"
# the GPU's reference: a measurement that timed nothing (no GPU here) is not
# shared, so each worker would measure its own ...
if [ -f "$out/lock/reference.json" ] && grep -q '"0[124]"' "$out/lock/reference.json"; then
    fail "the shared worker shared a reference that timed nothing: $(cat "$out/lock/reference.json")"
fi
# ... and one that did (written here as the first worker on a GPU writes it)
# is read by the next worker instead of measuring its own
rec='{"suite": "speed", "test": "fused_vs_unfused", "label": "n=2^26", "baseline_us": 700.5,
      "candidate_us": 350.25, "speedup": 2.0, "min_speedup": 1.5, "pct_of_ceiling": 90.0,
      "min_pct": 60.0, "passed": true}'
cat >"$out/lock/reference.json" <<EOF
{"format": "fusion-lab reference 3", "gpu": "", "lessons": {
  "01": {"records": [$rec], "notes": ["lesson 01 speed::fused_vs_unfused (n=2^26): by hand"]},
  "02": {"records": [$rec], "notes": ["lesson 02 speed::fused_vs_unfused (n=2^26): by hand"]},
  "04": {"records": [$rec], "notes": ["lesson 04 speed::fused_vs_unfused (n=2^26): by hand"]}}}
EOF
# shellcheck disable=SC2086
FUSIONLAB_GRADE_SPLIT_TEST=1 "$grader" "$out/sub" $common --shard 0/1 --gpu-lock "$out/lock" \
    --out "$out/shared2" --work "$out/work-shared2" >"$out/shared2.log" 2>&1 ||
    fail "the second worker's run failed: $(tail -3 "$out/shared2.log")"
grep -q "as another worker measured it" "$out/shared2.log" ||
    fail "the second worker did not read the reference on the lock"
grep -q "== reference: lesson" "$out/shared2.log" && fail "the second worker measured the reference again"
# shellcheck disable=SC2086
FUSIONLAB_GRADE_SPLIT_TEST=1 "$grader" "$out/sub" $common --test-jobs 3 \
    --out "$out/jobs" --work "$out/work-jobs" >"$out/jobs.log" 2>&1 ||
    fail "the run with --test-jobs 3 failed: $(tail -3 "$out/jobs.log")"
a=$out/direct/submissions/sub
b=$out/shared/shards/0/submissions/sub
c=$out/jobs/submissions/sub
d=$out/shared2/shards/0/submissions/sub
[ -f "$a/results.json" ] && [ -f "$b/results.json" ] && [ -f "$c/results.json" ] &&
    [ -f "$d/results.json" ] || fail "a results.json is missing"
# every check but the lesson's summary line (its stage times differ)
# shellcheck source=tests/grader/norm.sh
. "$(cd "$(dirname "$0")" && pwd)/norm.sh" # norm FILE: results.json less its times
norm "$a/results.json" >"$out/a.json"
norm "$b/results.json" >"$out/b.json"
norm "$c/results.json" >"$out/c.json"
norm "$d/results.json" >"$out/d.json"
cmp -s "$out/b.json" "$out/d.json" ||
    fail "results.json with the reference read from the first worker differs: $(diff "$out/b.json" "$out/d.json" | head -12)"
cmp -s "$out/a.json" "$out/b.json" || fail "results.json differs: $(diff "$out/a.json" "$out/b.json" | head -12)"
cmp -s "$out/a.json" "$out/c.json" ||
    fail "results.json with --test-jobs 3 differs: $(diff "$out/a.json" "$out/c.json" | head -12)"
# and the parts did run
for want in "A_vector_add/@(huge), alone on the GPU" "A_vector_add/@(correct|edges|stream) again, alone" \
            "A_rows/@(huge|max_rows), alone on the GPU" "C_long_rows/@(max_cols), alone on the GPU"; do
    grep -qF "$want" "$b"/logs/*-tests.log || fail "no '$want' in the shared worker's test logs"
    grep -qF "$want" "$c"/logs/*-tests.log || fail "no '$want' in the --test-jobs 3 run's test logs"
done
grep -q "runs again alone on the GPU" "$out/shared.log" || fail "the progress line does not count the runs done again"
# lesson 04's Part A runs on the CPU: its tests pass side by side (Criterion
# --jobs 3), and those passes count, with nothing run again
grep -q "A_count/\*again" "$c/logs/04-tests.log" 2>/dev/null && fail "lesson 04's A_count ran again alone with --test-jobs 3"
grep -q "^\[PASS\] A_count::model_is_exact" "$c/logs/04-tests.log" ||
    fail "lesson 04's A_count did not pass side by side with --test-jobs 3: $(grep -c PASS "$c/logs/04-tests.log") passes"
echo "PASS: lessons 01, 02 and 04 graded as a worker sharing its GPU, and with --test-jobs 3 (parts side by side, again alone, alone), equal the direct run, check by check; a second worker on the GPU read the first one's reference"
