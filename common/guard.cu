// common/guard.cu — see guard.h.
#include "guard.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

// ============================================================================
// kernel
// ============================================================================

// A word's contribution: its value mixed with its position (so swapping two
// words changes the sum), through splitmix64's finalizer.
__device__ __forceinline__ unsigned long long mix(unsigned long long v, unsigned long long i)
{
    unsigned long long z = v ^ (i * 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

// Sum of mix(byte-or-word, index) over the buffer: 32-bit words when the
// buffer is 4-byte aligned (floats always are), bytes for the rest.
__global__ void fl_checksum_kernel(const unsigned char *p, size_t bytes, int words,
                                   unsigned long long *sum)
{
    unsigned long long acc = 0;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    size_t start = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    size_t nw = words ? bytes / 4 : 0;
    const unsigned int *w = (const unsigned int *)p;
    for (size_t i = start; i < nw; i += stride) acc += mix(w[i], i);
    for (size_t i = nw * 4 + start; i < bytes; i += stride) acc += mix(p[i], i + (1ull << 62));
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
    if ((threadIdx.x & 31) == 0) atomicAdd(sum, acc);
}

// Element i of the inputs of `key` (guard.h): one function for both sides,
// so the host's reference and the GPU's inputs hold the same bits.
__host__ __device__ __forceinline__ float uniform_at(unsigned long long key,
                                                      unsigned long long i, float lo, float hi)
{
    unsigned long long z = key + (i + 1ull) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    float u = (float)(unsigned int)(z >> 40) * 5.9604644775390625e-8f; // 2^-24, exact
    return fmaf(hi - lo, u, lo);
}

__global__ void fl_fill_uniform_kernel(float *d, size_t n, unsigned long long key, float lo,
                                       float hi)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        d[i] = uniform_at(key, i, lo, hi);
}

__device__ __forceinline__ unsigned long long global_ns(void)
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// flags[0]: set by the host to release; flags[1]: set here once spinning;
// flags[2]: set here on leaving; flags[3]: set here when the timeout ended it.
__global__ void fl_hold_kernel(volatile unsigned int *flags, unsigned long long timeout_ns)
{
    if (threadIdx.x != 0) return;
    unsigned long long t0 = global_ns();
    flags[1] = 1;
    __threadfence_system();
    while (flags[0] == 0) {
        if (global_ns() - t0 > timeout_ns) {
            flags[3] = 1;
            break;
        }
        __nanosleep(1000);
    }
    __threadfence_system();
    flags[2] = 1;
    __threadfence_system();
}

// ============================================================================
// launchers
// ============================================================================

EXTERN_C cudaError_t fl_checksum(const void *d, size_t bytes, uint64_t *out)
{
    *out = 0;
    unsigned long long *sum = NULL;
    CUDA_CHECK(cudaMalloc((void **)&sum, sizeof *sum));
    cudaError_t e = cudaMemset(sum, 0, sizeof *sum);
    if (e == cudaSuccess && bytes > 0) {
        size_t blocks = CEIL_DIV(bytes / 4 + 1, 256);
        if (blocks > 2048) blocks = 2048;
        int words = ((uintptr_t)d % 4) == 0;
        fl_checksum_kernel<<<(unsigned)blocks, 256>>>((const unsigned char *)d, bytes, words,
                                                      sum);
        e = cudaGetLastError();
    }
    unsigned long long h = 0;
    if (e == cudaSuccess) e = cudaMemcpy(&h, sum, sizeof h, cudaMemcpyDeviceToHost);
    (void)cudaFree(sum);
    if (e != cudaSuccess) {
        fl_cuda_report(e, "fl_checksum", __FILE__, __LINE__);
        return e;
    }
    *out = (uint64_t)h ^ (uint64_t)bytes;
    return cudaSuccess;
}

EXTERN_C cudaError_t fl_rotate(void *dst, const void *src, size_t n, size_t elem,
                               size_t shift, cudaStream_t stream)
{
    if (n == 0) return cudaSuccess;
    shift %= n;
    char *d = (char *)dst;
    const char *s = (const char *)src;
    size_t head = (n - shift) * elem; // src[shift..n) -> dst[0..n-shift)
    CUDA_CHECK(cudaMemcpyAsync(d, s + shift * elem, head, cudaMemcpyDeviceToDevice, stream));
    if (shift)
        CUDA_CHECK(cudaMemcpyAsync(d + head, s, shift * elem, cudaMemcpyDeviceToDevice, stream));
    return cudaSuccess;
}

EXTERN_C void fl_unrotate_f32(float *x, size_t n, size_t shift)
{
    if (n == 0 || shift % n == 0) return;
    shift %= n;
    // x holds y[(i + shift) % n] at i: move x[0..n-shift) up by `shift`
    float *tmp = (float *)malloc(shift * sizeof *tmp);
    if (tmp == NULL) return;
    memcpy(tmp, x + (n - shift), shift * sizeof *tmp);
    memmove(x + shift, x, (n - shift) * sizeof *x);
    memcpy(x, tmp, shift * sizeof *tmp);
    free(tmp);
}

EXTERN_C float fl_uniform_at(uint64_t key, size_t i, float lo, float hi)
{
    return uniform_at(key, i, lo, hi);
}

EXTERN_C void fl_fill_uniform_host(float *x, size_t n, uint64_t key, float lo, float hi)
{
    for (size_t i = 0; i < n; ++i) x[i] = uniform_at(key, i, lo, hi);
}

EXTERN_C cudaError_t fl_fill_uniform_dev(float *d, size_t n, uint64_t key, float lo, float hi,
                                         cudaStream_t stream)
{
    if (n == 0) return cudaSuccess;
    size_t blocks = CEIL_DIV(n, 256);
    if (blocks > 8192) blocks = 8192;
    fl_fill_uniform_kernel<<<(unsigned)blocks, 256, 0, stream>>>(d, n, key, lo, hi);
    CUDA_CHECK(cudaGetLastError());
    return cudaSuccess;
}

EXTERN_C cudaError_t fl_hold_begin(fl_hold *h, cudaStream_t stream, double timeout_s)
{
    h->flags = NULL;
    h->stream = stream;
    unsigned int *host = NULL, *dev = NULL;
    CUDA_CHECK(cudaHostAlloc((void **)&host, 4 * sizeof *host, cudaHostAllocMapped));
    memset(host, 0, 4 * sizeof *host);
    cudaError_t e = cudaHostGetDevicePointer((void **)&dev, host, 0);
    if (e == cudaSuccess) {
        fl_hold_kernel<<<1, 32, 0, stream>>>(dev, (unsigned long long)(timeout_s * 1e9));
        e = cudaGetLastError();
    }
    if (e != cudaSuccess) {
        (void)cudaFreeHost(host);
        fl_cuda_report(e, "fl_hold_begin", __FILE__, __LINE__);
        return e;
    }
    h->flags = host;
    // Wait (on the host) until the block spins, at most the timeout.
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (h->flags[1] == 0 && h->flags[2] == 0) {
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((double)(t.tv_sec - t0.tv_sec) + 1e-9 * (double)(t.tv_nsec - t0.tv_nsec) > timeout_s)
            break;
    }
    return cudaSuccess;
}

EXTERN_C int fl_hold_active(const fl_hold *h)
{
    return h->flags != NULL && h->flags[1] != 0 && h->flags[2] == 0;
}

EXTERN_C cudaError_t fl_hold_end(fl_hold *h, int *timed_out)
{
    if (timed_out) *timed_out = 0;
    if (h->flags == NULL) return cudaSuccess;
    h->flags[0] = 1;
    cudaError_t e = cudaStreamSynchronize(h->stream);
    if (timed_out) *timed_out = h->flags[3] != 0;
    (void)cudaFreeHost((void *)h->flags);
    h->flags = NULL;
    if (e != cudaSuccess) fl_cuda_report(e, "fl_hold_end", __FILE__, __LINE__);
    return e;
}
