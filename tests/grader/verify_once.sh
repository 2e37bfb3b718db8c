#!/bin/sh
# tests/grader/verify_once.sh — ctest grader/verify-once: the rubric's
# "verify_once" suites (tests that compare no output array, whose trusted run
# the verify stage can only count) run once with the reference, and every
# submission's verify stage counts on that run. Without a GPU the grader
# measures a reference only as a worker on a GPU lock under
# FUSIONLAB_GRADE_SPLIT_TEST=1 (as tests/grader/split.sh does); a rubric
# listing lesson 04's A_count (CPU tests of byte models, no output array)
# stands in for B_counters (the DRAM counters, which need a GPU).
#
#   verify_once.sh GRADER COURSE MANIFEST OUT
#
# 1. The reference runs A_count once, the verify stage takes its count (and
#    runs no A_count of its own), and every check scores as with the default
#    rubric.
# 2. The count is what decides: a count shared by another worker on the GPU
#    (gpu-lock/reference.json) of 1 case scores the lesson 0 with the verify
#    stage's reason (the report claims 25 passing cases).
# 3. A shared entry that is malformed is not taken: the verify stage runs
#    A_count itself.
set -u
[ $# -eq 4 ] || { echo "usage: $0 GRADER COURSE MANIFEST OUT" >&2; exit 2; }
grader=$1 course=$2 manifest=$3 out=$4
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$out"
mkdir -p "$out/sub/04-memory-traffic" "$out/lock" || fail "cannot create $out"
cp "$course/solutions/04-memory-traffic/"* "$out/sub/04-memory-traffic/" || fail "no worked solution of 04"
sed 's/"verify_once": \["B_counters"\]/"verify_once": ["B_counters", "A_count"]/' \
    "$course/grader/rubric.json" >"$out/rubric.json"
grep -q '"verify_once": \["B_counters", "A_count"\]' "$out/rubric.json" ||
    fail "grader/rubric.json has no \"verify_once\": [\"B_counters\"] for lesson 04 to extend"
common="--course $course --manifest $manifest --lessons 04 --no-gpu --no-sandbox --jobs 2"
# shellcheck disable=SC2086 # $common: options, split on purpose
"$grader" "$out/sub" $common --out "$out/direct" --work "$out/work-direct" >"$out/direct.log" 2>&1 ||
    fail "the direct run failed: $(tail -3 "$out/direct.log")"
grep -q "verifying A_count against the worked solution$" "$out/direct.log" ||
    fail "the direct run did not verify A_count with a run of its own"

# 1. the reference's run, counted on
# shellcheck disable=SC2086
FUSIONLAB_GRADE_SPLIT_TEST=1 "$grader" "$out/sub" $common --rubric "$out/rubric.json" --shard 0/1 \
    --gpu-lock "$out/lock" --out "$out/once" --work "$out/work-once" >"$out/once.log" 2>&1 ||
    fail "the run with A_count verified once failed: $(tail -3 "$out/once.log")"
grep -q "reference: lesson 04, worked solution, suite A_count (its count of cases" "$out/once.log" ||
    fail "the reference did not run A_count: $(grep reference "$out/once.log" | head -5)"
grep -q "lesson 04 A_count: the worked solution ran 25 of its 25 cases on this GPU" "$out/once.log" ||
    fail "no note of the reference's A_count run: $(grep 'lesson 04' "$out/once.log" | head -5)"
grep -q "verifying A_count against the worked solution's run on this GPU" "$out/once.log" ||
    fail "the verify stage did not count on the reference's run"
grep -q "verifying A_count against the worked solution$" "$out/once.log" &&
    fail "the verify stage ran A_count itself too"
a=$out/direct/submissions/sub
b=$out/once/shards/0/submissions/sub
# shellcheck source=tests/grader/norm.sh
. "$(cd "$(dirname "$0")" && pwd)/norm.sh" # norm FILE: results.json less its times
norm "$a/results.json" >"$out/a.json"
norm "$b/results.json" >"$out/b.json"
cmp -s "$out/a.json" "$out/b.json" ||
    fail "results.json differs from the direct run's: $(diff "$out/a.json" "$out/b.json" | head -12)"
# (the whole submission's score: 30, Part A's checks, the rest needing a GPU)
grep -q '^	"score":	30,$' "$out/a.json" ||
    fail "the direct run did not score lesson 04's CPU checks: $(grep -m 1 '"score"' "$out/a.json")"

# 2. a shared count of 1 case decides
rec='{"suite": "speed", "test": "tiled_vs_naive_transpose", "label": "8192x8192",
      "baseline_us": 1000.0, "candidate_us": 200.0, "speedup": 5.0, "min_speedup": 3.0,
      "pct_of_ceiling": 80.0, "min_pct": 50.0, "passed": true}'
write_ref() { # the "verify_once" entry of lesson 04
    cat >"$out/lock/reference.json" <<JSON
{"format": "fusion-lab reference 3", "gpu": "", "lessons": {
  "04": {"records": [$rec], "notes": ["lesson 04 speed: by hand"], "verify_once": [$1]}}}
JSON
}
write_ref '{"suite": "A_count", "ran": ["model_is_exact"]}'
# shellcheck disable=SC2086
FUSIONLAB_GRADE_SPLIT_TEST=1 "$grader" "$out/sub" $common --rubric "$out/rubric.json" --shard 0/1 \
    --gpu-lock "$out/lock" --out "$out/short" --work "$out/work-short" >"$out/short.log" 2>&1 ||
    fail "the run with a shared count failed: $(tail -3 "$out/short.log")"
grep -q "as another worker measured it" "$out/short.log" || fail "the shared reference was not read"
c=$out/short/shards/0/submissions/sub
grep -q "A_count::model_is_exact: the report claims 17 passing cases; the grader can verify 1" \
    "$c/results.json" "$c/report.md" ||
    fail "a shared count of 1 case did not decide: $(grep -o 'the report claims[^"]*' "$c/results.json" | head -3)"
grep -q '^	"score":	0,$' "$c/results.json" || fail "the lesson with unverified claims did not score 0"

# 3. a malformed entry is not taken
write_ref '{"suite": "A_count", "ran": [17]}'
# shellcheck disable=SC2086
FUSIONLAB_GRADE_SPLIT_TEST=1 "$grader" "$out/sub" $common --rubric "$out/rubric.json" --shard 0/1 \
    --gpu-lock "$out/lock" --out "$out/bad" --work "$out/work-bad" >"$out/bad.log" 2>&1 ||
    fail "the run with a malformed shared count failed: $(tail -3 "$out/bad.log")"
grep -q "verifying A_count against the worked solution$" "$out/bad.log" ||
    fail "with a malformed shared count the verify stage did not run A_count itself"
d=$out/bad/shards/0/submissions/sub
norm "$d/results.json" >"$out/d.json"
cmp -s "$out/a.json" "$out/d.json" ||
    fail "results.json with a malformed shared count differs: $(diff "$out/a.json" "$out/d.json" | head -12)"
echo "PASS: a verify_once suite runs once with the reference, and the verify stage counts on that run (the same scores); a shared count decides; a malformed one is not taken"
