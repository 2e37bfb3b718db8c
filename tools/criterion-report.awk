# tools/criterion-report.awk — turn the output of a lesson's Criterion test
# program (--verbose --short-filename) into a verdict a student can act on:
# PASS/FAIL/CRASH/SKIP lines, the first two failures of each check with their
# messages, then one summary line. Exit 0 passed, 1 failed or nothing ran,
# 3 skipped or partly skipped (no GPU). The suite `baseline` tests the
# course's own unfused code, not the student's: its checks are counted apart
# (one line after the verdict) and only its failures are shown.
#
#   test_01_vector_add --jobs 1 --short-filename --verbose 2>&1 |
#       awk -v lesson=01 -f tools/criterion-report.awk
function flush_msgs(   i) { for (i = 1; i <= nm; i++) print "       " msg[i]; nm = 0 }
/^\[----\] .*: Assertion Failed/   { next }
/^\[----\] .*Unexpected signal caught below this line/ { msg[++nm] = "the test process crashed after this point (a segfault in host code, or an abort)"; next }
/^\[----\] Criterion v/            { next }
/^\[----\] *$/                     { next }
/^\[----\]   /                     { sub(/^\[----\]   /, ""); if ($0 != "") msg[++nm] = $0; next }
/^\[RUN \]/                        { next }
/^\[====\] Running/                { next }
function show(line) {
    if (line == last) { rep++; return }
    emit(); last = line; rep = 1
}
function emit() {
    if (last == "") return
    if (rep > 1) print last "  (x" rep ")"; else print last
    last = ""; rep = 0
}
function is_baseline(name) { return name ~ /^baseline::/ }
/^\[PASS\]/ { sub(/^\[PASS\] /, ""); sub(/: \([0-9.]+s\)$/, ""); nm = 0
              if (is_baseline($0)) { bpass++; next }
              show("PASS   " $0); npass++; next }
/^\[SKIP\]/ { sub(/^\[SKIP\] /, ""); if (is_baseline($0)) { bskip++; next }
              show("SKIP   " $0); nskip++; next }
/^\[FAIL\]/ {
    emit()
    sub(/^\[FAIL\] /, "")
    kind = "FAIL   "; note = ""
    if ($0 ~ /CRASH/) { sub(/: CRASH!.*/, ""); kind = "CRASH  "; if (nm == 0) msg[++nm] = "the test process died (a segfault or an abort): run the bench or the sanitizer to find where" }
    else if ($0 ~ /Timed out/) { sub(/: Timed out.*/, ""); note = "  (timed out: does a loop never end?)" }
    else sub(/: \([0-9.]+s\)$/, "")
    if (is_baseline($0)) { bfail++; note = note "  (the course's baseline, not your code: tell your instructor)" }
    else nfail++
    # the first two failures of a check in full, then only a count
    if (++seen[$0] <= 2) { print kind $0 note; flush_msgs() }
    else { nm = 0; folded[$0]++ }
    next
}
/^\[====\] Synthesis/ { next }
/^speed /  { emit(); print "       " $0; next }
/^CUDA error/ { msg[++nm] = $0; next }
{ emit(); print "       " $0 }
END {
    emit()
    for (t in folded) printf "       (%d more failing cases of %s hidden: fix the ones above first)\n", folded[t], t
    total = npass + nfail
    print ""
    if (bpass + bfail > 0)
        printf "(the course's baseline, which these checks compare your code with, passed %d of its own %d checks; they are not counted below)\n", bpass, bpass + bfail
    if (total == 0 && nskip > 0) { print "lesson " lesson ": SKIPPED -- no CUDA device on this machine, nothing was graded. Next: run ./lab check " lesson " on a machine with an NVIDIA GPU (./lab doctor there first)"; exit 3 }
    if (total == 0) { print "lesson " lesson ": no check ran -- the test program did not start (see the output above)"; exit 1 }
    if (nfail == 0 && nskip > 0) { printf "lesson %s: NOT FULLY GRADED -- %d checks pass, %d skipped (the SKIP lines above say why)\n", lesson, total, nskip; exit 3 }
    if (nfail == 0) { printf "lesson %s: PASSED -- all %d checks of your code pass\n", lesson, total; exit 0 }
    printf "lesson %s: %d of %d checks of your code pass. Fix the first FAIL above, then run ./lab check %s again.\n", lesson, npass, total, lesson
    exit 1
}
