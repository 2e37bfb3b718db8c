// lessons/04-memory-traffic/transpose.cu — YOUR FILE for lesson 04, part C.
//
// out (cols, rows) = in (rows, cols)^T. The naive version in experiments.cu
// reads coalesced but writes with a stride of `rows` floats. Make both sides
// coalesced with a tile in shared memory. It compiles and runs as shipped
// but writes nothing, so `./lab check 04` fails until you finish it.
#include "traffic.h"

#define TILE 32
#define ROWS_PER_PASS 8 // the launcher's block is TILE x ROWS_PER_PASS threads

// ============================================================================
// kernel
// ============================================================================

__global__ void transpose_tiled_kernel(const float *in, float *out, size_t rows, size_t cols)
{
    // TODO(C1): declare a TILE x TILE tile in shared memory (__shared__).
    // TODO(C2): this block owns the tile starting at row blockIdx.y * TILE,
    //           column blockIdx.x * TILE of `in`. Copy it into shared memory
    //           with threadIdx.x running along the row (coalesced reads);
    //           each thread copies TILE / ROWS_PER_PASS elements. Mind the
    //           edges: rows and cols need not be multiples of TILE.
    // TODO(C3): wait until the whole tile is in shared memory.
    // TODO(C4): write the tile to `out` (which is cols x rows) so that
    //           threadIdx.x runs along a row of `out`: consecutive threads,
    //           consecutive addresses. Read the tile column-wise to do it.
    // TODO(C5): measure, then look up "bank conflicts" in the README.
}

// ============================================================================
// launcher (you may change it; keep the signature)
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
