//@{
// solutions/03-layernorm/layernorm_fused.cu — worked solution of lesson 03.
//
// Part A: LayerNorm forward in ONE kernel. A row is read from memory once,
//         kept in registers, and reduced twice on chip (mean, then variance
//         around that mean); y, mean and rstd are written once (going
//         further, for rows of 1025-4096 floats: one row a block, with more
//         warps an SM).
// Part B: the backward. One kernel reads dy and x once per row, writes dx,
//         and sums the row's dy * xhat and dy into per-block partial dweight
//         and dbias in shared memory (going further, for rows of up to 8192
//         floats: in registers). The partials then meet either through
//         atomicAdd (layernorm_bwd_fused_atomic: fast, last bits vary from
//         run to run) or through a second small kernel that adds them in a
//         fixed order (layernorm_bwd_fused: bitwise reproducible).
//
// Build and check:  ./lab check 03   (student file)   ./lab test (this one)
//@ guided
//| // lessons/03-layernorm/layernorm_fused.cu — YOUR FILE for lesson 03.
//| //
//| // Part A: LayerNorm forward in one kernel       (layernorm_fwd_kernel)
//| // Part B: the backward: dx, dweight and dbias    (layernorm_bwd_kernel,
//| //         layernorm_bwd_reduce_kernel)
//| //
//| // It compiles and runs as shipped, but the kernels do nothing yet, so
//| // `./lab check 03` fails. The helpers below (how a row maps onto threads,
//| // loads and stores of a thread's slots, sums over a row of threads) and
//| // the launchers are written for you; fill in the TODOs, then run
//| // `./lab check 03` again. The lesson's README.md explains the why: read it
//| // first.
//@ open
//| // lessons/03-layernorm/layernorm_fused.cu — YOUR FILE for lesson 03, open level.
//| //
//| // Write the three launchers of layernorm.h and the kernels they start:
//| //   layernorm_fwd_fused         y, mean and rstd in ONE kernel that reads
//| //                               each element of x once
//| //   layernorm_bwd_fused         dx in one pass over dy and x that also sums
//| //                               dweight and dbias over its rows; the same
//| //                               bits in two runs (partials in `scratch`,
//| //                               LAYERNORM_BWD_SCRATCH_FLOATS(cols) floats)
//| //   layernorm_bwd_fused_atomic  the same without scratch (atomics allowed)
//| // for rows == 0 (cudaSuccess, nothing written), every row count (more
//| // rows than a grid's y dimension holds, more than 2^32 elements), every
//| // 1 <= cols <= LAYERNORM_MAX_COLS (wider rows: cudaErrorInvalidValue,
//| // nothing written), every eps, rows with a large mean and a small
//| // spread, pointers of any float alignment, only on the `stream` given.
//| // layernorm.h is the contract; the README says what the checks test and
//| // how fast each part must be.
//| //
//| // Nothing else is given: no kernel, no row layout, no reduction, no launch
//| // shape. Use the course's helpers if you like (check.h: CEIL_DIV,
//| // FL_ALIGNED16, CUDA_CHECK, CUDA_CHECK_LAST; device.h: fl_grid_blocks).
//| // As shipped it compiles and every check fails.
//| // `./lab level guided 03` switches to the guided file (yours is kept).
//@}
#include "layernorm.h"
#include "device.h"
//@[

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
//@{
// One row per row of threads; the row lives in v[][] from load to store.
//
// Two passes over the registers rather than Welford: the row is on chip, so
// the second pass costs a few FMAs and one more reduction, no memory. It
// gives var = mean((x - mean)^2) directly, never the cancelling
// E[x^2] - mean^2, and it is exact for a constant row (var = 0, y = bias).
// Welford's single pass pays a division per element and a heavier merge of
// (count, mean, M2) triples in the reduction; it earns its keep only when
// the row must be streamed (README, "Two passes or Welford").
__global__ void __launch_bounds__(512) // ln_plan never asks for more than 512 x 1 here
//@ guided
//| // The launcher starts blocks of (B, R) threads (ln_plan): row of threads
//| // threadIdx.y of block blockIdx.x handles matrix row blockIdx.x * R + threadIdx.y,
//| // and a row always fits in FWD_SLOTS slots per thread.
//| __global__ void __launch_bounds__(512)
//@}
layernorm_fwd_kernel(const float *x, const float *weight, const float *bias, float *y,
                     float *mean, float *rstd, size_t rows, int cols, float eps, int vec4)
{
//@{ A1 A2 A3 A4
    __shared__ float red[32];
    const size_t row = (size_t)blockIdx.x * blockDim.y + threadIdx.y;
    // A spare row of threads in the last block still takes part in the
    // __syncthreads() inside ln_row_sum: it must not return early.
    const bool live = row < rows;
    const size_t off = (live ? row : 0) * (size_t)cols;

    float v[FWD_SLOTS][4];
#pragma unroll
    for (int k = 0; k < FWD_SLOTS; ++k) ln_load(v[k], x + off, k, cols, vec4, live);

    // mean = sum(x) / cols   (the padding reads as 0 and adds nothing)
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < FWD_SLOTS; ++k) s += (v[k][0] + v[k][1]) + (v[k][2] + v[k][3]);
    const float mu = ln_row_sum(s, red) / (float)cols;

    // var = sum((x - mean)^2) / cols, over the columns that exist
    float q = 0.0f;
