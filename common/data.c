/* common/data.c — seeded inputs (splitmix64) and transfer helpers. */
#include "data.h"

#include <math.h>
#include <stdlib.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* fl_cpu_threads: a loop over at least this many elements is shared among
 * threads (at most CPU_MAX_THREADS). A test's 4096 x 4096 normal inputs take
 * about a second of one core to draw, most of what the case costs. */
#define CPU_PARALLEL_MIN ((size_t)1 << 20)
#define CPU_MAX_THREADS 8

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* splitmix64's k-th output (k >= 1) from the state `seed`: the generator
 * only adds a constant to its state, so any draw can be made on its own and
 * a fill shared among threads gives the same bits as one thread's. */
static uint64_t splitmix64_at(uint64_t seed, uint64_t k)
{
    uint64_t s = seed + (k - 1) * 0x9E3779B97F4A7C15ull;
    return splitmix64(&s);
}

static double uniform_of(uint64_t u) { return (double)(u >> 11) * (1.0 / 9007199254740992.0); }

/* Box-Muller, one of its two outputs, from two uniforms in [0, 1). */
static double normal_of(double u1, double u2)
{
    if (u1 < 1e-300) u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

int fl_cpu_threads(size_t n)
{
#ifdef _OPENMP
    if (n >= CPU_PARALLEL_MIN) {
        int t = omp_get_max_threads();
        return t < CPU_MAX_THREADS ? t : CPU_MAX_THREADS;
    }
#endif
    (void)n;
    return 1;
}

uint64_t fl_seed(uint64_t base)
{
    const char *env = getenv("FUSIONLAB_GRADE_SEED");
    if (!env || !*env) return base;
    /* Hash the string so any text works as a seed. */
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (const char *p = env; *p; ++p) h = (h ^ (unsigned char)*p) * 1099511628211ull;
    uint64_t s = base ^ h;
    return splitmix64(&s);
}

fl_rng fl_rng_make(uint64_t seed)
{
    fl_rng r = {seed};
    return r;
}

uint64_t fl_rng_u64(fl_rng *r) { return splitmix64(&r->state); }

double fl_rng_uniform(fl_rng *r) { return uniform_of(fl_rng_u64(r)); }

double fl_rng_normal(fl_rng *r)
{
    double u1 = fl_rng_uniform(r), u2 = fl_rng_uniform(r);
    return normal_of(u1, u2);
}

/* Both fills give exactly what drawing x[0], x[1], ... in turn from
 * fl_rng_make(seed) gives (fl_rng_uniform: one draw an element;
 * fl_rng_normal: two), on any number of threads. */
void fl_fill_uniform(float *x, size_t n, uint64_t seed, float lo, float hi)
{
#pragma omp parallel for num_threads(fl_cpu_threads(n)) schedule(static)
    for (size_t i = 0; i < n; ++i)
        x[i] = (float)(lo + (hi - lo) * uniform_of(splitmix64_at(seed, i + 1)));
}

void fl_fill_normal(float *x, size_t n, uint64_t seed, float mean, float stddev)
{
#pragma omp parallel for num_threads(fl_cpu_threads(n)) schedule(static)
    for (size_t i = 0; i < n; ++i) {
        double u1 = uniform_of(splitmix64_at(seed, 2 * i + 1));
        double u2 = uniform_of(splitmix64_at(seed, 2 * i + 2));
        x[i] = (float)(mean + stddev * normal_of(u1, u2));
    }
}

cudaError_t fl_upload_f32(float *dev, const float *host, size_t n)
{
    CUDA_CHECK(cudaMemcpy(dev, host, n * sizeof(float), cudaMemcpyHostToDevice));
    return cudaSuccess;
}

cudaError_t fl_download_f32(float *host, const float *dev, size_t n)
{
    CUDA_CHECK(cudaMemcpy(host, dev, n * sizeof(float), cudaMemcpyDeviceToHost));
    return cudaSuccess;
}
