#!/bin/sh
# tests/grader/alone_list.sh COURSE — ctest grader/alone-list: the rubric's
# "alone" lists (grader/rubric.json) name every test that needs the GPU to
# itself when several grading workers share one (./lab grade --per-gpu),
# and nothing else.
#
# A test needs it when its body, or a function of its file that it calls
# (directly or through others), reads the GPU's free memory
# (cudaMemGetInfo: its inputs would be sized by what the neighbours left
# free), its DRAM counters (counters_measure, Nsight Compute: the counters
# see every process's traffic) or its clock (fl_test_speed, fl_time_variants,
# fl_copy_bandwidth_gbs). The suites of the rubric's speed checks are always
# run alone by the grader and need no entry. Each lesson's list must cover every such test
# (by "suite/test" or the whole "suite"), and every entry must name a suite
# or test of that lesson's test program. The rubric keeps each list on one
# line ("alone": [...]).
#
# The same reading of the calls checks that every test that runs
# fl_test_stream_honoured is named stream*: the grader finds the stream
# tests by that name to try the worked solution's with the CUDA
# connections it gives the tests (grader/stage_run.c, connections_check).
set -u
course=${1:?usage: alone_list.sh COURSE}
rubric=$course/grader/rubric.json
fail=0
checked=0
streams=0
for src in "$course"/tests/test_[0-9][0-9]_*.c; do
    nn=$(basename "$src" | sed 's/^test_\([0-9][0-9]\)_.*/\1/')
    # the lesson's list, from the line after its key
    list=$(awk -v key="\"$nn\": {" 'index($0, key) { on = 1; next }
        on && /"alone":/ { sub(/^.*"alone": *\[/, ""); sub(/\].*$/, ""); gsub(/[" ]/, ""); print; exit }
        on && /"checks":/ { exit }' "$rubric")
    # the suites of its speed checks (run alone whatever the list says)
    speed=$(awk -v key="\"$nn\": {" 'index($0, key) { on = 1; next }
        on && /^    "[0-9][0-9]": \{/ { exit }
        on && /"kind": "speed"/ && match($0, /"suite": "[A-Za-z0-9_]+"/) {
            v = substr($0, RSTART + 10, RLENGTH - 11); printf "%s,", v }' "$rubric")
    # tests that need the GPU alone, and every suite/test the file defines
    found=$(awk '
        function flush_calls(body,   s, id) {
            s = body
            while (match(s, /[A-Za-z_][A-Za-z0-9_]*[ ]*\(/)) {
                id = substr(s, RSTART, RLENGTH); sub(/[ ]*\($/, "", id)
                calls[cur] = calls[cur] " " id " "
                s = substr(s, RSTART + RLENGTH)
            }
        }
        /^(ParameterizedTest|Test|FL_TEST|FL_PARAM_TEST)\(/ {
            line = $0
            sub(/^(ParameterizedTest|Test|FL_TEST|FL_PARAM_TEST)\(/, "", line)
            if ($0 ~ /^ParameterizedTest\(/) sub(/^[^,]*, */, "", line)
            n = split(line, p, /, */)
            suite = p[1]; test = p[2]; sub(/[ ){].*$/, "", test)
            cur = "T:" suite "/" test; defined[suite "/" test] = 1; defined[suite] = 1
            flush_calls($0)    # a body on the same line: Test(s, t) { helper(); }
            next
        }
        /^(static )?[A-Za-z_][A-Za-z0-9_ *]*[ *]([A-Za-z_][A-Za-z0-9_]*)\(/ && $0 !~ /;[ ]*$/ {
            line = $0; sub(/\(.*$/, "", line); n = split(line, w, /[ *]+/)
            cur = "F:" w[n]
            next
        }
        cur != "" {
            if ($0 ~ /cudaMemGetInfo|counters_measure|fl_test_speed|fl_time_variants|fl_copy_bandwidth_gbs/) direct[cur] = 1
            if ($0 ~ /fl_test_stream_honoured[ ]*\(/) held[cur] = 1 # (a call: not a comment naming it)
            flush_calls($0)
        }
        # every function and test that reaches one in `set`, through calls
        function reach(set,   changed, k, f) {
            changed = 1
            while (changed) {
                changed = 0
                for (k in calls) {
                    if (k in set) continue
                    for (f in set) {
                        if (f !~ /^F:/) continue
                        if (index(calls[k], " " substr(f, 3) " ")) { set[k] = 1; changed = 1; break }
                    }
                }
            }
        }
        END {
            for (k in direct) needs[k] = 1
            for (k in held) streams[k] = 1
            reach(needs)
            reach(streams)
            for (k in needs) if (k ~ /^T:/) print "need " substr(k, 3)
            for (k in streams) if (k ~ /^T:/) print "stream " substr(k, 3)
            for (d in defined) print "def " d
        }' "$src")
    [ -n "${ALONE_DEBUG:-}" ] && printf "%s: %s\n" "$nn" "$(printf "%s\n" "$found" | grep "^need" | tr "\n" " ")"
    for t in $(printf '%s\n' "$found" | sed -n 's/^need //p' | sort -u); do
        checked=$((checked + 1))
        suite=${t%%/*}
        case ",$list,$speed" in
            *",$t,"*|*",$suite,"*) ;;
            *) echo "FAIL lesson $nn: $t reads the GPU's free memory, counters or clock but is not in the rubric's \"alone\" list ($list) nor a speed suite ($speed)"
               fail=1 ;;
        esac
    done
    for t in $(printf '%s\n' "$found" | sed -n 's/^stream //p' | sort -u); do
        streams=$((streams + 1))
        case ${t#*/} in
            stream*) ;;
            *) echo "FAIL lesson $nn: $t runs fl_test_stream_honoured but is not named stream*: the grader's connections_check would not try it"
               fail=1 ;;
        esac
    done
    for e in $(printf '%s\n' "$list" | tr ',' ' '); do
        printf '%s\n' "$found" | grep -qx "def $e" || {
            echo "FAIL lesson $nn: \"alone\" entry $e is no suite or test of $(basename "$src")"
            fail=1
        }
    done
done
[ $checked -gt 0 ] || { echo "FAIL: no test that reads the free memory was found: the scan is broken"; exit 1; }
[ $streams -gt 0 ] || { echo "FAIL: no test that runs fl_test_stream_honoured was found: the scan is broken"; exit 1; }
[ $fail = 0 ] && echo "PASS: the rubric's \"alone\" lists and speed suites cover all $checked tests that read the GPU's free memory, counters or clock; the $streams tests that run fl_test_stream_honoured are named stream*"
exit $fail
