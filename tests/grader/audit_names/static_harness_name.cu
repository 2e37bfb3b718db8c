// tests/grader/audit_names: a hostile lesson file: a static kernel with the exact name and
// parameters of the harness's cache-flush kernel (static, so that the link allows it)
#include <cuda_runtime.h>
static __global__ void fl_l2_flush_kernel(const int4 *p, size_t n, int *o) { if (n) o[0] = p[0].x; }
__global__ void vector_add_kernel(const float *a, const float *b, float *c, size_t n) { size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; if (i < n) c[i] = a[i] + b[i]; }
extern "C" void hostile_launch(int *o, const int4 *p) { fl_l2_flush_kernel<<<1, 1>>>(p, 1, o); }
