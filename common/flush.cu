// common/flush.cu — the timing protocol's device-side helpers: evict L2 by
// streaming a large buffer through it, hold the GPU busy for a while, and
// the copy kernel that, with cudaMemcpy, measures the copy ceiling.
//
// The flush reads (rather than cudaMemset): it leaves L2 full of clean lines,
// so the kernel timed next does not pay for someone else's dirty lines.
#include "timing.h"

#include <stdint.h>

// ============================================================================
// kernel
// ============================================================================

// buf is `n` int4 elements; the sum is written only if it hits a value that
// never occurs in practice, which keeps the compiler from dropping the loads.
__global__ void fl_l2_flush_kernel(const int4 *buf, size_t n, int *sink)
{
    int acc = 0;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        int4 v = buf[i];
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == 0x5eed1e55) *sink = acc;
}

// Spin until the GPU's global nanosecond timer passes `ns` past the moment
// this thread started. Every thread spins, so the grid keeps its SMs busy.
__global__ void fl_gpu_hold_kernel(unsigned long long ns)
{
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    } while (t - t0 < ns);
}

// Copy `n` int4 (16 B) elements, src to dst, each thread four elements a
// stride apart per round: four 16-byte loads in flight before the stores,
// which is what it takes to keep HBM busy (one load per thread leaves about
// a tenth of the bandwidth on the table on an H100). Both are (n,) int4.
__global__ void fl_copy_kernel(const int4 *__restrict__ src, int4 *__restrict__ dst, size_t n)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + 3 * stride < n; i += 4 * stride) {
        int4 a = src[i], b = src[i + stride], c = src[i + 2 * stride], d = src[i + 3 * stride];
        dst[i] = a;
        dst[i + stride] = b;
        dst[i + 2 * stride] = c;
        dst[i + 3 * stride] = d;
    }
    for (; i < n; i += stride) dst[i] = src[i];
}

// One int4 per thread, one thread per element: the launch shape that leaves
// the scheduling of the loads to the hardware (the other copy kernel's
// shape, a grid the size of the GPU, wins on some parts, this on others).
__global__ void fl_copy_flat_kernel(const int4 *__restrict__ src, int4 *__restrict__ dst, size_t n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = src[i];
}

// Read `n` int4 elements and write nothing (but for a value that never
// occurs, which keeps the loads): four loads in flight per thread, as in the
// copy. A read-heavy kernel (three reads per write, lesson 01) moves more
// bytes a second than any copy, since the memory turns from reading to
// writing less often; the ceiling must cover it.
__global__ void fl_read_kernel(const int4 *__restrict__ src, size_t n, int *sink)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    int acc = 0;
    for (; i + 3 * stride < n; i += 4 * stride) {
        int4 a = src[i], b = src[i + stride], c = src[i + 2 * stride], d = src[i + 3 * stride];
        acc ^= a.x ^ b.y ^ c.z ^ d.w;
    }
    for (; i < n; i += stride) acc ^= src[i].x;
    if (acc == 0x5eed1e55) *sink = acc;
}

// The read in the flat copy's shape: one int4 per thread, one thread per
// element. On an H100 a kernel of lesson 01 in this shape (two reads a
// write) outran both copies and the grid-stride read above by 1-3%.
__global__ void fl_read_flat_kernel(const int4 *__restrict__ src, size_t n, int *sink)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int4 a = src[i];
        if ((a.x ^ a.y ^ a.z ^ a.w) == 0x5eed1e55) *sink = a.x;
    }
}

// Two reads for each write, the mix of c = a + b: dst[i] from src[i] and
// src[m + i], i < m. Near the L2's size a kernel of this mix outran every
// copy and read of the same bytes on an H100 (103% of the best).
__global__ void fl_read2_write1_kernel(const int4 *__restrict__ src, int4 *__restrict__ dst,
                                       size_t m)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < m) {
        int4 a = src[i], b = src[m + i];
        dst[i] = make_int4(a.x ^ b.x, a.y ^ b.y, a.z ^ b.z, a.w ^ b.w);
    }
}

