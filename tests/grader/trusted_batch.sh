#!/bin/sh
# tests/grader/trusted_batch.sh — ctest grader/trusted-batch: every submission
# of a batch meets the same inputs (grader/keys.c), so the verify stage's run
# of the worked solution on them is made once and kept for the rest of the
# batch (grader/stage_run.c, verify_runs); a submission's results are the
# same whether its verify stage made that run or took the kept one. Lesson
# 04's A_count (byte models, CPU tests that need no GPU) is the suite.
#
#   trusted_batch.sh GRADER COURSE MANIFEST OUT
#
# The same three submissions graded twice, in two orders (the same inputs:
# keys.c derives them from the set), each batch one scratch build: [c, a, b]
# and [a, b, c], where a and b are the worked solution and c has one byte
# model wrong (long softmax rows counted as read once: some of A_count's
# cases fail, the rest pass).
# 1. In each batch the first submission's verify stage runs A_count, every
#    later one takes the kept run (the log names whose it was), and the
#    kept copy of the evidence is gone when the grader ends.
# 2. a's results.json is the same with its own run (batch 2) and the kept
#    one (batch 1), and b's the same as a's (its id aside); c's the same with
#    its own run (batch 1) and the kept one (batch 2), and c scores less.
set -u
[ $# -eq 4 ] || { echo "usage: $0 GRADER COURSE MANIFEST OUT" >&2; exit 2; }
grader=$1 course=$2 manifest=$3 out=$4
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$out"
for s in a b c; do
    mkdir -p "$out/$s/04-memory-traffic" || fail "cannot create $out/$s"
    cp "$course/solutions/04-memory-traffic/"* "$out/$s/04-memory-traffic/" ||
        fail "no worked solution of 04"
done
model=$out/c/04-memory-traffic/traffic_model.c
sed -i 's/return tb(cols <= 32768 ? N : 2 \* N, N);/return tb(N, N);/' "$model"
cmp -s "$model" "$course/solutions/04-memory-traffic/traffic_model.c" &&
    fail "the worked traffic_model.c has no 'return tb(cols <= 32768 ? N : 2 * N, N);' to break"
# (one secret for both batches: the same inputs need the same secret too)
FUSIONLAB_GRADE_SEED=trusted-batch-secret-5e21
export FUSIONLAB_GRADE_SEED
common="--course $course --manifest $manifest --lessons 04 --no-gpu --no-sandbox --jobs 2"
grade() { # NAME SUB...: one batch
    name=$1
    shift
    # shellcheck disable=SC2086 # $common: options, split on purpose
    "$grader" "$@" $common --out "$out/$name" --work "$out/work-$name" >"$out/$name.log" 2>&1 ||
        fail "batch $name failed: $(tail -3 "$out/$name.log")"
    [ -z "$(ls -A "$out/work-$name/trusted" 2>/dev/null)" ] ||
        fail "batch $name left the kept evidence behind: $(ls "$out/work-$name/trusted")"
}
grade one "$out/c" "$out/a" "$out/b"
grade two "$out/a" "$out/b" "$out/c"

# 1. made once, then kept
own() { grep -c "verifying A_count against the worked solution$" "$1"; }
kept() { grep -c "verifying A_count against the worked solution's run on the batch's inputs (made for $2)$" "$1"; }
[ "$(own "$out/one.log")" = 1 ] && [ "$(kept "$out/one.log" c)" = 2 ] ||
    fail "batch [c, a, b]: A_count was not run once for c and kept for a and b: $(grep 'verifying A_count' "$out/one.log")"
[ "$(own "$out/two.log")" = 1 ] && [ "$(kept "$out/two.log" a)" = 2 ] ||
    fail "batch [a, b, c]: A_count was not run once for a and kept for b and c: $(grep 'verifying A_count' "$out/two.log")"
grep "verifying A_count" "$out/two.log" | head -1 | grep -q "\] a 04" ||
    fail "batch [a, b, c]: the run was not made for a, the first: $(grep 'verifying A_count' "$out/two.log" | head -1)"

# 2. the same results either way
# shellcheck source=tests/grader/norm.sh
. "$(cd "$(dirname "$0")" && pwd)/norm.sh" # norm FILE: results.json less its times
same() { # WHAT A B
    norm "$2" >"$out/x.json"
    norm "$3" >"$out/y.json"
    cmp -s "$out/x.json" "$out/y.json" || fail "$1: $(diff "$out/x.json" "$out/y.json" | head -12)"
}
r() { echo "$out/$1/submissions/$2/results.json"; }
same "a with the kept run (batch 1) and its own (batch 2)" "$(r one a)" "$(r two a)"
same "c with its own run (batch 1) and the kept one (batch 2)" "$(r one c)" "$(r two c)"
sed 's/"b"/"a"/g; s/submission b (folder)/submission a (folder)/; s|/b",$|/a",|' "$(r one b)" >"$out/b-as-a.json"
same "b (the kept run) and a (its own run, batch 2)" "$out/b-as-a.json" "$(r two a)"
score() { sed -n 's/^	"score":	\([0-9.]*\),$/\1/p' "$1" | head -1; }
sa=$(score "$(r two a)") sc=$(score "$(r two c)")
[ -n "$sa" ] && [ -n "$sc" ] && [ "$sa" != "$sc" ] ||
    fail "c (a byte model wrong) did not score other than a: a $sa, c $sc"
grep -q "bytes_softmax_fused\|softmax" "$(r two c)" ||
    fail "c's results do not name the wrong byte model"
echo "PASS: the verify stage's run of the worked solution is made once a batch and kept (a $sa, c $sc either way; b as a)"
