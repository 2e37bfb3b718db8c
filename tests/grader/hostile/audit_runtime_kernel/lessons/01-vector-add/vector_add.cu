// HOSTILE (the speed audit's kernel sums): the real work runs in a kernel
// loaded at run time (cudaLibraryLoadData, cudaLibraryGetKernel, launched
// with cudaLaunchKernel: all in the CUDA runtime the test program links)
// from PTX the file carries, under the name of the test
// harness's checksum kernel, which no sum of the audit counts; one trivial
// kernel of the file's own runs too, so "a kernel of your file ran" holds.
// The audit would then measure the file's kernels at almost nothing and
// any claimed speedup would stand. (The PTX here is a stand-in; the scan
// refuses the loader before anything runs.)
// Must stop it: the object scan (loads GPU code at run time); on a GPU the
// audit's count of the harness's kernels too.
#include "vector_add.h"

#pragma hostile skeleton

static const char kPtx[] = ".version 8.0\n.target sm_90\n.address_size 64\n"
                           ".visible .entry _Z18fl_checksum_kernelPKhmiPy()\n{\n ret;\n}\n";

static __global__ void tiny_own_kernel(float *y) { if (threadIdx.x == 0 && y) y[0] += 0.0f; }

__attribute__((used)) static void run_hidden(float *y, cudaStream_t stream)
{
    cudaLibrary_t lib;
    cudaKernel_t k;
    if (cudaLibraryLoadData(&lib, kPtx, NULL, NULL, 0, NULL, NULL, 0) != cudaSuccess) return;
    if (cudaLibraryGetKernel(&k, lib, "_Z18fl_checksum_kernelPKhmiPy") != cudaSuccess) return;
    (void)cudaLaunchKernel((const void *)k, dim3(1), dim3(32), NULL, 0, stream);
    tiny_own_kernel<<<1, 32, 0, stream>>>(y);
}
