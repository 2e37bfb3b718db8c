// lessons/02-fused-softmax/softmax_fused.cu — YOUR FILE for lesson 02.
//
// Row-wise softmax in ONE kernel: y[r, j] = exp(x[r, j] - m_r) / d_r with
// m_r the row's max and d_r = sum_j exp(x[r, j] - m_r). One block per row.
//
// Part A: softmax_rows_kernel for rows that fit in registers (cols <= 32768):
//         the warp and block reductions, then read x once, write y once.
// Part B: make it stable: subtract the row max before exp.
// Part C: softmax_online_kernel for longer rows: the online softmax.
//
// It compiles and runs as shipped, but the kernels do nothing yet, so
// `./lab check 02` fails. Fill in the TODOs in order, running
// `./lab check 02` after each part. The lesson's README.md explains the why
// (and has hints, mildest first); read it first.
#include "softmax.h"

#include <float.h>
#include <stdint.h>

// Registers per thread for the row: kSlots float4s = 32 floats. With at most
// 1024 threads in a block that keeps rows up to 32768 floats on chip.
static const int kSlots = 8;
static const int kMaxThreads = 1024;
static const size_t kRegMaxCols = (size_t)4 * kSlots * kMaxThreads; // 32768
// Long rows: threads per block.
static const int kOnlineThreads = 512;

// ============================================================================
// Part A — reductions: warp, then block
// ============================================================================

// Every lane passes its v; every lane must get the max of all 32.
__device__ __forceinline__ float warp_max(float v)
{
    // TODO(A1): combine v with __shfl_xor_sync(0xffffffffu, v, offset) for
    //           offset = 16, 8, 4, 2, 1 (README, "Reductions").
    return v;
}

__device__ __forceinline__ float warp_sum(float v)
{
    // TODO(A1): the same with + instead of max.
    return v;
}

// Every thread of the block passes its v; every thread must get the block's
// result. blockDim.x is a power of two from 32 to 1024. `partial` is a
// shared array of 32 floats; give each call site its own.
__device__ float block_max(float v, float *partial /* [32], shared */)
{
    // TODO(A2): reduce within the warp; lane 0 of each warp stores the
    //           warp's result in partial[warp]; __syncthreads(); then every
    //           warp reduces partial[0 .. warps-1] itself (lanes past the
    //           last warp use -FLT_MAX). With one warp (warps == 1 in every
    //           thread alike, so the whole block skips the barrier together),
    //           return after the warp step.
    (void)partial;
    return v;
}

__device__ float block_sum(float v, float *partial /* [32], shared */)
{
    // TODO(A2): the same for the sum (lanes past the last warp use 0).
    (void)partial;
    return v;
}

// ============================================================================
// loading and storing a row, 4 floats per slot (complete: use these)
// ============================================================================

// Slot j of thread t (T = blockDim.x threads share the row) holds 4 floats:
//   vec:    the float4 at columns 4(jT + t) .. 4(jT + t) + 3   (one 16-byte load)
//   scalar: the columns (4j + c)T + t for c = 0..3             (four 4-byte loads)
// Either way a warp's loads cover one contiguous span (coalesced), and slots
// 0 .. nslots - 1, nslots = CEIL_DIV(cols, 4 * T), cover the row. Columns past
// the end read as -FLT_MAX: max ignores them and exp turns them into 0, and
// store_slot skips them. Any j >= 0 is safe: a slot at or past nslots reads
// as four -FLT_MAX and store_slot writes nothing there, so a loop may load 4
// slots at a time with no tail case. The launcher sets vec when 16-byte
// accesses are safe.
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

// ============================================================================
// Parts A and B — rows that fit in registers
// ============================================================================

