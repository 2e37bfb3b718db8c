// lessons/02-fused-softmax/softmax_unfused.cu — the PyTorch-style baseline.
//
// Row-wise softmax the way an eager framework runs
//     m = x.amax(dim=1, keepdim=True); e = (x - m).exp(); y = e / e.sum(dim=1, keepdim=True)
// one kernel per operator, every intermediate written to device memory and
// read back (x is (rows, cols), N = rows * cols floats):
//
//     row_max = rowmax(x)        reads N,           writes rows
//     shifted = x - row_max      reads N + rows,    writes N
//     e       = exp(shifted)     reads N,           writes N
//     row_sum = rowsum(e)        reads N,           writes rows
//     y       = e / row_sum      reads N + rows,    writes N
//                                --------------------------------
//                                reads 5N + 2 rows, writes 3N + 2 rows floats
//                                (32N bytes + 16 per row; fused: 8N)
//
// This is not a straw man: the two row reductions read with 16-byte loads and
// combine with warp shuffles and a block reduction; the three elementwise
// kernels are lesson 01's grid-stride float4 kernels. Each one runs close to
// the copy bandwidth on its own; together they lose because they move four
// times the bytes. Complete as shipped: not an exercise.
#include "softmax.h"
#include "device.h"

#include <float.h>
#include <stdint.h>

enum { ROW_MAX = 0, ROW_SUM = 1 };     // what row_reduce_kernel computes
enum { BCAST_SUB = 0, BCAST_DIV = 1 }; // what rowwise_kernel computes

// ============================================================================
// reductions: warp, then block
// ============================================================================

// Both results, then a select: no branch between the loads and their use.
__device__ __forceinline__ float combine(int op, float a, float b)
{
    float mx = fmaxf(a, b), sum = a + b;
    return op == ROW_MAX ? mx : sum;
}

// The 32 lanes of a warp exchange registers directly (no shared memory):
// after the xor steps 16, 8, 4, 2, 1 every lane holds the warp's result.
__device__ __forceinline__ float warp_reduce(int op, float v)
{
    for (int offset = 16; offset > 0; offset /= 2)
        v = combine(op, v, __shfl_xor_sync(0xffffffffu, v, offset));
    return v;
}

// Every thread of the block passes its value; every thread gets the block's
// result. blockDim.x is a multiple of 32, at most 1024 (so at most 32 warps).
__device__ float block_reduce(int op, float v, float *partial /* [32], shared */)
{
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    int warps = blockDim.x / 32;
    v = warp_reduce(op, v);
    if (warps == 1) return v;
    if (lane == 0) partial[warp] = v;
    __syncthreads(); // every warp's partial is in shared memory before any is read
    v = lane < warps ? partial[lane] : (op == ROW_MAX ? -FLT_MAX : 0.0f);
    return warp_reduce(op, v); // each warp folds the partials itself: no second barrier
}

// ============================================================================
// kernels
// ============================================================================

// The four floats of a float4 folded into one.
__device__ __forceinline__ float fold4(int op, float4 v)
{
    return combine(op, combine(op, v.x, v.y), combine(op, v.z, v.w));
}

// out[row] = max_j x[row, j] (ROW_MAX) or sum_j x[row, j] (ROW_SUM).
// x is (rows, cols), row-major; one block per row (blockIdx.x = row). Thread
// t reads columns t, t + T, t + 2T, ... (T = blockDim.x): neighbouring
// threads read neighbouring addresses, so every load is coalesced. vec: x is
// 16-byte aligned and cols % 4 == 0, so each row is whole float4s.
__global__ void row_reduce_kernel(const float *__restrict__ x, float *__restrict__ out,
                                  int cols, int op, int vec)
{
    __shared__ float partial[32];
    const float *xr = x + (size_t)blockIdx.x * cols;
    int T = blockDim.x, i = threadIdx.x;
    float acc = op == ROW_MAX ? -FLT_MAX : 0.0f;
    // Four loads per step, written out: a plain strided loop would issue one
    // load, wait for it, combine, and only then issue the next.
    if (vec) {
        const float4 *x4 = (const float4 *)xr;
        int n4 = cols / 4;
        for (; i + 3 * T < n4; i += 4 * T) {
            float4 a = x4[i], b = x4[i + T], c = x4[i + 2 * T], d = x4[i + 3 * T];
            acc = combine(op, acc, combine(op, combine(op, fold4(op, a), fold4(op, b)),
                                           combine(op, fold4(op, c), fold4(op, d))));
        }
        for (; i < n4; i += T) acc = combine(op, acc, fold4(op, x4[i]));
    } else {
        for (; i + 3 * T < cols; i += 4 * T) {
            float a = xr[i], b = xr[i + T], c = xr[i + 2 * T], d = xr[i + 3 * T];
            acc = combine(op, acc, combine(op, combine(op, a, b), combine(op, c, d)));
        }
        for (; i < cols; i += T) acc = combine(op, acc, xr[i]);
    }
    acc = block_reduce(op, acc, partial);
    if (threadIdx.x == 0) out[blockIdx.x] = acc;
}

