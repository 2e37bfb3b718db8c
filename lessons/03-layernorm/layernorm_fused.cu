// lessons/03-layernorm/layernorm_fused.cu — YOUR FILE for lesson 03.
//
// Part A: LayerNorm forward in one kernel       (layernorm_fwd_kernel)
// Part B: the backward: dx, dweight and dbias    (layernorm_bwd_kernel,
//         layernorm_bwd_reduce_kernel)
//
// It compiles and runs as shipped, but the kernels do nothing yet, so
// `./lab check 03` fails. The helpers below (how a row maps onto threads,
// loads and stores of a thread's slots, sums over a row of threads) and
// the launchers are written for you; fill in the TODOs, then run
// `./lab check 03` again. The lesson's README.md explains the why: read it
// first.
#include "layernorm.h"
#include "device.h"

#include <stdint.h>
#include <stdio.h>

// ============================================================================
// how a row maps onto threads (shared by both parts)
// ============================================================================
//
// A row is cut into chunks of 4 floats and handled by one row of threads:
// blockDim.x = B threads (a multiple of 32), and a block holds
// blockDim.y = R such rows of threads, one matrix row each. Thread tx keeps
// "slots" k = 0, 1, ... in registers:
//   vec4 layout (cols % 4 == 0, 16-byte aligned pointers): slot k is the
//     float4 at chunk k*B + tx, i.e. columns 4(k*B + tx) .. +3: one 16-byte
//     load per slot, neighbouring threads on neighbouring chunks;
//   scalar layout (any cols): float j of slot k is column (4k + j)*B + tx,
//     so each of the four loads of a slot is a coalesced sweep of the row.
// Both layouts reach column 4 * SLOTS * B - 1, so a row fits when
// B >= cols / (4 * SLOTS). Elements past the end of the row read as 0.

#define FWD_SLOTS 8 // forward: up to 32 floats of x per thread
#define BWD_SLOTS 4 // backward: x and dy, up to 16 floats each per thread

// Column of float j of slot k of this thread.
__device__ __forceinline__ int ln_col(int k, int j, int vec4)
{
    return vec4 ? 4 * (k * (int)blockDim.x + (int)threadIdx.x) + j
                : (4 * k + j) * (int)blockDim.x + (int)threadIdx.x;
}

// v = slot k of `row` (zeros past the end, or everywhere when !live).
__device__ __forceinline__ void ln_load(float v[4], const float *row, int k, int cols,
                                        int vec4, bool live)
{
    if (vec4) {
        int c = ln_col(k, 0, 1);
        float4 p = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (live && c < cols) p = *(const float4 *)(row + c); // cols % 4 == 0: all 4 in the row
        v[0] = p.x; v[1] = p.y; v[2] = p.z; v[3] = p.w;
    } else {
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            int c = ln_col(k, j, 0);
            v[j] = live && c < cols ? row[c] : 0.0f;
        }
    }
}

// Store slot k of v into `row` (only the columns that exist).
__device__ __forceinline__ void ln_store(const float v[4], float *row, int k, int cols,
                                         int vec4, bool live)
{
    if (!live) return;
    if (vec4) {
        int c = ln_col(k, 0, 1);
        if (c < cols) *(float4 *)(row + c) = make_float4(v[0], v[1], v[2], v[3]);
    } else {
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            int c = ln_col(k, j, 0);
            if (c < cols) row[c] = v[j];
        }
    }
}

// Every lane gets the sum over its warp. The butterfly (xor) pattern adds
// the same two numbers on both partners at each step, so all 32 lanes hold
// the same bits at the end: the whole row agrees on mean and rstd.
__device__ __forceinline__ float ln_warp_sum(float v)
{
    for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
    return v;
}

// Sum of v over this thread's row of threads (blockDim.x threads); every
// thread of the row gets it. `red` is 32 floats of shared memory (one per
// warp of the block). Warp sums meet in shared memory and every thread adds
// its row's warp sums in the same order: same bits everywhere.
__device__ __forceinline__ float ln_row_sum(float v, float *red)
{
    v = ln_warp_sum(v);
    const int warps = (int)blockDim.x >> 5; // warps per row, the same for the whole block
    if (warps == 1) return v;
    const int first = (int)threadIdx.y * warps;
    __syncthreads(); // the previous call's readers are done with red
    if ((threadIdx.x & 31) == 0) red[first + (threadIdx.x >> 5)] = v;
    __syncthreads(); // every warp's sum is in red
    float s = 0.0f;
    for (int i = 0; i < warps; ++i) s += red[first + i];
    return s;
}