#pragma unroll
    for (int k = 0; k < FWD_SLOTS; ++k)
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            float d = v[k][j] - mu;
            q += ln_col(k, j, vec4) < cols ? d * d : 0.0f;
        }
    const float var = ln_row_sum(q, red) / (float)cols;
    const float rs = rsqrtf(var + eps); // rstd = 1/sqrt(var + eps); eps keeps a flat row finite

    // y = (x - mean) * rstd * w + b. weight and bias are read by every row:
    // after the first rows they come from L1/L2, not from memory.
#pragma unroll
    for (int k = 0; k < FWD_SLOTS; ++k) {
        float w[4], b[4], o[4];
        ln_load(w, weight, k, cols, vec4, live);
        ln_load(b, bias, k, cols, vec4, live);
#pragma unroll
        for (int j = 0; j < 4; ++j) o[j] = (v[k][j] - mu) * rs * w[j] + b[j];
        ln_store(o, y + off, k, cols, vec4, live);
    }
    if (live && threadIdx.x == 0) {
        mean[row] = mu; // saved for the backward, so it never recomputes them
        rstd[row] = rs;
    }
//@ guided
//|     // TODO(A1): find this thread's row; a row index >= rows is a spare row
//|     //           of threads in the last block: it must still reach every
//|     //           __syncthreads() (ln_row_sum has two), so don't return early;
//|     //           pass live = false to the helpers instead.
//|     // TODO(A2): load the row into registers: float v[FWD_SLOTS][4], one
//|     //           ln_load per slot. This is the only time x is read.
//|     // TODO(A3): mean = ln_row_sum(sum of your v) / cols   (needs a
//|     //           __shared__ float red[32]); then var = the mean of
//|     //           (v - mean)^2 over the columns that exist (ln_col(k, j, vec4)
//|     //           < cols: the padding reads as 0, but (0 - mean)^2 is not 0);
//|     //           rstd = rsqrtf(var + eps). Why two passes and not
//|     //           E[x^2] - mean^2: README, "Two passes or Welford".
//|     // TODO(A4): y = (v - mean) * rstd * weight + bias, stored with ln_store
//|     //           (load weight and bias slots with ln_load); one thread per
//|     //           row writes mean[row] and rstd[row].
//@}
}

// ============================================================================
// Part B — backward kernels
// ============================================================================

//@{
// What both backward kernels of the worked solution do with a row (the
// second, layernorm_bwd_regs_kernel, is under "going further" below).

// Row `row` of x and dy into registers (slots), and its mean and rstd.
__device__ __forceinline__ void ln_bwd_load(float xv[BWD_SLOTS][4], float gv[BWD_SLOTS][4],
                                            float *mu, float *rs, const float *x,
                                            const float *dy, const float *mean,
                                            const float *rstd, size_t row, bool live, int cols,
                                            int vec4)
{
    const size_t off = (live ? row : 0) * (size_t)cols;
#pragma unroll
    for (int k = 0; k < BWD_SLOTS; ++k) {
        ln_load(xv[k], x + off, k, cols, vec4, live);
        ln_load(gv[k], dy + off, k, cols, vec4, live);
    }
    *mu = live ? mean[row] : 0.0f;
    *rs = live ? rstd[row] : 0.0f;
}

// xh = xhat and g = dy * w of the row in registers, sg and sgx this
// thread's shares of sum(g) and sum(g * xhat): the row's sums (ln_row_sum2,
// which synchronises the block), then
//   dx = rstd * (g - mean(g) - xhat * mean(g * xhat))
// stored into `dx_row`.
__device__ __forceinline__ void ln_bwd_dx(float *dx_row, const float xh[BWD_SLOTS][4],
                                          const float g[BWD_SLOTS][4], float sg, float sgx,
                                          float rs, int cols, int vec4, bool live, float2 *red)
{
    const float2 t = ln_row_sum2(sg, sgx, red);
    const float mg = t.x / (float)cols;  // mean(g)
    const float mgx = t.y / (float)cols; // mean(g * xhat)
#pragma unroll
    for (int k = 0; k < BWD_SLOTS; ++k) {
        float o[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) o[j] = rs * (g[k][j] - mg - xh[k][j] * mgx);
        ln_store(o, dx_row, k, cols, vec4, live);
    }
}

