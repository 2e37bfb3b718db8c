#!/bin/sh
# tests/sanitize_fake.sh — tools/sanitize's own logic on a machine without a
# GPU: a fake nvidia-smi, a fake compute-sanitizer and a fake Criterion
# program (shell scripts written below) stand in for the real ones, so what
# is checked is the script's part: which tests it runs, how many at once,
# how it puts the logs together, its time limit and its verdict.
#
#   sh tests/sanitize_fake.sh   (ctest: tools/sanitize-fake)
#
# The fake program has 2 suites of 3 and 2 tests (and a speed suite the
# script must leave out); each test sleeps FAKE_SLEEP seconds. The fake
# compute-sanitizer reports an error under FAKE_TOOL for the test FAKE_BAD.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
fails=0
ok() { printf 'ok   %s\n' "$1"; }
bad() { printf 'FAIL %s\n' "$1"; fails=$((fails + 1)); }

mkdir -p "$t/bin"
cat >"$t/bin/nvidia-smi" <<'EOF'
#!/bin/sh
echo "GPU 0: Fake GPU (UUID: GPU-0)"
EOF
cat >"$t/prog" <<'EOF'
#!/bin/sh
# a Criterion test program, as far as tools/sanitize sees one
filter=
while [ $# -gt 0 ]; do
    case $1 in
        --list)
            if [ -n "${FAKE_HIDE:-}" ]; then   # a program that lies about its tests
                printf 'A_one: 2 tests\n├── alpha\n└── beta\n'
                printf 'B_two: 2 tests\n├── delta\n└── eps\n'
                exit 0
            fi
            printf 'A_one: 3 tests\n├── alpha\n├── beta\n└── gamma\n'
            printf 'B_two: 2 tests\n├── delta\n└── eps\n'
            printf 'speed: 1 test\n└── fused_vs_unfused\n'
            exit 0 ;;
        --filter) filter=$2; shift 2 ;;
        *) shift ;;
    esac
done
case $filter in *'*'*|'') echo "fake: one test per run, not '$filter'" >&2; exit 3 ;; esac
# the runs side by side, for the test to count
echo x >>"$FAKE_DIR/running.$$"
n=$(ls "$FAKE_DIR" | grep -c '^running\.')
echo "$n" >>"$FAKE_DIR/peaks"
sleep "${FAKE_SLEEP:-0}"
rm -f "$FAKE_DIR/running.$$"
if [ -n "${FUSIONLAB_TESTS_TOGETHER:-}" ]; then
    # a suite's FL_TESTs: the first one's process runs them all
    echo "$filter#group:$FUSIONLAB_TESTS_TOGETHER" >>"$FAKE_DIR/ran"
    echo "[RUN ] ${filter%/*}::${filter#*/}"
    if [ -n "${FAKE_GROUP_FAIL:-}" ]; then   # cr_assert in the second test
        echo "[FAIL] ${filter%/*}::${filter#*/}: wrong"
        exit 1
    fi
    n=$(printf '%s\n' "$FUSIONLAB_TESTS_TOGETHER" | tr ',' '\n' | wc -l)
    [ -n "${FAKE_GROUP_NO_MARK:-}" ] || echo "fusion-lab: $filter: $n tests in one process ($n ran, 0 skipped)"
    echo "[PASS] ${filter%/*}::${filter#*/}: (0.00s)"
    exit 0
