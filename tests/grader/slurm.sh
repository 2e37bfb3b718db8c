#!/bin/sh
# tests/grader/slurm.sh — grade a batch through a real Slurm cluster of one
# node, started here, and check that the collected batch is the one a direct
# run writes.
#
#   slurm.sh GRADER COURSE MANIFEST OUT
#
# Starts munged (its own key and socket), slurmctld and slurmd (Debian's
# slurm-wlm) on this machine, with a slurm.conf under OUT/cluster; grades a
# few fixture submissions once directly and once with
#   --slurm "--wait --partition=fl --comment='fusion-lab test #2: 3 tasks'" --shards 3
# (a job array of three tasks, into an OUT whose name holds a blank and a
# '%', which sbatch's file names would otherwise take for a pattern), and
# compares roster.csv, junit.xml (but for
# its times) and every results.json (but for times) of the two. Lesson 01
# only, GPU hidden. Exits 77 (ctest: skipped) with the reason when Slurm is
# not installed or cannot start here (not root, no munge, ...); every
# daemon it started is stopped on the way out.
set -u
[ $# -eq 4 ] || { echo "usage: $0 GRADER COURSE MANIFEST OUT" >&2; exit 2; }
grader=$1 course=$2 manifest=$3 out=$4
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }

for p in munged mungekey slurmctld slurmd sbatch sinfo scontrol; do
    command -v $p >/dev/null 2>&1 || PATH=$PATH:/usr/sbin:/sbin
    command -v $p >/dev/null 2>&1 ||
        skip "$p is not installed (Debian: apt-get install slurm-wlm munge; ./lab test installs them as root)"
done
[ "$(id -u)" = 0 ] || skip "a Slurm node daemon needs root (slurmd starts each job as its user)"

rm -rf "$out"
mkdir -p "$out"
out=$(cd "$out" && pwd)
c=$out/cluster
mkdir -p "$c/state" "$c/spool" "$c/munge"
chmod 700 "$c/munge"
pids=
stop() {
    for p in $pids; do kill "$p" 2>/dev/null; done
    sleep 1
    for p in $pids; do kill -9 "$p" 2>/dev/null; done
}
trap stop EXIT
trap 'exit 1' INT TERM

# munge: a key and a socket of this test's own
mungekey --create --keyfile="$c/munge/munge.key" >/dev/null 2>&1 ||
    skip "mungekey could not make a key"
munged --force --foreground --socket="$c/munge/sock" --key-file="$c/munge/munge.key" \
    --pid-file="$c/munge/pid" --log-file="$c/munge/log" --seed-file="$c/munge/seed" \
    >"$c/munge/out" 2>&1 &
pids="$pids $!"
i=0
while [ ! -S "$c/munge/sock" ] && [ $i -lt 50 ]; do sleep 0.2; i=$((i + 1)); done
[ -S "$c/munge/sock" ] || skip "munged did not start: $(tail -3 "$c/munge/out" "$c/munge/log" 2>/dev/null)"

# ports from this process's id, away from Slurm's defaults
base=$((20000 + ($$ % 400) * 20))
cpus=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)
cat >"$c/slurm.conf" <<EOF
ClusterName=fusionlabtest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$base
SlurmdPort=$((base + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$c/munge/sock
CredType=cred/munge
StateSaveLocation=$c/state
SlurmdSpoolDir=$c/spool
SlurmctldPidFile=$c/slurmctld.pid
SlurmdPidFile=$c/slurmd.pid
SlurmctldLogFile=$c/slurmctld.log
SlurmdLogFile=$c/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
MpiDefault=none
ReturnToService=2
SlurmdTimeout=60
NodeName=flnode NodeHostname=localhost NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=fl Nodes=flnode Default=YES MaxTime=INFINITE State=UP
EOF
SLURM_CONF=$c/slurm.conf
export SLURM_CONF
slurmctld -D -i -f "$SLURM_CONF" >"$c/slurmctld.out" 2>&1 &
pids="$pids $!"
slurmd -D -N flnode -f "$SLURM_CONF" >"$c/slurmd.out" 2>&1 &
pids="$pids $!"
i=0
state=
while [ $i -lt 60 ]; do
    state=$(sinfo -h -n flnode -o %t 2>/dev/null)
    case $state in idle*|mix*|alloc*) break ;; esac
    sleep 0.5
    i=$((i + 1))
done
case $state in
idle*|mix*|alloc*) ;;
*) skip "Slurm did not start here (node state '${state:-none}'): $(tail -2 "$c/slurmctld.log" "$c/slurmd.log" "$c/slurmd.out" 2>/dev/null | tr '\n' ' ' | cut -c1-600)" ;;
esac
echo "== a Slurm cluster of one node is up: $(sinfo -h -o '%P %D %t %c')"

