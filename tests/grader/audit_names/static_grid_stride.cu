// tests/grader/audit_names: a correct lesson file of another design than the worked
// solution's: its only kernel is static, with a grid-stride loop
#include <cuda_runtime.h>
static __global__ void add_grid_stride(const float *a, const float *b, float *c, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) c[i] = a[i] + b[i];
}
extern "C" void launch_it(const float *a, const float *b, float *c, size_t n) { add_grid_stride<<<132, 256>>>(a, b, c, n); }
