#!/bin/sh
# tests/grader/export_check.sh — `./lab export-student` writes a course that
# students can use: no solutions/, no grader, lessons at their committed
# skeletons, a README section for students; and it configures and builds
# (lesson 01's test, one CUDA architecture, to keep CI short).
#
#   export_check.sh COURSE
# (the bundle goes to a temporary folder outside the course tree, removed at
# the end)
set -eu
[ $# -eq 1 ] || { echo "usage: $0 COURSE" >&2; exit 2; }
root=$1
fail() { echo "export_check: $*" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/fusionlab-export.XXXXXX")
trap 'rm -rf "$work"' EXIT
dest=$work/bundle
"$root/lab" export-student "$dest" || fail "lab export-student failed"

for p in solutions grader tests/grader tests/adversarial; do
    [ ! -e "$dest/$p" ] || fail "$p/ is in the student bundle"
done
[ -x "$dest/lab" ] || fail "lab is missing or not executable"
grep -q '^## For students' "$dest/README.md" || fail "README.md has no section for students"
if grep -q '^## Grading (instructors)' "$dest/README.md"; then
    fail "the instructors' README section is in the student bundle"
fi
if [ -d "$root/.git" ] && command -v git >/dev/null 2>&1; then
    for f in $(git -C "$root" ls-files lessons); do
        git -C "$root" show "HEAD:$f" | cmp -s - "$dest/$f" ||
            fail "$f differs from the committed skeleton"
    done
fi

cmake -S "$dest" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=75 \
    >"$work/configure.log" 2>&1 || { cat "$work/configure.log" >&2; fail "the bundle does not configure"; }
cmake --build "$work/build" --parallel 2 --target test_01_vector_add bench_01_vector_add_student \
    >"$work/build.log" 2>&1 || { tail -40 "$work/build.log" >&2; fail "the bundle does not build"; }
if ctest --test-dir "$work/build" -N | grep -q solution; then
    fail "the bundle registers solution tests"
fi
# the skeletons are checked against solutions/, which the bundle has not
if ctest --test-dir "$work/build" -N -L sources | grep -q 'Test *#'; then
    fail "the bundle registers sources tests"
fi
echo "export_check: the student bundle is complete and builds"
