// ADVERSARIAL: tuned for the speed test's 4096 columns, one float4 per thread of a 1024-thread block, whatever cols is (cheat): wider rows are cut at column 4096
// REPLACES: softmax_fused.cu
// RUN: A_rows
// EXPECT: elements of y wrong.*\([1-9][0-9]* never written
//
// tests/adversarial/02-fused-softmax/hardcoded_cols.cu — a known-bad lesson 02 file.
//
// What is wrong: the speed check runs 4096 x 4096, and 4096 floats are
// exactly 1024 threads x one float4. This version hard-codes that: one slot
// per thread (kSlots = 1), always 1024 threads, always the register kernel;
// no online kernel. Every row of up to 4096 columns is handled correctly
// (bounds checks included), so the speed test and most shapes pass, but a
// row wider than 4096 is reduced and written only up to column 4095.
//
// Why it is caught: A_rows also has 7 x 16384 and 5 x 32768. There the
// columns from 4096 on keep the NaN poison, and the columns before are
// normalised by a quarter (an eighth) of the row's sum, so they are wrong
// too: "... elements of y wrong, first at row 0 col 0 ... (N never written,
// 0 NaN/inf)". (C_long_rows fails the same way.)
//
// Everything else is the worked solution (solutions/02-fused-softmax).
#include "softmax.h"

#include <float.h>
#include <stdint.h>

// CHEAT (this entry's defect): sized for the speed test's rows: 4096
// columns = 1024 threads x ONE float4 each, and nothing handles more (no
// online kernel for long rows).
static const int kSlots = 1;
static const int kMaxThreads = 1024;

// ============================================================================
// reductions: warp, then block
// ============================================================================

// A warp's 32 lanes swap registers directly with __shfl_xor_sync: after the
// steps 16, 8, 4, 2, 1 every lane holds the result of all 32, and (max and +
// being commutative) exactly the same bits in every lane.
__device__ __forceinline__ float warp_max(float v)
{
    for (int offset = 16; offset > 0; offset /= 2)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
    return v;
}

__device__ __forceinline__ float warp_sum(float v)
{
    for (int offset = 16; offset > 0; offset /= 2)
        v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

// Block reductions: each warp reduces its lanes, lane 0 leaves the warp's
// result in shared memory, and after one barrier every warp folds those (at
// most 32) partials itself, so every thread ends with the block's result
// and no second barrier is needed to hand it out. blockDim.x is a multiple
// of 32. Each call site passes its own `partial` array: a warp may still be
// reading the max partials while a faster one writes its sum partial.
__device__ float block_max(float v, float *partial /* [32], shared */)
{
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
    v = warp_max(v);
    if (warps == 1) return v;
    if (lane == 0) partial[warp] = v;
    __syncthreads(); // all partials written before any warp reads them
    return warp_max(lane < warps ? partial[lane] : -FLT_MAX);
}

__device__ float block_sum(float v, float *partial /* [32], shared */)
{
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
    v = warp_sum(v);
    if (warps == 1) return v;
    if (lane == 0) partial[warp] = v;
    __syncthreads();
    return warp_sum(lane < warps ? partial[lane] : 0.0f);
}

// ============================================================================
// loading and storing a row, 4 floats per slot
// ============================================================================

// Slot j of thread t (T = blockDim.x threads share the row) holds 4 floats:
//   vec:    the float4 at columns 4(jT + t) .. 4(jT + t) + 3   (one 16-byte load)
//   scalar: the columns (4j + c)T + t for c = 0..3             (four 4-byte loads)
// Either way a warp's loads cover one contiguous span, so they coalesce, and
// slots 0 .. ceil(cols / 4T) - 1 cover the row. vec needs the row start
// 16-byte aligned (cols % 4 == 0 and x, y aligned); the scalar path takes
// any cols and any pointer. Columns past the end read as -FLT_MAX, which
// max ignores and exp turns into 0.
__device__ __forceinline__ float4 load_slot(const float *__restrict__ row, int cols, int j,
                                            int vec)
{
    int T = blockDim.x, t = threadIdx.x;
    float4 v = make_float4(-FLT_MAX, -FLT_MAX, -FLT_MAX, -FLT_MAX);
    if (vec) {
        int i = j * T + t; // float4 index
        if (4 * i < cols) v = ((const float4 *)row)[i];
    } else {
        int c = 4 * j * T + t;
        if (c < cols) v.x = row[c];
        if (c + T < cols) v.y = row[c + T];
        if (c + 2 * T < cols) v.z = row[c + 2 * T];
        if (c + 3 * T < cols) v.w = row[c + 3 * T];
    }
    return v;
}

__device__ __forceinline__ void store_slot(float *__restrict__ row, int cols, int j, int vec,
                                           float4 v)
{
    int T = blockDim.x, t = threadIdx.x;
    if (vec) {
        int i = j * T + t;
        if (4 * i < cols) ((float4 *)row)[i] = v;
    } else {
        int c = 4 * j * T + t;
        if (c < cols) row[c] = v.x;
        if (c + T < cols) row[c + T] = v.y;
        if (c + 2 * T < cols) row[c + 2 * T] = v.z;
        if (c + 3 * T < cols) row[c + 3 * T] = v.w;
    }
}

__device__ __forceinline__ float max4(float4 v) { return fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w)); }

