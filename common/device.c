/* common/device.c — device properties and the measured copy ceiling. */
#include "device.h"
#include "timing.h"

#include <stdio.h>
#include <string.h>

int fl_device_count(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        (void)cudaGetLastError(); /* clear the sticky "no driver" error */
        return 0;
    }
    return n;
}

cudaError_t fl_device_query(fl_device_info *info)
{
    struct cudaDeviceProp p;
    memset(info, 0, sizeof *info);
    CUDA_CHECK(cudaGetDevice(&info->ordinal));
    CUDA_CHECK(cudaGetDeviceProperties(&p, info->ordinal));
    snprintf(info->name, sizeof info->name, "%s", p.name);
    info->cc_major = p.major;
    info->cc_minor = p.minor;
    info->sm_count = p.multiProcessorCount;
    info->global_mem_bytes = p.totalGlobalMem;
    info->l2_bytes = (size_t)p.l2CacheSize;
    info->persisting_l2_max = (size_t)p.persistingL2CacheMaxSize;
    CUDA_CHECK(cudaDriverGetVersion(&info->driver_version));
    CUDA_CHECK(cudaRuntimeGetVersion(&info->runtime_version));
    return cudaSuccess;
}

unsigned int fl_grid_blocks(size_t items, int threads, int blocks_per_sm)
{
    static int sms[64]; /* per device ordinal, filled on first use */
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 64) dev = 0;
    if (sms[dev] == 0 &&
        cudaDeviceGetAttribute(&sms[dev], cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
        sms[dev] = 1;
    size_t need = CEIL_DIV(items, (size_t)threads);
    size_t cap = (size_t)sms[dev] * (size_t)blocks_per_sm;
    size_t blocks = need < cap ? need : cap;
    return blocks ? (unsigned int)blocks : 1u;
}

void fl_device_describe(const fl_device_info *info, char *buf, size_t len)
{
    snprintf(buf, len, "%s (cc %d.%d, %d SMs, %.1f GiB, L2 %.0f MiB)",
             info->name, info->cc_major, info->cc_minor, info->sm_count,
             (double)info->global_mem_bytes / (1024.0 * 1024.0 * 1024.0),
             (double)info->l2_bytes / (1024.0 * 1024.0));
}

typedef struct {
    void *dst;
    const void *src;
    size_t bytes;
} copy_ctx;

static cudaError_t run_copy(void *ctx, cudaStream_t stream)
{
    copy_ctx *c = (copy_ctx *)ctx;
    return cudaMemcpyAsync(c->dst, c->src, c->bytes, cudaMemcpyDeviceToDevice,
                           stream);
}

cudaError_t fl_copy_bandwidth_gbs(size_t bytes_per_buffer, double *gbs)
{
    static double cached = 0.0;
    static int cached_dev = -1;
    int dev;
    CUDA_CHECK(cudaGetDevice(&dev));
    if (cached > 0.0 && cached_dev == dev) {
        *gbs = cached;
        return cudaSuccess;
    }

    size_t free_b = 0, total_b = 0;
    CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
    size_t bytes = bytes_per_buffer ? bytes_per_buffer : ((size_t)256 << 20);
    if (bytes > free_b / 8) bytes = (free_b / 8) & ~(size_t)255;

    copy_ctx c = {NULL, NULL, bytes};
    cudaError_t err = CUDA_REPORT(cudaMalloc(&c.dst, bytes));
    if (err == cudaSuccess) err = CUDA_REPORT(cudaMalloc((void **)&c.src, bytes));
    if (err == cudaSuccess) err = CUDA_REPORT(cudaMemset((void *)c.src, 1, bytes));

    if (err == cudaSuccess) {
        fl_variant v = {.name = "cudaMemcpy D2D", .run = run_copy, .ctx = &c,
                        .bytes = 2.0 * (double)bytes};
        fl_timing_opts opts = fl_timing_defaults();
        opts.samples = 25;
        fl_timing t;
        err = fl_time_variants(&v, 1, &opts, &t);
        if (err == cudaSuccess) {
            cached = t.gbs;
            cached_dev = dev;
            *gbs = cached;
        }
    }
    if (c.dst) (void)cudaFree(c.dst);
    if (c.src) (void)cudaFree((void *)c.src);
    return err;
}
