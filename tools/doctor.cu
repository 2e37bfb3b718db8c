// tools/doctor.cu — can this machine run the course? (`./lab doctor` runs it)
//
// Prints the GPU, runs a tiny kernel against a CPU reference and measures
// the copy bandwidth the lessons are graded against. One line per check.
// Exit: 0 all good, 1 a check failed, 77 no GPU.
#include "check.h"
#include "compare.h"
#include "data.h"
#include "device.h"
#include "timing.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

// ============================================================================
// kernel
// ============================================================================

// y = a * x + y over n elements
__global__ void doctor_saxpy_kernel(float a, const float *x, float *y, size_t n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

// ============================================================================
// checks
// ============================================================================

static cudaError_t run_saxpy(double *max_diff)
{
    const size_t n = 1 << 20;
    float *hx = (float *)malloc(n * sizeof(float)), *hy = (float *)malloc(n * sizeof(float));
    float *out = (float *)malloc(n * sizeof(float));
    double *want = (double *)malloc(n * sizeof(double));
    float *dx = NULL, *dy = NULL;
    cudaError_t err = cudaErrorMemoryAllocation;
    if (!hx || !hy || !out || !want) goto done;
    fl_fill_uniform(hx, n, 1, -1.0f, 1.0f);
    fl_fill_uniform(hy, n, 2, -1.0f, 1.0f);
    for (size_t i = 0; i < n; ++i) want[i] = 2.0 * hx[i] + hy[i];
    if ((err = CUDA_REPORT(cudaMalloc((void **)&dx, n * sizeof(float))))) goto done;
    if ((err = CUDA_REPORT(cudaMalloc((void **)&dy, n * sizeof(float))))) goto done;
    if ((err = fl_upload_f32(dx, hx, n))) goto done;
    if ((err = fl_upload_f32(dy, hy, n))) goto done;
    doctor_saxpy_kernel<<<(unsigned)CEIL_DIV(n, 256), 256>>>(2.0f, dx, dy, n);
    if ((err = CUDA_REPORT(cudaGetLastError()))) goto done;
    if ((err = CUDA_REPORT(cudaDeviceSynchronize()))) goto done;
    if ((err = fl_download_f32(out, dy, n))) goto done;
    *max_diff = 0.0;
    for (size_t i = 0; i < n; ++i) {
        double d = fabs((double)out[i] - want[i]);
        if (!(d <= *max_diff)) *max_diff = d; // NaN propagates
    }
done:
    cudaFree(dx);
    cudaFree(dy);
    free(hx); free(hy); free(out); free(want);
    return err;
}

int main(void)
{
    int n = fl_device_count();
    if (n == 0) {
        int drv = 0;
        cudaDriverGetVersion(&drv);
        printf("FAIL GPU: no CUDA device found%s\n",
               drv == 0 ? " (no NVIDIA driver loaded: install the driver, then check `nvidia-smi`)"
                        : " (the driver sees no GPU: check `nvidia-smi`)");
        return 77;
    }
    fl_device_info info;
    if (fl_device_query(&info) != cudaSuccess) return 1;
    char desc[400];
    fl_device_describe(&info, desc, sizeof desc);
    printf("OK   GPU: %s, driver %d.%d, runtime %d.%d\n", desc, info.driver_version / 1000,
           (info.driver_version % 1000) / 10, info.runtime_version / 1000,
           (info.runtime_version % 1000) / 10);
    if (info.cc_major * 10 + info.cc_minor < 75)
        printf("WARN GPU: compute capability %d.%d is below 7.5; CUDA 13 does not support it\n",
               info.cc_major, info.cc_minor);

    double diff = -1.0;
    cudaError_t err = run_saxpy(&diff);
    if (err != cudaSuccess) {
        printf("FAIL kernel: a tiny kernel did not run: %s%s\n", cudaGetErrorString(err),
               err == cudaErrorNoKernelImageForDevice
                   ? " -- rebuild for this GPU: cmake -DCMAKE_CUDA_ARCHITECTURES=native"
                   : "");
        return 1;
    }
    int ok = diff <= 1e-6;
    printf("%s kernel: saxpy on 2^20 elements, max |GPU - CPU| = %.3g\n", ok ? "OK  " : "FAIL",
           diff);

    double gbs = 0.0;
    if (fl_copy_bandwidth_gbs(0, &gbs) != cudaSuccess) return 1;
    fl_copy_ceiling parts = fl_copy_ceiling_parts();
    printf("OK   bandwidth: %.0f GB/s, the lessons' ceiling (read + write; the most of "
           "cudaMemcpy, %.0f GB/s, a copy kernel, %.0f GB/s, a read-only stream, %.0f GB/s, "
           "and two or three reads a write, %.0f GB/s)\n",
           gbs, parts.memcpy_gbs, parts.kernel_gbs, parts.read_gbs, parts.mixed_gbs);
    return ok ? 0 : 1;
}
