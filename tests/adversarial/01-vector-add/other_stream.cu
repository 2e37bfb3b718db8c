// ADVERSARIAL: fused_elementwise runs on the per-thread default stream, with one block per SM, instead of on the stream it is given (cheat): the timer's events close before the work ends
// REPLACES: vector_add.cu
// RUN: speed
// EXPECT: timed stream saw only
//
// tests/adversarial/01-vector-add/other_stream.cu — a known-bad lesson 01 file.
//
// What is wrong: Part B ignores its `stream` argument and queues the kernel
// on cudaStreamPerThread, a stream that exists without being created (a
// constant handle, so there is no cudaStreamCreate for the object scan to
// find), with a small grid: one block per SM. The harness times the stream
// it passed in with CUDA events; that stream does not wait for the
// per-thread stream (the harness's stream is non-blocking), so the events
// close as soon as the harness's own work after the call is done, while the
// kernel, which leaves most of every SM free for that work, is still
// running. (A full-size grid on another stream would mostly hold up the
// harness's trailing work and so end up inside the events anyway: the
// small grid is what lets the work outlast them.) The correctness suites
// pass: the tests synchronise the whole device before reading y.
//
// Why it is caught: the timing protocol also synchronises the device and
// reads the wall clock around every sample. The device stays busy for the
// hundreds of microseconds the kernel takes at n = 2^26 while the events
// see a few tens: "fused n=2^26: the GPU was busy ... us per run but the
// timed stream saw only ... us: launch all work on the stream you are given".
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

EXTERN_C cudaError_t fused_elementwise(const float *a, const float *b,
                                       const float *c, float s, float *y,
                                       size_t n, cudaStream_t stream)
{
    if (n == 0) return cudaSuccess;
    // CHEAT (this entry's defect): the work goes to the per-thread default
    // stream, not to `stream`, as one block per SM, so the events the
    // harness records on `stream` do not bracket it.
    (void)stream;
    const cudaStream_t hidden = cudaStreamPerThread;
    const int kHiddenBlocksPerSm = 1;
    if (FL_ALIGNED16(a) && FL_ALIGNED16(b) && FL_ALIGNED16(c) && FL_ALIGNED16(y)) {
        size_t items = n / 4 ? n / 4 : n; // float4 steps (or the few leftovers)
        unsigned int blocks = fl_grid_blocks(items, kThreads, kHiddenBlocksPerSm);
        fused_elementwise_vec4_kernel<<<blocks, kThreads, 0, hidden>>>(a, b, c, s, y, n);
    } else {
        unsigned int blocks = fl_grid_blocks(n, kThreads, kHiddenBlocksPerSm);
        fused_elementwise_kernel<<<blocks, kThreads, 0, hidden>>>(a, b, c, s, y, n);
    }
    CUDA_CHECK_LAST();
    return cudaSuccess;
}
