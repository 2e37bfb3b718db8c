// ADVERSARIAL: marks the input as persisting in L2 (accessPolicyWindow) so the timing's cache flush misses it (cheat)
// REPLACES: transpose.cu
// RUN: scan
// EXPECT: changes L2 persistence or device limits.*(cudaStreamSetAttribute|cudaDeviceSetLimit)
//
// What is wrong: the transpose itself is the worked one, but the launcher
// first reserves L2 for persisting accesses (cudaDeviceSetLimit) and sets an
// access-policy window over `in` on the stream it is given
// (cudaStreamSetAttribute), so lines of the input are kept in L2 across the
// timing protocol's flush and the next timed run reads part of its input
// from cache instead of memory.
//
// Why it is caught: tools/scan-objects reads the object's undefined symbols
// and flags any call that changes L2 persistence or device limits; an
// exercise file has no business touching either (the timing protocol owns
// the cache, and resets persisting lines before each sample as well).
#include "traffic.h"

#include <string.h>

// ============================================================================
// kernel
// ============================================================================

#define TILE 32
#define ROWS_PER_PASS 8 // block is TILE x ROWS_PER_PASS threads: 4 elements each

__global__ void transpose_tiled_kernel(const float *in, float *out, size_t rows, size_t cols)
{
    // +1 column of padding: the column reads below hit 32 different banks
    __shared__ float tile[TILE][TILE + 1];

    size_t c0 = (size_t)blockIdx.x * TILE, r0 = (size_t)blockIdx.y * TILE;
    // read: threadIdx.x runs along a row of `in` -> coalesced
    for (int k = threadIdx.y; k < TILE; k += ROWS_PER_PASS) {
        size_t r = r0 + k, c = c0 + threadIdx.x;
        if (r < rows && c < cols) tile[k][threadIdx.x] = in[r * cols + c];
    }
    __syncthreads(); // the whole tile must be in shared memory before anyone reads a column of it

    // write: threadIdx.x runs along a row of `out` (= a column of `in`) -> coalesced
    for (int k = threadIdx.y; k < TILE; k += ROWS_PER_PASS) {
        size_t orow = c0 + k, ocol = r0 + threadIdx.x; // out is (cols, rows)
        if (orow < cols && ocol < rows) out[orow * rows + ocol] = tile[threadIdx.x][k];
    }
}

// ============================================================================
// launcher
// ============================================================================

// CHEAT: keep as much of `in` as L2 allows resident between calls. The
// harness flushes L2 before every timed sample by reading a large buffer;
// lines marked persisting are not evicted by ordinary (streaming) accesses.
static cudaError_t pin_input_in_l2(const float *in, size_t bytes, cudaStream_t stream)
{
    int dev = 0, max_persist = 0, max_window = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&max_persist, cudaDevAttrMaxPersistingL2CacheSize, dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&max_window, cudaDevAttrMaxAccessPolicyWindowSize, dev));
    if (max_persist <= 0 || max_window <= 0) return cudaSuccess; // no persisting L2 here
    CUDA_CHECK(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, (size_t)max_persist));
    cudaStreamAttrValue attr;
    memset(&attr, 0, sizeof attr);
    attr.accessPolicyWindow.base_ptr = (void *)in;
    attr.accessPolicyWindow.num_bytes = bytes < (size_t)max_window ? bytes : (size_t)max_window;
    attr.accessPolicyWindow.hitRatio = 1.0f;
    attr.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
    attr.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
    CUDA_CHECK(cudaStreamSetAttribute(stream, cudaStreamAttributeAccessPolicyWindow, &attr));
    return cudaSuccess;
}

EXTERN_C cudaError_t transpose_tiled(const float *in, float *out, size_t rows, size_t cols,
                                     cudaStream_t stream)
{
    if (rows == 0 || cols == 0) return cudaSuccess;
    CUDA_CHECK(pin_input_in_l2(in, rows * cols * sizeof(float), stream));
    dim3 block(TILE, ROWS_PER_PASS);
    dim3 grid((unsigned)CEIL_DIV(cols, (size_t)TILE), (unsigned)CEIL_DIV(rows, (size_t)TILE));
    transpose_tiled_kernel<<<grid, block, 0, stream>>>(in, out, rows, cols);
    CUDA_CHECK_LAST();
    return cudaSuccess;
}
