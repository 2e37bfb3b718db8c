// ADVERSARIAL: keeps the first result per (in, out, rows, cols) and copies it back on later calls (cheat)
// REPLACES: transpose.cu
// RUN: speed
// EXPECT: tiled transpose 8192x8192: wrong during the timed runs
//
// What is wrong: the first call with a given input pointer, output pointer
// and shape runs the real transpose and keeps a device copy of the result;
// every later call with the same key skips the transpose and copies the kept
// result into `out` (a cudaMemcpyAsync, at copy bandwidth). A benchmark that
// calls the launcher again and again on the same buffers times a memcpy.
//
// Why it is caught: the speed test gives every warm-up and timed run fresh
// inputs at the same addresses (`in` rotated by a different number of rows
// each time) and checks each run's output. The first warm-up already gets
// the stale copy of the first call's answer: "wrong during the timed runs".
// (C_transpose calls the launcher once per process, so it passes there.)
#include "traffic.h"

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

// CHEAT: a one-entry result cache, keyed by the pointers and the shape. It
// assumes the same pointers mean the same contents, which nothing promises.
static struct {
    const float *in;
    const float *out;
    size_t rows, cols;
    float *saved; // device copy of the result of the first call with this key
} g_cache;

EXTERN_C cudaError_t transpose_tiled(const float *in, float *out, size_t rows, size_t cols,
                                     cudaStream_t stream)
{
    if (rows == 0 || cols == 0) return cudaSuccess;
    size_t bytes = rows * cols * sizeof(float);
    if (g_cache.saved && g_cache.in == in && g_cache.out == out && g_cache.rows == rows &&
        g_cache.cols == cols) {
        // "same call as last time": hand back the kept answer
        CUDA_CHECK(cudaMemcpyAsync(out, g_cache.saved, bytes, cudaMemcpyDeviceToDevice, stream));
        return cudaSuccess;
    }
    dim3 block(TILE, ROWS_PER_PASS);
    dim3 grid((unsigned)CEIL_DIV(cols, (size_t)TILE), (unsigned)CEIL_DIV(rows, (size_t)TILE));
    transpose_tiled_kernel<<<grid, block, 0, stream>>>(in, out, rows, cols);
    CUDA_CHECK_LAST();
    // remember this result for the next call with the same key
    if (g_cache.saved) CUDA_CHECK(cudaFree(g_cache.saved));
    g_cache.saved = NULL;
    CUDA_CHECK(cudaMalloc((void **)&g_cache.saved, bytes));
    CUDA_CHECK(cudaMemcpyAsync(g_cache.saved, out, bytes, cudaMemcpyDeviceToDevice, stream));
    g_cache.in = in;
    g_cache.out = out;
    g_cache.rows = rows;
    g_cache.cols = cols;
    return cudaSuccess;
}
