// ADVERSARIAL: fused_elementwise is right for its first 4 calls (the test's check and the 3 warm-ups), then returns without launching (cheat)
// REPLACES: vector_add.cu
// RUN: speed
// EXPECT: wrong during the timed runs
//
// tests/adversarial/01-vector-add/warmup_only.cu — a known-bad lesson 01 file.
//
// What is wrong: Part B counts its calls. The speed test calls it once to
// check the answer before timing, then the timing protocol runs 3 untimed
// warm-ups (fl_timing_defaults); those 4 calls do the work. From the 5th
// call on, the launcher returns cudaSuccess without launching anything, so
// every timed sample measures an empty stream: an absurd speedup, and, with
// a harness that checks the output only once before timing, a pass. The
// correctness suites call it once per test process and pass.
//
// Why it is caught: the output is poisoned before every run and checked
// after every warm-up and every timed run (check_each). The first timed
// sample leaves y all NaN: "wrong during the timed runs: run 4 of 33 (timed
// sample 1) gave a wrong output, after 3 right ... no element was written".
//
// Everything else is the worked solution (solutions/01-vector-add).
#include "vector_add.h"
#include "device.h"

#include <stdint.h>

// ============================================================================
// Part A — kernel
// ============================================================================

// a, b, c have n elements. The grid may have fewer threads than n (the
// launcher caps it to what the GPU holds at once), so each thread walks the
// array in steps of the whole grid: thread t handles t, t + T, t + 2T, ...
// Neighbouring threads touch neighbouring floats, so every warp's access is
// one contiguous 128-byte segment: coalesced.
__global__ void vector_add_kernel(const float *a, const float *b, float *c, size_t n)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        c[i] = a[i] + b[i]; // i < n is the bounds mask: the last block overhangs
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
    unsigned int blocks = fl_grid_blocks(n, kThreads, kBlocksPerSm);
    vector_add_kernel<<<blocks, kThreads, 0, stream>>>(a, b, c, n);
    CUDA_CHECK_LAST();
    return cudaSuccess;
}

// CHEAT (this entry's defect): honest for the calls that are checked before
// timing starts (1 correctness check + 3 warm-ups), then nothing at all.
static const int kHonestCalls = 4;

EXTERN_C cudaError_t fused_elementwise(const float *a, const float *b,
                                       const float *c, float s, float *y,
                                       size_t n, cudaStream_t stream)
{
    static int calls = 0;
    if (++calls > kHonestCalls) return cudaSuccess; // "the timer is running now"
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
