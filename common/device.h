/* common/device.h — what GPU is this, and how big is its grid?
 *
 * Properties only: how fast the GPU can move bytes is a measurement, made
 * with the timing protocol (fl_copy_bandwidth_gbs in timing.h). device.c
 * uses nothing else of common/; timing.c builds on it.
 */
#ifndef FUSIONLAB_DEVICE_H
#define FUSIONLAB_DEVICE_H

#include "check.h"

typedef struct {
    int ordinal;               /* CUDA device number */
    char name[256];            /* e.g. "NVIDIA H100 80GB HBM3" */
    int cc_major, cc_minor;    /* compute capability */
    int sm_count;              /* streaming multiprocessors */
    size_t global_mem_bytes;   /* total device memory */
    size_t l2_bytes;           /* L2 cache size */
    size_t persisting_l2_max;  /* max L2 persisting-access size (0 = none) */
    int driver_version;        /* e.g. 13000 */
    int runtime_version;
} fl_device_info;

/* Number of usable CUDA devices; 0 when there is no GPU or no driver.
 * Never fails and prints nothing, so it is safe to call on any machine. */
EXTERN_C int fl_device_count(void);

/* Fill *info for the current device. */
EXTERN_C cudaError_t fl_device_query(fl_device_info *info);

/* Blocks for a grid-stride loop over `items` work items with `threads`
 * threads per block: enough to fill every SM (blocks_per_sm resident blocks
 * each), never more than the work needs, at least 1. */
EXTERN_C unsigned int fl_grid_blocks(size_t items, int threads,
                                     int blocks_per_sm);

/* One-line description: "NVIDIA H100 80GB HBM3 (cc 9.0, 132 SMs, 79.1 GiB)". */
EXTERN_C void fl_device_describe(const fl_device_info *info, char *buf,
                                 size_t len);

#endif /* FUSIONLAB_DEVICE_H */