# a few fixtures: a correct one, the skeleton, a compile error, a missing
# lesson, a refused file, an archive
subs=$(sh "$(dirname "$0")/grade_fixtures.sh" --assemble "$course" "$out/input" |
    grep -E '/(good|good_tgz\.tar\.gz|skeleton|compile_error|missing_lesson|junk|scan_flagged)$')
set -- $subs
[ $# -eq 7 ] || fail "the fixtures were not assembled ($# of 7)"
: "${FUSIONLAB_GRADE_SEED:=fusionlab-slurm-seed-71d3}"
export FUSIONLAB_GRADE_SEED
opts="--course $course --manifest $manifest --lessons 01 --no-gpu --arch 75 --jobs 2 --suite-timeout 10 --lesson-timeout 15"

echo "== direct run"
"$grader" $opts --out "$out/direct" "$@" >"$out/direct.log" 2>&1
echo "   exit $? ($(tail -1 "$out/direct.log" | cut -c1-100))"
[ -f "$out/direct/roster.csv" ] || fail "the direct run wrote no roster.csv: $(tail -5 "$out/direct.log")"

so="$out/class of 100%"
echo "== through Slurm: --slurm \"--wait --partition=fl --comment='fusion-lab test #2: 3 tasks'\" --shards 3"
"$grader" $opts --out "$so" --slurm "--wait --partition=fl --comment='fusion-lab test #2: 3 tasks'" \
    --shards 3 "$@" >"$out/slurm.log" 2>&1
rc=$?
sed 's/^/   /' "$out/slurm.log" | grep -E '^   == |shard ' | head -20
[ $rc = 0 ] || fail "--slurm exited with $rc: $(tail -15 "$out/slurm.log"; tail -5 "$so"/slurm/shard-*.log 2>/dev/null)"
n=$(ls "$so"/slurm/shard-*.log 2>/dev/null | wc -l)
[ "$n" = 3 ] || fail "$n task logs in $so/slurm instead of 3 (was it an array of 3? the '%' of OUT taken for a pattern?)"
grep -q 'shard 1/3' "$so/slurm/shard-1.log" || fail "task 1 did not grade shard 1: $(tail -5 "$so/slurm/shard-1.log")"
grep -qF '#SBATCH "--comment=fusion-lab test #2: 3 tasks"' "$so/slurm/job.sh" ||
    fail "job.sh does not carry the quoted option whole: $(grep SBATCH "$so/slurm/job.sh")"

# each task checks, on its own node, that its computed sandbox user is no account there
grep -q -- '--sandbox-uid-unused' "$so/slurm/job.sh" || fail "job.sh does not have tasks check their sandbox user"
"$grader" $opts --out "$out/uid" --sandbox-uid 1 --sandbox-uid-unused "$1" >"$out/uid.log" 2>&1
rc=$?
[ $rc = 2 ] && grep -q "is the account" "$out/uid.log" && [ ! -e "$out/uid" ] ||
    fail "a task whose sandbox user (uid 1) is an account here was not refused (exit $rc): $(tail -3 "$out/uid.log")"

echo "== the collected batch against the direct one"
cmp "$out/direct/roster.csv" "$so/roster.csv" ||
    fail "roster.csv differs: $(diff "$out/direct/roster.csv" "$so/roster.csv" | head -10)"
untimed() { sed -E 's/ time="[0-9.]+"//' "$1"; }
untimed "$out/direct/junit.xml" >"$out/a.xml"
untimed "$so/junit.xml" >"$out/b.xml"
cmp "$out/a.xml" "$out/b.xml" || fail "junit.xml differs beyond its times: $(diff "$out/a.xml" "$out/b.xml" | head -10)"
# results.json: all but the times (execution_time, build/tests seconds)
# shellcheck source=tests/grader/norm.sh
. "$(cd "$(dirname "$0")" && pwd)/norm.sh" # norm FILE: results.json less its times
k=0
for d in "$out"/direct/submissions/*/; do
    id=$(basename "$d")
    [ -f "$so/submissions/$id/results.json" ] || fail "no results.json for $id in the collected batch"
    norm "$d/results.json" >"$out/a.json"
    norm "$so/submissions/$id/results.json" >"$out/b.json"
    cmp -s "$out/a.json" "$out/b.json" || fail "$id's results.json differs: $(diff "$out/a.json" "$out/b.json" | head -8)"
    k=$((k + 1))
done
[ $k = 7 ] || fail "$k submissions in the direct batch instead of 7"
[ ! -e "$so/BATCH_IN_PROGRESS" ] || fail "the collected batch still says it is in progress"
echo "PASS: 7 submissions graded by a Slurm job array of 3 tasks and collected: roster.csv identical, junit.xml and every results.json identical but for times"
cat "$so/roster.csv" | sed 's/^/   /'