fi
case $filter in
    */@\(*\))   # SUITE/@(A|B): each test a process of its own
        s=${filter%%/*} names=${filter#*/@(}
        for n in $(printf '%s\n' "${names%)}" | tr '|' ' '); do
            echo "$s/$n" >>"$FAKE_DIR/ran"
            echo "[PASS] $s::$n: Test passed"
        done
        exit 0 ;;
esac
s=${filter%/*} n=${filter#*/}
if [ "$filter" = A_one/beta ]; then
    # a parameterized test of 5 cases (FL_PARAM_TEST): one process per case,
    # or all of them in one with FUSIONLAB_CASES=together
    if [ "${FUSIONLAB_CASES:-}" = together ]; then
        echo "$filter#together" >>"$FAKE_DIR/ran"
        echo "[RUN ] A_one::beta"
        if [ -n "${FAKE_TOGETHER_FAIL:-}" ]; then   # cr_assert: the process ends there
            echo "[FAIL] A_one::beta: case 3: wrong"
            echo "[====] Synthesis: Tested: 1 | Passing: 0 | Failing: 1 | Crashing: 0"
            exit 1
        fi
        [ -n "${FAKE_NO_MARK:-}" ] || echo "fusion-lab: A_one/beta: 5 cases in one process (5 ran, 0 skipped)"
        if [ -n "${FAKE_TOGETHER_EXPECT:-}" ]; then # the line, then a failure
            echo "[FAIL] A_one::beta: case 3: wrong"
            echo "[====] Synthesis: Tested: 1 | Passing: 0 | Failing: 1 | Crashing: 0"
            exit 1
        fi
        echo "[PASS] A_one::beta: (0.00s)"
        echo "[====] Synthesis: Tested: 1 | Passing: 1 | Failing: 0 | Crashing: 0"
        exit 0
    fi
    i=0
    while [ $i -lt 5 ]; do echo "$filter#$i" >>"$FAKE_DIR/ran"; i=$((i + 1)); done
else
    echo "$filter${FUSIONLAB_CASES:+ with FUSIONLAB_CASES=$FUSIONLAB_CASES}" >>"$FAKE_DIR/ran"
fi
echo "[----] starting $s::$n"
echo "[PASS] $s::$n: Test passed"
echo "[====] Synthesis: Tested: 1 | Passing: 1 | Failing: 0 | Crashing: 0"
EOF
cat >"$t/bin/fake-sanitizer" <<'EOF'
#!/bin/sh
# compute-sanitizer: its options, then the program and its arguments
tool= code=1
while [ $# -gt 0 ]; do
    case $1 in
        --tool) tool=$2; shift 2 ;;
        --error-exitcode) code=$2; shift 2 ;;
        --target-processes|--require-cuda-init|--check-exit-code|--print-limit) shift 2 ;;
        *) break ;;
    esac
