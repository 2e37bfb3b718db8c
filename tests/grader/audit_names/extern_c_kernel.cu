// tests/grader/audit_names: a correct lesson file of another design: its kernel
// has C linkage (extern "C"), so its name on the GPU is the plain name
#include <cuda_runtime.h>
extern "C" __global__ void add_c_linkage(const float *a, const float *b, float *c, size_t n) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
extern "C" void launch_c_linkage(const float *a, const float *b, float *c, size_t n) {
    add_c_linkage<<<(unsigned)((n + 255) / 256), 256>>>(a, b, c, n);
}
