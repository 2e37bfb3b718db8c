/* common/check.c — the one place CUDA errors are printed. */
#include "check.h"

#include <stdio.h>

cudaError_t fl_cuda_report(cudaError_t err, const char *call, const char *file,
                           int line)
{
    if (err != cudaSuccess) {
        fprintf(stderr, "CUDA error %s (%s) at %s:%d in `%s`\n",
                cudaGetErrorName(err), cudaGetErrorString(err), file, line,
                call);
    }
    return err;
}
