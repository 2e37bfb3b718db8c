# shellcheck shell=sh
# tests/grader/norm.sh — sourced by the grader's tests that compare the
# results.json of two gradings of the same submission: norm FILE prints it
# without what depends on the run and not on the grade (each check's
# execution_time, the stage times and the time since the start in each
# lesson's line, the waits for the next lesson's build, the runs again alone).
norm() {
    grep -v '"execution_time"' "$1" |
        sed -E 's/; waited for the next lesson.s build [0-9.]+ s//g; s/; [0-9]+ runs? again alone on the GPU//g' |
        sed -E 's/[0-9]+\.[0-9]+ s([^a-z]|$)/T s\1/g; s/[0-9.]+ s since/T s since/g'
}
