/* lessons/03-layernorm/bench.c — LayerNorm forward and backward, unfused vs
 * fused, swept over the row length; CSV out.
 *
 *   ./build/bench_03_layernorm --csv plots/03-layernorm.csv
 *   gnuplot -c lessons/03-layernorm/plot.gp plots/03-layernorm.csv plots/03-layernorm.svg
 *
 * rows = 4096, cols = 256 ... 16384 (capped by free device memory). Each
 * size with the course's timing protocol: forward unfused and fused
 * interleaved, then backward unfused, fused (deterministic) and fused
 * (atomic) interleaved; outputs poisoned before every sample and re-checked
 * after the loop against the double-precision CPU reference and tolerances
 * of tests/test_03_layernorm.c (layernorm_reference.h, tests/thresholds.h).
 */
#include "bench.h"
#include "compare.h"
#include "csv.h"
#include "data.h"
#include "layernorm.h"
#include "layernorm_reference.h"
#include "thresholds.h"

#include <stdio.h>
#include <stdlib.h>

#define ROWS ((size_t)4096)

typedef struct {
    size_t rows, cols;
    const float *x, *w, *b, *dy, *mean_in, *rstd_in; /* device inputs */
    float *out[3];       /* device: y, mean, rstd  or  dx, dweight, dbias */
    size_t len[3];
    const double *want[3];
    double atol[3], rtol[3];
    const double *y_allow; /* host, per row: y's and rstd's allowance (forward) */
    const float *w_host;   /* host weights, for y's allowance */
    float *scratch;      /* device, or NULL */
    float *got;          /* host */
} ctx03;

static cudaError_t run_fwd_unfused(void *p, cudaStream_t st)
{
    ctx03 *c = p;
    return layernorm_fwd_unfused(c->x, c->w, c->b, c->out[0], c->out[1], c->out[2], c->scratch,
                                 c->rows, c->cols, LAYERNORM_EPS, st);
}

static cudaError_t run_fwd_fused(void *p, cudaStream_t st)
{
    ctx03 *c = p;
    return layernorm_fwd_fused(c->x, c->w, c->b, c->out[0], c->out[1], c->out[2], c->rows,
                               c->cols, LAYERNORM_EPS, st);
}

static cudaError_t run_bwd_unfused(void *p, cudaStream_t st)
{
    ctx03 *c = p;
    return layernorm_bwd_unfused(c->dy, c->x, c->w, c->mean_in, c->rstd_in, c->out[0],
                                 c->out[1], c->out[2], c->scratch, c->rows, c->cols, st);
}

static cudaError_t run_bwd_fused(void *p, cudaStream_t st)
{
    ctx03 *c = p;
    return layernorm_bwd_fused(c->dy, c->x, c->w, c->mean_in, c->rstd_in, c->out[0], c->out[1],
                               c->out[2], c->scratch, c->rows, c->cols, st);
}

static cudaError_t run_bwd_atomic(void *p, cudaStream_t st)
{
    ctx03 *c = p;
    return layernorm_bwd_fused_atomic(c->dy, c->x, c->w, c->mean_in, c->rstd_in, c->out[0],
                                      c->out[1], c->out[2], c->rows, c->cols, st);
}

static cudaError_t poison_out(void *p, cudaStream_t st)
{
    ctx03 *c = p;
    for (int k = 0; k < 3; ++k) {
        cudaError_t e = fl_poison(c->out[k], c->len[k] * sizeof(float), st);
        if (e != cudaSuccess) return e;
    }
    return cudaSuccess;
}

static int recheck(void *p, char *msg, size_t len)
{
    ctx03 *c = p;
    static const char *names[2][3] = {{"y", "mean", "rstd"}, {"dx", "dweight", "dbias"}};
    int bwd = c->dy != NULL;
    for (int k = 0; k < 3; ++k) {
        if (fl_download_f32(c->got, c->out[k], c->len[k]) != cudaSuccess) return 0;
        /* y and rstd may also be off by the error of a float mean, as in the
         * test: what is within that counts as right */
        if (!bwd && k != 1)
            layernorm_accept_mean_error(c->got, c->want[k], c->len[k], k == 0 ? c->cols : 0,
                                        c->atol[k], c->rtol[k],
                                        k == 0 ? LAYERNORM_ALLOW_Y : LAYERNORM_ALLOW_RSTD,
                                        c->y_allow, c->w_host);
        fl_compare_opts o = fl_compare_defaults(names[bwd][k], c->atol[k], c->rtol[k]);
        o.cols = k == 0 ? c->cols : 0; /* y and dx: positions as (row, col) */
        fl_compare_result r = fl_compare_f32(c->got, c->want[k], c->len[k], &o);
        if (r.n_bad) {
            snprintf(msg, len, "%s", r.message);
            return 0;
        }
    }
    return 1;
}

