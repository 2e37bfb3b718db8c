#!/bin/sh
# tests/grader/build_ahead.sh — ctest grader/build-ahead: a batch whose next
# lesson is built and scanned ahead (grader/ahead.c, the default) grades
# exactly as one that builds each lesson in its turn (--no-build-ahead):
# the same roster, the same checks, scores and outputs in every results.json
# (less the stage times), the same logs. The batch, lessons 01 and 02 without
# a GPU, in this order: the worked solutions; lesson 01 flagged by the object
# scan and 02 not handed in; lesson 01's worked file and a lesson 02 that
# does not compile; the skeletons; nothing. A lesson is built ahead beside
# one that reached its speed audit: here good's 02 (builds), flagged's 01
# (the next submission's first: flagged), bad02's 02 (does not compile),
# skeleton's 02, and empty's 01 (not handed in: no build). A failed build or
# scan ahead is not taken: flagged's 01 and bad02's 02 are built again in
# turn, and only that counts.
#
#   build_ahead.sh GRADER COURSE MANIFEST OUT
set -u
[ $# -eq 4 ] || { echo "usage: $0 GRADER COURSE MANIFEST OUT" >&2; exit 2; }
grader=$1 course=$2 manifest=$3 out=$4
here=$(cd "$(dirname "$0")" && pwd)
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$out"
mkdir -p "$out/in" || fail "cannot create $out"
worked() { # worked LESSON FILE DEST: the worked file less its skeleton markers
    mkdir -p "$(dirname "$3")" && sed '/^\/\/[@|]/d' "$course/solutions/$1/$2" >"$3"
}
worked 01-vector-add vector_add.cu "$out/in/good/01-vector-add/vector_add.cu"
worked 02-fused-softmax softmax_fused.cu "$out/in/good/02-fused-softmax/softmax_fused.cu"
worked 01-vector-add vector_add.cu "$out/in/bad02/01-vector-add/vector_add.cu"
worked 02-fused-softmax softmax_fused.cu "$out/in/bad02/02-fused-softmax/softmax_fused.cu"
printf 'this line does not compile\n' >>"$out/in/bad02/02-fused-softmax/softmax_fused.cu"
cp -R "$here/fixtures/scan_flagged" "$out/in/flagged"
for l in 01-vector-add 02-fused-softmax; do
    mkdir -p "$out/in/skeleton/$l"
    cp "$course/lessons/$l/"*.cu "$out/in/skeleton/$l/"
done
mkdir -p "$out/in/empty/notes" && echo "nothing here" >"$out/in/empty/notes/README"
subs="$out/in/good $out/in/flagged $out/in/bad02 $out/in/skeleton $out/in/empty"
common="--course $course --manifest $manifest --lessons 01,02 --no-gpu --no-sandbox --arch 75 --jobs 2 --work $out/work"
: "${FUSIONLAB_GRADE_SEED:=build-ahead-test}"
export FUSIONLAB_GRADE_SEED
# shellcheck disable=SC2086 # $subs, $common: lists, split on purpose
"$grader" $subs $common --out "$out/ahead" >"$out/ahead.log" 2>&1 ||
    fail "the batch with builds ahead failed: $(tail -3 "$out/ahead.log")"
# shellcheck disable=SC2086
"$grader" $subs $common --no-build-ahead --out "$out/turn" >"$out/turn.log" 2>&1 ||
    fail "the batch with --no-build-ahead failed: $(tail -3 "$out/turn.log")"

# the builds ahead happened (every lesson after the batch's first that got
# as far as a build), and none with --no-build-ahead
n=$(grep -c '(ahead): building' "$out/ahead.log")
[ "$n" -ge 4 ] || fail "only $n lessons were built ahead: $(grep -e building "$out/ahead.log" | head -12)"
grep -q '(ahead)' "$out/turn.log" && fail "--no-build-ahead built a lesson ahead"
for l in '\[2/5\] flagged 01-vector-add' '\[3/5\] bad02 02-fused-softmax'; do
    grep -q "^$l (ahead): building" "$out/ahead.log" || fail "$l was not built ahead"
    grep -q "^$l: building" "$out/ahead.log" || fail "$l, which failed ahead, was not built again in turn"
done
# (each lesson's output is one line of results.json: its summary, then its stage times)
grep -h '(ahead)' "$out/ahead/submissions/flagged/results.json" "$out/ahead/submissions/bad02/results.json" |
    grep -q -e 'flagged by' -e 'compile error' && fail "a failure found ahead was taken as it was"
ls "$out/work"/ahead-*.json >/dev/null 2>&1 && fail "a child's result was left in --work"

cmp -s "$out/ahead/roster.csv" "$out/turn/roster.csv" ||
    fail "the rosters differ: $(diff "$out/ahead/roster.csv" "$out/turn/roster.csv" | head -8)"
# every check, less the stage times and the mark of a build ahead
# shellcheck source=tests/grader/norm.sh
. "$here/norm.sh"
norm_ahead() { norm "$1" | sed 's/ (ahead)//g'; }
for s in good bad02 flagged skeleton empty; do
    a=$out/ahead/submissions/$s b=$out/turn/submissions/$s
    [ -f "$a/results.json" ] && [ -f "$b/results.json" ] || fail "$s: a results.json is missing"
    norm_ahead "$a/results.json" >"$out/$s-a.json"
    norm_ahead "$b/results.json" >"$out/$s-b.json"
    cmp -s "$out/$s-a.json" "$out/$s-b.json" ||
        fail "$s: results.json differs: $(diff "$out/$s-a.json" "$out/$s-b.json" | head -12)"
    (cd "$a" && find logs -type f | LC_ALL=C sort) >"$out/$s-a.logs"
    (cd "$b" && find logs -type f | LC_ALL=C sort) >"$out/$s-b.logs"
    cmp -s "$out/$s-a.logs" "$out/$s-b.logs" ||
        fail "$s: the logs differ: $(diff "$out/$s-a.logs" "$out/$s-b.logs")"
    for f in "$a"/logs/*-build.log; do
        [ -f "$f" ] || continue
        norm_ahead "$f" >"$out/x" && norm_ahead "$b/logs/$(basename "$f")" >"$out/y" && cmp -s "$out/x" "$out/y" ||
            fail "$s: $(basename "$f") differs"
    done
done
grep -q 'compile error' "$out/ahead/submissions/bad02/results.json" ||
    fail "bad02's lesson 02, built ahead, is not a compile error"
grep -q 'flagged by the object scan' "$out/ahead/submissions/flagged/results.json" ||
    fail "flagged's lesson 01, built ahead, was not flagged"
# the sanitizer runs the student's code: beside the build of the same
# submission's next lesson (good's 02 may be built while good's 01 is
# sanitized), never beside another submission's (flagged's 01, built ahead
# beside good's 02, has ended before good's 02 is sanitized). The steps'
# lines (FUSIONLAB_GRADE_DEBUG) are written as each step ends; the object
# scans come in this order: good 01, good 02 (ahead), flagged 01 (ahead),
# flagged 01 again in turn (it failed ahead).
# shellcheck disable=SC2086 # $common: a list, split on purpose
FUSIONLAB_GRADE_DEBUG=1 "$grader" "$out/in/good" "$out/in/flagged" $common --out "$out/order" \
    >"$out/order.log" 2>&1 || fail "the batch good, flagged failed: $(tail -3 "$out/order.log")"
scans=$(grep -n '^step: sh [^ ]*/tools/scan-objects ' "$out/order.log" | cut -d: -f1 | tr '\n' ' ')
san=$(grep -n '^\[1/2\] good 02-fused-softmax: compute-sanitizer' "$out/order.log" | cut -d: -f1)
# shellcheck disable=SC2086 # the line numbers, split on purpose
set -- $scans
[ $# -eq 4 ] && [ -n "$san" ] ||
    fail "expected 4 object scans and good 02's sanitizer in $out/order.log, found scans at lines '$scans', the sanitizer at '$san'"
[ "$3" -lt "$san" ] && [ "$san" -lt "$4" ] ||
    fail "flagged's lesson 01, built ahead (its scan ended at line $3), was still being built when good's lesson 02 was sanitized (line $san)"
echo "ok: no submission's code is sanitized beside another submission's build"

# two lessons ahead: with lessons 01, 02 and 03, the submission's lesson 03
# is built beside its lesson 02 (a second child), both while its lesson 01
# is verified and sanitized, and both have ended before lesson 02's tests;
# a lesson 03 that fails there (bad03's does not compile) is built again in
# turn; and the batch grades as one built in turn
worked 01-vector-add vector_add.cu "$out/in/good3/01-vector-add/vector_add.cu"
worked 02-fused-softmax softmax_fused.cu "$out/in/good3/02-fused-softmax/softmax_fused.cu"
worked 03-layernorm layernorm_fused.cu "$out/in/good3/03-layernorm/layernorm_fused.cu"
cp -R "$out/in/good3" "$out/in/bad03"
printf 'this line does not compile\n' >>"$out/in/bad03/03-layernorm/layernorm_fused.cu"
common3=$(echo "$common" | sed 's/--lessons 01,02/--lessons 01,02,03/')
# shellcheck disable=SC2086 # $common3: a list, split on purpose
FUSIONLAB_GRADE_DEBUG=1 "$grader" "$out/in/good3" "$out/in/bad03" $common3 --out "$out/ahead3" \
    >"$out/ahead3.log" 2>&1 || fail "the batch of three lessons failed: $(tail -3 "$out/ahead3.log")"
# shellcheck disable=SC2086
"$grader" "$out/in/good3" "$out/in/bad03" $common3 --no-build-ahead --out "$out/turn3" \
    >"$out/turn3.log" 2>&1 || fail "the batch of three lessons, in turn, failed: $(tail -3 "$out/turn3.log")"
line() { grep -a -n -m1 -e "$1" "$out/ahead3.log" | cut -d: -f1; }
# the end of lesson 01's speed suite: its step line (FUSIONLAB_GRADE_DEBUG),
# written as the step ends, the first for good3 and the second for bad03
speed_end() { grep -a -n "^step: [^ ]*/test_01_vector_add --jobs .*--filter speed/" "$out/ahead3.log" | sed -n "$1p" | cut -d: -f1; }
for p in good3 bad03; do
    i=1; [ $p = bad03 ] && i=2
    two=$(line "^\[$i/2\] $p 02-fused-softmax (ahead): building")
    after=$(line "^\[$i/2\] $p 03-layernorm (ahead): building")
    speed1=$(speed_end $i)
    tests2=$(line "^\[$i/2\] $p 02-fused-softmax: running ")
    [ -n "$two" ] && [ -n "$after" ] && [ -n "$speed1" ] && [ -n "$tests2" ] ||
        fail "$p: lessons 02 and 03 were not both built ahead beside lesson 01 (lines '$two' '$after' '$speed1' '$tests2' of $out/ahead3.log)"
    [ "$speed1" -lt "$two" ] && [ "$speed1" -lt "$after" ] && [ "$after" -lt "$tests2" ] ||
        fail "$p: lesson 03 was not built ahead between the end of lesson 01's speed suite and lesson 02's tests"
done
# good3's lesson 03 took what its child found: not built again in turn, and
# its stage times say so
grep -a -q '^\[1/2\] good3 03-layernorm: building' "$out/ahead3.log" &&
    fail "good3's lesson 03, built two ahead, was built again in turn"
grep -a '03-layernorm' "$out/ahead3/submissions/good3/results.json" | grep -q 'scan [0-9.]* s (ahead)' ||
    fail "good3's lesson 03 does not say it was built ahead in its results.json"
# the children had ended before lesson 02's tests began: good3's lesson 03
# scan, the last step of its child (a step's line is written as it ends),
# comes before the line that starts lesson 02's first suite
scan3=$(grep -a -n "^step: sh [^ ]*/tools/scan-objects .*/scan-rules/lesson03.txt" "$out/ahead3.log" | head -1 | cut -d: -f1)
t2=$(line "^\[1/2\] good3 02-fused-softmax: running ")
[ -n "$scan3" ] && [ -n "$t2" ] && [ "$scan3" -lt "$t2" ] ||
    fail "good3's lesson 03 was still being built or scanned when lesson 02's tests began (lines '$scan3', '$t2')"
grep -a -q "^\[2/2\] bad03 03-layernorm: building" "$out/ahead3.log" ||
    fail "bad03's lesson 03, which failed ahead, was not built again in turn"
grep -q 'compile error' "$out/ahead3/submissions/bad03/results.json" ||
    fail "bad03's lesson 03, built two ahead, is not a compile error"
cmp -s "$out/ahead3/roster.csv" "$out/turn3/roster.csv" ||
    fail "the rosters of three lessons differ: $(diff "$out/ahead3/roster.csv" "$out/turn3/roster.csv" | head -8)"
for s in good3 bad03; do
    norm_ahead "$out/ahead3/submissions/$s/results.json" >"$out/$s-a.json"
    norm_ahead "$out/turn3/submissions/$s/results.json" >"$out/$s-b.json"
    cmp -s "$out/$s-a.json" "$out/$s-b.json" ||
        fail "$s: results.json differs: $(diff "$out/$s-a.json" "$out/$s-b.json" | head -12)"
done
ls "$out/work"/ahead-*.json >/dev/null 2>&1 && fail "a child's result was left in --work"
echo "ok: a lesson built two ahead, beside the next, grades as one built in turn"

# a test step sees no other lesson's student artifacts (grader/steps.c): with
# the sandbox, lesson 02's test step hides lesson 01's library, objects and
# test program, and runs its own (the step's command, FUSIONLAB_GRADE_DEBUG)
if FUSIONLAB_GRADE_DEBUG=1 "$grader" "$out/in/good" --course "$course" --manifest "$manifest" \
    --lessons 01,02 --no-gpu --arch 75 --jobs 2 --work "$out/work-sandboxed" --out "$out/sandboxed" \
    >"$out/sandboxed.log" 2>&1; then
    step=$(grep '^step:' "$out/sandboxed.log" | grep '/test_02_fused_softmax --jobs' | head -1)
    [ -n "$step" ] || fail "no test step of lesson 02 in $out/sandboxed.log"
    for f in liblesson01_student.a test_01_vector_add; do
        printf '%s\n' "$step" | grep -q -- "--ro-bind /dev/null [^ ]*/$f " ||
            fail "lesson 02's test step can read lesson 01's $f"
    done
    printf '%s\n' "$step" | grep -q -- "--tmpfs [^ ]*/CMakeFiles/lesson01_student.dir " ||
        fail "lesson 02's test step can read lesson 01's objects"
    printf '%s\n' "$step" | grep -q -- "/dev/null [^ ]*/test_02_fused_softmax " &&
        fail "lesson 02's test step hides its own test program"
    echo "ok: a test step of lesson 02 sees none of lesson 01's student artifacts"
elif grep -q -i -e 'bwrap' -e 'bubblewrap' -e 'user namespace' -e 'sandbox' "$out/sandboxed.log"; then
    echo "skipped the sandboxed part: the sandbox cannot start here ($(grep -i -m1 -e bwrap -e sandbox "$out/sandboxed.log"))"
else
    fail "the sandboxed batch failed: $(tail -3 "$out/sandboxed.log")"
fi
echo "PASS: $n lessons built ahead (and one two ahead); the batch grades as one built in turn"
