// lessons/03-layernorm/layernorm_unfused.cu — the PyTorch-style baseline.
//
// LayerNorm forward and backward the way an eager framework runs them when
// they are written as tensor operations: one kernel per operation, every
// intermediate written to device memory and read back by the next kernel.
// N = rows * cols, R = rows, C = cols, counted in floats:
//
//   forward                          reads          writes
//     mean = rowmean(x)              N              R
//     xc   = x - mean                N + R          N
//     sq   = xc * xc                 N              N
//     var  = rowmean(sq)             N              R
//     rstd = rsqrt(var + eps)        R              R
//     xhat = xc * rstd               N + R          N
//     yw   = xhat * w                N + C          N
//     y    = yw + b                  N + C          N
//                                    ---------------------
//                                    12N + 6R + 2C   (fused: 2N + 2R + 2C)
//
//   backward (xhat is recomputed from x, mean and rstd, as the API passes them)
//     xc = x - mean; xhat = xc * rstd              2 x (2N + R)
//     dbias = colsum(dy)                           N + C
//     p = dy * xhat; dweight = colsum(p)           3N, N + C
//     g = dy * w                                   2N + C
//     mg = rowmean(g); q = g * xhat                N + R, 3N
//     mgx = rowmean(q)                             N + R
//     t = g - mg; u = xhat * mgx                   2 x (2N + R)
//     v = t - u; dx = v * rstd                     3N, 2N + R
//                                    ---------------------
//                                    25N + 7R + 3C   (fused: 3N + 2R + 3C)
//
// This is not a straw man: the elementwise kernels use 16-byte loads and a
// grid sized to fill the GPU, the row means give each row a warp, and the
// column sums are two-stage reductions that keep every SM busy. Each runs
// near the copy bandwidth on its own; the baseline loses because it moves
// six to eight times the bytes. Complete as shipped: not an exercise.
#include "layernorm.h"
#include "device.h"

#include <stdint.h>

// ============================================================================
// kernels
// ============================================================================

enum { OP_ADD = 0, OP_SUB = 1, OP_MUL = 2 };

// The operator is a kernel argument, the same for every thread, so the
// switch costs one uniform branch and no divergence.
__device__ __forceinline__ float apply_op(int op, float a, float b)
{
    return op == OP_ADD ? a + b : op == OP_SUB ? a - b : a * b;
}

__device__ __forceinline__ float4 apply_op4(int op, float4 a, float4 b)
{
    return make_float4(apply_op(op, a.x, b.x), apply_op(op, a.y, b.y),
                       apply_op(op, a.z, b.z), apply_op(op, a.w, b.w));
}

// out = a op b, all n elements (x*x when b == NULL). Grid-stride loop;
// float4 when `vec4` (the launcher checked alignment), then the n % 4 tail.
__global__ void ew_binary_kernel(int op, const float *a, const float *b,
                                 float *out, size_t n, int vec4)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    size_t tid = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    size_t n4 = vec4 ? n / 4 : 0;
    const float4 *a4 = (const float4 *)a, *b4 = (const float4 *)b;
    float4 *o4 = (float4 *)out;
    for (size_t i = tid; i < n4; i += stride) {
        float4 p = a4[i];
        o4[i] = apply_op4(op, p, b ? b4[i] : p);
    }
    for (size_t i = 4 * n4 + tid; i < n; i += stride)
        out[i] = apply_op(op, a[i], b ? b[i] : a[i]);
}

