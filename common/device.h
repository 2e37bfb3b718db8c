/* common/device.h — what GPU is this, and how fast can it move bytes?
 *
 * The copy bandwidth is measured, not read off a datasheet: a large
 * device-to-device cudaMemcpyAsync, timed with the course's protocol
 * (timing.h), counting the bytes read plus the bytes written. It is the
 * ceiling every memory-bound lesson is measured against.
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

/* Measured device-to-device copy bandwidth of the current device in GB/s
 * (1 GB = 1e9 bytes), bytes read + bytes written. The first call measures
 * (a few hundred milliseconds); later calls in the same process return the
 * cached figure. bytes_per_buffer = 0 picks the default (256 MiB, capped
 * at an eighth of free memory). */
EXTERN_C cudaError_t fl_copy_bandwidth_gbs(size_t bytes_per_buffer,
                                           double *gbs);

/* Blocks for a grid-stride loop over `items` work items with `threads`
 * threads per block: enough to fill every SM (blocks_per_sm resident blocks
 * each), never more than the work needs, at least 1. */
EXTERN_C unsigned int fl_grid_blocks(size_t items, int threads,
                                     int blocks_per_sm);

/* One-line description: "NVIDIA H100 80GB HBM3 (cc 9.0, 132 SMs, 79.1 GiB)". */
EXTERN_C void fl_device_describe(const fl_device_info *info, char *buf,
                                 size_t len);

#endif /* FUSIONLAB_DEVICE_H */