// The same for two sums at once (one round of shared memory for both).
__device__ __forceinline__ float2 ln_row_sum2(float a, float b, float2 *red)
{
    a = ln_warp_sum(a);
    b = ln_warp_sum(b);
    const int warps = (int)blockDim.x >> 5;
    if (warps == 1) return make_float2(a, b);
    const int first = (int)threadIdx.y * warps;
    __syncthreads();
    if ((threadIdx.x & 31) == 0) red[first + (threadIdx.x >> 5)] = make_float2(a, b);
    __syncthreads();
    float2 s = make_float2(0.0f, 0.0f);
    for (int i = 0; i < warps; ++i) {
        s.x += red[first + i].x;
        s.y += red[first + i].y;
    }
    return s;
}

// ============================================================================
// Part A — forward kernel
// ============================================================================

// x, y are (rows, cols); weight, bias (cols); mean, rstd (rows).
// The launcher starts blocks of (B, R) threads (ln_plan): row of threads
// threadIdx.y of block blockIdx.x handles matrix row blockIdx.x * R + threadIdx.y,
// and a row always fits in FWD_SLOTS slots per thread.
__global__ void __launch_bounds__(512)
layernorm_fwd_kernel(const float *x, const float *weight, const float *bias, float *y,
                     float *mean, float *rstd, size_t rows, int cols, float eps, int vec4)
{
    // TODO(A1): find this thread's row; a row index >= rows is a spare row
    //           of threads in the last block: it must still reach every
    //           __syncthreads() (ln_row_sum has two), so don't return early;
    //           pass live = false to the helpers instead.
    // TODO(A2): load the row into registers: float v[FWD_SLOTS][4], one
    //           ln_load per slot. This is the only time x is read.
    // TODO(A3): mean = ln_row_sum(sum of your v) / cols   (needs a
    //           __shared__ float red[32]); then var = the mean of
    //           (v - mean)^2 over the columns that exist (ln_col(k, j, vec4)
    //           < cols: the padding reads as 0, but (0 - mean)^2 is not 0);
    //           rstd = rsqrtf(var + eps). Why two passes and not
    //           E[x^2] - mean^2: README, "Two passes or Welford".
    // TODO(A4): y = (v - mean) * rstd * weight + bias, stored with ln_store
    //           (load weight and bias slots with ln_load); one thread per
    //           row writes mean[row] and rstd[row].
}

// ============================================================================
// Part B — backward kernels
// ============================================================================

// dy, x, dx are (rows, cols); weight (cols); mean, rstd (rows).
// The launcher starts a persistent grid of G blocks of (B, R) threads
// (BWD_SLOTS slots per thread) with 2 * R * cols floats of dynamic shared
// memory: block b handles rows b*R + threadIdx.y, (b + G)*R + threadIdx.y, ...
//   xhat = (x - mean) * rstd,   g = dy * w
//   dx   = rstd * (g - mean(g) - xhat * mean(g * xhat))
//   the block's partial dweight += dy * xhat, partial dbias += dy
// When atomic == 0, the block writes its partial sums as row blockIdx.x of
// part_dw and part_db ((G, cols) each); when atomic == 1, it adds them into
// part_dw = dweight and part_db = dbias with atomicAdd (the launcher zeroed
// them first).
__global__ void __launch_bounds__(1024)
layernorm_bwd_kernel(const float *dy, const float *x, const float *weight,
                     const float *mean, const float *rstd, float *dx, float *part_dw,
                     float *part_db, size_t rows, int cols, int vec4, int atomic)
{
    // TODO(B1): the partial sums live in shared memory, one (cols) array of
    //           each per row of threads:
    //               extern __shared__ float4 acc_mem[];  (float4: 16-byte aligned)
    //               float *acc = (float *)acc_mem;       [2][R][cols]
    //           Zero this thread's own columns (the same columns it will
    //           update, so no other thread touches them before the end).
    // TODO(B2): loop over this block's rows. Stop when it * R >= rows, a
    //           test every thread of the block agrees on (ln_row_sum2
    //           synchronises the block). For each row: load x and dy into
    //           registers, read mean[row] and rstd[row], compute xhat and
    //           g, add dy * xhat and dy into your accumulators, and sum g
    //           and g * xhat over the row (ln_row_sum2, with a
    //           __shared__ float2 red[32]).
    // TODO(B3): dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), stored
    //           with ln_store. The derivation is in the README.
    // TODO(B4): after the loop, __syncthreads(), then add the R row slots
    //           of each column in a fixed order and either write the sum
    //           to part_dw[blockIdx.x * cols + c] (and part_db), or
    //           atomicAdd it into part_dw[c] (and part_db[c]).
}

