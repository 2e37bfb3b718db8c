// ADVERSARIAL: tiled transpose whose edge test clamps to the last index, dropping the last row and column (bug)
// REPLACES: transpose.cu
// RUN: C_transpose
// EXPECT: transpose_tiled (1x1|1x1000|1000x1|33x65|1823x781|4096x4096): .*(some elements were never written|no element was written|the end of each row was never written|the last elements were never written)
//
// What is wrong: the kernel works out where its tile ends,
//     r_end = min(r0 + TILE, rows - 1),  c_end = min(c0 + TILE, cols - 1),
// mixing up "one past the end" (rows) with "the last index" (rows - 1), and
// then copies r0 <= r < r_end, c0 <= c < c_end. Interior tiles are whole;
// the tiles on the bottom and right edges lose their last row and their
// last column, which are the last row and column of `in`. Every access stays
// in bounds: nothing faults, the elements are simply never written.
//
// Why it is caught: C_transpose poisons `out` with NaN before the call and
// compares bit for bit. The last column of `in` is the last row of `out`
// and the last row of `in` is the last column of every row of `out`: those
// elements still hold the poison, which compare.c reports as never written.
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
    // BUG: the clamp uses the last valid index (rows - 1, cols - 1) as if it
    // were one past the end; the tests below are "<", so on the edge tiles
    // the last row and the last column are never copied.
    size_t r_end = r0 + TILE < rows - 1 ? r0 + TILE : rows - 1;
    size_t c_end = c0 + TILE < cols - 1 ? c0 + TILE : cols - 1;

    // read: threadIdx.x runs along a row of `in` -> coalesced
    for (int k = threadIdx.y; k < TILE; k += ROWS_PER_PASS) {
        size_t r = r0 + k, c = c0 + threadIdx.x;
        if (r < r_end && c < c_end) tile[k][threadIdx.x] = in[r * cols + c];
    }
    __syncthreads(); // the whole tile must be in shared memory before anyone reads a column of it

    // write: threadIdx.x runs along a row of `out` (= a column of `in`) -> coalesced
    for (int k = threadIdx.y; k < TILE; k += ROWS_PER_PASS) {
        size_t orow = c0 + k, ocol = r0 + threadIdx.x; // out is (cols, rows)
        if (orow < c_end && ocol < r_end) out[orow * rows + ocol] = tile[threadIdx.x][k];
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
