// ADVERSARIAL: fused_elementwise creates a non-blocking stream of its own and launches there (cheat): the timer's events bracket nothing
// REPLACES: vector_add.cu
// RUN: scan
// EXPECT: creates its own stream
//
// tests/adversarial/01-vector-add/own_stream.cu — a known-bad lesson 01 file.
//
// What is wrong: Part B makes (once) a stream with cudaStreamNonBlocking and
// queues its kernel there instead of on the `stream` it was given. It waits
// for the given stream first so that the poisoning the tests queue before it
// is done (the correctness suites pass), but the harness's events on
// `stream` no longer bracket the kernel, so it would look nearly free.
//
// Why it is caught: tools/scan-objects finds cudaStreamCreateWithFlags among
// the object's undefined symbols: "creates its own stream: launch all work
// on the stream you are given". (At run time the speed suite would also
// catch it: "the timed stream saw only"; other_stream.cu is the variant
// that the scan cannot see.)
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
    // CHEAT (this entry's defect): a private non-blocking stream, created on
    // the first call; the harness's events on `stream` never see its work.
    static cudaStream_t own = NULL;
    if (own == NULL) CUDA_CHECK(cudaStreamCreateWithFlags(&own, cudaStreamNonBlocking));
    CUDA_CHECK(cudaStreamSynchronize(stream)); // let the caller's poisoning land first
    if (FL_ALIGNED16(a) && FL_ALIGNED16(b) && FL_ALIGNED16(c) && FL_ALIGNED16(y)) {
        size_t items = n / 4 ? n / 4 : n; // float4 steps (or the few leftovers)
        unsigned int blocks = fl_grid_blocks(items, kThreads, kBlocksPerSm);
        fused_elementwise_vec4_kernel<<<blocks, kThreads, 0, own>>>(a, b, c, s, y, n);
    } else {
        unsigned int blocks = fl_grid_blocks(n, kThreads, kBlocksPerSm);
        fused_elementwise_kernel<<<blocks, kThreads, 0, own>>>(a, b, c, s, y, n);
    }
    CUDA_CHECK_LAST();
    return cudaSuccess;
}