// Once every row slot's sums are in acc ([2][R][cols]: dweight's R rows,
// then dbias's) and the block has synchronised: each column's R slots added
// in a fixed order (slot 0, 1, ...), a column per thread, neighbouring
// threads on neighbouring columns (coalesced), and the sums written as
// partial row blockIdx.x (atomic == 0) or added into part_dw = dweight and
// part_db = dbias.
__device__ __forceinline__ void ln_bwd_combine(const float *acc, int cols, float *part_dw,
                                               float *part_db, int atomic)
{
    const int R = (int)blockDim.y;
    const int nthreads = (int)(blockDim.x * blockDim.y);
    for (int c = (int)(threadIdx.y * blockDim.x + threadIdx.x); c < cols; c += nthreads) {
        float sw = 0.0f, sb = 0.0f;
        for (int s = 0; s < R; ++s) {
            sw += acc[(size_t)s * cols + c];
            sb += acc[(size_t)(R + s) * cols + c];
        }
        if (atomic) {
            // The order in which blocks arrive here changes from run to run,
            // and float addition is not associative: so do the last bits.
            atomicAdd(part_dw + c, sw);
            atomicAdd(part_db + c, sb);
        } else {
            part_dw[(size_t)blockIdx.x * cols + c] = sw;
            part_db[(size_t)blockIdx.x * cols + c] = sb;
        }
    }
}

//@ guided
//@}
// dy, x, dx are (rows, cols); weight (cols); mean, rstd (rows).
//@{
// A persistent grid: block b handles rows b*R + ty, then (b + G)*R + ty, ...
// so that each block sums many rows into ONE partial dweight/dbias, kept in
// shared memory (the registers already hold the row). Per row:
//   xhat = (x - mean) * rstd,   g = dy * w
//   dx   = rstd * (g - mean(g) - xhat * mean(g * xhat))
//   acc_dweight += dy * xhat,   acc_dbias += dy
// At the end the block's R row slots are added in a fixed order and written
// as partial row blockIdx.x of part_dw / part_db (atomic == 0), or added
// into dweight / dbias with atomicAdd (atomic == 1; the launcher zeroed them).
//
// Dynamic shared memory: 2 * R * cols floats (acc_dweight, acc_dbias per slot).
//@ guided
//| // The launcher starts a persistent grid of G blocks of (B, R) threads
//| // (BWD_SLOTS slots per thread) with 2 * R * cols floats of dynamic shared
//| // memory: block b handles rows b*R + threadIdx.y, (b + G)*R + threadIdx.y, ...
//| //   xhat = (x - mean) * rstd,   g = dy * w
//| //   dx   = rstd * (g - mean(g) - xhat * mean(g * xhat))
//| //   the block's partial dweight += dy * xhat, partial dbias += dy
//| // When atomic == 0, the block writes its partial sums as row blockIdx.x of
//| // part_dw and part_db ((G, cols) each); when atomic == 1, it adds them into
//| // part_dw = dweight and part_db = dbias with atomicAdd (the launcher zeroed
//| // them first).
//@}
__global__ void __launch_bounds__(1024)
layernorm_bwd_kernel(const float *dy, const float *x, const float *weight,
                     const float *mean, const float *rstd, float *dx, float *part_dw,
                     float *part_db, size_t rows, int cols, int vec4, int atomic)
{
//@{ B1 B2 B3 B4
    extern __shared__ float4 acc_mem[]; // declared float4: 16-byte aligned
    float *acc = (float *)acc_mem;      // [2][R][cols]
    __shared__ float2 red[32];
    const int R = (int)blockDim.y;
    float *acc_dw = acc + (size_t)threadIdx.y * cols;
    float *acc_db = acc + (size_t)(R + threadIdx.y) * cols;

    // Each thread zeroes (and later updates) only its own columns of its own
    // row slot: no other thread touches them until the final combine.
#pragma unroll
    for (int k = 0; k < BWD_SLOTS; ++k)
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            int c = ln_col(k, j, vec4);
            if (c < cols) {
                acc_dw[c] = 0.0f;
                acc_db[c] = 0.0f;
            }
        }

    // `it * R < rows` is the same for every thread of the block, so all of
    // them run the same number of iterations (ln_row_sum2 synchronises).
    for (size_t it = blockIdx.x; it * R < rows; it += gridDim.x) {
        const size_t row = it * R + threadIdx.y;
        const bool live = row < rows;
        float xv[BWD_SLOTS][4], gv[BWD_SLOTS][4], mu, rs;
        ln_bwd_load(xv, gv, &mu, &rs, x, dy, mean, rstd, row, live, cols, vec4);

        float sg = 0.0f, sgx = 0.0f;
#pragma unroll
        for (int k = 0; k < BWD_SLOTS; ++k) {
            float w[4];
            ln_load(w, weight, k, cols, vec4, true);
            float xh[4];
#pragma unroll
            for (int j = 0; j < 4; ++j) xh[j] = (xv[k][j] - mu) * rs;
            // dweight += dy * xhat, dbias += dy (padding has dy = 0: adds 0)
            int c = ln_col(k, 0, vec4);
            if (vec4) {
                if (c < cols) {
                    float4 *pw = (float4 *)(acc_dw + c), *pb = (float4 *)(acc_db + c);
                    float4 a = *pw, b = *pb;
                    a.x += gv[k][0] * xh[0]; a.y += gv[k][1] * xh[1];
                    a.z += gv[k][2] * xh[2]; a.w += gv[k][3] * xh[3];
                    b.x += gv[k][0]; b.y += gv[k][1]; b.z += gv[k][2]; b.w += gv[k][3];
                    *pw = a;
                    *pb = b;
                }
            } else {
#pragma unroll
                for (int j = 0; j < 4; ++j) {
                    int cj = ln_col(k, j, 0);
                    if (cj < cols) {
                        acc_dw[cj] += gv[k][j] * xh[j];
                        acc_db[cj] += gv[k][j];
                    }
                }
            }
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                float g = gv[k][j] * w[j]; // g = dy * w (0 in the padding)
                sg += g;
                sgx += g * xh[j];
                xv[k][j] = xh[j]; // from here on xv holds xhat, gv holds g
                gv[k][j] = g;
            }
        }
        ln_bwd_dx(dx + (live ? row : 0) * (size_t)cols, xv, gv, sg, sgx, rs, cols, vec4, live, red);
    }

    __syncthreads(); // every row slot's accumulators are final
    ln_bwd_combine(acc, cols, part_dw, part_db, atomic);
