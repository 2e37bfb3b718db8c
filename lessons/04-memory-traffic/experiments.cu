// lessons/04-memory-traffic/experiments.cu — the lesson's measuring kernels.
//
// Complete as shipped: the naive transpose you will beat in Part C, three
// access-pattern experiments, and the FMA kernel that measures the compute
// ceiling for the roofline (Part D).
#include "traffic.h"
#include "device.h"

// ============================================================================
// kernels
// ============================================================================

// out (cols, rows) = in (rows, cols)^T, one element per thread. threadIdx.x
// walks along a row of `in`, so the reads of a warp are 32 consecutive floats
// (coalesced). The writes of the same warp land `rows` floats apart: 32
// separate 32-byte sectors for 128 useful bytes. That is the problem.
__global__ void transpose_naive_kernel(const float *in, float *out, size_t rows, size_t cols)
{
    size_t c = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    size_t r = (size_t)blockIdx.y * blockDim.y + threadIdx.y;
    if (r < rows && c < cols) out[c * rows + r] = in[r * cols + c];
}

// out[i] = in[i * stride]: each warp's 32 loads span 32 * stride floats.
__global__ void strided_read_kernel(const float *in, float *out, size_t n, int stride)
{
    size_t grid = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += grid)
        out[i] = in[i * (size_t)stride];
}

// out[i] = in[i + offset]: the reads start `offset` floats past a 128-byte
// boundary, so each warp's 128 bytes straddle two cache lines.
__global__ void offset_copy_kernel(const float *in, float *out, size_t n, int offset)
{
    size_t grid = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += grid)
        out[i] = in[i + (size_t)offset];
}

// out[i] = 2 * in[i], exactly one element per thread: the launch shape alone
// decides how many loads are in flight.
__global__ void scale_threads_kernel(const float *in, float *out, size_t n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 2.0f * in[i];
}

// FMA_PEAK_CHAINS independent chains per thread: enough independent work to
// hide the FMA latency (4 cycles) without depending on other warps.
__global__ void fma_peak_kernel(float *out, int iters)
{
    float acc[FMA_PEAK_CHAINS];
    float x = 1.0f + 1e-7f * threadIdx.x, y = 0.999999f;
#pragma unroll
    for (int k = 0; k < FMA_PEAK_CHAINS; ++k) acc[k] = (float)k;
    for (int it = 0; it < iters; ++it) {
#pragma unroll
        for (int k = 0; k < FMA_PEAK_CHAINS; ++k) acc[k] = fmaf(acc[k], y, x);
    }
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < FMA_PEAK_CHAINS; ++k) s += acc[k];
    out[(size_t)blockIdx.x * blockDim.x + threadIdx.x] = s;
}

// ============================================================================
// launchers
// ============================================================================

EXTERN_C cudaError_t transpose_naive(const float *in, float *out, size_t rows,
                                     size_t cols, cudaStream_t stream)
{
    if (rows == 0 || cols == 0) return cudaSuccess;
    dim3 block(32, 8);
    dim3 grid((unsigned)CEIL_DIV(cols, (size_t)32), (unsigned)CEIL_DIV(rows, (size_t)8));
    transpose_naive_kernel<<<grid, block, 0, stream>>>(in, out, rows, cols);
    CUDA_CHECK_LAST();
    return cudaSuccess;
}

EXTERN_C cudaError_t strided_read(const float *in, float *out, size_t n, int stride,
                                  cudaStream_t stream)
{
    if (n == 0) return cudaSuccess;
    strided_read_kernel<<<fl_grid_blocks(n, 256, 8), 256, 0, stream>>>(in, out, n, stride);
    CUDA_CHECK_LAST();
    return cudaSuccess;
}

EXTERN_C cudaError_t offset_copy(const float *in, float *out, size_t n, int offset,
                                 cudaStream_t stream)
{
    if (n == 0) return cudaSuccess;
    offset_copy_kernel<<<fl_grid_blocks(n, 256, 8), 256, 0, stream>>>(in, out, n, offset);
    CUDA_CHECK_LAST();
    return cudaSuccess;
}

EXTERN_C cudaError_t scale_threads(const float *in, float *out, size_t n, int threads,
                                   cudaStream_t stream)
{
    if (n == 0) return cudaSuccess;
    scale_threads_kernel<<<(unsigned)CEIL_DIV(n, (size_t)threads), threads, 0, stream>>>(in, out, n);
    CUDA_CHECK_LAST();
    return cudaSuccess;
}

EXTERN_C cudaError_t fma_peak(float *out, int blocks, int threads, int iters,
                              cudaStream_t stream)
{
    fma_peak_kernel<<<blocks, threads, 0, stream>>>(out, iters);
    CUDA_CHECK_LAST();
    return cudaSuccess;
}
