#!/bin/sh
# tests/grader/sandbox.sh GRADER COURSE DIR — the grader's sandbox, tried
# from inside (ctest grader/sandbox): tests/grader/sandbox_probe.sh runs as
# a test step would, with a batch secret set; every attempt it makes must be
# stopped, nothing may outlive the step, the secret must be nowhere the step
# could read, and the victim file and the course must be unchanged.
set -u
grader=$1 course=$2 dir=$3
secret="fusionlab-sandbox-test-secret-$$"
rm -rf "$dir" && mkdir -p "$dir/out/submissions/victim" || exit 1
victim=$dir/out/submissions/victim/results.json
printf '{"score": 3}\n' >"$victim"
before=$(cd "$course" && find lessons common tools -type f -exec cksum {} + | sort | cksum)
FUSIONLAB_GRADE_SEED=$secret "$grader" --course "$course" --work "$dir/work" \
    --sandbox-probe "$course/tests/grader/sandbox_probe.sh" "$course" "$dir/out" "$victim" \
    >"$dir/probe.log" 2>&1
rc=$?
grep -E '^(ok|FAIL|probe:)' "$dir/probe.log"
fail=0
[ $rc -eq 0 ] || { echo "FAIL the probe reported a way out (exit $rc; $dir/probe.log)"; fail=1; }
if grep -q "$secret" "$dir/probe.log"; then
    echo "FAIL the batch secret was readable inside the sandbox"; fail=1
else
    echo "ok   the batch secret is nowhere the step can read"
fi
[ "$(cat "$victim")" = '{"score": 3}' ] && echo "ok   the victim's results are unchanged" ||
    { echo "FAIL the victim's results changed"; fail=1; }
# a step of the same name on the same --work starts in an empty folder,
# whatever the last one left there
for what in plant look; do
    FUSIONLAB_GRADE_SEED=$secret "$grader" --course "$course" --work "$dir/work" \
        --sandbox-probe "$course/tests/grader/scratch_probe.sh" "$what" >"$dir/scratch-$what.log" 2>&1 ||
        { echo "FAIL the scratch probe's $what step failed: $(grep -v '^probe:' "$dir/scratch-$what.log" | tail -2)"; fail=1; }
done
grep -E '^(ok|FAIL)' "$dir/scratch-look.log"
after=$(cd "$course" && find lessons common tools -type f -exec cksum {} + | sort | cksum)
[ "$before" = "$after" ] && echo "ok   the course is unchanged" ||
    { echo "FAIL the course changed"; fail=1; }
exit $fail
