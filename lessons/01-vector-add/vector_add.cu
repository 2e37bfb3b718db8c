// lessons/01-vector-add/vector_add.cu — YOUR FILE for lesson 01.
//
// Part A: c = a + b            (vector_add_kernel)
// Part B: y = (a + b) * s + c  (fused_elementwise_kernel), in one kernel
//
// It compiles and runs as shipped, but the kernels do nothing yet, so
// `./lab check 01` fails. Fill in the TODOs, then run `./lab check 01` again.
// The lesson's README.md explains the why; read it first.
#include "vector_add.h"

// ============================================================================
// Part A — kernel
// ============================================================================

// a, b, c are device arrays of n floats. The launcher below starts
// CEIL_DIV(n, 256) blocks of 256 threads: at least one thread per element,
// and usually a few more than n.
__global__ void vector_add_kernel(const float *a, const float *b, float *c, size_t n)
{
    // TODO(A1): compute this thread's element index from blockIdx.x,
    //           blockDim.x and threadIdx.x (use size_t: n can exceed 2^31).
    // TODO(A2): the last block overhangs the array: only threads with an
    //           index below n may read and write.
    // TODO(A3): c[i] = a[i] + b[i]
    // Going further: turn it into a grid-stride loop (README, "Hints") so a
    //           grid of any size covers any n.
}

// ============================================================================
// Part B — kernel
// ============================================================================

// y = (a + b) * s + c. a, b, c, y are device arrays of n floats; s is a
// scalar. The baseline in elementwise_unfused.cu runs three kernels and
// writes two intermediates to memory; here nothing but y is written.
__global__ void fused_elementwise_kernel(const float *a, const float *b,
                                         const float *c, float s, float *y, size_t n)
{
    // TODO(B1): same indexing and bounds mask as Part A.
    // TODO(B2): y[i] = (a[i] + b[i]) * s + c[i], with the intermediates in
    //           registers (local variables), never in memory.
    // TODO(B3), to reach the speed target: read 16 bytes at a time (float4)
    //           when the pointers are 16-byte aligned, and handle the n % 4
    //           leftovers (README, "Hints").
}

// ============================================================================
// launchers (you may change these; keep the signatures)
// ============================================================================

EXTERN_C cudaError_t vector_add(const float *a, const float *b, float *c,
                                size_t n, cudaStream_t stream)
{
    if (n == 0) return cudaSuccess;
    const int threads = 256;
    unsigned int blocks = (unsigned int)CEIL_DIV(n, (size_t)threads);
    vector_add_kernel<<<blocks, threads, 0, stream>>>(a, b, c, n);
    CUDA_CHECK_LAST(); // reports a bad launch (e.g. too many threads per block)
    return cudaSuccess;
}

EXTERN_C cudaError_t fused_elementwise(const float *a, const float *b,
                                       const float *c, float s, float *y,
                                       size_t n, cudaStream_t stream)
{
    if (n == 0) return cudaSuccess;
    const int threads = 256;
    unsigned int blocks = (unsigned int)CEIL_DIV(n, (size_t)threads);
    fused_elementwise_kernel<<<blocks, threads, 0, stream>>>(a, b, c, s, y, n);
    CUDA_CHECK_LAST();
    return cudaSuccess;
}
