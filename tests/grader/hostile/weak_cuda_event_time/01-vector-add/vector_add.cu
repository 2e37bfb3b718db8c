// HOSTILE (weak override of a CUDA function): a weak cudaEventElapsedTime
// that reports one microsecond between any two events: every timed kernel
// looks 1000x faster than the baseline. Whether the CUDA runtime's own copy
// or this one wins depends on how the runtime is linked (static archive
// member pulled in or not, shared library interposed); the grader must
// not leave it to the linker.
// Must stop it: the object scan / symbol check, counting weak definitions;
// the scan's rule on CUDA events (the harness does the timing).
#include "vector_add.h"

extern "C" __attribute__((weak)) cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start,
                                                                  cudaEvent_t end)
{
    (void)start; (void)end;
    *ms = 0.001f;
    return cudaSuccess;
}

#pragma hostile skeleton
