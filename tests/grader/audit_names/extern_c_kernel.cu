// tests/grader/audit_names: a correct lesson file of another design, its kernels
// of other linkage: C linkage (extern "C": the name on the GPU is the plain name,
// one with a leading underscore too) and static inside a named namespace (host
// symbol _ZN3labL..., on the GPU _ZN3lab...)
#include <cuda_runtime.h>
extern "C" __global__ void add_c_linkage(const float *a, const float *b, float *c, size_t n) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
extern "C" __global__ void _tail_c_linkage(float *c, size_t n) {
    if (threadIdx.x == 0 && n) c[n - 1] += 0.0f;
}
namespace lab {
static __global__ void scale_static(float *c, size_t n) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) c[i] *= 1.0f;
}
} // namespace lab
extern "C" void launch_c_linkage(const float *a, const float *b, float *c, size_t n) {
    add_c_linkage<<<(unsigned)((n + 255) / 256), 256>>>(a, b, c, n);
    _tail_c_linkage<<<1, 32>>>(c, n);
    lab::scale_static<<<(unsigned)((n + 255) / 256), 256>>>(c, n);
}
