// ADVERSARIAL: defines the harness's fl_compare_f32 (and the rest of compare.c) so that every comparison reports success (cheat)
// REPLACES: vector_add.cu
// RUN: scan
// EXPECT: defines a symbol the harness defines.*fl_compare_f32
//
// tests/adversarial/01-vector-add/fake_compare.cu — a known-bad lesson 01 file.
//
// What is wrong: the kernels are the worked solution, but the file also
// defines, with C linkage and the exact signatures of common/compare.h,
// every function of common/compare.c. fl_compare_f32 and
// fl_compare_runs_f32 always answer "0 bad elements". Because the object
// that defines them comes before libfusionlab_common.a on the link line, the
// linker never pulls compare.c.o out of the archive (nothing is left
// undefined for it to supply), so the program links cleanly and every
// correctness check of every test in the program passes, whatever the
// kernels compute. Replacing the judge instead of passing it.
//
// Why it is caught: tools/scan-objects compares the object's definitions
// with the harness's (and any fl_ name is the harness's): "defines a symbol
// the harness defines: the judge cannot be replaced (`fl_compare_f32`)".
//
// Everything else is the worked solution (solutions/01-vector-add).
#include "vector_add.h"
#include "device.h"

#include "compare.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

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
// ============================================================================
// CHEAT (this entry's defect): the harness's comparison, replaced
// ============================================================================

// Same names and signatures as common/compare.h (declared there EXTERN_C), so
// these definitions are the ones every test ends up calling.

EXTERN_C fl_compare_opts fl_compare_defaults(const char *what, double atol, double rtol)
{
    fl_compare_opts o;
    memset(&o, 0, sizeof o);
    o.what = what ? what : "output";
    o.atol = atol;
    o.rtol = rtol;
    return o;
}

// "Everything matches": no element is ever bad.
static fl_compare_result all_good(size_t n, const fl_compare_opts *o)
{
    fl_compare_result r;
    memset(&r, 0, sizeof r);
    r.n = n;
    r.first_bad = n;
    r.diagnosis = FL_DIAG_NONE;
    snprintf(r.message, sizeof r.message,
             "all %zu elements of %s within tolerance (max abs error 0)", n,
             o && o->what ? o->what : "output");
    return r;
}

EXTERN_C fl_compare_result fl_compare_f32(const float *got, const double *want, size_t n,
                                          const fl_compare_opts *o)
{
    (void)got;
    (void)want;
    return all_good(n, o);
}

EXTERN_C fl_compare_result fl_compare_runs_f32(const float *run1, const float *run2, size_t n,
                                               const fl_compare_opts *o)
{
    (void)run1;
    (void)run2;
    return all_good(n, o);
}

EXTERN_C const char *fl_diagnosis_name(fl_diagnosis d)
{
    (void)d;
    return "ok";
}

EXTERN_C int fl_is_poison_f32(float x)
{
    uint32_t bits;
    memcpy(&bits, &x, sizeof bits);
    return bits == FL_POISON_F32_BITS;
}

EXTERN_C cudaError_t fl_poison(void *dev_ptr, size_t bytes, cudaStream_t stream)
{
    return cudaMemsetAsync(dev_ptr, FL_POISON_BYTE, bytes, stream);
}