//@ guided
//|     // TODO(B1): the partial sums live in shared memory, one (cols) array of
//|     //           each per row of threads:
//|     //               extern __shared__ float4 acc_mem[];  (float4: 16-byte aligned)
//|     //               float *acc = (float *)acc_mem;       [2][R][cols]
//|     //           Zero this thread's own columns (the same columns it will
//|     //           update, so no other thread touches them before the end).
//|     // TODO(B2): loop over this block's rows. Stop when it * R >= rows, a
//|     //           test every thread of the block agrees on (ln_row_sum2
//|     //           synchronises the block). For each row: load x and dy into
//|     //           registers, read mean[row] and rstd[row], compute xhat and
//|     //           g, add dy * xhat and dy into your accumulators, and sum g
//|     //           and g * xhat over the row (ln_row_sum2, with a
//|     //           __shared__ float2 red[32]).
//|     // TODO(B3): dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), stored
//|     //           with ln_store. The derivation is in the README.
//|     // TODO(B4): after the loop, __syncthreads(), then add the R row slots
//|     //           of each column in a fixed order and either write the sum
//|     //           to part_dw[blockIdx.x * cols + c] (and part_db), or
//|     //           atomicAdd it into part_dw[c] (and part_db[c]).
//@}
}

//@{
// Stage 2 of the deterministic reduction: out[c] = sum over p < parts of
// part[p, c], always in the same order. blockIdx.y = 0 sums dweight, 1
// dbias. Block (32, 32): 32 neighbouring columns (one 128-byte line per
// warp-row read), 32 threads down each column, then a fixed-order sum of
// the 32 in shared memory.
//@ guided
//| // Stage 2 of the deterministic reduction: dweight[c] = sum over p < parts of
//| // part_dw[p * cols + c], and the same for dbias. The launcher starts
//| // (ceil(cols / 32), 2) blocks of (32, 32) threads: blockIdx.y = 0 sums
//| // dweight, 1 dbias.
//@}
__global__ void layernorm_bwd_reduce_kernel(const float *part_dw, const float *part_db,
                                            int parts, int cols, float *dweight,
                                            float *dbias)
{
//@{ B5
    __shared__ float s32[32][33]; // +1: the column read below hits 32 different banks
    const float *part = blockIdx.y ? part_db : part_dw;
    float *out = blockIdx.y ? dbias : dweight;
    const int c = (int)(blockIdx.x * 32 + threadIdx.x);
    float s = 0.0f;
    if (c < cols) {
#pragma unroll 4
        for (int p = (int)threadIdx.y; p < parts; p += 32) s += part[(size_t)p * cols + c];
    }
    s32[threadIdx.y][threadIdx.x] = s;
    __syncthreads(); // all 32 partial sums of the column are in place
    if (threadIdx.y == 0 && c < cols) {
        float t = 0.0f;
        for (int i = 0; i < 32; ++i) t += s32[i][threadIdx.x];
        out[c] = t;
    }
//@ guided
//|     // TODO(B5): one column per threadIdx.x, the 32 threadIdx.y threads
//|     //           taking every 32nd partial row, then the 32 sums added in
//|     //           shared memory, always in the same order: the result must be
//|     //           bitwise the same in every run.
//@}
}

