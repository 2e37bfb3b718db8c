// ADVERSARIAL: transposes for its first 4 calls (the checks and the warm-up), then only copies (cheat)
// REPLACES: transpose.cu
// RUN: speed
// EXPECT: tiled transpose 8192x8192: wrong during the timed runs
//
// What is wrong: the launcher counts its calls. The first four run the real
// tiled transpose: enough for a correctness test that calls it once and for
// a benchmark that checks the output before timing and warms up three times.
// From the fifth call on it launches a plain coalesced copy, out = in, which
// is faster than any transpose (nothing to reorder) and wrong.
//
// Why it is caught: the speed test checks the output of every warm-up and
// every timed run, not only the one before timing (and not only the last):
// the first timed sample is wrong, and the test says so -- "wrong during the
// timed runs", naming the run. C_transpose calls the launcher once per
// process and passes.
#include "traffic.h"

// ============================================================================
// kernels
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

// out[i] = in[i]: both sides coalesced, no shared memory, no barrier
__global__ void plain_copy_kernel(const float *in, float *out, size_t n)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        out[i] = in[i];
}

// ============================================================================
// launcher
// ============================================================================

// CHEAT: behave while someone is likely to be looking.
#define HONEST_CALLS 4
static int g_calls;

EXTERN_C cudaError_t transpose_tiled(const float *in, float *out, size_t rows, size_t cols,
                                     cudaStream_t stream)
{
    if (rows == 0 || cols == 0) return cudaSuccess;
    if (++g_calls > HONEST_CALLS) {
        // the same bytes moved, in the same order as they sit: not a transpose
        size_t n = rows * cols, need = CEIL_DIV(n, (size_t)256);
        unsigned blocks = (unsigned)(need < 65536 ? need : 65536); // grid-stride beyond
        plain_copy_kernel<<<blocks, 256, 0, stream>>>(in, out, n);
        CUDA_CHECK_LAST();
        return cudaSuccess;
    }
    dim3 block(TILE, ROWS_PER_PASS);
    dim3 grid((unsigned)CEIL_DIV(cols, (size_t)TILE), (unsigned)CEIL_DIV(rows, (size_t)TILE));
    transpose_tiled_kernel<<<grid, block, 0, stream>>>(in, out, rows, cols);
    CUDA_CHECK_LAST();
    return cudaSuccess;
}