done
filter=
for a in "$@"; do [ "${prev:-}" = --filter ] && filter=$a; prev=$a; done
# the tests this process runs, and how: one, together (an FL_PARAM_TEST's
# cases) or group (a suite's FL_TESTs)
mode=one tests=$filter
[ "${FUSIONLAB_CASES:-}" = together ] && mode=together
case $filter in
    */@\(*\)) names=${filter#*/@(}
               tests=$(printf '%s\n' "${names%)}" | tr '|' '\n' | sed "s#^#${filter%%/*}/#") ;;
esac
[ -n "${FUSIONLAB_TESTS_TOGETHER:-}" ] && mode=group tests=$(printf '%s\n' "$FUSIONLAB_TESTS_TOGETHER" | tr ',' '\n')
echo "========= COMPUTE-SANITIZER"
"$@"
if [ "$tool" = "${FAKE_TOOL:-}" ] && printf '%s\n' "$tests" | grep -qx -- "${FAKE_BAD:-}" &&
    [ "$mode" = "${FAKE_BAD_MODE:-$mode}" ]; then
    echo "========= Invalid __global__ write of size 4 bytes"
    echo "=========     at bad_kernel(float *)+0x70 in /src/student.cu:42"
    echo "=========     by thread (3,0,0) in block (4,0,0)"
    echo "=========     Address 0x7f00 is out of bounds"
    echo "========= "
    echo "========= ERROR SUMMARY: 1 error"
    exit "$code"
fi
echo "========= ERROR SUMMARY: 0 errors"
[ "$filter" = "${FAKE_STATUS_UNIT:-}" ] && exit "${FAKE_STATUS:-0}"
exit 0
EOF
chmod +x "$t/bin/nvidia-smi" "$t/prog" "$t/bin/fake-sanitizer"

# run_sanitize NAME ARGS...: tools/sanitize on the fake program into $t/NAME
run_sanitize() {
    name=$1; shift
    mkdir -p "$t/$name.fake"
    FAKE_DIR="$t/$name.fake" PATH="$t/bin:$PATH" COMPUTE_SANITIZER="$t/bin/fake-sanitizer" \
        sh "$here/tools/sanitize" --out "$t/$name" --files student.cu "$@" "$t/prog" \
        >"$t/$name.out" 2>&1
    echo $?
}
peak() { sort -n "$t/$1.fake/peaks" | tail -n 1; }

# 1. every test of the two suites once per tool (speed left out), one test
#    per compute-sanitizer run; clean
rc=$(FAKE_SLEEP=0 run_sanitize clean1 --jobs 1)
[ "$rc" = 0 ] && grep -q '^sanitizer: clean under memcheck, racecheck, initcheck, synccheck' "$t/clean1.out" \
    && ok "clean, --jobs 1: exit 0, clean under all four" || { bad "clean, --jobs 1 (exit $rc)"; cat "$t/clean1.out"; }
got=$(sort "$t/clean1.fake/ran" | uniq -c | awk '{ print $1 "x" $2 }' | tr '\n' ' ')
want="4xA_one/alpha 4xA_one/beta#0 4xA_one/beta#1 4xA_one/beta#2 4xA_one/beta#3 4xA_one/beta#4 4xA_one/gamma 4xB_two/delta 4xB_two/eps "
[ "$got" = "$want" ] && ok "each test once per tool, speed left out" || bad "tests run: '$got', want '$want'"

# 2. --jobs 3: the same report, at most 3 runs of a tool at once (4 tools:
#    at most 12 in all, more than 4), and the log in the listing's order
rc=$(FAKE_SLEEP=1 run_sanitize clean3 --jobs 3)
[ "$rc" = 0 ] && ok "clean, --jobs 3: exit 0" || bad "clean, --jobs 3: exit $rc"
cmp -s "$t/clean1/report.txt" "$t/clean3/report.txt" && ok "--jobs 3 gives --jobs 1's report" ||
    { bad "--jobs 3's report differs"; diff "$t/clean1/report.txt" "$t/clean3/report.txt"; }
p=$(peak clean3)
[ "$p" -gt 4 ] && [ "$p" -le 12 ] && ok "runs side by side: at most $p at once (4 tools x 3)" ||
    bad "runs side by side: a peak of $p (want 5 to 12)"
p1=$(peak clean1)
[ "$p1" -le 4 ] && ok "--jobs 1: at most one run per tool at once ($p1)" || bad "--jobs 1: a peak of $p1"
order=$(sed -n 's/^==== sanitize: racecheck, \([^ ]*\) (limit.*/\1/p' "$t/clean3/racecheck.log" | tr '\n' ' ')
[ "$order" = "A_one/alpha A_one/beta A_one/gamma B_two/delta B_two/eps " ] &&
    ok "racecheck.log: the runs' logs whole, in the listing's order" || bad "racecheck.log order: '$order'"
blocks=$(awk '/^==== sanitize:/ { if (open) bad++; open = 1 } /ERROR SUMMARY/ { open = 0 } END { print bad + 0 }' \
    "$t/clean3/memcheck.log")
[ "$blocks" = 0 ] && ok "memcheck.log: no run's log cut into by another's" || bad "memcheck.log: $blocks runs cut into"

# 3. an error in one test under one tool, found whichever run it lands in
for j in 1 4; do
    rc=$(FAKE_SLEEP=0 FAKE_TOOL=initcheck FAKE_BAD=B_two/delta run_sanitize err$j --jobs $j)
    if [ "$rc" = 1 ] && grep -q '^initcheck: 1 error (first: bad_kernel at src/student.cu:42: Invalid __global__ write' "$t/err$j.out" &&
        grep -q '^memcheck: clean' "$t/err$j.out"; then
        ok "--jobs $j: the error in B_two/delta under initcheck, exit 1"
    else
        bad "--jobs $j: the error in B_two/delta (exit $rc)"; cat "$t/err$j.out"
    fi
done

# 4. the tool's time limit: 5 tests of 2 s, one at a time, 3 s allowed
rc=$(FAKE_SLEEP=2 run_sanitize slow --jobs 1 --timeout 3 --tool memcheck)
[ "$rc" = 1 ] && grep -q '^memcheck: did not finish within 3 s' "$t/slow.out" &&
    ok "past its limit: 'did not finish', exit 1" || { bad "past its limit (exit $rc)"; cat "$t/slow.out"; }
n=$(cat "$t/slow.fake/ran" 2>/dev/null | wc -l)
[ "$n" -lt 5 ] && ok "past its limit: the runs after it were not started ($n of 5 ran)" ||
    bad "past its limit: all $n runs ran"

# 5. a program that leaves a test out of its own --list (gamma, the one with
#    the error) hides it; --list-file with a trusted build's listing does not
sed 's/FAKE_HIDE:-/FAKE_HIDE_NOT_HERE:-/' "$t/prog" >"$t/trusted" && chmod +x "$t/trusted"
"$t/trusted" --list >"$t/listing.txt"
rc=$(FAKE_SLEEP=0 FAKE_HIDE=1 FAKE_TOOL=memcheck FAKE_BAD=A_one/gamma run_sanitize hidden --jobs 2)
[ "$rc" = 0 ] && ! grep -q "A_one/gamma" "$t/hidden.fake/ran" &&
    ok "without --list-file, a test the program leaves out of --list is not run (why the grader gives one)" ||
    bad "the lying program's run: exit $rc"
rc=$(FAKE_SLEEP=0 FAKE_HIDE=1 FAKE_TOOL=memcheck FAKE_BAD=A_one/gamma run_sanitize listfile --jobs 2 \
    --list-file "$t/listing.txt")
[ "$rc" = 1 ] && grep -q '^memcheck: 1 error' "$t/listfile.out" &&
    ok "--list-file: the hidden test runs, and its error is found" ||
    { bad "--list-file: exit $rc"; cat "$t/listfile.out"; }
rc=$(run_sanitize nolist --list-file "$t/none")
[ "$rc" = 2 ] && grep -q 'cannot be read' "$t/nolist.out" &&
    ok "--list-file that is not there refused" || bad "--list-file missing: exit $rc"

# 6. a run that ends with another status than the sanitizer's own (a test
#    that kills its compute-sanitizer: 143) is no verdict, never clean
rc=$(FAKE_SLEEP=0 FAKE_STATUS_UNIT=B_two/eps FAKE_STATUS=143 run_sanitize killed --jobs 2 --tool synccheck)
[ "$rc" = 2 ] && grep -q '^synccheck: could not run: compute-sanitizer ended with exit status 143 under B_two/eps' "$t/killed.out" &&
    ok "a run ended by a signal: 'could not run', not clean" || { bad "a run ended by a signal: exit $rc"; cat "$t/killed.out"; }
rc=$(FAKE_SLEEP=0 FAKE_STATUS_UNIT=B_two/eps FAKE_STATUS=1 run_sanitize failed --jobs 2 --tool synccheck)
[ "$rc" = 0 ] && ok "a run whose test failed (Criterion's 1) still counts (the other checks judge the test)" ||
    { bad "a failed test's run: exit $rc"; cat "$t/failed.out"; }

# 7. bad --jobs, and --suites naming a suite the program lacks
rc=$(run_sanitize badjobs --jobs 0)
[ "$rc" = 2 ] && grep -q -- '--jobs needs a whole number' "$t/badjobs.out" && ok "--jobs 0 refused" ||
    bad "--jobs 0: exit $rc"
rc=$(run_sanitize nosuite --suites "A_one C_none")
[ "$rc" = 2 ] && grep -q 'has no suite C_none' "$t/nosuite.out" && ok "--suites with an unknown suite refused" ||
    { bad "--suites C_none: exit $rc"; cat "$t/nosuite.out"; }

# 8. --source: the test it declares with FL_PARAM_TEST (A_one/beta, 5 cases)
#    runs its cases in one process (FUSIONLAB_CASES=together); the other tests
#    run as before, without FUSIONLAB_CASES (even when the caller's environment
#    has one); a test the source declares that the listing lacks does not
#    run. A together run that is not clean and whole (a case failed, the
#    tool found errors, the test program did not get to its last case) is run
#    again one process per case, and only that run counts, unless it cannot
#    finish in time: then the together run's errors count.
cat >"$t/test_fake.c" <<'EOF'
FL_PARAM_TEST(A_one, beta, int, c, kCases, 5)
{
    check(*c);
}
FL_PARAM_TEST( Z_none,
               zeta, int, c, kCases, 5)
EOF
ran() { sort "$t/$1.fake/ran" | tr '\n' ' '; }
# source_run NAME SOURCE RAN ORDER TIMES LINES WHAT: memcheck with --source
# SOURCE (the caller's environment with a FUSIONLAB_CASES of its own): what
# ran, the log's order, times.txt's line for the unit run together and its
# number of lines
source_run() {
    rc=$(FAKE_SLEEP=0 FUSIONLAB_CASES=0/9 run_sanitize "$1" --jobs 2 --tool memcheck --source "$2")
    [ "$rc" = 0 ] && [ "$(ran "$1")" = "$3" ] && ok "--source: $7" ||
        { bad "--source, $1 (exit $rc): ran '$(ran "$1")', want '$3'"; cat "$t/$1.out"; }
    order=$(sed -n 's/^==== sanitize: memcheck, \(.*\) (limit.*/\1/p' "$t/$1/memcheck.log" | tr '\n' '|')
    [ "$order" = "$4" ] && ok "memcheck.log ($1): in the listing's order, each run named" ||
        bad "memcheck.log ($1): '$order'"
    grep -q " memcheck $5\$" "$t/$1/times.txt" && [ "$(wc -l <"$t/$1/times.txt")" = "$6" ] &&
        ok "times.txt ($1): one line per run" || { bad "times.txt ($1)"; cat "$t/$1/times.txt"; }
}
source_run together "$t/test_fake.c" "A_one/alpha A_one/beta#together A_one/gamma B_two/delta B_two/eps " \
    "A_one/alpha|A_one/beta, every case in one process|A_one/gamma|B_two/delta|B_two/eps|" \
    "A_one/beta (cases together)" 5 "the FL_PARAM_TEST's cases in one process, the other tests as before"
want_again="A_one/alpha A_one/beta#0 A_one/beta#1 A_one/beta#2 A_one/beta#3 A_one/beta#4 A_one/beta#together A_one/gamma B_two/delta B_two/eps "
# ran_again NAME RC ID HEADER UNIT: the unit ID ran again one process per case
# or test (its log's header HEADER), and that run counted
ran_again() {
    [ "$2" = 0 ] && [ "$(ran "$1")" = "$want_again" ] && [ -r "$t/$1/racecheck.d/$3.together.log" ] &&
        grep -q "^==== sanitize: racecheck, $4" "$t/$1/racecheck.log" &&
        grep -q " racecheck $5 ([a-z]* together, then one by one)\$" "$t/$1/times.txt"
}
again_ok() { ran_again "$1" "$2" 2 "A_one/beta, one process per case" A_one/beta; }
rc=$(FAKE_SLEEP=0 FAKE_TOGETHER_FAIL=1 run_sanitize again_fail --jobs 2 --tool racecheck --source "$t/test_fake.c")
again_ok again_fail "$rc" && ok "a case failed with the cases together: run again one process per case, which counts" ||
    { bad "a case failed together: exit $rc, ran '$(ran again_fail)'"; cat "$t/again_fail.out"; }
rc=$(FAKE_SLEEP=0 FAKE_NO_MARK=1 run_sanitize again_nomark --jobs 2 --tool racecheck --source "$t/test_fake.c")
again_ok again_nomark "$rc" && ok "no word that every case ran: run again one process per case" ||
    { bad "no word that every case ran: exit $rc, ran '$(ran again_nomark)'"; cat "$t/again_nomark.out"; }
rc=$(FAKE_SLEEP=0 FAKE_TOOL=racecheck FAKE_BAD=A_one/beta FAKE_BAD_MODE=together run_sanitize errtogether \
    --jobs 2 --tool racecheck --source "$t/test_fake.c")
again_ok errtogether "$rc" && grep -q 'in one process: the tool reported errors' "$t/errtogether/racecheck.log" &&
    ok "an error only with the cases together: run again one process per case, which decides (clean)" ||
    { bad "an error only together: exit $rc"; cat "$t/errtogether.out"; }
rc=$(FAKE_SLEEP=0 FAKE_TOGETHER_EXPECT=1 run_sanitize expect --jobs 2 --tool racecheck --source "$t/test_fake.c")
again_ok expect "$rc" &&
    ok "a case failed after the line was printed: run again one process per case (a failing process's line is not taken)" ||
    { bad "a case failed after the line: exit $rc, ran '$(ran expect)'"; cat "$t/expect.out"; }
rc=$(FAKE_SLEEP=2 FAKE_TOOL=racecheck FAKE_BAD=A_one/beta FAKE_BAD_MODE=together run_sanitize notime \
    --jobs 1 --tool racecheck --timeout 3 --suites A_one --source "$t/test_fake.c")
[ "$rc" = 1 ] && grep -q '^racecheck: 1 error (first: bad_kernel at src/student.cu:42' "$t/notime.out" &&
    grep -q 'the errors of the run with every case in one process count' "$t/notime/racecheck.log" &&
    ok "no time to run them one by one: the errors found with the cases together count" ||
    { bad "no time for the run one by one: exit $rc"; cat "$t/notime.out"; }
rc=$(FAKE_SLEEP=0 FAKE_TOOL=racecheck FAKE_BAD=A_one/beta run_sanitize errboth --jobs 2 --tool racecheck \
    --source "$t/test_fake.c")
[ "$rc" = 1 ] && grep -q '^racecheck: 1 error' "$t/errboth.out" &&
    ok "an error in both runs of the test is found" || { bad "an error in both runs: exit $rc"; cat "$t/errboth.out"; }
# --no-again: the run with the cases together stands, not run again one by one
# (a case that failed: the tool's verdict as it found it, clean here; an
# error found only together: it counts)
want_once="A_one/alpha A_one/beta#together A_one/gamma B_two/delta B_two/eps "
rc=$(FAKE_SLEEP=0 FAKE_TOGETHER_FAIL=1 run_sanitize noagain --jobs 2 --tool racecheck --source "$t/test_fake.c" --no-again)
[ "$rc" = 0 ] && [ "$(ran noagain)" = "$want_once" ] && [ ! -e "$t/noagain/racecheck.d/2.together.log" ] &&
    grep -q 'a case failed with every case in one process; not run again one by one (--no-again)' "$t/noagain/racecheck.log" &&
    grep -q " racecheck A_one/beta (cases together; not run again one by one)\$" "$t/noagain/times.txt" &&
    ok "--no-again: a case failed with the cases together; that run stands" ||
    { bad "--no-again, a case failed: exit $rc, ran '$(ran noagain)'"; cat "$t/noagain.out"; }
rc=$(FAKE_SLEEP=0 FAKE_TOOL=racecheck FAKE_BAD=A_one/beta FAKE_BAD_MODE=together run_sanitize noagain_err \
    --jobs 2 --tool racecheck --source "$t/test_fake.c" --no-again)
[ "$rc" = 1 ] && [ "$(ran noagain_err)" = "$want_once" ] && grep -q '^racecheck: 1 error' "$t/noagain_err.out" &&
    ok "--no-again: an error found with the cases together counts" ||
    { bad "--no-again, an error together: exit $rc, ran '$(ran noagain_err)'"; cat "$t/noagain_err.out"; }
rc=$(run_sanitize nosource --source "$t/none.c")
[ "$rc" = 2 ] && grep -q -- '--source .* cannot be read' "$t/nosource.out" && ok "--source that is not there refused" ||
    bad "--source missing: exit $rc"

# 9. --source: the tests it declares with FL_TEST run, for each suite, in
#    the first one's process (FUSIONLAB_TESTS_TOGETHER: all of them, the
#    listing's order); a suite's only FL_TEST (A_one/alpha) and one the
#    listing lacks (Z_none/omega) run as plain tests, or not at all. Such a
#    run that is not clean and whole is run again, one process per test
#    (SUITE/@(A|B)), and only that run counts.
cat "$t/test_fake.c" - >"$t/test_group.c" <<'EOF'
FL_TEST(B_two, eps) { }
FL_TEST(A_one, alpha) { }
FL_TEST( B_two ,
         delta ) { }
FL_TEST(Z_none, omega) { }
EOF
source_run group "$t/test_group.c" \
    "A_one/alpha A_one/beta#together A_one/gamma B_two/delta#group:B_two/delta,B_two/eps " \
    "A_one/alpha|A_one/beta, every case in one process|A_one/gamma|B_two/delta, its suite's tests B_two/delta,B_two/eps in one process|" \
    "B_two/delta,B_two/eps (tests together)" 4 "a suite's FL_TESTs in one process, the first one's, in the listing's order"
want_again="A_one/alpha A_one/beta#together A_one/gamma B_two/delta B_two/delta#group:B_two/delta,B_two/eps B_two/eps "
# NAME|VARIABLES|WHAT: each run again one process per test, which counts
for c in "group_fail|FAKE_GROUP_FAIL=1|a test failed with the suite's tests together" \
    "group_nomark|FAKE_GROUP_NO_MARK=1|no word that every test ran" \
    "group_only|FAKE_TOOL=racecheck FAKE_BAD=B_two/eps FAKE_BAD_MODE=group|an error only with the tests together"; do
    name=${c%%|*} vars=${c#*|} what=${c##*|}
    vars=${vars%%|*}
    eval "rc=\$($vars FAKE_SLEEP=0 run_sanitize $name --jobs 2 --tool racecheck --source \"\$t/test_group.c\")"
    ran_again "$name" "$rc" 4 "B_two/@(delta|eps), one process per test" B_two/delta,B_two/eps &&
        { [ "$name" != group_only ] || grep -q 'in one process: the tool reported errors' "$t/$name/racecheck.log"; } &&
        ok "$what: run again one process per test, which counts" ||
        { bad "$what: exit $rc, ran '$(ran "$name")'"; cat "$t/$name.out"; }
done
rc=$(FAKE_SLEEP=0 FAKE_TOOL=racecheck FAKE_BAD=B_two/eps run_sanitize group_both --jobs 2 --tool racecheck \
    --source "$t/test_group.c")
[ "$rc" = 1 ] && grep -q '^racecheck: 1 error' "$t/group_both.out" && [ "$(ran group_both)" = "$want_again" ] &&
    ok "an error in the second test of a suite's run, and in its own process: found" ||
    { bad "an error in both runs of B_two/eps: exit $rc, ran '$(ran group_both)'"; cat "$t/group_both.out"; }

[ $fails = 0 ] && { echo "tools/sanitize: all checks pass"; exit 0; }
echo "tools/sanitize: $fails check(s) failed"
exit 1
