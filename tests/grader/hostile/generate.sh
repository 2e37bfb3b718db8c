#!/bin/sh
# tests/grader/hostile/generate.sh — the hostile submissions that cannot be
# committed as they are: folders whose names are the attack (roster.csv,
# newlines, quotes, shell syntax, a case-twin of another submission), files
# whose names carry markup and control bytes, and crafted archives (links,
# device nodes, a decompression bomb, too many entries).
#
#   generate.sh COURSE STAGE
#
# Writes each entry as STAGE/<entry>/<the submission>, exactly one child per
# entry folder (run.sh takes it with a glob: names with newlines survive).
# Every one of them holds the untouched skeleton of lesson 01 where a lesson
# file is expected, so it scores 0 unless the attack works. Each entry has
# its <entry>.expect next to this script.
set -eu
[ $# -eq 2 ] || { echo "usage: $0 COURSE STAGE" >&2; exit 2; }
course=$1 stage=$2
skeleton=$course/lessons/01-vector-add/vector_add.cu
[ -f "$skeleton" ] || { echo "generate.sh: no $skeleton" >&2; exit 2; }
rm -rf "$stage"
mkdir -p "$stage"

# a folder submission named $2 (any bytes but / and NUL) for entry $1
folder() {
    mkdir -p "$stage/$1/$2/01-vector-add"
    cp "$skeleton" "$stage/$1/$2/01-vector-add/vector_add.cu"
}

# ---- names that are the attack --------------------------------------------
folder name_roster_csv 'roster.csv'       # the batch's roster
folder name_junit_xml 'junit.xml'         # the batch's JUnit file
folder name_dot_work '.work'              # the default scratch folder
folder name_submissions 'submissions'     # where results go (OUT/submissions/)
folder name_option_like '--help'          # an option, if ever passed bare
# quotes, spaces, a newline, a tab and shell syntax: if any tool ever runs a
# command line through a shell with this name in it, a file HOSTILE-PWNED
# appears (run.sh looks for it)
folder name_weird_chars "we \"ird\" 'name'
\$(touch HOSTILE-PWNED-1)\`touch HOSTILE-PWNED-2\`;touch HOSTILE-PWNED-3;	x"
# a case-twin of the honest control (control_solution), graded just before
# it: the honest submission must keep its own name (or be told apart by its
# recorded path), not lose it to the twin
folder name_spoof_control 'CONTROL_SOLUTION'

# ---- file names that carry markup and control bytes (ignored files, listed
# in the report) ---------------------------------------------------------------
d=$stage/inject_filenames/inject_filenames
folder inject_filenames inject_filenames
for n in ']]><!-- x -->&amp;&#0;<x y="1">.txt' "=cmd|' calc'!A0.csv" '```<script>alert(1)<\script>.md' \
    "$(printf 'notes-\033[2J\033[31mred\033[0m.txt')" "$(printf 'line\nbreak.txt')" \
    "$(printf 'bad-\357\277\277-\377-\355\240\200.txt')" "$(printf 'rlo-\342\200\256txt.exe')" \
    "$(printf '%0240d.txt' 7)" '| forged | table |.md' '<img src=x onerror=alert(1)>.html'; do
    printf 'hostile\n' >"$d/01-vector-add/$n"
done

# ---- crafted archives -----------------------------------------------------------
mkdir -p "$stage/archive_symlink_solution" "$stage/archive_hardlink_device" \
    "$stage/archive_zip_symlink" "$stage/archive_many_entries" "$stage/archive_gzip_bomb" \
    "$stage/name_dotdot_archive"
python3 - "$stage" "$skeleton" <<'EOF'
import io, sys, tarfile, zipfile
stage, skeleton = sys.argv[1], sys.argv[2]
skel = open(skeleton, 'rb').read()

def member(tf, name, data):
    ti = tarfile.TarInfo(name)
    ti.size = len(data)
    tf.addfile(ti, io.BytesIO(data))

# lesson 01's file is a symbolic link to the worked solution (relative: no
# `..` in the entry's own name, only in its target)
with tarfile.open(f'{stage}/archive_symlink_solution/archive_symlink_solution.tar.gz', 'w:gz') as tf:
    ti = tarfile.TarInfo('01-vector-add/vector_add.cu')
    ti.type = tarfile.SYMTYPE
    ti.linkname = '../../../../solutions/01-vector-add/vector_add.cu'
    tf.addfile(ti)

# a hard link to /etc/passwd as lesson 01's file, a character device (the
# machine's memory) and a FIFO next to it
with tarfile.open(f'{stage}/archive_hardlink_device/archive_hardlink_device.tar', 'w') as tf:
    ti = tarfile.TarInfo('01-vector-add/vector_add.cu')
    ti.type = tarfile.LNKTYPE
    ti.linkname = '/etc/passwd'
    tf.addfile(ti)
    ti = tarfile.TarInfo('01-vector-add/mem')
    ti.type = tarfile.CHRTYPE
    ti.devmajor, ti.devminor = 1, 1
    tf.addfile(ti)
    ti = tarfile.TarInfo('01-vector-add/fifo')
    ti.type = tarfile.FIFOTYPE
    tf.addfile(ti)

# a zip whose lesson file is a symlink entry, and a zip-slip entry
with zipfile.ZipFile(f'{stage}/archive_zip_symlink/archive_zip_symlink.zip', 'w') as zf:
    zi = zipfile.ZipInfo('01-vector-add/vector_add.cu')
    zi.create_system = 3
    zi.external_attr = (0o120777 << 16)
    zf.writestr(zi, '../../../../solutions/01-vector-add/vector_add.cu')
    zf.writestr('../../escaped-by-zip.cu', '// must never be written outside the scratch folder\n')

# more entries than the grader lists (20000): refused, not walked forever
with tarfile.open(f'{stage}/archive_many_entries/archive_many_entries.tar', 'w') as tf:
    member(tf, '01-vector-add/vector_add.cu', skel)
    for i in range(20050):
        member(tf, f'junk/{i}', b'')

# a decompression bomb: lesson 01's file is 1 GiB of zeros (1 MiB in the
# archive); it must be refused by its listed size, never held in memory
class Zeros(io.RawIOBase):
    def __init__(self, n): self.left = n
    def readable(self): return True
    def readinto(self, b):
        k = min(len(b), self.left)
        b[:k] = bytes(k)
        self.left -= k
        return k
with tarfile.open(f'{stage}/archive_gzip_bomb/archive_gzip_bomb.tar.gz', 'w:gz', compresslevel=1) as tf:
    ti = tarfile.TarInfo('01-vector-add/vector_add.cu')
    ti.size = 1 << 30
    tf.addfile(ti, io.BufferedReader(Zeros(ti.size), 1 << 20))

# an archive named "..tar.gz": its id must not be "." or ".."
with tarfile.open(f'{stage}/name_dotdot_archive/..tar.gz', 'w:gz') as tf:
    member(tf, '01-vector-add/vector_add.cu', skel)
EOF
