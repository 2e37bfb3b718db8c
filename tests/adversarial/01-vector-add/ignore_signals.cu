// ADVERSARIAL: a constructor makes the test process ignore SIGTERM and SIGALRM (cheat): a timed-out test cannot be stopped politely
// REPLACES: vector_add.cu
// RUN: scan
// EXPECT: installs a signal handler
//
// tests/adversarial/01-vector-add/ignore_signals.cu — a known-bad lesson 01 file.
//
// What is wrong: besides the (correct) kernels, the file carries a function
// marked __attribute__((constructor)), which runs before main() of whatever
// program links it: the test program, the grader's runs. It sets SIGTERM
// and SIGALRM to SIG_IGN with sigaction, so a runner that stops a slow test
// with a timer or a polite kill sees the test keep going: a too-slow or
// hanging kernel would survive the suite's timeout instead of failing it.
//
// Why it is caught: tools/scan-objects finds `sigaction` among the object's
// undefined symbols: "installs a signal handler or changes signal handling
// (a test must be stoppable)". An exercise file has no reason to touch
// signals.
//
// Everything else is the worked solution (solutions/01-vector-add).
#include "vector_add.h"
#include "device.h"

#include <signal.h>
#include <stdint.h>
#include <string.h>

// CHEAT (this entry's defect): runs when the program is loaded, before any
// test; from then on SIGTERM and SIGALRM are ignored.
__attribute__((constructor)) static void keep_running_through_timeouts(void)
{
    struct sigaction ignore;
    memset(&ignore, 0, sizeof ignore);
    ignore.sa_handler = SIG_IGN;
    sigemptyset(&ignore.sa_mask);
    (void)sigaction(SIGTERM, &ignore, NULL);
    (void)sigaction(SIGALRM, &ignore, NULL);
}

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