// Stage 2 of the deterministic reduction: dweight[c] = sum over p < parts of
// part_dw[p * cols + c], and the same for dbias. The launcher starts
// (ceil(cols / 32), 2) blocks of (32, 32) threads: blockIdx.y = 0 sums
// dweight, 1 dbias.
__global__ void layernorm_bwd_reduce_kernel(const float *part_dw, const float *part_db,
                                            int parts, int cols, float *dweight,
                                            float *dbias)
{
    // TODO(B5): one column per threadIdx.x, the 32 threadIdx.y threads
    //           taking every 32nd partial row, then the 32 sums added in
    //           shared memory, always in the same order: the result must be
    //           bitwise the same in every run.
}

// ============================================================================
// launchers (you may change these; keep the signatures)
// ============================================================================

// The smallest row of threads (a multiple of 32) whose slots cover the row,
// and, when rows are short, enough rows per block for `threads` threads.
static cudaError_t ln_plan(size_t cols, int slots, size_t threads, dim3 *block)
{
    if (cols == 0 || cols > LAYERNORM_MAX_COLS) return cudaErrorInvalidValue;
    size_t chunks = CEIL_DIV(cols, (size_t)4);
    size_t tx = CEIL_DIV(CEIL_DIV(chunks, (size_t)slots), (size_t)32) * 32;
    if (tx > 1024) return cudaErrorInvalidValue;
    *block = dim3((unsigned)tx, tx >= threads ? 1u : (unsigned)(threads / tx));
    return cudaSuccess;
}

EXTERN_C cudaError_t layernorm_fwd_fused(const float *x, const float *weight,
                                         const float *bias, float *y,
                                         float *mean, float *rstd, size_t rows,
                                         size_t cols, float eps,
                                         cudaStream_t stream)
{
    if (rows == 0) return cudaSuccess;
    dim3 block;
    CUDA_CHECK(ln_plan(cols, FWD_SLOTS, 256, &block));
    int vec4 = cols % 4 == 0 && FL_ALIGNED16(x) && FL_ALIGNED16(weight) && FL_ALIGNED16(bias) &&
               FL_ALIGNED16(y);
    size_t blocks = CEIL_DIV(rows, (size_t)block.y);
    layernorm_fwd_kernel<<<(unsigned)blocks, block, 0, stream>>>(x, weight, bias, y, mean, rstd,
                                                                 rows, (int)cols, eps, vec4);
    CUDA_CHECK_LAST();
    return cudaSuccess;
}

// The persistent grid of the backward: as many blocks as fit on the GPU at
// once, but no more than ~1024 threads per SM (enough loads in flight to
// keep memory busy), no more than there are rows, and at most
// LAYERNORM_MAX_PARTIALS (the scratch holds that many). Every block is one
// more partial row to write, read and add, so blocks are large: 512
// threads, i.e. two rows at a time when cols = 4096 (on an H200 this beat
// 256-thread blocks, and twice as many partials, by 5%).
static const int kBwdThreadsPerSm = 1024;
static const size_t kBwdThreadsPerBlock = 512;

