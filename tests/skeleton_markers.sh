#!/bin/sh
# tests/skeleton_markers.sh — fl_skeleton (tools/skeleton.c) on small marked
# files: the three levels and their fallbacks, every malformed marker it must
# name by file:line, --check's verdicts and message, -o.
#
#   skeleton_markers.sh FL_SKELETON
set -u
[ $# -eq 1 ] || { echo "usage: $0 FL_SKELETON" >&2; exit 2; }
gen=$1
case $gen in /*) ;; *) gen=$PWD/$gen ;; esac
work=$(mktemp -d "${TMPDIR:-/tmp}/fusionlab-skeleton.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 2
failed=0
fail() { echo "FAIL: $*"; failed=1; }

# ---- the levels --------------------------------------------------------------
# a TODO region, a helper the guided level gives and the open one does not,
# skeleton-only text, solution-only code, and a last line without a newline
cat >ok.c <<'EOF'
int a;
//@{ A1
    a = 1;
//@ guided
//|     // TODO(A1): set a
//|
//@ open
//|     // TODO: everything
//@} A1
//@{ helper
static int h(void) { return 2; }
//@ open
//@}
//@{
//@ guided
//| // skeleton only
//@}
//@{
int solution_only;
//@ guided
//@}
EOF
printf 'int end;' >>ok.c

expect() { # LEVEL, then the expected output on stdin
    level=$1
    cat >"want.$level"
    if ! "$gen" --level "$level" ok.c >"got.$level" 2>err.txt; then
        fail "--level $level failed: $(cat err.txt)"
    elif ! cmp -s "want.$level" "got.$level"; then
        fail "--level $level: got"; cat "got.$level"; echo "(end)"
    fi
}
printf 'int a;\n    a = 1;\nstatic int h(void) { return 2; }\nint solution_only;\nint end;' | expect solution
printf 'int a;\n    // TODO(A1): set a\n\nstatic int h(void) { return 2; }\n// skeleton only\nint end;' | expect guided
printf 'int a;\n    // TODO: everything\n// skeleton only\nint end;' | expect open
"$gen" ok.c | cmp -s - want.guided || fail "the default level is not guided"

# a span the open level leaves out: shared lines and whole regions inside it
# show at the other levels, and a region after it is back in every level
cat >span.c <<'EOF'
#include "api.h"
//@[
static int helper(void) { return 1; }
//@{ K
int k(void) { return helper(); }
//@ guided
//| int k(void) { return 0; } // TODO(K)
//@}
//@]
//@{
int api(void) { return k(); }
//@ open
//| int api(void) { return -1; } // TODO: all of it
//@}
EOF
for lv in solution guided open; do "$gen" --level $lv span.c >"span.$lv" 2>err.txt || fail "span --level $lv: $(cat err.txt)"; done
printf '#include "api.h"\nstatic int helper(void) { return 1; }\nint k(void) { return helper(); }\nint api(void) { return k(); }\n' |
    cmp -s - span.solution || fail "span, solution level: $(cat span.solution)"
printf '#include "api.h"\nstatic int helper(void) { return 1; }\nint k(void) { return 0; } // TODO(K)\nint api(void) { return k(); }\n' |
    cmp -s - span.guided || fail "span, guided level: $(cat span.guided)"
printf '#include "api.h"\nint api(void) { return -1; } // TODO: all of it\n' |
    cmp -s - span.open || fail "span, open level: $(cat span.open)"

# ---- malformed markers: exit 2 and FILE:LINE: error: ... ---------------------
bad() { # NAME LINE MESSAGE-PART CONTENT
    printf '%s' "$4" >"$1.c"
    "$gen" "$1.c" >/dev/null 2>err.txt
    rc=$?
    [ $rc -eq 2 ] || fail "$1: exit status $rc, want 2"
    grep -q "^$1.c:$2: error: .*$3" err.txt || fail "$1: want '$1.c:$2: error: ...$3...', got: $(cat err.txt)"
}
bad unclosed 2 "is not closed" 'a
//@{ A1
x
'
bad nested 4 "regions do not nest" 'a
//@{ A1
x
//@{ B
//@}
'
bad stray_end 2 "stray '//@}'" 'a
//@}
'
bad stray_part 2 "stray '//@ open'" 'a
//@ open
'
bad stray_text 2 "stray skeleton line" 'a
//| text
'
bad text_in_solution 3 "skeleton line in the solution part of region A1" '//@{ A1
x
//| t
//@}
'
bad no_prefix 4 "bad prefix line in the guided part" '//@{
x
//@ guided
y
//@}
'
bad prefix_no_space 4 "bad prefix line in the open part" '//@{
x
//@ open
//|x
//@}
'
bad order 4 "'//@ guided' after '//@ open'" '//@{
x
//@ open
//@ guided
//@}
'
bad twice 4 "'//@ guided' after '//@ guided'" '//@{
//@ guided
//| x
//@ guided
//@}
'
bad end_name 3 "ends region A (line 1)" '//@{ A
x
//@} B
'
bad indented 2 "must start in column 1" 'int a;
    //@{
'
bad unknown 1 "unknown marker '//@ solution'" '//@ solution
'
bad span_unclosed 2 "span that begins here is not closed" 'a
//@[
x
'
bad span_nested 3 "spans do not nest" '//@[
x
//@[
//@]
'
bad span_stray_end 2 "stray '//@\]'" 'a
//@]
'
bad span_in_region 3 "inside the region of line 1" '//@{
x
//@[
//@}
'
bad span_cuts_region 4 "inside region R (line 2)" '//@[
//@{ R
x
//@]
//@}
'
bad open_in_span 4 "would never show" '//@[
//@{
x
//@ open
//@}
//@]
'

# ---- --check ----------------------------------------------------------------
"$gen" ok.c >skel.c
"$gen" --check ok.c skel.c 2>err.txt || fail "--check of a generated skeleton: $(cat err.txt)"
sed 's/TODO(A1)/TODO(A2)/' skel.c >edited.c
"$gen" --check --lesson 07 ok.c edited.c 2>err.txt
rc=$?
[ $rc -eq 1 ] || fail "--check of an edited skeleton: exit status $rc, want 1"
for want in "The first difference is at line 2:" "committed:     // TODO(A2): set a" \
    "generated:     // TODO(A1): set a" "comes from ok.c:5" " ok.c -o edited.c" \
    "./lab skeletons" "Your check is ./lab check 07."; do
    grep -qF -- "$want" err.txt || fail "--check message lacks '$want': $(cat err.txt)"
done
"$gen" --check --level open ok.c skel.c 2>err.txt
[ $? -eq 1 ] && grep -qF -- "--level open ok.c -o skel.c" err.txt ||
    fail "--check --level open: $(cat err.txt)"
head -c 5 skel.c >short.c
"$gen" --check ok.c short.c 2>err.txt
grep -qF "committed: (end of file)" err.txt || grep -qF "no newline at the end" err.txt ||
    fail "--check of a cut skeleton: $(cat err.txt)"
"$gen" --check ok.c missing.c 2>/dev/null
[ $? -eq 2 ] || fail "--check of a missing skeleton: want exit status 2"

# ---- -o ----------------------------------------------------------------------
"$gen" ok.c -o out.c >msg.txt && cmp -s out.c want.guided && grep -q "out.c: written" msg.txt ||
    fail "-o did not write the skeleton"
"$gen" ok.c -o out.c >msg.txt && grep -q "out.c: up to date" msg.txt || fail "-o rewrote an unchanged skeleton"
cp ok.c keep.c
"$gen" ok.c -o ok.c >/dev/null 2>&1
[ $? -eq 2 ] && cmp -s ok.c keep.c || fail "-o onto the solution itself was not refused"

[ $failed -eq 0 ] && echo "skeleton_markers: fl_skeleton's levels, errors, --check and -o behave"
exit $failed