// out[r, c] = a[r, c] op v[r] (by_col == 0) or a[r, c] op v[c] (by_col == 1).
// a and out are (rows, cols). The loop walks "items" (float4s when vec4,
// which needs cols % 4 == 0 so a vector never straddles two rows); the row
// and column of the item are updated incrementally instead of divided out
// at every step (a 64-bit division costs dozens of instructions).
__global__ void ew_broadcast_kernel(int op, int by_col, const float *a,
                                    const float *v, float *out, size_t rows,
                                    size_t cols, int vec4)
{
    size_t width = vec4 ? cols / 4 : cols; // items per row
    size_t items = rows * width;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    size_t r = i / width, c = i % width;
    const size_t dr = stride / width, dc = stride % width;
    for (; i < items; i += stride) {
        if (vec4) {
            float4 p = ((const float4 *)a)[i];
            float4 s = by_col ? ((const float4 *)v)[c] : make_float4(v[r], v[r], v[r], v[r]);
            ((float4 *)out)[i] = apply_op4(op, p, s);
        } else {
            out[i] = apply_op(op, a[i], by_col ? v[c] : v[r]);
        }
        r += dr;
        c += dc;
        if (c >= width) {
            c -= width;
            ++r;
        }
    }
}

// warp_sum(v): every lane gets the sum of v over its warp (butterfly).
__device__ __forceinline__ float warp_sum(float v)
{
    for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
    return v;
}

// out[r] = mean of row r of x (rows, cols). One warp per row: a row is read
// by 32 neighbouring lanes (coalesced), 16 bytes per lane per step when
// vec4, and the warp's partial sums meet in registers through shuffles.
__global__ void row_mean_kernel(const float *x, float *out, size_t rows,
                                size_t cols, int vec4)
{
    int lane = threadIdx.x & 31;
    size_t warps = ((size_t)gridDim.x * blockDim.x) >> 5;
    for (size_t r = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5; r < rows;
         r += warps) {
        const float *row = x + r * cols;
        float s = 0.0f;
        if (vec4) {
            const float4 *row4 = (const float4 *)row;
#pragma unroll 4
            for (size_t c = lane; c < cols / 4; c += 32) {
                float4 p = row4[c];
                s += (p.x + p.y) + (p.z + p.w);
            }
        } else {
            for (size_t c = lane; c < cols; c += 32) s += row[c];
        }
        s = warp_sum(s);
        if (lane == 0) out[r] = s / (float)cols;
    }
}

// rstd[r] = 1 / sqrt(var[r] + eps)
__global__ void rsqrt_eps_kernel(const float *var, float eps, float *rstd, size_t rows)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t r = (size_t)blockIdx.x * blockDim.x + threadIdx.x; r < rows; r += stride)
        rstd[r] = rsqrtf(var[r] + eps);
}

// Column sums, stage 1: part[p, c] = sum of x[r, c] over the rows of slice p
// (rows [p * rows_per_part, (p + 1) * rows_per_part)). Block (32, 8): the 32
// threads of a warp read 32 neighbouring columns of one row (one 128-byte
// line), the 8 warps take every 8th row of the slice, then meet in shared
// memory. Slicing the rows gives the GPU enough blocks when cols is small.
__global__ void colsum_partial_kernel(const float *x, float *part, size_t rows,
                                      size_t cols, size_t rows_per_part)
{
    __shared__ float acc[8][33]; // +1 column: no bank conflicts on the transpose
    size_t c = (size_t)blockIdx.x * 32 + threadIdx.x;
    size_t r0 = (size_t)blockIdx.y * rows_per_part;
    size_t r1 = r0 + rows_per_part < rows ? r0 + rows_per_part : rows;
    float s = 0.0f;
    if (c < cols) {
#pragma unroll 4
        for (size_t r = r0 + threadIdx.y; r < r1; r += 8) s += x[r * cols + c];
    }
    acc[threadIdx.y][threadIdx.x] = s;
    __syncthreads(); // every warp's sum is in acc before warp 0 reads them
    if (threadIdx.y == 0 && c < cols) {
        float t = 0.0f;
        for (int k = 0; k < 8; ++k) t += acc[k][threadIdx.x];
        part[(size_t)blockIdx.y * cols + c] = t;
    }
}

