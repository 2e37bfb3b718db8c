/* lessons/04-memory-traffic/course_kernels.c — see course_kernels.h. */
#include "course_kernels.h"
#include "data.h"
#include "layernorm.h"
#include "layernorm_reference.h"
#include "softmax.h"
#include "vector_add.h"

#include <stdlib.h>
#include <string.h>

#define MAX_BUFS 16

struct course_run {
    const course_kernel *k;
    size_t rows, cols, n; /* n = rows * cols (or the 1-D length) */
    float *buf[MAX_BUFS];
    int nbuf;
};

/* flops per element: elementwise (a + b) * s + c is 3 operations; softmax
 * is max, subtract, exp, sum, divide: 5 (exp counted as one); LayerNorm's
 * forward is 7 (mean, subtract, square, mean, scale by rstd, weight, bias)
 * and its backward 13 (the unfused version's operations). */
static const course_kernel kTable[] = {
    {"elementwise_unfused", "01", "unfused", 0, 3.0},
    {"elementwise_fused", "01", "fused", 0, 3.0},
    {"softmax_unfused", "02", "unfused", 1, 5.0},
    {"softmax_fused", "02", "fused", 1, 5.0},
    {"layernorm_fwd_unfused", "03", "unfused", 1, 7.0},
    {"layernorm_fwd_fused", "03", "fused", 1, 7.0},
    {"layernorm_bwd_unfused", "03", "unfused", 1, 13.0},
    {"layernorm_bwd_fused", "03", "fused", 1, 13.0},
    {NULL, NULL, NULL, 0, 0.0},
};

const course_kernel *course_kernels(void) { return kTable; }

const course_kernel *course_kernel_find(const char *name)
{
    for (const course_kernel *k = kTable; k->name; ++k)
        if (strcmp(k->name, name) == 0) return k;
    return NULL;
}

/* Allocate buffer i of `count` floats; fill it with seeded data if `fill`. */
static cudaError_t add_buf(course_run *r, size_t count, int fill, float lo, float hi)
{
    float *d = NULL;
    CUDA_CHECK(cudaMalloc((void **)&d, count * sizeof(float)));
    r->buf[r->nbuf++] = d;
    if (!fill) return cudaSuccess;
    float *h = malloc(count * sizeof(float));
    if (!h) return cudaErrorMemoryAllocation;
    fl_fill_uniform(h, count, 0x0400 + (uint64_t)r->nbuf, lo, hi);
    cudaError_t e = fl_upload_f32(d, h, count);
    free(h);
    return e;
}

cudaError_t course_run_open(const course_kernel *k, size_t rows, size_t cols,
                            course_run **out)
{
    course_run *r = calloc(1, sizeof *r);
    if (!r) return cudaErrorMemoryAllocation;
    r->k = k;
    r->rows = rows;
    r->cols = k->two_d ? cols : 1;
    r->n = rows * r->cols;
    cudaError_t e = cudaSuccess;
    if (!strcmp(k->lesson, "01")) {
        /* a, b, c, then y, t1, t2 */
        for (int i = 0; i < 3 && !e; ++i) e = add_buf(r, r->n, 1, -1.0f, 1.0f);
        for (int i = 0; i < 3 && !e; ++i) e = add_buf(r, r->n, 0, 0, 0);
    } else if (!strcmp(k->lesson, "02")) {
        /* x, then y, shifted, e (matrices), row_max, row_sum (rows) */
        e = add_buf(r, r->n, 1, -4.0f, 4.0f);
        for (int i = 0; i < 3 && !e; ++i) e = add_buf(r, r->n, 0, 0, 0);
        for (int i = 0; i < 2 && !e; ++i) e = add_buf(r, rows, 0, 0, 0);
    } else if (!strcmp(k->lesson, "03")) {
        /* 0 x, 1 weight, 2 bias, 3 dy, 4 mean, 5 rstd (filled: the backward
         * needs plausible statistics, and computing them on the GPU would add
         * kernels the profiler would count), then 6 y, 7 dx, 8 dweight,
         * 9 dbias, 10 scratch */
        size_t scratch = LAYERNORM_BWD_UNFUSED_SCRATCH_FLOATS(rows, cols);
        if (scratch < LAYERNORM_FWD_UNFUSED_SCRATCH_FLOATS(rows, cols))
            scratch = LAYERNORM_FWD_UNFUSED_SCRATCH_FLOATS(rows, cols);
        if (scratch < LAYERNORM_BWD_SCRATCH_FLOATS(cols))
            scratch = LAYERNORM_BWD_SCRATCH_FLOATS(cols);
        if (!e) e = add_buf(r, r->n, 1, -3.0f, 1.0f);
        if (!e) e = add_buf(r, cols, 1, 0.5f, 1.5f);
        if (!e) e = add_buf(r, cols, 1, -0.5f, 0.5f);
        if (!e) e = add_buf(r, r->n, 1, -1.0f, 1.0f);
        if (!e) e = add_buf(r, rows, 1, -1.1f, -0.9f);
        if (!e) e = add_buf(r, rows, 1, 0.8f, 1.2f);
        if (!e) e = add_buf(r, r->n, 0, 0, 0);
        if (!e) e = add_buf(r, r->n, 0, 0, 0);
        if (!e) e = add_buf(r, cols, 0, 0, 0);
        if (!e) e = add_buf(r, cols, 0, 0, 0);
        if (!e) e = add_buf(r, scratch, 0, 0, 0);
    } else {
        e = cudaErrorInvalidValue;
    }
    if (e != cudaSuccess) {
        course_run_close(r);
        return e;
    }
    *out = r;
    return cudaSuccess;
}

cudaError_t course_run_launch(void *run, cudaStream_t stream)
{
    course_run *r = run;
    float **b = r->buf;
    const char *name = r->k->name;
    if (!strcmp(name, "elementwise_unfused"))
        return unfused_elementwise(b[0], b[1], b[2], 1.5f, b[4], b[5], b[3], r->n, stream);
    if (!strcmp(name, "elementwise_fused"))
        return fused_elementwise(b[0], b[1], b[2], 1.5f, b[3], r->n, stream);
    if (!strcmp(name, "softmax_unfused"))
        return softmax_unfused(b[0], b[4], b[2], b[3], b[5], b[1], r->rows, r->cols, stream);
    if (!strcmp(name, "softmax_fused"))
        return softmax_fused(b[0], b[1], r->rows, r->cols, stream);
    if (!strcmp(name, "layernorm_fwd_unfused"))
        return layernorm_fwd_unfused(b[0], b[1], b[2], b[6], b[4], b[5], b[10], r->rows,
                                     r->cols, LAYERNORM_EPS, stream);
    if (!strcmp(name, "layernorm_fwd_fused"))
        return layernorm_fwd_fused(b[0], b[1], b[2], b[6], b[4], b[5], r->rows, r->cols,
                                   LAYERNORM_EPS, stream);
    if (!strcmp(name, "layernorm_bwd_unfused"))
        return layernorm_bwd_unfused(b[3], b[0], b[1], b[4], b[5], b[7], b[8], b[9], b[10],
                                     r->rows, r->cols, stream);
    if (!strcmp(name, "layernorm_bwd_fused"))
        return layernorm_bwd_fused(b[3], b[0], b[1], b[4], b[5], b[7], b[8], b[9], b[10],
                                   r->rows, r->cols, stream);
    return cudaErrorInvalidValue;
}

void course_run_close(course_run *r)
{
    if (!r) return;
    for (int i = 0; i < r->nbuf; ++i) (void)cudaFree(r->buf[i]);
    free(r);
}

double course_run_elements(const course_run *r) { return (double)r->n; }
