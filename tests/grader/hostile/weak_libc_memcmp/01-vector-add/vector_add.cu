// HOSTILE (weak override of a libc function): a weak memcmp that says every
// two buffers are equal. A definition in the executable interposes on
// libc's for every caller in the process (the harness, Criterion, the CUDA
// runtime): any check built on memcmp passes. Weak, so the grader's symbol
// check (strong definitions against libc's exports) lets it through.
// Must stop it: the object scan / symbol check, counting weak definitions
// (no symbol but the lesson's API).
#include "vector_add.h"

#include <string.h>

extern "C" __attribute__((weak)) int memcmp(const void *a, const void *b, size_t n) noexcept
{
    (void)a; (void)b; (void)n;
    return 0;
}

#pragma hostile skeleton
