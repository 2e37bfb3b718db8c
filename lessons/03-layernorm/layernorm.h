/* lessons/03-layernorm/layernorm.h — the C API of lesson 03.
 *
 * LayerNorm over the last dimension of a (rows, cols) row-major float32
 * matrix, with a weight and a bias per column:
 *
 *     mean[r] = (1/cols) sum_c x[r,c]
 *     rstd[r] = 1 / sqrt((1/cols) sum_c (x[r,c] - mean[r])^2 + eps)
 *     y[r,c]  = (x[r,c] - mean[r]) * rstd[r] * weight[c] + bias[c]
 *
 * and its backward: given dy = dL/dy, the saved mean and rstd,
 *
 *     xhat = (x - mean) * rstd,   g = dy * weight
 *     dx[r,c]   = rstd[r] * (g - mean_c(g) - xhat * mean_c(g * xhat))
 *     dweight[c] = sum_r dy[r,c] * xhat[r,c]
 *     dbias[c]   = sum_r dy[r,c]
 *
 * All pointers are device pointers: x, y, dy, dx are (rows, cols); weight,
 * bias, dweight, dbias are (cols); mean and rstd are (rows). No output
 * overlaps an input (no call is in place), so a kernel may read its inputs
 * through __restrict__ pointers. Every launcher queues its work on `stream`
 * and returns cudaSuccess or the error it hit; none waits for the GPU.
 * rows = 0 is a no-op; 1 <= cols <= LAYERNORM_MAX_COLS.
 */
#ifndef FUSIONLAB_LAYERNORM_H
#define FUSIONLAB_LAYERNORM_H

#include "check.h"

/* The widest row the lesson supports: the fused kernels keep a row in one
 * block's registers (16384 floats = 64 KiB of x; the backward holds dy too),
 * which is what lets them read each element once. The launchers refuse
 * wider rows with cudaErrorInvalidValue (README, "Caveats"). */
#define LAYERNORM_MAX_COLS 16384

/* ---- Part A (exercise, layernorm_fused.cu): forward in one kernel --------
 * Writes y, and mean and rstd for the backward. */
EXTERN_C cudaError_t layernorm_fwd_fused(const float *x, const float *weight,
                                         const float *bias, float *y,
                                         float *mean, float *rstd, size_t rows,
                                         size_t cols, float eps,
                                         cudaStream_t stream);

/* ---- Part B (exercise, layernorm_fused.cu): backward ----------------------
 * dx in one fused kernel that also sums dweight and dbias over its rows.
 *
 * Deterministic version: each block writes its partial dweight and dbias to
 * `scratch`, then a small second kernel adds the partials in a fixed order,
 * so two runs on the same input give the same bits. scratch holds
 * LAYERNORM_BWD_SCRATCH_FLOATS(cols) floats (at most LAYERNORM_MAX_PARTIALS
 * partial rows of each); its contents on entry do not matter. */
#define LAYERNORM_MAX_PARTIALS 1024
#define LAYERNORM_BWD_SCRATCH_FLOATS(cols) \
    (2 * (size_t)LAYERNORM_MAX_PARTIALS * (size_t)(cols))
EXTERN_C cudaError_t layernorm_bwd_fused(const float *dy, const float *x,
                                         const float *weight, const float *mean,
                                         const float *rstd, float *dx,
                                         float *dweight, float *dbias,
                                         float *scratch, size_t rows,
                                         size_t cols, cudaStream_t stream);

/* Atomic version: the same kernel adds each block's partial straight into
 * dweight and dbias with atomicAdd (no scratch, no second kernel). Faster,
 * but floating-point addition is not associative and the order of the
 * atomics changes from run to run, so the last bits of dweight and dbias
 * do too. */
EXTERN_C cudaError_t layernorm_bwd_fused_atomic(const float *dy, const float *x,
                                                const float *weight,
                                                const float *mean,
                                                const float *rstd, float *dx,
                                                float *dweight, float *dbias,
                                                size_t rows, size_t cols,
                                                cudaStream_t stream);

/* ---- The baseline (complete, layernorm_unfused.cu) -------------------------
 * What eager PyTorch runs for LayerNorm written as tensor operations: one
 * kernel per operation, every intermediate in device memory. Forward:
 *     mean = x.mean(-1); xc = x - mean; sq = xc * xc; var = sq.mean(-1)
 *     rstd = rsqrt(var + eps); xhat = xc * rstd; yw = xhat * w; y = yw + b
 * scratch holds LAYERNORM_FWD_UNFUSED_SCRATCH_FLOATS(rows, cols) floats. */
#define LAYERNORM_FWD_UNFUSED_SCRATCH_FLOATS(rows, cols) \
    (2 * (size_t)(rows) * (size_t)(cols) + (size_t)(rows))
EXTERN_C cudaError_t layernorm_fwd_unfused(const float *x, const float *weight,
                                           const float *bias, float *y,
                                           float *mean, float *rstd,
                                           float *scratch, size_t rows,
                                           size_t cols, float eps,
                                           cudaStream_t stream);

/* Backward, the same way (13 operations, 15 kernels: each column sum is a
 * two-kernel reduction):
 *     xc = x - mean; xhat = xc * rstd; dbias = dy.sum(0)
 *     p = dy * xhat; dweight = p.sum(0); g = dy * w; mg = g.mean(-1)
 *     q = g * xhat; mgx = q.mean(-1); t = g - mg; u = xhat * mgx
 *     v = t - u; dx = v * rstd
 * scratch holds LAYERNORM_BWD_UNFUSED_SCRATCH_FLOATS(rows, cols) floats. */
#define LAYERNORM_BWD_UNFUSED_SCRATCH_FLOATS(rows, cols) \
    (4 * (size_t)(rows) * (size_t)(cols) + 2 * (size_t)(rows))
EXTERN_C cudaError_t layernorm_bwd_unfused(const float *dy, const float *x,
                                           const float *weight,
                                           const float *mean, const float *rstd,
                                           float *dx, float *dweight,
                                           float *dbias, float *scratch,
                                           size_t rows, size_t cols,
                                           cudaStream_t stream);

/* ---- Bytes each version must move (for GB/s and the README's story) -------
 * N = rows * cols elements, 4 bytes each. The fused forward reads x, weight
 * and bias and writes y, mean and rstd; the fused backward reads dy, x,
 * weight, mean and rstd and writes dx, dweight and dbias. The unfused
 * versions add up every operation's reads and writes (README's tables).
 * The deterministic backward's partial sums are not counted: they are the
 * implementation's choice, not the problem's (README says how many). */
#define LN_N_(r, c) ((double)(r) * (double)(c))
#define LAYERNORM_FWD_FUSED_BYTES(r, c) \
    (4.0 * (2.0 * LN_N_(r, c) + 2.0 * (double)(r) + 2.0 * (double)(c)))
#define LAYERNORM_FWD_UNFUSED_BYTES(r, c) \
    (4.0 * (12.0 * LN_N_(r, c) + 6.0 * (double)(r) + 2.0 * (double)(c)))
#define LAYERNORM_BWD_FUSED_BYTES(r, c) \
    (4.0 * (3.0 * LN_N_(r, c) + 2.0 * (double)(r) + 3.0 * (double)(c)))
#define LAYERNORM_BWD_UNFUSED_BYTES(r, c) \
    (4.0 * (25.0 * LN_N_(r, c) + 7.0 * (double)(r) + 3.0 * (double)(c)))

#endif /* FUSIONLAB_LAYERNORM_H */
