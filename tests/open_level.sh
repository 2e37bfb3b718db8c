#!/bin/sh
# tests/open_level.sh — the open level of a lesson, untouched (only the API,
# each launcher a stub that returns cudaErrorNotYetImplemented), must fail
# every check of the student's code: none may pass by accident, or a student
# would get marks for nothing. The baseline's own checks (suite `baseline`)
# test the course's code and are left out.
#
#   open_level.sh TEST_PROGRAM      (ctest NN-name/open; exit 77 without a GPU)
#   open_level.sh --scan 'OBJ;OBJ' SCAN-OPTION...
#                                   (ctest NN-name/open-scan, no GPU needed:
#                                   the grader's object scan, tools/scan-objects,
#                                   finds nothing to refuse in the open level)
set -u
here=$(cd "$(dirname "$0")" && pwd)
if [ "${1:-}" = --scan ]; then
    [ $# -ge 2 ] || { echo "usage: $0 --scan 'OBJ;OBJ' SCAN-OPTION..." >&2; exit 2; }
    objs=$2
    shift 2
    old_ifs=$IFS
    IFS=';'
    # shellcheck disable=SC2086
    set -- "$@" $objs
    IFS=$old_ifs
    sh "$here/../tools/scan-objects" "$@" || { echo "open level: FAIL -- the object scan refuses it (above)"; exit 1; }
    echo "open level: compiled with the course's flags, linked into the lesson's test, and the object scan finds nothing to refuse"
    exit 0
fi
[ $# -eq 1 ] || { echo "usage: $0 TEST_PROGRAM" >&2; exit 2; }
out=$("$1" --jobs 1 --short-filename --verbose 2>&1)
if printf '%s\n' "$out" | grep -q "no CUDA device"; then
    echo "open level: skipped -- no CUDA device on this machine"
    exit 77
fi
passed=$(printf '%s\n' "$out" | grep '^\[PASS\]' | grep -v '^\[PASS\] baseline::')
failed=$(printf '%s\n' "$out" | grep '^\[FAIL\]' | grep -vc '^\[FAIL\] baseline::')
if [ -n "$passed" ]; then
    printf '%s\n' "$passed"
    echo "open level: FAIL -- the untouched open skeleton passes the checks above"
    exit 1
fi
if [ "$failed" -eq 0 ]; then
    printf '%s\n' "$out" | tail -20
    echo "open level: FAIL -- no check of the student's code ran"
    exit 1
fi
echo "open level: every one of the $failed checks of the student's code fails on the untouched open skeleton"
