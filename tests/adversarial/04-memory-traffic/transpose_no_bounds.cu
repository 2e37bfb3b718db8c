// ADVERSARIAL: tiled transpose with no bounds test: right only when rows and cols are multiples of 32 (bug)
// REPLACES: transpose.cu
// RUN: C_transpose
// EXPECT: transpose_tiled wrote past the end of out|read or wrote outside its arrays
//
// What is wrong: the kernel copies whole 32 x 32 tiles and never asks whether
// a row or column exists. At 4096 x 4096 (and the 8192 x 8192 of the speed
// test) every tile is whole and it is right. At 33 x 65 or 1823 x 781 the
// edge tiles read past the end of `in` and write past the end of `out`
// (and, inside the matrix, wrap into the next row of `out`).
//
// Why it is caught: the tests allocate every output with a guard zone of a
// known pattern right after its last element, and check it after the call
// (FL_ASSERT_NO_OVERRUN): the edge tiles' stores land there ("wrote past the
// end of out"). Should a store land on unmapped memory instead, the launch
// faults and FL_ASSERT_SYNC names an access outside the arrays.
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
    // BUG: no "r < rows && c < cols" (below: "orow < cols && ocol < rows").
    // Fine while rows and cols are multiples of TILE; otherwise the edge
    // tiles run off the matrix.
    for (int k = threadIdx.y; k < TILE; k += ROWS_PER_PASS) {
        size_t r = r0 + k, c = c0 + threadIdx.x;
        tile[k][threadIdx.x] = in[r * cols + c];
    }
    __syncthreads(); // the whole tile must be in shared memory before anyone reads a column of it

    for (int k = threadIdx.y; k < TILE; k += ROWS_PER_PASS) {
        size_t orow = c0 + k, ocol = r0 + threadIdx.x; // out is (cols, rows)
        out[orow * rows + ocol] = tile[threadIdx.x][k];
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
