#!/bin/sh
# tests/grader/stage.sh — somewhere the grader's sandbox user can read, for
# the grader's own tests.
#
# Run as root, the grader starts each sandboxed step as another user (nobody,
# or uid 64000 + i), who must be able to read the course and the batch's
# folders; it refuses a course that user cannot read. A clone in a folder
# others cannot enter (mode 0700, as `mktemp -d` makes) is such a course. Its
# build then gives the grader's tests a copy of the course and their batch
# folders under a folder of /tmp that everyone may read (tests/grader/
# CMakeLists.txt); elsewhere they use the tree itself.
#
#   stage.sh --needed SRC BUILD  exit 0 when a copy is needed (root, and a
#                                folder on the way to SRC or BUILD that other
#                                users cannot enter, or SRC they cannot read);
#                                1 when not
#   stage.sh --copy SRC STAGE    STAGE/course := the course's files (git's
#                                tracked and new ones, else all but builds),
#                                readable by all; STAGE/build made
set -u
usage() { echo "usage: $0 --needed SRC BUILD | --copy SRC STAGE" >&2; exit 2; }
[ $# -eq 3 ] || usage

# others_can PATH BITS: every folder on the way to PATH lets others enter it,
# and PATH itself also has BITS (4: read) for others
others_can() {
    p=$1 want=$2
    [ -e "$p" ] || return 0
    while :; do
        m=$(stat -c %a "$p") || return 1
        o=$((m % 10))
        [ $((o & 1)) -eq 1 ] || return 1
        [ $((o & want)) -eq "$want" ] || return 1
        want=0
        [ "$p" = / ] && return 0
        p=$(dirname "$p")
    done
}

case $1 in
--needed)
    [ "$(id -u)" = 0 ] || exit 1
    others_can "$2" 4 && others_can "$3" 0 && exit 1
    exit 0 ;;
--copy)
    src=$2 stage=$3
    umask 022
    if [ -L "$stage" ] || { [ -e "$stage" ] && { [ ! -d "$stage" ] || [ "$(stat -c %u "$stage")" != "$(id -u)" ]; }; }; then
        echo "stage.sh: $stage exists and is not a folder of this user's: refusing to use it" >&2
        exit 2
    fi
    mkdir -p "$stage/build" || exit 2
    chmod 755 "$stage" "$stage/build"
    rm -rf "$stage/course"
    mkdir "$stage/course" || exit 2
    if git -C "$src" rev-parse --show-toplevel >/dev/null 2>&1; then
        git -C "$src" ls-files -co --exclude-standard | (cd "$src" && tar -cf - -T -) |
            tar -C "$stage/course" -xf - || exit 2
    else
        (cd "$src" && tar -cf - --exclude=./build --exclude='./build-*' --exclude=./grade-out .) |
            tar -C "$stage/course" -xf - || exit 2
    fi
    chmod -R go+rX "$stage/course"
    echo "stage.sh: the grader's tests use $stage/course (a copy others may read: as root the grader's steps run as another user)" ;;
*) usage ;;
esac
