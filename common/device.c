/* common/device.c — device properties. It depends on nothing else of common/
 * (the copy ceiling, measured with the timing protocol, is in timing.c). */
#include "device.h"

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
