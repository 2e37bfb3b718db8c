#!/bin/sh
# tests/grader/grade_fixtures.sh — assemble the grader's fixture submissions
# and grade them all in one batch.
#
#   grade_fixtures.sh GRADER COURSE MANIFEST OUT [grader options...]
#
# The committed fixtures (fixtures/) are the broken submissions; the rest is
# made here, from the course itself, so it never drifts from it:
#   good          the worked solutions of every lesson (a folder)
#   good_tgz      the same as .tar.gz, under a top-level lessons/ folder
#   good_zip      the same as .zip (when `zip` is installed)
#   skeleton      the untouched lesson files
#   open          the untouched open level of every lesson file (./lab level
#                 open; fl_skeleton from the build that wrote MANIFEST, or in
#                 --assemble mode from ${FUSIONLAB_BUILD_DIR:-COURSE/build})
#   junk          lesson 01's file is binary data
#   oversized     lesson 01's file is 2 MiB
#   traversal_tgz a .tar.gz with a `..` entry, an absolute path and a link
#   traversal_zip the committed .zip with the same
#   roster.csv    a folder named like the batch's roster, whose compile error
#                 prints bytes XML 1.0 forbids (U+FFFF, U+FFFE, a UTF-16
#                 surrogate, C0 controls), ]]> and Markdown and CSV markup
# They are written under OUT-input/ (the grader refuses submissions inside
# its --out); the grader writes OUT/submissions/<id>/ and OUT/roster.csv.
# ctest runs it with --lessons 01 --no-gpu (see CMakeLists.txt); on a GPU
# machine run it without --no-gpu for the full grade. FUSIONLAB_GRADE_SEED
# is set when the caller has not set it: tests check it appears nowhere.
#
#   grade_fixtures.sh --assemble COURSE OUT
#
# only writes the submissions under OUT/submissions and prints their paths,
# one per line, for `./lab grade $(grade_fixtures.sh --assemble . DIR)`.
set -eu
assemble=0
if [ "${1:-}" = --assemble ]; then
    [ $# -eq 3 ] || { echo "usage: $0 --assemble COURSE OUT" >&2; exit 2; }
    assemble=1 grader= course=$2 manifest= out=$3
    shift 3
else
    [ $# -ge 4 ] || { echo "usage: $0 GRADER COURSE MANIFEST OUT [options...]" >&2; exit 2; }
    grader=$1 course=$2 manifest=$3 out=$4
    shift 4
fi
course=$(cd "$course" && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
# a clean OUT but for the scratch build (.work), which the next batch reuses
[ $assemble = 1 ] || find "$out" -mindepth 1 -maxdepth 1 ! -name .work -exec rm -rf {} +
here=$(cd "$(dirname "$0")" && pwd)
: "${FUSIONLAB_GRADE_SEED:=fusionlab-secret-seed-8d2f61}"
export FUSIONLAB_GRADE_SEED

if [ $assemble = 1 ]; then in=$out; else in=$out-input; fi
subs=$in/submissions
stage=$in/stage
rm -rf "$subs" "$stage"
mkdir -p "$subs" "$stage"

for d in compile_error link_error scan_flagged missing_lesson hang_startup crash hang oom; do
    cp -R "$here/fixtures/$d" "$subs/$d"
done
cp "$here/fixtures/traversal.zip" "$subs/traversal_zip.zip"

# every lesson's worked files (the solutions/ folder holds only those)
mkdir -p "$subs/good"
cp -R "$course/solutions/." "$subs/good/"

mkdir -p "$stage/tgz/lessons"
cp -R "$subs/good/." "$stage/tgz/lessons/"
printf 'notes a student left in the archive\n' >"$stage/tgz/lessons/notes.txt"
# and a warning the compiler prints each time it compiles the file: shown once
{
    printf '#warning "a note the student left for the compiler"\n'
    cat "$subs/good/01-vector-add/vector_add.cu"
} >"$stage/tgz/lessons/01-vector-add/vector_add.cu"
tar -czf "$subs/good_tgz.tar.gz" -C "$stage/tgz" lessons
if command -v zip >/dev/null 2>&1; then
    (cd "$stage/tgz" && zip -q -r "$subs/good_zip.zip" lessons)
fi

# the untouched lesson files at the same paths as the worked ones
mkdir -p "$subs/skeleton"
for f in "$course"/solutions/*/*; do
    rel=${f#"$course"/solutions/}
    mkdir -p "$subs/skeleton/${rel%/*}"
    cp "$course/lessons/$rel" "$subs/skeleton/$rel"
done

# the open level: only the API and the task, each launcher a stub
if [ $assemble = 1 ]; then layout_sh=${FUSIONLAB_BUILD_DIR:-$course/build}/fusionlab_layout.sh
else layout_sh=$(dirname "$manifest")/fusionlab_layout.sh; fi
skel=$( [ -f "$layout_sh" ] && . "$layout_sh" && printf '%s' "${fl_skeleton_bin:-}") || skel=
if [ -n "$skel" ] && [ -x "$skel" ]; then
    for f in "$course"/solutions/*/*; do
        rel=${f#"$course"/solutions/}
        mkdir -p "$subs/open/${rel%/*}"
        "$skel" --level open "$f" >"$subs/open/$rel"
    done
else
    echo "grade_fixtures: no fl_skeleton in the build ($layout_sh): the open fixture is left out" >&2
fi

mkdir -p "$subs/junk/01-vector-add"
printf '\177ELF\002\001\001\000\000\000\000\000\000\000\000\000binary junk\000\001\002' \
    >"$subs/junk/01-vector-add/vector_add.cu"

mkdir -p "$subs/oversized/01-vector-add"
i=0
: >"$stage/line"
while [ $i -lt 64 ]; do printf '// padding padding padding padding padding padding padding pad\n' >>"$stage/line"; i=$((i + 1)); done
i=0
while [ $i -lt 512 ]; do cat "$stage/line"; i=$((i + 1)); done >"$subs/oversized/01-vector-add/vector_add.cu"

# unsafe tar: `..`, an absolute path (deleted again: it must not come back)
# and a link to a file outside
mkdir -p "$stage/tr/a/b" "$stage/tr/l/01-vector-add"
printf '// must never be written outside the scratch folder\n' >"$stage/tr/a/escaped-by-tar.cu"
printf '// an absolute path\n' >"$stage/absolute-by-tar.cu"
ln -s /etc/passwd "$stage/tr/l/01-vector-add/vector_add.cu"
tar -cPf "$stage/traversal.tar" -C "$stage/tr/a/b" ../escaped-by-tar.cu \
    -C "$stage/tr/l" 01-vector-add/vector_add.cu "$stage/absolute-by-tar.cu"
gzip -c "$stage/traversal.tar" >"$subs/traversal_tgz.tar.gz"
rm -f "$stage/absolute-by-tar.cu" "$stage/tr/a/escaped-by-tar.cu"

mkdir -p "$subs/roster.csv/01-vector-add"
{
    printf '#error "hostile \357\277\277 \357\277\276 \355\240\200 \001\033 ]]> </failure> & ``` | =cmd"\n'
    cat "$here/fixtures/compile_error/01-vector-add/vector_add.cu"
} >"$subs/roster.csv/01-vector-add/vector_add.cu"

for n in good good_tgz.tar.gz good_zip.zip skeleton open compile_error link_error scan_flagged missing_lesson \
    junk oversized traversal_tgz.tar.gz traversal_zip.zip hang_startup crash hang oom roster.csv; do
    [ -e "$subs/$n" ] && set -- "$@" "$subs/$n"
done
if [ $assemble = 1 ]; then
    for p in "$@"; do printf '%s\n' "$p"; done
    exit 0
fi
set +e
"$grader" --course "$course" --manifest "$manifest" --out "$out" "$@"
rc=$?
echo "grade_fixtures: the grader exited with $rc"
exit $rc