// ============================================================================
//@{
// launchers
//@ guided
//| // launchers (you may change these; keep the signatures)
//@}
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

//@{
// Rows of 1025-4096 floats: the forward's going-further kernel (below the
// launchers). Returns 0 when the row is not for it.
static int fwd_launch_short(const float *x, const float *weight, const float *bias, float *y,
                            float *mean, float *rstd, size_t rows, size_t cols, float eps,
                            int vec4, cudaStream_t stream);

//@ guided
//@}
//@]
//@{
//@ guided
//@ open
//|
//| // ============================================================================
//| // your kernels (any number, any names)
//| // ============================================================================
//|
//|
//| // ============================================================================
//| // the launchers: the API of layernorm.h (keep the signatures)
//| // ============================================================================
//|
//@}
EXTERN_C cudaError_t layernorm_fwd_fused(const float *x, const float *weight,
                                         const float *bias, float *y,
                                         float *mean, float *rstd, size_t rows,
                                         size_t cols, float eps,
                                         cudaStream_t stream)
{
//@{
//@ guided
//@ open
//|     // TODO: check the shape, launch your forward kernel on `stream`, return
//|     //       cudaSuccess or the launch's error (CUDA_CHECK_LAST returns it).
//|     (void)x, (void)weight, (void)bias, (void)y, (void)mean, (void)rstd;
//|     (void)rows, (void)cols, (void)eps, (void)stream;
//|     return cudaErrorNotYetImplemented;
//@}
//@[
    if (rows == 0) return cudaSuccess;
    dim3 block;
    CUDA_CHECK(ln_plan(cols, FWD_SLOTS, 256, &block));
    int vec4 = cols % 4 == 0 && FL_ALIGNED16(x) && FL_ALIGNED16(weight) && FL_ALIGNED16(bias) &&
               FL_ALIGNED16(y);
//@{
    if (fwd_launch_short(x, weight, bias, y, mean, rstd, rows, cols, eps, vec4, stream)) {
        CUDA_CHECK_LAST(); // going further: rows of 1025-4096 floats
        return cudaSuccess;
    }
//@ guided
//@}
    size_t blocks = CEIL_DIV(rows, (size_t)block.y);
    layernorm_fwd_kernel<<<(unsigned)blocks, block, 0, stream>>>(x, weight, bias, y, mean, rstd,
                                                                 rows, (int)cols, eps, vec4);
    CUDA_CHECK_LAST();
    return cudaSuccess;
//@]
}
//@[
//@{

// ---- going further: the forward's short rows, every warp of an SM busy -------
//
// Rows of 1025-4096 floats: 256 threads a row, S = 2 or 4 slots (8 or 16
// floats) a thread, the fewest slots that hold the row; one row a block.
// The kernel reads this thread's weight and bias slots right after its x,
// before the two reductions, so their trip to L2 overlaps the reductions'
// barriers instead of following them (after the first rows, weight and bias
// are in L2: each row reads them whole). That costs 4 S registers each, so
// __launch_bounds__ asks for 3/4 of an SM's threads at S = 2 (40 registers
// a thread on sm_90) and half at S = 4 (64): still 48 or 32 warps an SM,
// while one row's loads are in flight, another's reductions run and a
// third's y is written. Each reduction has its own shared array, so one
// barrier each; every thread adds the warps' sums in the same order, so the
// same bits come out of every run.
//
// Measured on an H200 with ./lab compare 03, each beside the kernel before
// it in one process (median us; plots/reference/logs/, file
// layernorm-fwd-early-h200.log): weight and bias read early (256 threads of
// 8 floats, as before) took 4096 x 2048 from 17.9 to 17.5-17.7 us; 16 floats a thread with weight and bias early
// took 4096 x 4096 from 33.0 to 32.2 (512 threads of 8 floats, as before,
// with weight and bias early: 34.8, the SM then holds 3 rows, not 4). In a
// later run of this file alone: 17.5 and 32.8 us, 1.53x and 1.51x
// F.layer_norm.
// Before that, one row a block in place of layernorm_fwd_kernel's rows of 8
// slots a thread had taken 4096 x 2048 from 18.8-18.9 to 17.7-17.9 us and
// 4096 x 4096 from 32.9-33.3 to 32.7-32.8.
static const size_t kShortFwdMinCols = 1024; // rows wider than this ...
static const size_t kShortFwdMaxCols = 4096; // ... and up to this

