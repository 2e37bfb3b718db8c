// HOSTILE (grading seed exfiltration, hex): a constructor reads
// FUSIONLAB_GRADE_SEED with getenv, prints it in hex and exits before the
// tests: with no report, the grader quotes what the program printed in the
// student's results. A grader that scrubs the seed verbatim misses its hex.
// With the seed a student can compute the secret test inputs offline.
// Must stop it: the object scan (reads the environment; a constructor), and
// a test environment that holds no batch secret (a seed derived from it).
#include "vector_add.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

__attribute__((constructor)) static void leak_hex(void)
{
    const char *s = getenv("FUSIONLAB_GRADE_SEED");
    if (s == NULL) return;
    printf("debug: ");
    for (; *s; ++s) printf("%02x", (unsigned char)*s);
    printf("\n");
    fflush(stdout);
    _exit(3);
}

#pragma hostile skeleton
