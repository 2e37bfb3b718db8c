// solutions/04-memory-traffic/transpose.cu — worked solution of lesson 04, part C.
//
// out (cols, rows) = in (rows, cols)^T, coalesced on both sides: a block
// reads a 32x32 tile of `in` row by row (consecutive threads, consecutive
// addresses), parks it in shared memory, and writes it out row by row of
// `out`, reading the tile column-wise from shared memory instead.
#include "traffic.h"

// ============================================================================
// kernel
// ============================================================================

#define TILE 32
#define ROWS_PER_PASS 8 // block is TILE x ROWS_PER_PASS threads: 4 elements each

__global__ void transpose_tiled_kernel(const float *in, float *out, size_t rows, size_t cols)
{
    // +1 column of padding: without it, reading a tile column (tile[x][k]
    // for fixed k across the warp) hits one bank 32 times; with it the 32
    // reads land in 32 different banks.
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