// Column sums, stage 2: out[c] = sum over p < parts of part[p, c], in a
// fixed order (so the baseline, like PyTorch's sum, is deterministic).
// Block (32, 32): 32 columns, 32 threads down each column, so that each
// thread has only a few loads to wait for.
__global__ void colsum_finish_kernel(const float *part, float *out, size_t parts,
                                     size_t cols)
{
    __shared__ float acc[32][33];
    size_t c = (size_t)blockIdx.x * 32 + threadIdx.x;
    float s = 0.0f;
    if (c < cols) {
#pragma unroll 4
        for (size_t p = threadIdx.y; p < parts; p += 32) s += part[p * cols + c];
    }
    acc[threadIdx.y][threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.y == 0 && c < cols) {
        float t = 0.0f;
        for (int k = 0; k < 32; ++k) t += acc[k][threadIdx.x];
        out[c] = t;
    }
}

// ============================================================================
// launchers
// ============================================================================

static const int kThreads = 256;
static const int kBlocksPerSm = 8; // 8 x 256 = 2048 threads: a full SM

static cudaError_t binary_op(int op, const float *a, const float *b, float *out,
                             size_t n, int vec4, cudaStream_t st)
{
    unsigned int blocks = fl_grid_blocks(vec4 && n >= 4 ? n / 4 : n, kThreads, kBlocksPerSm);
    ew_binary_kernel<<<blocks, kThreads, 0, st>>>(op, a, b, out, n, vec4);
    CUDA_CHECK_LAST();
    return cudaSuccess;
}

static cudaError_t broadcast_op(int op, int by_col, const float *a, const float *v,
                                float *out, size_t rows, size_t cols, int vec4,
                                cudaStream_t st)
{
    size_t items = rows * (vec4 ? cols / 4 : cols);
    unsigned int blocks = fl_grid_blocks(items, kThreads, kBlocksPerSm);
    ew_broadcast_kernel<<<blocks, kThreads, 0, st>>>(op, by_col, a, v, out, rows, cols, vec4);
    CUDA_CHECK_LAST();
    return cudaSuccess;
}

static cudaError_t row_mean(const float *x, float *out, size_t rows, size_t cols,
                            int vec4, cudaStream_t st)
{
    unsigned int blocks = fl_grid_blocks(rows, kThreads / 32, kBlocksPerSm); // a warp per row
    row_mean_kernel<<<blocks, kThreads, 0, st>>>(x, out, rows, cols, vec4);
    CUDA_CHECK_LAST();
    return cudaSuccess;
}

// out = x.sum(0); part is scratch of rows * cols floats (it uses far fewer).
static cudaError_t col_sum(const float *x, float *out, float *part, size_t rows,
                           size_t cols, cudaStream_t st)
{
    size_t col_blocks = CEIL_DIV(cols, (size_t)32);
    // enough row slices that the grid fills the GPU (SMs x 8 blocks), with
    // >= 64 rows in each
    size_t want = fl_grid_blocks((size_t)-1 / 2, 1, kBlocksPerSm); // SMs x 8
    size_t parts = CEIL_DIV(want, col_blocks);
    size_t rows_per_part = CEIL_DIV(rows, parts);
    if (rows_per_part < 64) rows_per_part = 64; // keeps stage 2 short
    parts = CEIL_DIV(rows, rows_per_part);
    colsum_partial_kernel<<<dim3((unsigned)col_blocks, (unsigned)parts), dim3(32, 8), 0, st>>>(
        x, part, rows, cols, rows_per_part);
    CUDA_CHECK_LAST();
    colsum_finish_kernel<<<(unsigned)col_blocks, dim3(32, 32), 0, st>>>(part, out, parts, cols);
    CUDA_CHECK_LAST();
    return cudaSuccess;
}

