//@{
// solutions/01-vector-add/vector_add.cu — worked solution of lesson 01.
//
// Part A: c = a + b, one element per loop step, with the bounds mask and a
//         grid-stride loop.
// Part B: y = (a + b) * s + c in ONE kernel: each element is read once from
//         each input and written once, nothing in between touches memory.
//         16 bytes per load where the pointers allow it.
//
// Build and check:  ./lab check 01   (student file)   ./lab test (this one)
//@ guided
//| // lessons/01-vector-add/vector_add.cu — YOUR FILE for lesson 01.
//| //
//| // Part A: c = a + b            (vector_add_kernel)
//| // Part B: y = (a + b) * s + c  (fused_elementwise_kernel), in one kernel
//| //
//| // It compiles and runs as shipped, but the kernels do nothing yet, so
//| // `./lab check 01` fails. Fill in the TODOs, then run `./lab check 01` again.
//| // The lesson's README.md explains the why; read it first.
//@ open
//| // lessons/01-vector-add/vector_add.cu — YOUR FILE for lesson 01, open level.
//| //
//| // Write the two launchers of vector_add.h and the kernels they start:
//| //   vector_add         c = a + b
//| //   fused_elementwise  y = (a + b) * s + c in ONE kernel: each input read
//| //                      once, y written once, no intermediate in memory
//| // for every n (0, and past 2^32), every s, pointers of any float
//| // alignment, and only on the `stream` given. vector_add.h is the contract;
//| // the README says what the checks test and how fast Part B must be.
//| //
//| // Nothing else is given: no kernel, no launch shape. Use the course's
//| // helpers if you like (check.h: CEIL_DIV, FL_ALIGNED16, CUDA_CHECK_LAST;
//| // device.h: fl_grid_blocks). As shipped it compiles and every check fails.
//| // `./lab level guided 01` switches to the guided file (yours is kept).
//@}
#include "vector_add.h"
//@{
#include "device.h"

#include <stdint.h>
//@ guided
//@}
//@[

// ============================================================================
// Part A — kernel
// ============================================================================

//@{
// a, b, c have n elements. The grid may have fewer threads than n (the
// launcher caps it to what the GPU holds at once), so each thread walks the
// array in steps of the whole grid: thread t handles t, t + T, t + 2T, ...
// Neighbouring threads touch neighbouring floats, so every warp's access is
// one contiguous 128-byte segment: coalesced.
//@ guided
//| // a, b, c are device arrays of n floats. The launcher below starts
//| // CEIL_DIV(n, 256) blocks of 256 threads: at least one thread per element,
//| // and usually a few more than n.
//@}
__global__ void vector_add_kernel(const float *a, const float *b, float *c, size_t n)
{
//@{ A1 A2 A3
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        c[i] = a[i] + b[i]; // i < n is the bounds mask: the last block overhangs
//@ guided
//|     // TODO(A1): compute this thread's element index from blockIdx.x,
//|     //           blockDim.x and threadIdx.x (use size_t: n can exceed 2^31).
//|     // TODO(A2): the last block overhangs the array: only threads with an
//|     //           index below n may read and write.
//|     // TODO(A3): c[i] = a[i] + b[i]
//|     // Going further: turn it into a grid-stride loop (README, "Hints") so a
//|     //           grid of any size covers any n.
//@}
}

//@{
// Going further (the worked solution only): c = a + b in float4s, as the
// fused kernel below moves its arrays (all pointers 16-byte aligned: the
// launcher checks). On an H200, ./lab compare 01 measured the one-float loop
// above at 83% of copy at n = 2^26 + 1, 0.83x torch.add: 4-byte loads keep
// too few bytes in flight to reach the copy's speed. And no loop: one float4
// a thread, as many blocks as that takes. On an H100 the same float4s in a
// grid-stride loop over 2048 threads an SM took 279.6 us at n = 2^26 + 1,
// 0.96x torch.add; one float4 a thread, 268.1 us, 1.00x (at 2^24 + 1 and
// 2^28 alike): the loop's index arithmetic and its last, partly idle
// round cost 4% in a kernel that does nothing else.
__global__ void vector_add_vec4_kernel(const float *a, const float *b, float *c, size_t n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    size_t n4 = n / 4;
    if (i < n4) {
        float4 p = ((const float4 *)a)[i], q = ((const float4 *)b)[i];
        ((float4 *)c)[i] = make_float4(p.x + q.x, p.y + q.y, p.z + q.z, p.w + q.w);
    }
    size_t j = 4 * n4 + i; // the n % 4 leftovers (at most 3), by the first threads
    if (j < n) c[j] = a[j] + b[j];
}

//@ guided
//@}
// ============================================================================
//@{
// Part B — kernels
//@ guided
//| // Part B — kernel
//@}
// ============================================================================

//@{ B3
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

