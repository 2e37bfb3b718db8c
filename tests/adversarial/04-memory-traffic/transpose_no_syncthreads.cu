// ADVERSARIAL: tiled transpose without the __syncthreads() between filling the tile and reading it (bug)
// REPLACES: transpose.cu
// RUN: sanitize:racecheck
// EXPECT: race (reported )?between (Write|Read)
//
// What is wrong: each warp fills rows k = threadIdx.y, +8, +16, +24 of the
// shared tile, then reads a COLUMN of it (tile[threadIdx.x][k]): 32 values
// that the other seven warps wrote. Without a barrier in between, a warp
// that runs ahead reads tile entries before their writers have stored them
// (stale values from the previous block on that SM, or from its own last
// tile). Whether that shows in the output depends on warp timing, so the
// bitwise check of C_transpose may or may not see it on a given run.
//
// Why it is caught: compute-sanitizer's racecheck tracks every shared-memory
// access and reports a write by one thread and a read by another with no
// barrier between them ("Race reported between Write access ... and Read
// access ..."), whatever the timing, at every shape C_transpose runs.
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
    // BUG: no __syncthreads() here. The loop below reads tile[threadIdx.x][k],
    // written by other warps, which may not have stored it yet.

    // write: threadIdx.x runs along a row of `out` (= a column of `in`) -> coalesced
    for (int k = threadIdx.y; k < TILE; k += ROWS_PER_PASS) {
        size_t orow = c0 + k, ocol = r0 + threadIdx.x; // out is (cols, rows)
        if (orow < cols && ocol < rows) out[orow * rows + ocol] = tile[threadIdx.x][k];
    }
}

// ============================================================================
// launcher
// ============================================================================

EXTERN_C cudaError_t transpose_tiled(const float *in, float *out, size_t rows, size_t cols,
                                     cudaStream_t stream)
{
    if (rows == 0 || cols == 0) return cudaSuccess;
    dim3 block(TILE, ROWS_PER_PASS);
    dim3 grid((unsigned)CEIL_DIV(cols, (size_t)TILE), (unsigned)CEIL_DIV(rows, (size_t)TILE));
    transpose_tiled_kernel<<<grid, block, 0, stream>>>(in, out, rows, cols);
    CUDA_CHECK_LAST();
    return cudaSuccess;
}
