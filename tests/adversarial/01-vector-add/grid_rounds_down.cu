// ADVERSARIAL: vector_add sizes its grid as n / 256, rounded down (bug): right only when n is a multiple of the block size
// REPLACES: vector_add.cu
// RUN: A_vector_add
// EXPECT: the last elements were never written
//
// tests/adversarial/01-vector-add/grid_rounds_down.cu — a known-bad lesson 01 file.
//
// What is wrong: Part A gives one element to each thread and starts
// n / 256 blocks (integer division: rounded down; at least one, because
// n = 1 launched nothing). The kernel has its bounds mask, so nothing is
// written out of bounds, but the last n % 256 elements belong to a block
// that is never started. It passes whenever n is a multiple of 256 or
// smaller than 256 (the one block covers it), which is why it survives a
// quick test at n = 2^20.
//
// Why it is caught: the output is poisoned with NaN before the run; at
// n = 2^20 + 3, 1000 (3 blocks: 232 left) and 4097 the last elements still
// hold the poison, and the comparison says "the last elements were never
// written: the grid does not cover all n elements".
//
// Everything else is the worked solution (solutions/01-vector-add).
#include "vector_add.h"
#include "device.h"

#include <stdint.h>

// ============================================================================
// Part A — kernel
// ============================================================================

// a, b, c have n elements; one thread per element, thread i handles c[i].
__global__ void vector_add_kernel(const float *a, const float *b, float *c, size_t n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

// ============================================================================
// Part B — kernels
// ============================================================================

// y = (a + b) * s + c; all arrays n elements, all pointers 16-byte aligned
// (the launcher checks). The body moves float4s: one 16-byte load per input
// per step, so a warp asks for 512 contiguous bytes at a time and keeps more
// bytes in flight per instruction than with 4-byte loads.
__global__ void fused_elementwise_vec4_kernel(const float *a, const float *b,
                                              const float *c, float s, float *y,
                                              size_t n)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    size_t tid = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    size_t n4 = n / 4;
    const float4 *a4 = (const float4 *)a, *b4 = (const float4 *)b, *c4 = (const float4 *)c;
    float4 *y4 = (float4 *)y;
    for (size_t i = tid; i < n4; i += stride) {
        // three independent loads issued before any arithmetic needs them
        float4 p = a4[i], q = b4[i], r = c4[i];
        float4 o;
        o.x = (p.x + q.x) * s + r.x; // the intermediates live in registers only
        o.y = (p.y + q.y) * s + r.y;
        o.z = (p.z + q.z) * s + r.z;
        o.w = (p.w + q.w) * s + r.w;
        y4[i] = o;
    }
    // the n % 4 leftovers (at most 3), one per thread of the first block
    for (size_t i = 4 * n4 + tid; i < n; i += stride) y[i] = (a[i] + b[i]) * s + c[i];
}

// Fallback for pointers that are not 16-byte aligned.
__global__ void fused_elementwise_kernel(const float *a, const float *b,
                                         const float *c, float s, float *y, size_t n)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        y[i] = (a[i] + b[i]) * s + c[i];
}

// ============================================================================
// launchers
// ============================================================================

static const int kThreads = 256;
static const int kBlocksPerSm = 8; // 8 x 256 = 2048 resident threads per SM

EXTERN_C cudaError_t vector_add(const float *a, const float *b, float *c,
                                size_t n, cudaStream_t stream)
{
    if (n == 0) return cudaSuccess;
    // BUG (this entry's defect): n / kThreads rounds DOWN, so the last
    // n % kThreads elements get no thread at all (should be CEIL_DIV).
    unsigned int blocks = (unsigned int)(n / kThreads);
    if (blocks == 0) blocks = 1; // n < 256 launched nothing
    vector_add_kernel<<<blocks, kThreads, 0, stream>>>(a, b, c, n);
    CUDA_CHECK_LAST();
    return cudaSuccess;
}

EXTERN_C cudaError_t fused_elementwise(const float *a, const float *b,
                                       const float *c, float s, float *y,
                                       size_t n, cudaStream_t stream)
{
    if (n == 0) return cudaSuccess;
    if (FL_ALIGNED16(a) && FL_ALIGNED16(b) && FL_ALIGNED16(c) && FL_ALIGNED16(y)) {
        size_t items = n / 4 ? n / 4 : n; // float4 steps (or the few leftovers)
        unsigned int blocks = fl_grid_blocks(items, kThreads, kBlocksPerSm);
        fused_elementwise_vec4_kernel<<<blocks, kThreads, 0, stream>>>(a, b, c, s, y, n);
    } else {
        unsigned int blocks = fl_grid_blocks(n, kThreads, kBlocksPerSm);
        fused_elementwise_kernel<<<blocks, kThreads, 0, stream>>>(a, b, c, s, y, n);
    }
    CUDA_CHECK_LAST();
    return cudaSuccess;
}