// out[r, j] = a[r, j] - v[r] (BCAST_SUB) or a[r, j] / v[r] (BCAST_DIV): a
// matrix combined with one value per row (PyTorch's broadcast of a (rows, 1)
// tensor). Grid-stride over items: float4s when vec (a and out 16-byte
// aligned, cols % 4 == 0, so no float4 straddles two rows), floats otherwise.
__global__ void rowwise_kernel(const float *__restrict__ a, const float *__restrict__ v,
                               float *__restrict__ out, size_t rows, size_t cols, int op,
                               int vec)
{
    size_t per_row = vec ? cols / 4 : cols; // items in one row
    size_t n_items = rows * per_row;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n_items) return;
    // Which row is item i in? One 64-bit division per thread, not per item:
    // (r, c) with i = r * per_row + c, advanced by the stride with a carry.
    size_t r = i / per_row, c = i % per_row;
    size_t dr = stride / per_row, dc = stride % per_row;
    const float4 *a4 = (const float4 *)a;
    float4 *o4 = (float4 *)out;
    for (; i < n_items; i += stride) {
        float s = v[r]; // one float per row: served from cache after the first reader
        if (vec) {
            float4 p = a4[i];
            o4[i] = op == BCAST_SUB ? make_float4(p.x - s, p.y - s, p.z - s, p.w - s)
                                    : make_float4(p.x / s, p.y / s, p.z / s, p.w / s);
        } else {
            out[i] = op == BCAST_SUB ? a[i] - s : a[i] / s;
        }
        c += dc;
        r += dr;
        if (c >= per_row) { // c + dc < 2 * per_row: one carry at most
            c -= per_row;
            ++r;
        }
    }
}

// out = exp(x) over n floats; lesson 01's shape of kernel. vec: both
// pointers 16-byte aligned, so n/4 float4s cover the body.
__global__ void exp_kernel(const float *__restrict__ x, float *__restrict__ out, size_t n,
                           int vec)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    size_t tid = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    size_t start = 0; // where the scalar loop begins
    if (vec) {
        const float4 *x4 = (const float4 *)x;
        float4 *o4 = (float4 *)out;
        for (size_t i = tid; i < n / 4; i += stride) {
            float4 p = x4[i];
            o4[i] = make_float4(expf(p.x), expf(p.y), expf(p.z), expf(p.w));
        }
        start = 4 * (n / 4); // the last n % 4 floats, one thread each
    }
    for (size_t i = start + tid; i < n; i += stride) out[i] = expf(x[i]);
}

// ============================================================================
// launchers
// ============================================================================

static const int kThreads = 256;   // elementwise kernels
static const int kBlocksPerSm = 8; // 8 x 256 = 2048 threads: a full SM

// Threads for one row: a power of two from 32 to 1024, about 16 floats each.
static int reduce_threads(size_t cols)
{
    int t = 32;
    while (t < 1024 && (size_t)t * 16 < cols) t *= 2;
    return t;
}

static cudaError_t row_reduce_op(const float *x, float *out, size_t rows, size_t cols,
                                 int op, cudaStream_t stream)
{
    int vec = cols % 4 == 0 && FL_ALIGNED16(x);
    row_reduce_kernel<<<(unsigned int)rows, reduce_threads(cols), 0, stream>>>(
        x, out, (int)cols, op, vec);
    CUDA_CHECK_LAST();
    return cudaSuccess;
}

static cudaError_t rowwise_op(const float *a, const float *v, float *out, size_t rows,
                              size_t cols, int op, cudaStream_t stream)
{
    int vec = cols % 4 == 0 && FL_ALIGNED16(a) && FL_ALIGNED16(out);
    size_t items = rows * (vec ? cols / 4 : cols);
    unsigned int blocks = fl_grid_blocks(items, kThreads, kBlocksPerSm);
    rowwise_kernel<<<blocks, kThreads, 0, stream>>>(a, v, out, rows, cols, op, vec);
    CUDA_CHECK_LAST();
    return cudaSuccess;
}

static cudaError_t exp_op(const float *x, float *out, size_t n, cudaStream_t stream)
{
    int vec = FL_ALIGNED16(x) && FL_ALIGNED16(out);
    unsigned int blocks = fl_grid_blocks(vec && n / 4 ? n / 4 : n, kThreads, kBlocksPerSm);
    exp_kernel<<<blocks, kThreads, 0, stream>>>(x, out, n, vec);
    CUDA_CHECK_LAST();
    return cudaSuccess;
}

EXTERN_C cudaError_t softmax_unfused(const float *x, float *row_max, float *shifted,
                                     float *e, float *row_sum, float *y, size_t rows,
                                     size_t cols, cudaStream_t stream)
{
    if (rows == 0 || cols == 0) return cudaSuccess;
    if (rows > SOFTMAX_MAX_ROWS || cols > SOFTMAX_MAX_COLS) return cudaErrorInvalidValue;
    CUDA_CHECK(row_reduce_op(x, row_max, rows, cols, ROW_MAX, stream));            // m = rowmax(x)
    CUDA_CHECK(rowwise_op(x, row_max, shifted, rows, cols, BCAST_SUB, stream));    // x - m
    CUDA_CHECK(exp_op(shifted, e, rows * cols, stream));                           // e = exp(x - m)
    CUDA_CHECK(row_reduce_op(e, row_sum, rows, cols, ROW_SUM, stream));            // s = rowsum(e)
    CUDA_CHECK(rowwise_op(e, row_sum, y, rows, cols, BCAST_DIV, stream));          // y = e / s
    return cudaSuccess;
}