// The sum of v over the block's T threads, for every thread: warp sums,
// then each thread adds the warps' in the same order. `red` (T / 32 floats
// of shared memory) serves this call only, so one barrier does.
template <int T>
__device__ __forceinline__ float ln_block_sum(float v, float *red)
{
    v = ln_warp_sum(v);
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
    __syncthreads();
    float s = 0.0f;
#pragma unroll
    for (int w = 0; w < T / 32; ++w) s += red[w];
    return s;
}

template <int T, int S>
__global__ void __launch_bounds__(T, FL_SM_BLOCKS(T, S == 2 ? 3 : 2)) // 3/4 or 1/2 the SM
layernorm_fwd_short_kernel(const float *__restrict__ x, const float *__restrict__ weight,
                           const float *__restrict__ bias, float *__restrict__ y,
                           float *__restrict__ mean, float *__restrict__ rstd, int cols,
                           float eps, int vec4)
{
    __shared__ float red[2][T / 32];
    const size_t row = blockIdx.x;
    const size_t off = row * (size_t)cols;
    float v[S][4], w[S][4], b[S][4];
#pragma unroll
    for (int k = 0; k < S; ++k) ln_load(v[k], x + off, k, cols, vec4, true);
#pragma unroll
    for (int k = 0; k < S; ++k) { // on their way while the row is reduced
        ln_load(w[k], weight, k, cols, vec4, true);
        ln_load(b[k], bias, k, cols, vec4, true);
    }

    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < S; ++k) s += (v[k][0] + v[k][1]) + (v[k][2] + v[k][3]);
    const float mu = ln_block_sum<T>(s, red[0]) / (float)cols;

    float q = 0.0f;
#pragma unroll
    for (int k = 0; k < S; ++k)
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            const float d = v[k][j] - mu;
            q += ln_col(k, j, vec4) < cols ? d * d : 0.0f;
        }
    const float rs = rsqrtf(ln_block_sum<T>(q, red[1]) / (float)cols + eps);

#pragma unroll
    for (int k = 0; k < S; ++k) {
        float o[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) o[j] = (v[k][j] - mu) * rs * w[k][j] + b[k][j];
        ln_store(o, y + off, k, cols, vec4, true);
    }
    if (threadIdx.x == 0) {
        mean[row] = mu;
        rstd[row] = rs;
    }
}

// 1025-2048 columns: 2 slots a thread, 2049-4096: 4. Shorter rows stay
// with layernorm_fwd_kernel, several rows a block (at 513-1024 columns 128
// threads a row here measured 5% slower on an H200), and so do longer ones
// (8 slots a thread), and a grid past gridDim.x's 2^31 - 1 blocks.
static int fwd_launch_short(const float *x, const float *weight, const float *bias, float *y,
                            float *mean, float *rstd, size_t rows, size_t cols, float eps,
                            int vec4, cudaStream_t stream)
{
    if (cols <= kShortFwdMinCols || cols > kShortFwdMaxCols || rows > 0x7fffffffu) return 0;
    unsigned int r = (unsigned int)rows;
    int c = (int)cols;
    if (cols <= 2048)
        layernorm_fwd_short_kernel<256, 2><<<r, 256, 0, stream>>>(x, weight, bias, y, mean, rstd,
                                                                  c, eps, vec4);
    else
        layernorm_fwd_short_kernel<256, 4><<<r, 256, 0, stream>>>(x, weight, bias, y, mean, rstd,
                                                                  c, eps, vec4);
    return 1;
}