// x and y are (rows, cols), row-major; block b computes row b (blockIdx.x).
// The launcher picks blockDim.x so that nslots <= kSlots: the whole row fits
// in `float4 v[kSlots]` per thread.
__global__ void __launch_bounds__(1024)
    softmax_rows_kernel(const float *__restrict__ x, float *__restrict__ y, int cols, int vec)
{
    // Start from these (uncomment):
    //   __shared__ float partial_max[32], partial_sum[32]; // for block_max / block_sum
    //   const float *xr = x + (size_t)blockIdx.x * cols;   // this block's row
    //   float *yr = y + (size_t)blockIdx.x * cols;
    //   int nslots = CEIL_DIV(cols, 4 * (int)blockDim.x);  // slots per thread, <= kSlots
    //
    // TODO(A3): read the row once: float4 v[kSlots]; v[j] = load_slot(xr,
    //           cols, j, vec) for j < kSlots, in a loop with #pragma unroll
    //           (a register array must be indexed by constants).
    // TODO(A4): d = the sum over the row of exp(x_j): each thread adds up
    //           its own slots, then block_sum(d, partial_sum). (Stopping at
    //           j < nslots only saves work: later slots are all padding, and
    //           exp turns their -FLT_MAX into 0.)
    // TODO(A5): y_j = exp(x_j) / d, written with store_slot from the
    //           registers (do not read x again). Multiply by 1/d.
    // TODO(B1): rows with large values overflow exp (exp(89) is inf in
    //           float32). Find m = the row's max first (block_max) and use
    //           exp(x_j - m) in A4 and A5: the answer is unchanged, and every
    //           argument is now <= 0.
}

// ============================================================================
// Part C — long rows: the online softmax
// ============================================================================

// Same layout, block b computes row b, blockDim.x = kOnlineThreads. The row
// does not fit on chip, so it is read twice: once to find m and d, once to
// write y.
__global__ void __launch_bounds__(512)
    softmax_online_kernel(const float *__restrict__ x, float *__restrict__ y, int cols, int vec)
{
    // Start from these (uncomment):
    //   __shared__ float partial_m[32], partial_d[32];
    //   const float *xr = x + (size_t)blockIdx.x * cols;
    //   float *yr = y + (size_t)blockIdx.x * cols;
    //   int nslots = CEIL_DIV(cols, 4 * (int)blockDim.x);
    //
    // TODO(C1): pass 1. Keep this thread's running max m (start -FLT_MAX)
    //           and running sum d (start 0) over its slots j = 0, 1, ...,
    //           nslots - 1, loading a few slots (say 4) before using any:
    //               m_new = max(m, max of the new values)
    //               d     = d * exp(m - m_new) + sum of exp(x - m_new)
    //               m     = m_new
    // TODO(C2): merge the threads' (m, d) pairs into the row's: two pairs
    //           combine as m = max(m1, m2), d = d1 exp(m1 - m) + d2 exp(m2 - m);
    //           first across the warp (shuffle both m and d), then across the
    //           warps through partial_m / partial_d, as in block_max. Write a
    //           helper of your own for it (your file may add any helpers),
    //           e.g. block_merge(&m, &d, partial_m, partial_d). Simpler, one
    //           barrier more: mb = block_max(m, partial_m);
    //           d = block_sum(d * exp(m - mb), partial_d); m = mb.
    // TODO(C3): pass 2. Read the row again; y = exp(x - m) / d (store_slot).
}

// ============================================================================
// launcher (you may change it; keep the signature)
// ============================================================================

// Threads for one row in registers: a power of two from 32 to 1024, with 16
// floats per thread for rows up to 2048 floats and 32 (all kSlots) beyond.
static int row_threads(size_t cols)
{
    size_t per_thread = cols <= 2048 ? 16 : (size_t)4 * kSlots;
    int t = 32;
    while (t < kMaxThreads && (size_t)t * per_thread < cols) t *= 2;
    return t;
}

EXTERN_C cudaError_t softmax_fused(const float *x, float *y, size_t rows, size_t cols,
                                   cudaStream_t stream)
{
    if (rows == 0 || cols == 0) return cudaSuccess;
    if (rows > SOFTMAX_MAX_ROWS || cols > SOFTMAX_MAX_COLS) return cudaErrorInvalidValue;
    // 16-byte loads and stores need every row start aligned: aligned base
    // pointers and a whole number of float4s per row.
    int vec = cols % 4 == 0 && FL_ALIGNED16(x) && FL_ALIGNED16(y);
    if (cols <= kRegMaxCols)
        softmax_rows_kernel<<<(unsigned int)rows, row_threads(cols), 0, stream>>>(x, y, (int)cols,
                                                                                  vec);
    else
        softmax_online_kernel<<<(unsigned int)rows, kOnlineThreads, 0, stream>>>(x, y, (int)cols,
                                                                                 vec);
    CUDA_CHECK_LAST();
    return cudaSuccess;
}