int main(int argc, char **argv)
{
    fl_bench b;
    int rc = fl_bench_init(&b, argc, argv,
                           "lesson 03: LayerNorm forward and backward, unfused vs fused");
    if (rc) return rc < 0 ? 0 : rc;

    const size_t R = ROWS;
    size_t lo = 256, hi = b.quick ? 1024 : LAYERNORM_MAX_COLS;
    /* device: x, dy and 5 outputs of R x C, plus the unfused backward's
     * scratch of 4 more (the largest scratch of all) */
    while (hi > lo && 11 * R * hi * sizeof(float) > fl_bench_free_bytes() * 8 / 10) hi >>= 1;
    if (hi < (b.quick ? 1024 : LAYERNORM_MAX_COLS))
        fprintf(stderr, "note: sweep stops at cols=%zu (free device memory)\n", hi);
    const size_t N = R * hi;

    float *hx = malloc(N * sizeof(float)), *hdy = malloc(N * sizeof(float));
    float *hw = malloc(hi * sizeof(float)), *hb = malloc(hi * sizeof(float));
    float *mean_in = malloc(R * sizeof(float)), *rstd_in = malloc(R * sizeof(float));
    double *y_ref = malloc(N * sizeof(double)), *dx_ref = malloc(N * sizeof(double));
    double *mean_ref = malloc(R * sizeof(double)), *rstd_ref = malloc(R * sizeof(double));
    double *dw_ref = malloc(hi * sizeof(double)), *db_ref = malloc(hi * sizeof(double));
    double *y_allow = malloc(R * sizeof(double));
    float *got = malloc(N * sizeof(float));
    if (!hx || !hdy || !hw || !hb || !mean_in || !rstd_in || !y_ref || !dx_ref || !mean_ref ||
        !rstd_ref || !dw_ref || !db_ref || !y_allow || !got) {
        fprintf(stderr, "out of host memory\n");
        return 1;
    }

    /* device buffers, sized for the largest cols */
    float *d_x, *d_dy, *d_w, *d_b, *d_mean_in, *d_rstd_in, *d_scratch, *d_part;
    float *fwd_out[2][3], *bwd_out[3][3];
    size_t big[3] = {N, R, R}, bigb[3] = {N, hi, hi};
    if (CUDA_REPORT(cudaMalloc((void **)&d_x, N * sizeof(float))) ||
        CUDA_REPORT(cudaMalloc((void **)&d_dy, N * sizeof(float))) ||
        CUDA_REPORT(cudaMalloc((void **)&d_w, hi * sizeof(float))) ||
        CUDA_REPORT(cudaMalloc((void **)&d_b, hi * sizeof(float))) ||
        CUDA_REPORT(cudaMalloc((void **)&d_mean_in, R * sizeof(float))) ||
        CUDA_REPORT(cudaMalloc((void **)&d_rstd_in, R * sizeof(float))) ||
        CUDA_REPORT(cudaMalloc((void **)&d_scratch,
                               LAYERNORM_BWD_UNFUSED_SCRATCH_FLOATS(R, hi) * sizeof(float))) ||
        CUDA_REPORT(cudaMalloc((void **)&d_part, LAYERNORM_BWD_SCRATCH_FLOATS(hi) * sizeof(float))))
        return 1;
    for (int v = 0; v < 2; ++v)
        for (int k = 0; k < 3; ++k)
            if (CUDA_REPORT(cudaMalloc((void **)&fwd_out[v][k], big[k] * sizeof(float)))) return 1;
    for (int v = 0; v < 3; ++v)
        for (int k = 0; k < 3; ++k)
            if (CUDA_REPORT(cudaMalloc((void **)&bwd_out[v][k], bigb[k] * sizeof(float)))) return 1;

    fl_csv *csv = fl_csv_open(b.csv_path,
                              "device,date,rows,cols,fwd_unfused_us,fwd_fused_us,fwd_speedup,"
                              "fwd_unfused_gbs,fwd_fused_gbs,bwd_unfused_us,bwd_fused_us,"
                              "bwd_atomic_us,bwd_speedup,bwd_unfused_gbs,bwd_fused_gbs,"
                              "bwd_atomic_gbs,ceiling_gbs,fwd_fused_pct_of_ceiling,"
                              "bwd_fused_pct_of_ceiling,bwd_ceiling_gbs");
    if (!csv) return 1;
    fprintf(stderr, "%6s %6s | %9s %9s %6s %7s %6s | %9s %9s %9s %6s %7s %6s\n", "rows", "cols",
            "fwd_unf", "fwd_fus", "x", "GB/s", "%ceil", "bwd_unf", "bwd_fus", "bwd_atom", "x",
            "GB/s", "%ceil");
    int failures = 0;
    size_t headline_cols = hi < 4096 ? hi : 4096;
    fl_timing head_fwd[2], head_bwd[3];
    for (size_t C = lo; C <= hi; C <<= 1) {
        size_t n = R * C;
        fl_fill_normal(hx, n, 0x0300, -2.3f, 0.5f);
        fl_fill_normal(hdy, n, 0x0301, 0.0f, 1.0f);
        fl_fill_normal(hw, C, 0x0302, 1.0f, 0.25f);
        fl_fill_normal(hb, C, 0x0303, 0.0f, 0.5f);
        layernorm_reference(hx, hw, hb, hdy, R, C, LAYERNORM_EPS, y_ref, mean_ref, rstd_ref,
                            mean_in, rstd_in, dx_ref, dw_ref, db_ref);
        for (size_t r = 0; r < R; ++r) y_allow[r] = layernorm_y_allowance(mean_ref[r], rstd_ref[r]);
        if (fl_upload_f32(d_x, hx, n) || fl_upload_f32(d_dy, hdy, n) ||
            fl_upload_f32(d_w, hw, C) || fl_upload_f32(d_b, hb, C) ||
            fl_upload_f32(d_mean_in, mean_in, R) || fl_upload_f32(d_rstd_in, rstd_in, R))
            return 1;

        /* the tolerances of tests/test_03_layernorm.c (tests/thresholds.h) */
        const double sum_atol = L03_DWB_ATOL_PER_ROW * (double)R;
        ctx03 fwd[2], bwd[3];
        for (int v = 0; v < 2; ++v)
            fwd[v] = (ctx03){R, C, d_x, d_w, d_b, NULL, NULL, NULL,
                             {fwd_out[v][0], fwd_out[v][1], fwd_out[v][2]}, {n, R, R},
                             {y_ref, mean_ref, rstd_ref},
                             {L03_FWD_ATOL, L03_FWD_ATOL, L03_FWD_ATOL},
                             {L03_FWD_RTOL, L03_FWD_RTOL, L03_FWD_RTOL}, y_allow, hw,
                             v == 0 ? d_scratch : NULL, got};
        for (int v = 0; v < 3; ++v)
            bwd[v] = (ctx03){R, C, d_x, d_w, NULL, d_dy, d_mean_in, d_rstd_in,
                             {bwd_out[v][0], bwd_out[v][1], bwd_out[v][2]}, {n, C, C},
                             {dx_ref, dw_ref, db_ref}, {L03_DX_ATOL, sum_atol, sum_atol},
                             {L03_DX_RTOL, L03_DWB_RTOL, L03_DWB_RTOL}, NULL, NULL,
                             v == 0 ? d_scratch : v == 1 ? d_part : NULL, got};

        double fb = LAYERNORM_FWD_FUSED_BYTES(R, C), fu = LAYERNORM_FWD_UNFUSED_BYTES(R, C);
        double bb = LAYERNORM_BWD_FUSED_BYTES(R, C), bu = LAYERNORM_BWD_UNFUSED_BYTES(R, C);
        fl_variant vf[2] = {
            {.name = "fwd unfused", .run = run_fwd_unfused, .ctx = &fwd[0], .bytes = fu,
             .prepare = poison_out, .check = recheck},
            {.name = "fwd fused", .run = run_fwd_fused, .ctx = &fwd[1], .bytes = fb,
             .prepare = poison_out, .check = recheck},
        };
        fl_variant vb[3] = {
            {.name = "bwd unfused", .run = run_bwd_unfused, .ctx = &bwd[0], .bytes = bu,
             .prepare = poison_out, .check = recheck},
            {.name = "bwd fused", .run = run_bwd_fused, .ctx = &bwd[1], .bytes = bb,
             .prepare = poison_out, .check = recheck},
            {.name = "bwd fused atomic", .run = run_bwd_atomic, .ctx = &bwd[2], .bytes = bb,
             .prepare = poison_out, .check = recheck},
        };
        fl_timing_opts o = fl_timing_defaults(), ob;
        o.samples = b.quick ? 5 : 30;
        ob = o;
        /* the copy ceilings of the fused kernels' bytes (timing.h) */
        if (fl_copy_ceiling_for(fb, &o.ceiling_gbs) != cudaSuccess) return 1;
        if (fl_copy_ceiling_for(bb, &ob.ceiling_gbs) != cudaSuccess) return 1;
        fl_timing tf[2], tb[3];
        if (fl_time_variants(vf, 2, &o, tf) != cudaSuccess) return 1;
        if (fl_time_variants(vb, 3, &ob, tb) != cudaSuccess) return 1;
        for (int k = 0; k < 2; ++k)
            if (tf[k].check_ok == 0) {
                fprintf(stderr, "%s cols=%zu WRONG after timing: %s\n", tf[k].name, C,
                        tf[k].check_msg);
                failures++;
            }
        for (int k = 0; k < 3; ++k)
            if (tb[k].check_ok == 0) {
                fprintf(stderr, "%s cols=%zu WRONG after timing: %s\n", tb[k].name, C,
                        tb[k].check_msg);
                failures++;
            }
        double sf = tf[0].us.median / tf[1].us.median, sb = tb[0].us.median / tb[1].us.median;
        fl_csv_row(csv, "%s,%s,%zu,%zu,%.3f,%.3f,%.3f,%.1f,%.1f,%.3f,%.3f,%.3f,%.3f,%.1f,%.1f,"
                        "%.1f,%.1f,%.1f,%.1f,%.1f",
                   b.device_field, b.date, R, C, tf[0].us.median, tf[1].us.median, sf, tf[0].gbs,
                   tf[1].gbs, tb[0].us.median, tb[1].us.median, tb[2].us.median, sb, tb[0].gbs,
                   tb[1].gbs, tb[2].gbs, o.ceiling_gbs, tf[1].pct_of_ceiling,
                   tb[1].pct_of_ceiling, ob.ceiling_gbs);
        fprintf(stderr,
                "%6zu %6zu | %9.1f %9.1f %5.2fx %7.0f %5.0f%% | %9.1f %9.1f %9.1f %5.2fx %7.0f "
                "%5.0f%%\n",
                R, C, tf[0].us.median, tf[1].us.median, sf, tf[1].gbs, tf[1].pct_of_ceiling,
                tb[0].us.median, tb[1].us.median, tb[2].us.median, sb, tb[1].gbs,
                tb[1].pct_of_ceiling);
        if (C == headline_cols) {
            for (int k = 0; k < 2; ++k) head_fwd[k] = tf[k];
            for (int k = 0; k < 3; ++k) head_bwd[k] = tb[k];
        }
    }
    if (fl_csv_close(csv) != 0) return 1;
    char size[32];
    snprintf(size, sizeof size, "%zux%zu", R, headline_cols);
    if (fl_bench_summary(&b, "03-layernorm", size, &head_fwd[0], &head_fwd[1]) != 0) return 1;
    if (fl_bench_summary(&b, "03-layernorm-bwd", size, &head_bwd[0], &head_bwd[1]) != 0)
        return 1;

    float *dev[] = {d_x, d_dy, d_w, d_b, d_mean_in, d_rstd_in, d_scratch, d_part};
    for (size_t i = 0; i < sizeof dev / sizeof dev[0]; ++i) (void)cudaFree(dev[i]);
    for (int v = 0; v < 2; ++v)
        for (int k = 0; k < 3; ++k) (void)cudaFree(fwd_out[v][k]);
    for (int v = 0; v < 3; ++v)
        for (int k = 0; k < 3; ++k) (void)cudaFree(bwd_out[v][k]);
    void *host[] = {hx, hdy, hw, hb, mean_in, rstd_in, y_ref, dx_ref, mean_ref, rstd_ref,
                    dw_ref, db_ref, y_allow, got};
    for (size_t i = 0; i < sizeof host / sizeof host[0]; ++i) free(host[i]);
    return failures ? 1 : 0;
}