EXTERN_C cudaError_t layernorm_fwd_unfused(const float *x, const float *weight,
                                           const float *bias, float *y,
                                           float *mean, float *rstd,
                                           float *scratch, size_t rows,
                                           size_t cols, float eps,
                                           cudaStream_t stream)
{
    if (rows == 0) return cudaSuccess;
    if (cols == 0 || cols > LAYERNORM_MAX_COLS) return cudaErrorInvalidValue;
    size_t n = rows * cols;
    // cols % 4 == 0 keeps every row, and so every scratch array, 16-byte aligned
    int vec4 = cols % 4 == 0 && FL_ALIGNED16(x) && FL_ALIGNED16(weight) && FL_ALIGNED16(bias) &&
               FL_ALIGNED16(y) && FL_ALIGNED16(scratch);
    float *a = scratch, *b = scratch + n, *var = scratch + 2 * n;
    CUDA_CHECK(row_mean(x, mean, rows, cols, vec4, stream));                       // mean
    CUDA_CHECK(broadcast_op(OP_SUB, 0, x, mean, a, rows, cols, vec4, stream));     // xc
    CUDA_CHECK(binary_op(OP_MUL, a, NULL, b, n, vec4, stream));                    // sq = xc^2
    CUDA_CHECK(row_mean(b, var, rows, cols, vec4, stream));                        // var
    rsqrt_eps_kernel<<<fl_grid_blocks(rows, kThreads, kBlocksPerSm), kThreads, 0, stream>>>(
        var, eps, rstd, rows);                                                     // rstd
    CUDA_CHECK_LAST();
    CUDA_CHECK(broadcast_op(OP_MUL, 0, a, rstd, b, rows, cols, vec4, stream));     // xhat
    CUDA_CHECK(broadcast_op(OP_MUL, 1, b, weight, a, rows, cols, vec4, stream));   // yw
    CUDA_CHECK(broadcast_op(OP_ADD, 1, a, bias, y, rows, cols, vec4, stream));     // y
    return cudaSuccess;
}

EXTERN_C cudaError_t layernorm_bwd_unfused(const float *dy, const float *x,
                                           const float *weight,
                                           const float *mean, const float *rstd,
                                           float *dx, float *dweight,
                                           float *dbias, float *scratch,
                                           size_t rows, size_t cols,
                                           cudaStream_t stream)
{
    if (rows == 0) return cudaSuccess;
    if (cols == 0 || cols > LAYERNORM_MAX_COLS) return cudaErrorInvalidValue;
    size_t n = rows * cols;
    int vec4 = cols % 4 == 0 && FL_ALIGNED16(dy) && FL_ALIGNED16(x) && FL_ALIGNED16(weight) &&
               FL_ALIGNED16(dx) && FL_ALIGNED16(scratch);
    // Four (rows, cols) buffers, reused once a value is dead (as PyTorch's
    // caching allocator would), then the two row means.
    float *a = scratch, *b = scratch + n, *c = scratch + 2 * n, *d = scratch + 3 * n;
    float *mg = scratch + 4 * n, *mgx = mg + rows;
    CUDA_CHECK(broadcast_op(OP_SUB, 0, x, mean, a, rows, cols, vec4, stream));   // xc
    CUDA_CHECK(broadcast_op(OP_MUL, 0, a, rstd, b, rows, cols, vec4, stream));   // xhat (b)
    CUDA_CHECK(col_sum(dy, dbias, a, rows, cols, stream));                       // dbias
    CUDA_CHECK(binary_op(OP_MUL, dy, b, a, n, vec4, stream));                    // p = dy*xhat
    CUDA_CHECK(col_sum(a, dweight, c, rows, cols, stream));                      // dweight
    CUDA_CHECK(broadcast_op(OP_MUL, 1, dy, weight, a, rows, cols, vec4, stream)); // g (a)
    CUDA_CHECK(row_mean(a, mg, rows, cols, vec4, stream));                       // mean(g)
    CUDA_CHECK(binary_op(OP_MUL, a, b, c, n, vec4, stream));                     // q = g*xhat
    CUDA_CHECK(row_mean(c, mgx, rows, cols, vec4, stream));                      // mean(g*xhat)
    CUDA_CHECK(broadcast_op(OP_SUB, 0, a, mg, c, rows, cols, vec4, stream));     // t = g - mg
    CUDA_CHECK(broadcast_op(OP_MUL, 0, b, mgx, d, rows, cols, vec4, stream));    // u = xhat*mgx
    CUDA_CHECK(binary_op(OP_SUB, c, d, a, n, vec4, stream));                     // v = t - u
    CUDA_CHECK(broadcast_op(OP_MUL, 0, a, rstd, dx, rows, cols, vec4, stream));  // dx = v*rstd
    return cudaSuccess;
}
