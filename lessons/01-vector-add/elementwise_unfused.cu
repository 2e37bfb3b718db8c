// lessons/01-vector-add/elementwise_unfused.cu — the PyTorch-style baseline.
//
// y = (a + b) * s + c, the way an eager framework runs it: one kernel per
// operator, every intermediate written to device memory and read back.
//
//     t1 = a + b      reads 2n floats, writes n
//     t2 = t1 * s     reads n,         writes n
//     y  = t2 + c     reads 2n,        writes n
//                     ---------------------------
//                     reads 5n, writes 3n = 32n bytes (fused: 16n)
//
// This is not a straw man: each kernel is a good kernel of its kind (16-byte
// loads and stores, a grid-stride loop sized to fill the GPU) and runs close
// to the copy bandwidth on its own. It loses only because it moves twice the
// bytes. Complete as shipped: not an exercise.
#include "vector_add.h"
#include "device.h"

#include <stdint.h>

// ============================================================================
// kernels
// ============================================================================

// out = x + z; all arrays have n elements. Vector path: the caller checked
// that every pointer is 16-byte aligned, so n/4 float4 loads cover the body.
__global__ void ew_add_kernel(const float *x, const float *z, float *out, size_t n)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    size_t tid = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    size_t n4 = n / 4;
    const float4 *x4 = (const float4 *)x, *z4 = (const float4 *)z;
    float4 *o4 = (float4 *)out;
    for (size_t i = tid; i < n4; i += stride) {
        float4 p = x4[i], q = z4[i];
        o4[i] = make_float4(p.x + q.x, p.y + q.y, p.z + q.z, p.w + q.w);
    }
    // the last n % 4 elements, one thread each
    for (size_t i = 4 * n4 + tid; i < n; i += stride) out[i] = x[i] + z[i];
}

// out = x * s
__global__ void ew_scale_kernel(const float *x, float s, float *out, size_t n)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    size_t tid = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    size_t n4 = n / 4;
    const float4 *x4 = (const float4 *)x;
    float4 *o4 = (float4 *)out;
    for (size_t i = tid; i < n4; i += stride) {
        float4 p = x4[i];
        o4[i] = make_float4(p.x * s, p.y * s, p.z * s, p.w * s);
    }
    for (size_t i = 4 * n4 + tid; i < n; i += stride) out[i] = x[i] * s;
}

// Scalar versions for pointers that are not 16-byte aligned (a view that
// starts mid-allocation, say).
__global__ void ew_add_scalar_kernel(const float *x, const float *z, float *out, size_t n)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        out[i] = x[i] + z[i];
}

__global__ void ew_scale_scalar_kernel(const float *x, float s, float *out, size_t n)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        out[i] = x[i] * s;
}

// ============================================================================
// launchers
// ============================================================================

static const int kThreads = 256;
static const int kBlocksPerSm = 8; // 8 x 256 = 2048 threads: a full SM

static cudaError_t add_op(const float *x, const float *z, float *out, size_t n,
                          cudaStream_t stream)
{
    if (FL_ALIGNED16(x) && FL_ALIGNED16(z) && FL_ALIGNED16(out)) {
        unsigned int blocks = fl_grid_blocks(n / 4 ? n / 4 : n, kThreads, kBlocksPerSm);
        ew_add_kernel<<<blocks, kThreads, 0, stream>>>(x, z, out, n);
    } else {
        unsigned int blocks = fl_grid_blocks(n, kThreads, kBlocksPerSm);
        ew_add_scalar_kernel<<<blocks, kThreads, 0, stream>>>(x, z, out, n);
    }
    CUDA_CHECK_LAST();
    return cudaSuccess;
}

static cudaError_t scale_op(const float *x, float s, float *out, size_t n,
                            cudaStream_t stream)
{
    if (FL_ALIGNED16(x) && FL_ALIGNED16(out)) {
        unsigned int blocks = fl_grid_blocks(n / 4 ? n / 4 : n, kThreads, kBlocksPerSm);
        ew_scale_kernel<<<blocks, kThreads, 0, stream>>>(x, s, out, n);
    } else {
        unsigned int blocks = fl_grid_blocks(n, kThreads, kBlocksPerSm);
        ew_scale_scalar_kernel<<<blocks, kThreads, 0, stream>>>(x, s, out, n);
    }
    CUDA_CHECK_LAST();
    return cudaSuccess;
}

EXTERN_C cudaError_t unfused_elementwise(const float *a, const float *b,
                                         const float *c, float s, float *t1,
                                         float *t2, float *y, size_t n,
                                         cudaStream_t stream)
{
    if (n == 0) return cudaSuccess;
    CUDA_CHECK(add_op(a, b, t1, n, stream));   // t1 = a + b
    CUDA_CHECK(scale_op(t1, s, t2, n, stream)); // t2 = t1 * s
    CUDA_CHECK(add_op(t2, c, y, n, stream));    // y  = t2 + c
    return cudaSuccess;
}