//@ guided
//@}
//@{
// Fallback for pointers that are not 16-byte aligned.
//@ guided
//| // y = (a + b) * s + c. a, b, c, y are device arrays of n floats; s is a
//| // scalar. The baseline in elementwise_unfused.cu runs three kernels and
//| // writes two intermediates to memory; here nothing but y is written.
//@}
__global__ void fused_elementwise_kernel(const float *a, const float *b,
                                         const float *c, float s, float *y, size_t n)
{
//@{ B1 B2 B3
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        y[i] = (a[i] + b[i]) * s + c[i];
//@ guided
//|     // TODO(B1): same indexing and bounds mask as Part A.
//|     // TODO(B2): y[i] = (a[i] + b[i]) * s + c[i], with the intermediates in
//|     //           registers (local variables), never in memory.
//|     // TODO(B3), to reach the speed target: read 16 bytes at a time (float4)
//|     //           when the pointers are 16-byte aligned, and handle the n % 4
//|     //           leftovers (README, "Hints").
//@}
}

// ============================================================================
//@{
// launchers
//@ guided
//| // launchers (you may change these; keep the signatures)
//@}
// ============================================================================

//@{
static const int kThreads = 256;
static const int kBlocksPerSm = 8; // 8 x 256 = 2048 resident threads per SM

//@ guided
//@}
//@]
//@{
//@ guided
//@ open
//|
//| // ============================================================================
//| // your kernels (any number, any names)
//| // ============================================================================
//|
//|
//| // ============================================================================
//| // the launchers: the API of vector_add.h (keep the signatures)
//| // ============================================================================
//|
//@}
EXTERN_C cudaError_t vector_add(const float *a, const float *b, float *c,
                                size_t n, cudaStream_t stream)
{
//@{
//@ guided
//@ open
//|     // TODO: c = a + b on `stream`; return cudaSuccess, or the error the
//|     //       launch reports (CUDA_CHECK_LAST returns it).
//|     (void)a, (void)b, (void)c, (void)n, (void)stream;
//|     return cudaErrorNotYetImplemented;
//@}
//@[
    if (n == 0) return cudaSuccess;
//@{
    if (FL_ALIGNED16(a) && FL_ALIGNED16(b) && FL_ALIGNED16(c)) { // going further: float4s
        size_t items = n / 4 ? n / 4 : 1; // one float4 a thread (or the few leftovers)
        unsigned int blocks = (unsigned int)CEIL_DIV(items, (size_t)kThreads);
        vector_add_vec4_kernel<<<blocks, kThreads, 0, stream>>>(a, b, c, n);
    } else {
        unsigned int blocks = fl_grid_blocks(n, kThreads, kBlocksPerSm);
        vector_add_kernel<<<blocks, kThreads, 0, stream>>>(a, b, c, n);
    }
    CUDA_CHECK_LAST();
//@ guided
//|     const int threads = 256;
//|     unsigned int blocks = (unsigned int)CEIL_DIV(n, (size_t)threads);
//|     vector_add_kernel<<<blocks, threads, 0, stream>>>(a, b, c, n);
//|     CUDA_CHECK_LAST(); // reports a bad launch (e.g. too many threads per block)
//@}
    return cudaSuccess;
//@]
}

EXTERN_C cudaError_t fused_elementwise(const float *a, const float *b,
                                       const float *c, float s, float *y,
                                       size_t n, cudaStream_t stream)
{
//@{
//@ guided
//@ open
//|     // TODO: y = (a + b) * s + c in one kernel on `stream`; return
//|     //       cudaSuccess or the launch's error.
//|     (void)a, (void)b, (void)c, (void)s, (void)y, (void)n, (void)stream;
//|     return cudaErrorNotYetImplemented;
//@}
//@[
    if (n == 0) return cudaSuccess;
//@{
    if (FL_ALIGNED16(a) && FL_ALIGNED16(b) && FL_ALIGNED16(c) && FL_ALIGNED16(y)) {
        size_t items = n / 4 ? n / 4 : n; // float4 steps (or the few leftovers)
        unsigned int blocks = fl_grid_blocks(items, kThreads, kBlocksPerSm);
        fused_elementwise_vec4_kernel<<<blocks, kThreads, 0, stream>>>(a, b, c, s, y, n);
    } else {
        unsigned int blocks = fl_grid_blocks(n, kThreads, kBlocksPerSm);
        fused_elementwise_kernel<<<blocks, kThreads, 0, stream>>>(a, b, c, s, y, n);
    }
//@ guided
//|     const int threads = 256;
//|     unsigned int blocks = (unsigned int)CEIL_DIV(n, (size_t)threads);
//|     fused_elementwise_kernel<<<blocks, threads, 0, stream>>>(a, b, c, s, y, n);
//@}
    CUDA_CHECK_LAST();
    return cudaSuccess;
//@]
}