// Three reads a write, the mix of lesson 01's chain: src's thirds in.
__global__ void fl_read3_write1_kernel(const int4 *__restrict__ src, int4 *__restrict__ dst,
                                       size_t m)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < m) {
        int4 a = src[i], b = src[m + i], c = src[2 * m + i];
        dst[i] = make_int4(a.x ^ b.x ^ c.x, a.y ^ b.y ^ c.y, a.z ^ b.z ^ c.z, a.w ^ b.w ^ c.w);
    }
}

// ============================================================================
// launchers
// ============================================================================

// Blocks of 256 threads for the grid-stride kernels: 8 per SM, 2048 threads,
// the most an SM keeps; fewer when n is small.
static cudaError_t stream_blocks(size_t n, int *blocks)
{
    int dev = 0, sms = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    size_t want = (size_t)sms * 8, need = CEIL_DIV(n, 256);
    *blocks = (int)(need < want ? need : want);
    return cudaSuccess;
}

EXTERN_C cudaError_t fl_stream_device(fl_stream_kind kind, void *dst, const void *src,
                                      size_t bytes, int *sink, cudaStream_t stream)
{
    if (((uintptr_t)dst | (uintptr_t)src | bytes) % sizeof(int4) != 0) return cudaErrorInvalidValue;
    size_t n = bytes / sizeof(int4);
    if (n == 0) return cudaSuccess;
    int blocks = 0;
    switch (kind) {
    case FL_STREAM_COPY:
        CUDA_CHECK(stream_blocks(n, &blocks));
        fl_copy_kernel<<<blocks, 256, 0, stream>>>((const int4 *)src, (int4 *)dst, n);
        break;
    case FL_STREAM_COPY_FLAT:
        if (CEIL_DIV(n, 256) > 0x7fffffffu) return cudaErrorInvalidValue;
        fl_copy_flat_kernel<<<(unsigned int)CEIL_DIV(n, 256), 256, 0, stream>>>(
            (const int4 *)src, (int4 *)dst, n);
        break;
    case FL_STREAM_READ:
        if (sink == NULL) return cudaErrorInvalidValue;
        CUDA_CHECK(stream_blocks(n, &blocks));
        fl_read_kernel<<<blocks, 256, 0, stream>>>((const int4 *)src, n, sink);
        break;
    case FL_STREAM_READ2_WRITE1:
    case FL_STREAM_READ3_WRITE1: {
        size_t m = n / (kind == FL_STREAM_READ2_WRITE1 ? 2 : 3);
        if (m == 0) return cudaSuccess;
        if (CEIL_DIV(m, 256) > 0x7fffffffu) return cudaErrorInvalidValue;
        unsigned int grid = (unsigned int)CEIL_DIV(m, 256);
        if (kind == FL_STREAM_READ2_WRITE1)
            fl_read2_write1_kernel<<<grid, 256, 0, stream>>>((const int4 *)src, (int4 *)dst, m);
        else
            fl_read3_write1_kernel<<<grid, 256, 0, stream>>>((const int4 *)src, (int4 *)dst, m);
        break;
    }
    case FL_STREAM_READ_FLAT:
        if (sink == NULL || CEIL_DIV(n, 256) > 0x7fffffffu) return cudaErrorInvalidValue;
        fl_read_flat_kernel<<<(unsigned int)CEIL_DIV(n, 256), 256, 0, stream>>>(
            (const int4 *)src, n, sink);
        break;
    default:
        return cudaErrorInvalidValue;
    }
    CUDA_CHECK_LAST();
    return cudaSuccess;
}

EXTERN_C cudaError_t fl_gpu_hold(double us, int blocks, int threads, cudaStream_t stream)
{
    fl_gpu_hold_kernel<<<blocks, threads, 0, stream>>>((unsigned long long)(us * 1e3));
    CUDA_CHECK_LAST();
    return cudaSuccess;
}

EXTERN_C cudaError_t fl_l2_flush(const void *buf, size_t bytes, int *sink,
                                 cudaStream_t stream)
{
    size_t n = bytes / sizeof(int4);
    if (n == 0) return cudaSuccess;
    int blocks = (int)(CEIL_DIV(n, 256) < 4096 ? CEIL_DIV(n, 256) : 4096);
    fl_l2_flush_kernel<<<blocks, 256, 0, stream>>>((const int4 *)buf, n, sink);
    CUDA_CHECK_LAST();
    return cudaSuccess;
}