// ---- going further: the backward's column sums in registers -----------------
//
// A thread handles the same columns (its slots) in every row it visits, so
// its share of dweight and dbias can stay in registers for the whole loop,
// where layernorm_bwd_kernel adds them into shared memory row after row.
// Shared memory then serves once, at the end, to add the R row slots of the
// block in a fixed order: the same partial rows, the same bits every run.
// The cost is registers: 32 more per thread (115-128 in all), so at most 512
// threads per SM (against 1024), which is still enough loads in flight: each
// thread has 32 floats of x and dy on the way. Rows of up to 8192 floats,
// whose row of threads is at most 512 wide; longer rows (1024-thread blocks)
// go to layernorm_bwd_kernel. Measured on an H100 at 4096 x 4096 with the
// course's protocol: 72.8 us against 78.5 (lesson 03's README, "Going
// further").
template <bool V4>
__global__ void __launch_bounds__(512, 1)
layernorm_bwd_regs_kernel(const float *dy, const float *x, const float *weight,
                          const float *mean, const float *rstd, float *dx, float *part_dw,
                          float *part_db, size_t rows, int cols, int atomic)
{
    const int vec4 = V4;
    extern __shared__ float4 acc_mem[]; // the combine at the end: [2][R][cols]
    float *acc = (float *)acc_mem;
    __shared__ float2 red[32];
    const int R = (int)blockDim.y;

    float sum_dw[BWD_SLOTS][4], sum_db[BWD_SLOTS][4];
#pragma unroll
    for (int k = 0; k < BWD_SLOTS; ++k)
#pragma unroll
        for (int j = 0; j < 4; ++j) sum_dw[k][j] = sum_db[k][j] = 0.0f;

    for (size_t it = blockIdx.x; it * R < rows; it += gridDim.x) {
        const size_t row = it * R + threadIdx.y;
        const bool live = row < rows;
        float xv[BWD_SLOTS][4], gv[BWD_SLOTS][4], mu, rs;
        ln_bwd_load(xv, gv, &mu, &rs, x, dy, mean, rstd, row, live, cols, vec4);

        float sg = 0.0f, sgx = 0.0f;
#pragma unroll
        for (int k = 0; k < BWD_SLOTS; ++k) {
            float w[4];
            ln_load(w, weight, k, cols, vec4, true);
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                const float xh = (xv[k][j] - mu) * rs;
                sum_dw[k][j] += gv[k][j] * xh; // padding has dy = 0: adds 0
                sum_db[k][j] += gv[k][j];
                const float g = gv[k][j] * w[j];
                sg += g;
                sgx += g * xh;
                xv[k][j] = xh;
                gv[k][j] = g;
            }
        }
        ln_bwd_dx(dx + (live ? row : 0) * (size_t)cols, xv, gv, sg, sgx, rs, cols, vec4, live, red);
    }

    // each row slot's sums into shared memory, then the fixed-order combine
    float *acc_dw = acc + (size_t)threadIdx.y * cols;
    float *acc_db = acc + (size_t)(R + threadIdx.y) * cols;
#pragma unroll
    for (int k = 0; k < BWD_SLOTS; ++k)
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            const int c = ln_col(k, j, vec4);
            if (c < cols) {
                acc_dw[c] = sum_dw[k][j];
                acc_db[c] = sum_db[k][j];
            }
        }
    __syncthreads();
    ln_bwd_combine(acc, cols, part_dw, part_db, atomic);
}

// Rows of up to 8192 floats (a row of at most 512 threads): the launch of
// layernorm_bwd_regs_kernel, with the grid of bwd_launch below but at most
// 512 threads per SM (its registers allow no more), in blocks of about 256
// threads (ln_plan: 256 / B rows of B threads, or one row of B > 256); on an
// H100, blocks of 512, one per SM, were up to 6% slower. *grid_out = 0: the
// row is left to layernorm_bwd_kernel (too long, or a plan that fills an SM
// with fewer than 448 threads).
static const int kRegsThreadsPerSm = 512;
static const int kRegsMinThreadsPerSm = 448;
static const size_t kRegsThreadsPerBlock = 256;
static const unsigned int kRegsMaxRowThreads = 512;

typedef void (*bwd_regs_fn)(const float *, const float *, const float *, const float *,
                            const float *, float *, float *, float *, size_t, int, int);

