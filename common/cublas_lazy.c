// cublas_lazy.c — the cuBLAS calls of lesson 05's baseline, loading cuBLAS
// on the first of them instead of when the program starts.
//
// Linked against libcublas.so, every process of lesson 05 (each test case is
// one) loads cuBLAS and cuBLASLt as it starts and runs their constructors:
// about 0.1 s a process, though most tests never call the unfused baseline.
// These definitions stand in for the library (same names and types, from
// cublas_v2.h): the first call dlopen()s the toolkit's libcublas
// (one of its major version already loaded, else FUSIONLAB_CUBLAS_PATH, the
// file CMake found, else its soname) and every call goes on to the real
// function. attention_unfused.cu is unchanged: it
// calls cuBLAS as any program does.
//
// Only the functions the baseline calls are here; a new call there fails to
// link until it is added below. If the library cannot be loaded, each call
// says why on stderr and returns CUBLAS_STATUS_NOT_INITIALIZED.

#include <cublas_v2.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#ifndef FUSIONLAB_CUBLAS_PATH
#define FUSIONLAB_CUBLAS_PATH "libcublas.so"
#endif
#ifndef FUSIONLAB_CUBLAS_SONAME
#define FUSIONLAB_CUBLAS_SONAME "libcublas.so"
#endif

static void *g_lib;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void load_cublas(void)
{
    // a libcublas of this major version already in the process (PyTorch's,
    // beside ./lab compare's libraries) is used as it is: two copies of
    // cuBLAS in one process would share one libcublasLt by its soname
    g_lib = dlopen(FUSIONLAB_CUBLAS_SONAME, RTLD_NOW | RTLD_NOLOAD);
    if (!g_lib) g_lib = dlopen(FUSIONLAB_CUBLAS_PATH, RTLD_NOW | RTLD_LOCAL);
    if (!g_lib) g_lib = dlopen(FUSIONLAB_CUBLAS_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (!g_lib)
        fprintf(stderr, "cuBLAS could not be loaded (%s, then %s): %s\n", FUSIONLAB_CUBLAS_PATH,
                FUSIONLAB_CUBLAS_SONAME, dlerror());
}

// The real function `name` of the loaded library, or NULL (said on stderr).
static void *cublas_symbol(const char *name)
{
    pthread_once(&g_once, load_cublas);
    if (!g_lib) return NULL;
    void *f = dlsym(g_lib, name);
    if (!f) fprintf(stderr, "cuBLAS has no %s: %s\n", name, dlerror());
    return f;
}

// Each stand-in: look the real function up once, then call it. (A function
// pointer read and written by several threads at once gets the same value
// from every lookup, so the race is harmless; cuBLAS's own handles are not
// shared between threads in the course.)
#define FORWARD(ret, fail, name, params, args)                                   \
    ret name params                                                              \
    {                                                                            \
        static ret(*real) params;                                                \
        if (!real) *(void **)&real = cublas_symbol(#name);                       \
        if (!real) return fail;                                                  \
        return real args;                                                        \
    }

FORWARD(cublasStatus_t, CUBLAS_STATUS_NOT_INITIALIZED, cublasCreate_v2,
        (cublasHandle_t *handle), (handle))
FORWARD(cublasStatus_t, CUBLAS_STATUS_NOT_INITIALIZED, cublasSetMathMode,
        (cublasHandle_t handle, cublasMath_t mode), (handle, mode))
FORWARD(cublasStatus_t, CUBLAS_STATUS_NOT_INITIALIZED, cublasSetStream_v2,
        (cublasHandle_t handle, cudaStream_t stream), (handle, stream))
FORWARD(const char *, "cuBLAS could not be loaded", cublasGetStatusName,
        (cublasStatus_t status), (status))
FORWARD(const char *, "cuBLAS could not be loaded", cublasGetStatusString,
        (cublasStatus_t status), (status))
FORWARD(cublasStatus_t, CUBLAS_STATUS_NOT_INITIALIZED, cublasSgemmStridedBatched,
        (cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m,
         int n, int k, const float *alpha, const float *A, int lda, long long int strideA,
         const float *B, int ldb, long long int strideB, const float *beta, float *C, int ldc,
         long long int strideC, int batchCount),
        (handle, transa, transb, m, n, k, alpha, A, lda, strideA, B, ldb, strideB, beta, C, ldc,
         strideC, batchCount))
FORWARD(cublasStatus_t, CUBLAS_STATUS_NOT_INITIALIZED, cublasGemmStridedBatchedEx,
        (cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m,
         int n, int k, const void *alpha, const void *A, cudaDataType Atype, int lda,
         long long int strideA, const void *B, cudaDataType Btype, int ldb,
         long long int strideB, const void *beta, void *C, cudaDataType Ctype, int ldc,
         long long int strideC, int batchCount, cublasComputeType_t computeType,
         cublasGemmAlgo_t algo),
        (handle, transa, transb, m, n, k, alpha, A, Atype, lda, strideA, B, Btype, ldb,
         strideB, beta, C, Ctype, ldc, strideC, batchCount, computeType, algo))
