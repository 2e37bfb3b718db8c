#!/bin/sh
# tests/grader/hostile/run.sh — grade the hostile corpus and check that every
# attack scored 0 with a reason and harmed nothing.
#
#   run.sh GRADER COURSE MANIFEST OUTDIR [--gpu]
#
# One batch, in this order: a victim (the untouched skeleton, graded first so
# that later attacks can reach its results), every hostile submission whose
# .expect says `needs-gpu no` (all of them with --gpu; `order N` sorts them,
# default 50: the ones that tamper with the course or the scratch build go
# last), then the two honest controls (the worked solution of lesson 01 and
# the untouched skeleton). Without --gpu the grader runs with
#   --lessons 01 --no-gpu --arch 75 --jobs 2 --suite-timeout 20
#   --lesson-timeout 40 --build-timeout 60 --sanitizer-timeout 60
# (with --gpu: no --no-gpu, no --arch) and FUSIONLAB_GRADE_SEED set to a
# fresh random secret. Then it prints one line per check, `ok   name   ...`
# or `FAIL name   why`, and exits 1 if any failed:
#   - each hostile submission scored 0 and its results.json or report.md
#     holds the .expect's reason (check.py), quotes no line of the worked
#     solution, no /etc/passwd line (`absent`), nothing of a previous batch;
#     `valid-outputs yes`: its report.md holds no control byte, no U+FFFF,
#     no raw HTML outside code, no broken-out ``` fence;
#   - the worked solution scored exactly what it scores graded ALONE (first,
#     into OUTDIR/alone), with the same check results, under its own name;
#     the skeleton control and the victim scored 0, were graded like it, and
#     their results were not rewritten;
#   - nothing outside the grader's scratch changed: the course tree it grades
#     (a copy of COURSE, see below), the submissions, a previous batch's
#     results left in OUT (canaries), a file next to OUT; no process of the
#     batch outlived it; nothing reached a TCP listener on 127.0.0.1:47613;
#     no file HOSTILE-PWNED* appeared (shell injection through a name);
#   - the batch ended within HOSTILE_BOUND seconds (default 900) and no
#     submission took longer than its limits allow;
#   - junit.xml parses, roster.csv parses with one row per submission and no
#     formula cells, every results.json parses;
#   - the secret, reversed, in hex, base64 or rot13, and the grader's
#     environment (a canary variable) appear in no file under OUT;
#   - --out/--work misuse: --out the submissions' folder is refused and
#     deletes nothing; --work the course tree is refused and changes nothing;
#     a second batch on a --work in use is refused at once and the first
#     one is unharmed (HOSTILE_MISUSE=0 skips these).
#
# The grader is pointed at a COPY of COURSE (OUTDIR/course: git's tracked and
# untracked-but-not-ignored files, else the whole tree): several attacks
# rewrite the course they are graded with (tools/scan-objects, the rubric),
# and the checkout the runner was started from must never be the one they
# reach; checksumming a working tree that colleagues edit meanwhile would be
# noise. The grader's whole run is bounded by backstops of its own (soft
# limits: data segment 12 GiB or half the memory, files 4 GiB; the wall
# clock), so a defence that is missing shows up as a FAIL line, not as a
# machine that runs out of memory or disk.
#
# For diagnosis: HOSTILE_ONLY="a b" grades only those hostile entries;
# HOSTILE_KEEP=1 leaves the staged copies in OUTDIR; HOSTILE_MEM_KIB sets the
# data backstop (KiB); HOSTILE_GRADER_FLAGS replaces the grader options above.
set -u
if [ $# -lt 4 ] || [ $# -gt 5 ]; then
    echo "usage: $0 GRADER COURSE MANIFEST OUTDIR [--gpu]" >&2
    exit 2
fi
gpu=0
if [ $# -eq 5 ]; then
    [ "$5" = --gpu ] || { echo "run.sh: unknown option $5" >&2; exit 2; }
    gpu=1
fi
here=$(cd "$(dirname "$0")" && pwd)
abs() { (cd "$(dirname "$1")" && printf '%s/%s\n' "$(pwd)" "$(basename "$1")"); }
grader=$(abs "$1") || exit 2
course=$(cd "$2" && pwd) || exit 2
manifest=$(abs "$3") || exit 2
[ -x "$grader" ] || { echo "run.sh: $grader is not a program" >&2; exit 2; }
[ -f "$manifest" ] || { echo "run.sh: no manifest $manifest" >&2; exit 2; }
rm -rf "$4"
mkdir -p "$4" || exit 2
outdir=$(cd "$4" && pwd)
bound=${HOSTILE_BOUND:-900}
fails=0
ok() { printf 'ok   %-28s %s\n' "$1" "$2"; }
fail() { printf 'FAIL %-28s %s\n' "$1" "$2"; fails=$((fails + 1)); }
rand() { od -An -N8 -tx1 /dev/urandom | tr -d ' \n'; }

secret="hostile-secret-$(rand)"
env_canary="env-canary-$(rand)"
prev_marker="PREVIOUS-BATCH-$(rand)"
FUSIONLAB_GRADE_SEED=$secret
FUSIONLAB_HOSTILE_API_TOKEN=$env_canary # what an instructor's shell might export
export FUSIONLAB_GRADE_SEED FUSIONLAB_HOSTILE_API_TOKEN
set -- --lessons 01 --jobs 2 --suite-timeout 20 --lesson-timeout 40 --build-timeout 60 \
    --sanitizer-timeout 60
[ $gpu = 1 ] || set -- "$@" --no-gpu --arch 75
flags=${HOSTILE_GRADER_FLAGS:-$(printf '%s ' "$@")} # no spaces inside: split again
max_submission_s=$((60 + 40 + 60 + 90)) # build + suites + sanitizer + slack

# backstops for the grader's whole run (see above)
# (above the grader's own limits, so that those act first: builds get 8 GiB
# of address space and 2 GiB files in grader/steps.c today)
mem_kib=$(awk '/^MemTotal:/ { print int($2 / 2) }' /proc/meminfo 2>/dev/null)
[ -n "$mem_kib" ] && [ "$mem_kib" -lt 12582912 ] || mem_kib=12582912
mem_kib=${HOSTILE_MEM_KIB:-$mem_kib}
backstop() { # soft limits: the grader may set its own, lower or higher
    ulimit -S -d "$mem_kib" 2>/dev/null
    ulimit -S -f 8388608 2>/dev/null # 512-byte blocks in a POSIX shell: 4 GiB
}

# ---- processes that outlived a run: listed, then ended (by pid) ------------------
listener=
leftovers() { # $1: what ran
    found=
    for d in /proc/[0-9]*; do
        pid=${d#/proc/}
        [ "$pid" = $$ ] && continue
        [ -n "$listener" ] && [ "$pid" = "$listener" ] && continue
        cwd=$(readlink "$d/cwd" 2>/dev/null) || continue
        exe=$(readlink "$d/exe" 2>/dev/null) || exe=
        case "$cwd/ $exe" in
            "$outdir"/*) found="$found $pid" ;;
            *" $outdir"/*) found="$found $pid" ;;
        esac
    done
    if [ -n "$found" ]; then
        n=$(echo $found | wc -w)
        what=$(for p in $found; do tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | cut -c1-60; echo; done |
            sort | uniq -c | sort -rn | head -3 | sed 's/^ *//' | tr '\n' ';')
        fail "$1/processes" "$n processes of it outlived it ($what): ended now"
        for p in $found; do kill -9 "$p" 2>/dev/null; done
    else
        ok "$1/processes" "no process outlived it"
    fi
}
cleanup() {
    [ -n "$listener" ] && kill "$listener" 2>/dev/null
    for d in /proc/[0-9]*; do
        pid=${d#/proc/}
        [ "$pid" = $$ ] && continue
        case "$(readlink "$d/cwd" 2>/dev/null)/" in "$outdir"/*) kill -9 "$pid" 2>/dev/null ;; esac
    done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

sums() { # checksums of every file under $1, sorted
    (cd "$1" 2>/dev/null && find . -type f -exec sha256sum {} + 2>/dev/null | sort -k 2)
}

# ---- the course copy -----------------------------------------------------------------
echo "== staging in $outdir"
mkdir -p "$outdir/course"
if git -C "$course" rev-parse --show-toplevel >/dev/null 2>&1; then
    git -C "$course" ls-files -z -co --exclude-standard |
        (cd "$course" && xargs -0 tar -cf - --no-recursion 2>/dev/null) | tar -xf - -C "$outdir/course"
else
    (cd "$course" && tar -cf - --exclude=./build --exclude='./build-*' --exclude=./grade-out .) |
        tar -xf - -C "$outdir/course"
fi
ccourse=$outdir/course
cp -R "$ccourse" "$outdir/course.pristine" # for the misuse checks
[ -f "$ccourse/lessons/01-vector-add/vector_add.cu" ] &&
    [ -f "$ccourse/solutions/01-vector-add/vector_add.cu" ] ||
    { echo "run.sh: the course copy lacks lesson 01 or its worked solution" >&2; exit 2; }

# ---- the submissions ------------------------------------------------------------------
mkdir -p "$outdir/subs" "$outdir/controls"
for c in victim control_skeleton; do
    mkdir -p "$outdir/controls/$c/01-vector-add"
    cp "$ccourse/lessons/01-vector-add/vector_add.cu" "$outdir/controls/$c/01-vector-add/"
done
mkdir -p "$outdir/controls/control_solution/01-vector-add"
cp "$ccourse/solutions/01-vector-add/vector_add.cu" "$outdir/controls/control_solution/01-vector-add/"
sh "$here/generate.sh" "$ccourse" "$outdir/gen" || { echo "run.sh: generate.sh failed" >&2; exit 2; }

# A committed entry holds its attack; `#pragma hostile NAME` lines stand for
# blocks/NAME.inc (helpers every such file must carry itself) and
# `#pragma hostile skeleton` for the course's untouched skeleton (all after
# its #include "vector_add.h"; "remembering-outputs": its launchers also note
# their output array), so the submissions never drift from the course.
awk 'seen { print } /^#include "vector_add.h"/ { seen = 1 }' \
    "$ccourse/lessons/01-vector-add/vector_add.cu" >"$outdir/skeleton.body"
awk '/^EXTERN_C cudaError_t vector_add\(/ { out = "c" }
     /^EXTERN_C cudaError_t fused_elementwise\(/ { out = "y" }
     { print }
     /if \(n == 0\) return cudaSuccess;/ { printf "    HS_REMEMBER(%s, n, stream);\n", out }' \
    "$outdir/skeleton.body" >"$outdir/skeleton.remember"
expand_entry() { # $1: a staged copy of an entry; expanded in place
    find "$1" -type f -name '*.cu' | while IFS= read -r f; do
        awk -v blocks="$here/blocks" -v skel="$outdir/skeleton.body" \
            -v rem="$outdir/skeleton.remember" '
            $1 == "#pragma" && $2 == "hostile" {
                if ($3 == "skeleton") {
                    file = $4 == "remembering-outputs" ? rem : skel
                    print "// ---- the course'"'"'s untouched skeleton (put here by run.sh) ----"
                } else file = blocks "/" $3 ".inc"
                n = 0
                while ((getline l < file) > 0) { print l; ++n }
                close(file)
                if (n == 0) print "#error \"run.sh: no block " $3 "\""
                next
            }
            { print }' "$f" >"$f.expanded" && mv "$f.expanded" "$f"
    done
}

list=$outdir/submissions.list # name US path US expect US role (US: \037), NUL-ended, in order
: >"$list"
record() { printf '%s\037%s\037%s\037%s\0' "$1" "$2" "$3" "$4" >>"$list"; }
set -- # the batch's submissions, in order
record victim "$outdir/controls/victim" - victim
set -- "$@" "$outdir/controls/victim"
skipped=
for order_name in $(for e in "$here"/*.expect; do
    n=$(basename "$e" .expect)
    o=$(sed -n 's/^order[[:space:]]\{1,\}\([0-9]\{1,\}\).*/\1/p' "$e" | head -1)
    printf '%03d:%s\n' "${o:-50}" "$n"
done | sort); do
    name=${order_name#*:}
    e=$here/$name.expect
    if [ -n "${HOSTILE_ONLY:-}" ]; then
        case " $HOSTILE_ONLY " in *" $name "*) ;; *) continue ;; esac
    fi
    if [ $gpu = 0 ] && grep -q '^needs-gpu[[:space:]]\{1,\}yes' "$e"; then
        skipped="$skipped $name"
        continue
    fi
    if grep -q '^generated[[:space:]]\{1,\}yes' "$e"; then
        path=
        for p in "$outdir/gen/$name"/* "$outdir/gen/$name"/.[!.]* "$outdir/gen/$name"/..?*; do
            [ -e "$p" ] && path=$p
        done
        [ -n "$path" ] || { fail "$name" "generate.sh made no submission for it"; continue; }
    else
        [ -d "$here/$name" ] || { fail "$name" "no submission folder $here/$name"; continue; }
        cp -R "$here/$name" "$outdir/subs/$name"
        expand_entry "$outdir/subs/$name"
        path=$outdir/subs/$name
    fi
    record "$name" "$path" "$e" hostile
    set -- "$@" "$path"
done
record control_solution "$outdir/controls/control_solution" - control_solution
record control_skeleton "$outdir/controls/control_skeleton" - control_skeleton
set -- "$@" "$outdir/controls/control_solution" "$outdir/controls/control_skeleton"
[ -n "$skipped" ] && echo "== not graded without --gpu (needs-gpu yes):$skipped"

# a previous batch's results, in OUT as it is and as it will be (submissions/)
batch=$outdir/batch
for d in "$batch/zz_previous_batch" "$batch/submissions/zz_previous_batch"; do
    mkdir -p "$d"
    printf '{"score": 42, "output": "%s", "tests": []}\n' "$prev_marker" >"$d/results.json"
    printf '# %s\n' "$prev_marker" >"$d/report.md"
done
printf 'next to the grader output: %s\n' "$prev_marker" >"$outdir/outside-canary.txt"
sums "$ccourse" >"$outdir/course.before"
{ sums "$outdir/subs"; sums "$outdir/gen"; sums "$outdir/controls"; } >"$outdir/subs.before"
{ sums "$batch/zz_previous_batch"; sums "$batch/submissions/zz_previous_batch";
  sha256sum "$outdir/outside-canary.txt"; } >"$outdir/canary.before"

# ---- a listener for what the network attack sends ---------------------------------
: >"$outdir/net-received"
(cd / && exec python3 -c '
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 47613))
s.listen(64)
out = open(sys.argv[1], "ab", 0)
while True:
    c, _ = s.accept()
    c.settimeout(2)
    try:
        while True:
            d = c.recv(4096)
            if not d:
                break
            out.write(d)
    except Exception:
        pass
    c.close()
' "$outdir/net-received") 2>"$outdir/listener.log" &
listener=$!

# ---- the worked solution alone, then the batch ------------------------------------------
echo "== the worked solution alone ($flags)"
(cd "$outdir" && backstop && exec timeout -k 30 600 "$grader" --course "$ccourse" \
    --manifest "$manifest" --out "$outdir/alone" $flags "$outdir/controls/control_solution") \
    >"$outdir/alone.log" 2>&1
echo "   the grader exited with $? (log: $outdir/alone.log)"
leftovers alone

n=$#
echo "== the batch: $n submissions, bound ${bound} s"
t0=$(date +%s)
(cd "$outdir" && backstop && exec timeout -k 30 "$bound" "$grader" --course "$ccourse" \
    --manifest "$manifest" --out "$batch" $flags "$@") >"$outdir/batch.log" 2>&1
rc=$?
t1=$(date +%s)
echo "   the grader exited with $rc after $((t1 - t0)) s (log: $outdir/batch.log)"
if [ $rc = 124 ] || [ $rc = 137 ] || [ $((t1 - t0)) -gt "$bound" ]; then
    fail batch/time "the batch ran past its bound of $bound s and was stopped"
else
    ok batch/time "the batch took $((t1 - t0)) s (bound $bound s); the grader exited with $rc"
fi
sleep 2
leftovers batch

# ---- what the batch wrote -----------------------------------------------------------------
HOSTILE_SECRET=$secret HOSTILE_ENV_CANARY=$env_canary HOSTILE_PREV_MARKER=$prev_marker \
    HOSTILE_MAX_SUBMISSION_S=$max_submission_s \
    python3 "$here/check.py" "$list" "$batch" "$outdir/alone" "$ccourse" >"$outdir/check.out" 2>&1
rc=$?
cat "$outdir/check.out"
k=$(grep -c '^FAIL' "$outdir/check.out")
[ $rc != 0 ] && [ "$k" = 0 ] && k=1 # check.py itself failed
fails=$((fails + k))

# ---- nothing outside the scratch ---------------------------------------------------------
sums "$ccourse" >"$outdir/course.after"
if cmp -s "$outdir/course.before" "$outdir/course.after"; then
    ok batch/course "the course tree the grader used is unchanged"
else
    changed=$(diff "$outdir/course.before" "$outdir/course.after" | sed -n 's/^[<>] [0-9a-f]*  \.\///p' |
        sort -u | head -6 | tr '\n' ' ')
    fail batch/course "the course tree changed: $changed"
fi
{ sums "$outdir/subs"; sums "$outdir/gen"; sums "$outdir/controls"; } >"$outdir/subs.after"
cmp -s "$outdir/subs.before" "$outdir/subs.after" && ok batch/submissions "no submission was changed" ||
    fail batch/submissions "submissions changed: $(diff "$outdir/subs.before" "$outdir/subs.after" |
        sed -n 's/^[<>] [0-9a-f]*  \.\///p' | sort -u | head -4 | tr '\n' ' ')"
{ sums "$batch/zz_previous_batch"; sums "$batch/submissions/zz_previous_batch";
  sha256sum "$outdir/outside-canary.txt" 2>/dev/null; } >"$outdir/canary.after"
cmp -s "$outdir/canary.before" "$outdir/canary.after" &&
    ok batch/canaries "a previous batch's results and a file next to OUT are untouched" ||
    fail batch/canaries "changed or deleted: $(diff "$outdir/canary.before" "$outdir/canary.after" |
        sed -n 's/^[<>] [0-9a-f]*  //p' | sed "s|$outdir/||" | sort -u | head -4 | tr '\n' ' ')"
if [ -s "$outdir/net-received" ]; then
    fail batch/network "the listener on 127.0.0.1:47613 received $(wc -c <"$outdir/net-received") bytes$(
        grep -q "$secret" "$outdir/net-received" && echo ', the batch secret among them')"
elif [ -s "$outdir/listener.log" ]; then
    ok batch/network "(not checked: the listener could not start: $(tail -1 "$outdir/listener.log"))"
else
    ok batch/network "nothing reached the listener on 127.0.0.1:47613"
fi
pwned=$(find "$outdir" . -maxdepth 6 -name 'HOSTILE-PWNED*' 2>/dev/null | head -3 | tr '\n' ' ')
[ -z "$pwned" ] && ok batch/shell "no submission name was run as a shell command" ||
    fail batch/shell "a submission's name ran as shell commands: $pwned"

# ---- --out and --work misuse ------------------------------------------------------------
if [ "${HOSTILE_MISUSE:-1}" != 0 ]; then
    m=$outdir/misuse
    # a fresh copy of the course: what the batch did to its copy stays out
    mkdir -p "$m"
    cp -R "$outdir/course.pristine" "$m/course"
    ccourse=$m/course
    for s in alice bob carol dave; do
        mkdir -p "$m/subs/$s/01-vector-add"
        cp "$ccourse/lessons/01-vector-add/vector_add.cu" "$m/subs/$s/01-vector-add/"
    done
    # --out the folder that holds the submissions
    sums "$m/subs" >"$m/subs.before"
    ls -A "$m/subs" >"$m/list.before"
    (cd "$outdir" && backstop && exec timeout -k 10 300 "$grader" --course "$ccourse" \
        --manifest "$manifest" --out "$m/subs" $flags "$m/subs/alice" "$m/subs/bob") \
        >"$m/out-is-subs.log" 2>&1
    rc=$?
    sums "$m/subs" >"$m/subs.after"
    ls -A "$m/subs" >"$m/list.after"
    if [ $rc = 0 ]; then
        fail misuse/out-is-submissions "--out = the submissions' folder was not refused$(
            cmp -s "$m/subs.before" "$m/subs.after" || echo ': submissions deleted or changed')"
    elif ! cmp -s "$m/subs.before" "$m/subs.after" || ! cmp -s "$m/list.before" "$m/list.after"; then
        fail misuse/out-is-submissions "refused (exit $rc), but the folder changed"
    else
        ok misuse/out-is-submissions "refused (exit $rc): $(grep -m1 -i 'out' "$m/out-is-subs.log" | cut -c1-90)"
    fi
    leftovers misuse/out-is-submissions
    # --work the course tree itself
    sums "$ccourse" >"$m/course.before"
    (cd "$outdir" && backstop && exec timeout -k 10 300 "$grader" --course "$ccourse" \
        --manifest "$manifest" --out "$m/out2" --work "$ccourse" $flags "$m/subs/carol") \
        >"$m/work-is-course.log" 2>&1
    rc=$?
    sums "$ccourse" >"$m/course.after"
    if [ $rc = 0 ]; then
        fail misuse/work-is-course "--work = the course tree was not refused$(
            cmp -s "$m/course.before" "$m/course.after" || echo ': the course tree changed')"
    elif ! cmp -s "$m/course.before" "$m/course.after"; then
        fail misuse/work-is-course "refused (exit $rc), but the course tree changed"
    else
        ok misuse/work-is-course "refused (exit $rc): $(grep -m1 -i 'work' "$m/work-is-course.log" | cut -c1-90)"
    fi
    leftovers misuse/work-is-course
    # two batches on one --work: the second must stop at once, the first go on
    (cd "$outdir" && backstop && exec timeout -k 10 300 "$grader" --course "$ccourse" \
        --manifest "$manifest" --out "$m/outA" --work "$m/work" $flags "$m/subs/dave") \
        >"$m/first.log" 2>&1 &
    first=$!
    k=0
    while [ ! -d "$m/work" ] && [ $k -lt 60 ]; do sleep 1; k=$((k + 1)); done
    sleep 3
    t0=$(date +%s)
    (cd "$outdir" && backstop && exec timeout -k 10 300 "$grader" --course "$ccourse" \
        --manifest "$manifest" --out "$m/outB" --work "$m/work" $flags "$m/subs/carol") \
        >"$m/second.log" 2>&1
    rc2=$?
    t2=$(($(date +%s) - t0))
    wait "$first"
    rc1=$?
    state=$(python3 -c '
import json, os, sys
for p in (sys.argv[1] + "/submissions/dave/results.json", sys.argv[1] + "/dave/results.json"):
    if os.path.isfile(p):
        print(json.load(open(p))["extra_data"]["lessons"]["01"]["state"]); break
else:
    print("no results")' "$m/outA" 2>/dev/null)
    if [ $rc2 = 0 ] || [ $t2 -gt 60 ]; then
        fail misuse/two-batches-one-work "the second batch on the same --work was not refused at once (exit $rc2 after $t2 s); the first: exit $rc1, $state"
    elif [ $rc1 != 0 ] || [ "$state" != graded ]; then
        fail misuse/two-batches-one-work "the second was refused (exit $rc2), but the first was harmed: exit $rc1, $state"
    else
        ok misuse/two-batches-one-work "the second was refused at once (exit $rc2: $(grep -m1 -i 'lock\|in use\|another\|busy' "$m/second.log" | cut -c1-70)); the first graded"
    fi
    leftovers misuse/two-batches
fi

if [ "${HOSTILE_KEEP:-0}" = 0 ]; then
    rm -rf "$outdir/subs" "$outdir/gen" "$outdir/misuse/subs" "$outdir/course.pristine"
fi
if [ $fails -gt 0 ]; then
    echo "run.sh: $fails check(s) failed (the lines marked FAIL; logs in $outdir)"
    exit 1
fi
echo "run.sh: every check passed"
exit 0
