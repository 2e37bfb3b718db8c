// common/guard.cu — see guard.h.
#include "guard.h"

#include <stdlib.h>
#include <string.h>

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
