//@{
// solutions/04-memory-traffic/transpose.cu — worked solution of lesson 04, part C.
//
// out (cols, rows) = in (rows, cols)^T, coalesced on both sides: a block
// reads a 32x32 tile of `in` row by row (consecutive threads, consecutive
// addresses), parks it in shared memory, and writes it out row by row of
// `out`, reading the tile column-wise from shared memory instead.
//@ guided
//| // lessons/04-memory-traffic/transpose.cu — YOUR FILE for lesson 04, part C.
//| //
//| // out (cols, rows) = in (rows, cols)^T. The naive version in experiments.cu
//| // reads coalesced but writes with a stride of `rows` floats. Make both sides
//| // coalesced with a tile in shared memory. It compiles and runs as shipped
//| // but writes nothing, so `./lab check 04` fails until you finish it.
//@ open
//| // lessons/04-memory-traffic/transpose.cu — YOUR FILE for lesson 04, part C,
//| // open level.
//| //
//| // Write transpose_tiled (traffic.h): out (cols, rows) = in (rows, cols)^T,
//| // with reads and writes both coalesced, for every shape (neither side
//| // need be a multiple of anything; past 2^32 elements), pointers of any
//| // float alignment, only on the `stream` given. The naive version in
//| // experiments.cu reads coalesced but writes with a stride of `rows`
//| // floats. Nothing else is given: no tile, no block shape. As shipped it
//| // compiles and every check of it fails.
//| // `./lab level guided 04` switches to the guided files (yours are kept).
//@}
#include "traffic.h"

//@{
//@ guided
//| #define TILE 32
//| #define ROWS_PER_PASS 8 // the launcher's block is TILE x ROWS_PER_PASS threads
//|
//@ open
//@}
//@[
// ============================================================================
// kernel
// ============================================================================

//@{
#define TILE 32
#define ROWS_PER_PASS 8 // block is TILE x ROWS_PER_PASS threads: 4 elements each

//@ guided
//@}
__global__ void transpose_tiled_kernel(const float *in, float *out, size_t rows, size_t cols)
{
//@{ C1 C2 C3 C4 C5
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
//@ guided
//|     // TODO(C1): declare a TILE x TILE tile in shared memory (__shared__).
//|     // TODO(C2): this block owns the tile starting at row blockIdx.y * TILE,
//|     //           column blockIdx.x * TILE of `in`. Copy it into shared memory
//|     //           with threadIdx.x running along the row (coalesced reads);
//|     //           each thread copies TILE / ROWS_PER_PASS elements. Mind the
//|     //           edges: rows and cols need not be multiples of TILE.
//|     // TODO(C3): wait until the whole tile is in shared memory.
//|     // TODO(C4): write the tile to `out` (which is cols x rows) so that
//|     //           threadIdx.x runs along a row of `out`: consecutive threads,
//|     //           consecutive addresses. Read the tile column-wise to do it.
//|     // TODO(C5): measure, then look up "bank conflicts" in the README.
//@}
}

// ============================================================================
//@{
// launcher
//@ guided
//| // launcher (you may change it; keep the signature)
//@}
// ============================================================================

//@]
//@{
//@ guided
//@ open
//| // ============================================================================
//| // your kernel(s)
//| // ============================================================================
//|
//|
//| // ============================================================================
//| // the launcher: the API of traffic.h (keep the signature)
//| // ============================================================================
//|
//@}
EXTERN_C cudaError_t transpose_tiled(const float *in, float *out, size_t rows, size_t cols,
                                     cudaStream_t stream)
{
//@{
//@ guided
//@ open
//|     // TODO: launch your kernel on `stream`; return cudaSuccess or the
//|     //       launch's error (CUDA_CHECK_LAST returns it).
//|     (void)in, (void)out, (void)rows, (void)cols, (void)stream;
//|     return cudaErrorNotYetImplemented;
//@}
//@[
    if (rows == 0 || cols == 0) return cudaSuccess;
    dim3 block(TILE, ROWS_PER_PASS);
    dim3 grid((unsigned)CEIL_DIV(cols, (size_t)TILE), (unsigned)CEIL_DIV(rows, (size_t)TILE));
    transpose_tiled_kernel<<<grid, block, 0, stream>>>(in, out, rows, cols);
    CUDA_CHECK_LAST();
    return cudaSuccess;
//@]
}