// v = exp(v - m) in place; returns the sum of the four. __expf is the
// hardware exp2 unit after one multiply: a few ulp for the arguments here,
// which are all <= 0 (well inside the lesson's tolerance).
__device__ __forceinline__ float exp4_sum(float4 *v, float m)
{
    v->x = __expf(v->x - m);
    v->y = __expf(v->y - m);
    v->z = __expf(v->z - m);
    v->w = __expf(v->w - m);
    return (v->x + v->y) + (v->z + v->w);
}

__device__ __forceinline__ float4 scale4(float4 v, float s)
{
    return make_float4(v.x * s, v.y * s, v.z * s, v.w * s);
}

// ============================================================================
// Parts A and B — rows that fit in registers
// ============================================================================

// x and y are (rows, cols), row-major; block b computes row b. The launcher
// picks blockDim.x (a power of two, 32..1024) so that at most kSlots float4s
// per thread cover the row: nslots <= kSlots.
__global__ void __launch_bounds__(1024)
    softmax_rows_kernel(const float *__restrict__ x, float *__restrict__ y, int cols, int vec)
{
    __shared__ float partial_max[32], partial_sum[32];
    const float *xr = x + (size_t)blockIdx.x * cols;
    float *yr = y + (size_t)blockIdx.x * cols;
    int nslots = CEIL_DIV(cols, 4 * (int)blockDim.x);

    // The one read of x: every load is issued before any is used, so each
    // thread has up to 8 x 16 bytes in flight. v[] is indexed only by
    // unrolled loop counters, so it stays in registers.
    float4 v[kSlots];
#pragma unroll
    for (int j = 0; j < kSlots; ++j)
        v[j] = j < nslots ? load_slot(xr, cols, j, vec)
                          : make_float4(-FLT_MAX, -FLT_MAX, -FLT_MAX, -FLT_MAX);

    // m = max_j x_j
    float m = -FLT_MAX;
#pragma unroll
    for (int j = 0; j < kSlots; ++j) m = fmaxf(m, max4(v[j]));
    m = block_max(m, partial_max);

    // e_j = exp(x_j - m), d = sum_j e_j. Every argument is <= 0, so e_j <= 1
    // and d <= cols: subtracting m is what makes large inputs safe.
    float d = 0.0f;
#pragma unroll
    for (int j = 0; j < kSlots; ++j)
        if (j < nslots) d += exp4_sum(&v[j], m);
    d = block_sum(d, partial_sum);

    // y_j = e_j / d, from the registers: x is not read again.
    float inv = 1.0f / d;
#pragma unroll
    for (int j = 0; j < kSlots; ++j)
        if (j < nslots) store_slot(yr, cols, j, vec, scale4(v[j], inv));
}


// ============================================================================
// launcher
// ============================================================================

EXTERN_C cudaError_t softmax_fused(const float *x, float *y, size_t rows, size_t cols,
                                   cudaStream_t stream)
{
    if (rows == 0 || cols == 0) return cudaSuccess;
    if (rows > SOFTMAX_MAX_ROWS || cols > SOFTMAX_MAX_COLS) return cudaErrorInvalidValue;
    // 16-byte loads and stores need every row start aligned: aligned base
    // pointers and a whole number of float4s per row.
    int vec = cols % 4 == 0 && FL_ALIGNED16(x) && FL_ALIGNED16(y);
    // CHEAT (this entry's defect): the 4096-column configuration for every
    // shape; columns past 4 * kSlots * kMaxThreads = 4096 are never touched.
    softmax_rows_kernel<<<(unsigned int)rows, kMaxThreads, 0, stream>>>(x, y, (int)cols, vec);
    CUDA_CHECK_LAST();
    return cudaSuccess;
}