static cudaError_t bwd_launch_regs(const float *dy, const float *x, const float *weight,
                                   const float *mean, const float *rstd, float *dx,
                                   float *out_dw, float *out_db, size_t rows, size_t cols,
                                   int atomic, int *grid_out, cudaStream_t stream)
{
    *grid_out = 0;
    dim3 block; // a row bwd_launch refuses is left to it (one message)
    if (ln_plan(cols, BWD_SLOTS, kRegsThreadsPerBlock, &block) != cudaSuccess ||
        block.x > kRegsMaxRowThreads)
        return cudaSuccess;
    int threads = (int)(block.x * block.y);
    size_t smem = 2 * (size_t)block.y * cols * sizeof(float);
    int vec4 = cols % 4 == 0 && FL_ALIGNED16(dy) && FL_ALIGNED16(x) && FL_ALIGNED16(weight) &&
               FL_ALIGNED16(dx);
    bwd_regs_fn kernel = vec4 ? layernorm_bwd_regs_kernel<true> : layernorm_bwd_regs_kernel<false>;
    // as in bwd_launch: opt in past 48 KiB once per new maximum (a row this
    // GPU cannot hold goes on to bwd_launch, which says so), and remember the
    // occupancy of the last (threads, smem) of each layout
    static size_t opted_in[2];
    static int last_threads[2] = {-1, -1}, last_per_sm[2];
    static size_t last_smem[2];
    if (smem > opted_in[vec4]) {
        int dev = 0, optin = 0;
        CUDA_CHECK(cudaGetDevice(&dev));
        CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
        if (smem + 1024 > (size_t)optin) return cudaSuccess; // 1 KiB: the static red[32]
        CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        (int)smem));
        opted_in[vec4] = smem;
    }
    if (threads != last_threads[vec4] || smem != last_smem[vec4]) {
        CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&last_per_sm[vec4], kernel,
                                                                 threads, smem));
        last_threads[vec4] = threads;
        last_smem[vec4] = smem;
    }
    if (last_per_sm[vec4] < 1) return cudaErrorInvalidConfiguration;
    int per_sm = kRegsThreadsPerSm / threads;
    if (per_sm < 1) per_sm = 1;
    if (per_sm > last_per_sm[vec4]) per_sm = last_per_sm[vec4];
    // A row of threads that is not a power of two (4100 columns: 288
    // threads) leaves an SM with far fewer threads than 512, and the shared-
    // memory kernel, at up to 1024, was not measured against that: it keeps
    // such rows.
    if (per_sm * threads < kRegsMinThreadsPerSm) return cudaSuccess;
    unsigned int grid = fl_grid_blocks(rows, (int)block.y, per_sm);
    if (grid > LAYERNORM_MAX_PARTIALS) grid = LAYERNORM_MAX_PARTIALS;
    if (atomic) {
        CUDA_CHECK(cudaMemsetAsync(out_dw, 0, cols * sizeof(float), stream));
        CUDA_CHECK(cudaMemsetAsync(out_db, 0, cols * sizeof(float), stream));
    }
    kernel<<<grid, block, smem, stream>>>(dy, x, weight, mean, rstd, dx, out_dw, out_db, rows,
                                          (int)cols, atomic);
    CUDA_CHECK_LAST();
    *grid_out = (int)grid;
    return cudaSuccess;
}
//@ guided
//@}

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
//@{
    // going further: rows of up to 8192 floats to layernorm_bwd_regs_kernel
    CUDA_CHECK(bwd_launch_regs(dy, x, weight, mean, rstd, dx, out_dw, out_db, rows, cols, atomic,
                               grid_out, stream));
    if (*grid_out > 0) return cudaSuccess;
//@ guided
//@}
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
//@]

EXTERN_C cudaError_t layernorm_bwd_fused(const float *dy, const float *x,
                                         const float *weight, const float *mean,
                                         const float *rstd, float *dx,
                                         float *dweight, float *dbias,
                                         float *scratch, size_t rows,
                                         size_t cols, cudaStream_t stream)
{
//@{
//@ guided
//@ open
//|     // TODO: the backward on `stream`, the same bits every run; `scratch`
//|     //       is yours to use. Return cudaSuccess or the error.
//|     (void)dy, (void)x, (void)weight, (void)mean, (void)rstd, (void)dx;
//|     (void)dweight, (void)dbias, (void)scratch, (void)rows, (void)cols, (void)stream;
//|     return cudaErrorNotYetImplemented;
//@}
//@[
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
//@]
}

EXTERN_C cudaError_t layernorm_bwd_fused_atomic(const float *dy, const float *x,
                                                const float *weight,
                                                const float *mean,
                                                const float *rstd, float *dx,
                                                float *dweight, float *dbias,
                                                size_t rows, size_t cols,
                                                cudaStream_t stream)
{
//@{
//@ guided
//@ open
//|     // TODO: the backward on `stream` without scratch. Return cudaSuccess
//|     //       or the error.
//|     (void)dy, (void)x, (void)weight, (void)mean, (void)rstd, (void)dx;
//|     (void)dweight, (void)dbias, (void)rows, (void)cols, (void)stream;
//|     return cudaErrorNotYetImplemented;
//@}
//@[
    if (rows == 0) return cudaSuccess;
    int parts = 0;
    CUDA_CHECK(bwd_launch(dy, x, weight, mean, rstd, dx, dweight, dbias, rows, cols, 1,
                          &parts, stream));
    return cudaSuccess;
//@]
}
