// HOSTILE (the speed audit's kernel sums, without a run-time loader): the
// file registers a fat binary and a kernel of its own with CUDA's
// registration calls (__cudaRegisterFatBinary, __cudaRegisterFunction), as
// nvcc's generated code does, under the name of the harness's checksum
// kernel, which no sum of the audit counts, and launches it with
// cudaLaunchKernel. (The image here is a stand-in; the scan refuses the
// registration before anything runs.)
// Must stop it: the object scan (registers GPU code itself); on a GPU the
// audit's count of the harness's kernels too.
#include "vector_add.h"

#pragma hostile skeleton

extern "C" void **__cudaRegisterFatBinary(void *);
extern "C" void __cudaRegisterFatBinaryEnd(void **);
extern "C" void __cudaRegisterFunction(void **, const char *, char *, const char *, int, uint3 *,
                                       uint3 *, dim3 *, dim3 *, int *);

static const unsigned long long kImage[4] = {0, 0, 0, 0};
static struct {
    int magic, version;
    const void *data;
    void *filename;
} kWrap = {0x466243b1, 1, kImage, 0};
static char kHostHandle;

__attribute__((used)) static void run_hidden(cudaStream_t stream)
{
    void **h = __cudaRegisterFatBinary(&kWrap);
    __cudaRegisterFunction(h, &kHostHandle, (char *)"_Z18fl_checksum_kernelPKhmiPy",
                           "_Z18fl_checksum_kernelPKhmiPy", -1, (uint3 *)0, (uint3 *)0,
                           (dim3 *)0, (dim3 *)0, (int *)0);
    __cudaRegisterFatBinaryEnd(h);
    (void)cudaLaunchKernel(&kHostHandle, dim3(1), dim3(32), (void **)0, 0, stream);
}
