#!/bin/sh
# tests/grader/sandbox_probe.sh — what a hostile test program would try,
# run by `fusionlab_grade --work W --sandbox-probe THIS COURSE OUT VICTIM`
# inside the sandbox of a test step (tests/grader/sandbox.sh runs it). One
# line per attempt: "ok   ..." when the sandbox stopped it, "FAIL ..." when
# it got through; exit 1 on any FAIL. It also prints every environment and
# command line it can read (after "== readable:"), so that the caller can
# check that the batch secret is not among them.
course=$1 out=$2 victim=$3
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
must_fail() { # WHAT COMMAND...: the command must not succeed
    what=$1; shift
    if "$@" >/dev/null 2>&1; then bad "$what"; else ok "$what: refused"; fi
}

[ "$(id -u)" = 65534 ] && ok "runs as uid 65534 inside" || bad "runs as uid $(id -u) inside"

# the course: the worked solutions, the grader, the rubric, its tools
must_fail "read the worked solution" cat "$course/solutions/01-vector-add/vector_add.cu"
must_fail "list solutions/" ls "$course/solutions"
must_fail "read the rubric" cat "$course/grader/rubric.json"
must_fail "read the grader's sources" cat "$course/grader/grade.c"
must_fail "change the course's tools" sh -c "echo x >>'$course/tools/scan-objects'"
must_fail "add a file to tools/" touch "$course/tools/planted"
must_fail "change a lesson's header" sh -c "echo x >>'$course/lessons/01-vector-add/vector_add.h'"
# other submissions and the output folder
must_fail "see the output folder" ls "$out"
must_fail "change another submission's results" sh -c "echo '{\"score\": 100}' >'$victim'"
must_fail "read the system's secrets" cat /etc/shadow
must_fail "read /etc/passwd" cat /etc/passwd
must_fail "write outside the scratch (/usr)" touch /usr/planted
must_fail "write into /dev" touch /dev/planted
# the network
must_fail "reach the network" timeout 5 bash -c 'exec 3<>/dev/tcp/1.1.1.1/80'
must_fail "reach the host's loopback services" timeout 5 bash -c 'exec 3<>/dev/tcp/127.0.0.1/22'
# processes outside the step
n=$(ls -d /proc/[0-9]* 2>/dev/null | wc -l)
[ "$n" -lt 20 ] && ok "sees only its own processes ($n)" || bad "sees $n processes"
# limits: processes, file size, memory
# (the fork bomb in a shell of its own: a shell that cannot fork gives up)
sh -c 'i=0; while [ $i -lt 6000 ]; do sleep 30 & i=$((i + 1)); done' >/dev/null 2>&1
set -- /proc/[0-9]*   # counted without a fork: the cap is still reached
alive=$#
kill -9 -1 2>/dev/null  # everything of the step but this shell and its init
[ "$alive" -le 1100 ] && ok "process count is capped ($alive alive of 6000 tried)" ||
    bad "started $alive processes"
if dd if=/dev/zero of=big bs=1M count=1100 2>/dev/null; then bad "wrote a 1.1 GiB file"; else ok "file size is capped (1 GiB)"; fi
rm -f big
dd if=/dev/zero of=/tmp/fill1 bs=1M count=700 2>/dev/null
if dd if=/dev/zero of=/tmp/fill2 bs=1M count=700 2>/dev/null; then bad "filled /tmp past 1 GiB"; else ok "/tmp is capped (1 GiB)"; fi
rm -f /tmp/fill1 /tmp/fill2
# a process that outlives the step and keeps the output open (the grader
# must not wait for it, and it must die with the step)
setsid sh -c 'sleep 300' >&1 2>&1 &
ok "left a setsid process holding the output (the grader checks it died)"

echo "== readable:"
env
for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do
    tr '\0' '\n' <"$f" 2>/dev/null
done
echo "== end"
[ $fails -eq 0 ]
