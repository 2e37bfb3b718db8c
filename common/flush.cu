// common/flush.cu — evict L2 by streaming a large buffer through it.
//
// A read (rather than cudaMemset) leaves L2 full of clean lines, so the
// kernel timed next does not pay for writing someone else's dirty lines back.
#include "timing.h"

// ============================================================================
// kernel
// ============================================================================

// buf is `n` int4 elements; the sum is written only if it hits a value that
// never occurs in practice, which keeps the compiler from dropping the loads.
__global__ void fl_l2_flush_kernel(const int4 *buf, size_t n, int *sink)
{
    int acc = 0;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        int4 v = buf[i];
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == 0x5eed1e55) *sink = acc;
}

// ============================================================================
// launcher
// ============================================================================

EXTERN_C cudaError_t fl_l2_flush(const void *buf, size_t bytes, int *sink,
                                 cudaStream_t stream)
{
    size_t n = bytes / sizeof(int4);
    if (n == 0) return cudaSuccess;
    int blocks = (int)(CEIL_DIV(n, 256) < 4096 ? CEIL_DIV(n, 256) : 4096);
    fl_l2_flush_kernel<<<blocks, 256, 0, stream>>>((const int4 *)buf, n, sink);
    CUDA_CHECK_LAST();
    return cudaSuccess;
}
