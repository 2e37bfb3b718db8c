#!/bin/sh
# tests/grader/export_check.sh — `./lab export-student` writes a course that
# students can use: no solutions/, no grader, lessons at their committed
# skeletons, a README section for students; both levels of every exercise
# in lessons/NN-*/levels/, the guided one equal to the lesson file; and it
# configures and builds (lesson 01's test, one CUDA architecture, to keep CI
# short). In the bundle, ./lab level open 01 and back keeps the student's
# work; --level open exports the open level as the lesson files.
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

# both levels of every exercise file, from the solutions' markers
nlevels=0
for d in "$dest"/lessons/[0-9][0-9]-*/; do
    for g in "$d"levels/guided/*; do
        [ -f "$g" ] || fail "${d#"$dest"/}levels/guided/ is empty"
        f=${g##*/}
        cmp -s "$g" "$d$f" || fail "${d#"$dest"/}levels/guided/$f is not the lesson file"
        [ -f "${d}levels/open/$f" ] || fail "${d#"$dest"/}levels/open/$f is missing"
        head -n 2 "${d}levels/open/$f" | grep -q "open level" || fail "${d#"$dest"/}levels/open/$f does not say it is the open level"
        nlevels=$((nlevels + 1))
    done
done
[ $nlevels -ge 6 ] || fail "only $nlevels exercise files have levels"
"$root/lab" export-student --level open "$work/open" >/dev/null || fail "lab export-student --level open failed"
for g in "$work"/open/lessons/*/levels/open/*; do
    l=${g%/levels/open/*}
    cmp -s "$g" "$l/${g##*/}" || fail "--level open: ${l#"$work"/open/}/${g##*/} is not the open level"
done

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
# ./lab level in the bundle (no solutions/: the levels/ copies), on the build above
export FUSIONLAB_BUILD_DIR="$work/build"
l01=$dest/lessons/01-vector-add
printf '// my work\n' >>"$l01/vector_add.cu"
cp "$l01/vector_add.cu" "$work/mine.cu"
"$dest/lab" level open 01 >"$work/level.log" 2>&1 || { cat "$work/level.log" >&2; fail "./lab level open 01 failed in the bundle"; }
cmp -s "$l01/vector_add.cu" "$l01/levels/open/vector_add.cu" || fail "./lab level open 01 did not write the open level"
bak=$(ls "$l01"/vector_add.cu.*.bak 2>/dev/null | head -n 1)
[ -n "$bak" ] && cmp -s "$bak" "$work/mine.cu" || fail "./lab level open 01 did not keep the student's work: $(cat "$work/level.log")"
"$dest/lab" level | grep -q "01-vector-add/vector_add.cu *open$" || fail "./lab level does not say lesson 01 is open"
"$dest/lab" level guided 01 >"$work/level.log" 2>&1 || fail "./lab level guided 01 failed"
cmp -s "$l01/vector_add.cu" "$l01/levels/guided/vector_add.cu" || fail "./lab level guided 01 did not write the guided level"
echo "export_check: the student bundle is complete and builds; ./lab level switches and keeps the student's work"