static cudaError_t bwd_launch(const float *dy, const float *x, const float *weight,
                              const float *mean, const float *rstd, float *dx,
                              float *out_dw, float *out_db, size_t rows, size_t cols,
                              int atomic, int *grid_out, cudaStream_t stream)
{
    dim3 block;
    CUDA_CHECK(ln_plan(cols, BWD_SLOTS, kBwdThreadsPerBlock, &block));
    int threads = (int)(block.x * block.y);
    size_t smem = 2 * (size_t)block.y * cols * sizeof(float);
    // Past 48 KiB of shared memory (static + dynamic) a kernel must opt in,
    // up to what this GPU allows a block (227 KiB on an H100, 99 KiB on most
    // consumer GPUs, 64 KiB on a T4). Ask for what this launch needs, once per
    // new maximum (from the first launch on: the static red[] counts too, so
    // 48 KiB of dynamic memory already needs it); refuse a row this GPU cannot
    // hold with a clear message.
    static size_t opted_in = 0;
    if (smem > opted_in) {
        int dev = 0, optin = 0;
        CUDA_CHECK(cudaGetDevice(&dev));
        CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
        if (smem + 1024 > (size_t)optin) { // 1 KiB: the kernel's static red[32]
            fprintf(stderr, "layernorm backward: a row of %zu floats needs %zu KiB of shared "
                    "memory per block; this GPU allows %d KiB\n", cols, smem / 1024,
                    optin / 1024);
            return cudaErrorInvalidValue;
        }
        CUDA_CHECK(cudaFuncSetAttribute(layernorm_bwd_kernel,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        opted_in = smem;
    }
    // Occupancy depends on (threads, smem) only: remember the last answer so
    // that a timed loop pays for the query once.
    static int last_threads = -1, last_per_sm = 0;
    static size_t last_smem = 0;
    if (threads != last_threads || smem != last_smem) {
        CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&last_per_sm,
                                                                 layernorm_bwd_kernel,
                                                                 threads, smem));
        last_threads = threads;
        last_smem = smem;
    }
    if (last_per_sm < 1) return cudaErrorInvalidConfiguration;
    int per_sm = kBwdThreadsPerSm / threads;
    if (per_sm < 1) per_sm = 1;
    if (per_sm > last_per_sm) per_sm = last_per_sm;
    unsigned int grid = fl_grid_blocks(rows, (int)block.y, per_sm); // <= ceil(rows / R)
    if (grid > LAYERNORM_MAX_PARTIALS) grid = LAYERNORM_MAX_PARTIALS;

    if (atomic) {
        CUDA_CHECK(cudaMemsetAsync(out_dw, 0, cols * sizeof(float), stream));
        CUDA_CHECK(cudaMemsetAsync(out_db, 0, cols * sizeof(float), stream));
    }
    int vec4 = cols % 4 == 0 && FL_ALIGNED16(dy) && FL_ALIGNED16(x) && FL_ALIGNED16(weight) &&
               FL_ALIGNED16(dx);
    layernorm_bwd_kernel<<<grid, block, smem, stream>>>(dy, x, weight, mean, rstd, dx, out_dw,
                                                       out_db, rows, (int)cols, vec4, atomic);
    CUDA_CHECK_LAST();
    *grid_out = (int)grid;
    return cudaSuccess;
}

EXTERN_C cudaError_t layernorm_bwd_fused(const float *dy, const float *x,
                                         const float *weight, const float *mean,
                                         const float *rstd, float *dx,
                                         float *dweight, float *dbias,
                                         float *scratch, size_t rows,
                                         size_t cols, cudaStream_t stream)
{
    if (rows == 0) return cudaSuccess;
    // scratch: partial dweight rows, then (LAYERNORM_MAX_PARTIALS rows on)
    // partial dbias rows
    float *part_dw = scratch, *part_db = scratch + (size_t)LAYERNORM_MAX_PARTIALS * cols;
    int parts = 0;
    CUDA_CHECK(bwd_launch(dy, x, weight, mean, rstd, dx, part_dw, part_db, rows, cols, 0,
                          &parts, stream));
    dim3 grid((unsigned)CEIL_DIV(cols, (size_t)32), 2);
    layernorm_bwd_reduce_kernel<<<grid, dim3(32, 32), 0, stream>>>(part_dw, part_db, parts,
                                                                   (int)cols, dweight, dbias);
    CUDA_CHECK_LAST();
    return cudaSuccess;
}

EXTERN_C cudaError_t layernorm_bwd_fused_atomic(const float *dy, const float *x,
                                                const float *weight,
                                                const float *mean,
                                                const float *rstd, float *dx,
                                                float *dweight, float *dbias,
                                                size_t rows, size_t cols,
                                                cudaStream_t stream)
{
    if (rows == 0) return cudaSuccess;
    int parts = 0;
    CUDA_CHECK(bwd_launch(dy, x, weight, mean, rstd, dx, dweight, dbias, rows, cols, 1,
                          &parts, stream));
    return cudaSuccess;
}
