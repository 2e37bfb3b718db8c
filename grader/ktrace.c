/* grader/ktrace.c — the speed audit's kernel trace: every kernel a process
 * runs, with its time on the GPU, from CUPTI's activity records.
 *
 * The CUDA driver loads the library that CUDA_INJECTION64_PATH names when a
 * process initializes CUDA, and calls its InitializeInjection() before the
 * process's first CUDA call returns, so before any code of a student's can
 * launch a kernel. With FUSIONLAB_KTRACE naming a file, it asks CUPTI for a
 * record of every kernel (CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: the
 * kernels run as they would, not one at a time) and appends one line per
 * kernel to that file, in the form of Nsight Compute's raw CSV page:
 *
 *   "<record>","<pid>","<mangled name>","<end - start, ns>"
 *
 * so that the grader reads both the same way (grader/audit.c, sum_csv; the
 * grader writes the header line). A record CUPTI had to drop, or one whose
 * times it could not take, is written as a "#dropped" or "#incomplete"
 * line, and the grader then does not trust the trace. The records are
 * taken when CUPTI hands a buffer back, and at the end of the process
 * (exit, the library's destructor, a context's destruction): a process that
 * dies without ending its CUDA work leaves its last kernels out, and the
 * grader takes only a run that ended cleanly, and of each process only the
 * lines that its "#end" line (written at exit) counts.
 *
 * An Nsight Compute run spends a few seconds starting and about 0.1 s on
 * every kernel it profiles; this trace costs the run about nothing, which is
 * what makes the audit cheap enough to run on every speed check of a class.
 */
#define _GNU_SOURCE
#include <cupti.h>

#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if CUPTI_API_VERSION >= 130000
typedef CUpti_ActivityKernel10 kernel_record;
#else
typedef CUpti_ActivityKernel9 kernel_record;
#endif

#define BUFFER_BYTES ((size_t)4 << 20)
#define CHUNK_BYTES ((size_t)60 << 10) /* one write() per chunk of whole lines */

static int g_on;             /* tracing: FUSIONLAB_KTRACE named a file we could open */
static char g_path[4096];
static pthread_mutex_t g_write = PTHREAD_MUTEX_INITIALIZER;
static uint64_t g_lines;

/* Whole lines only, each write() at most CHUNK_BYTES: the file is shared by
 * every process of the run (O_APPEND), and no line may be split by another
 * process's write. The file is open only for the write: the process's own
 * code (the student's) never finds a descriptor of it to write through. */
static void put(const char *p, size_t n)
{
    int fd = open(g_path, O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fd < 0) return; /* the grader finds a trace cut short */
    ssize_t w = write(fd, p, n);
    (void)w;
    close(fd);
}

static void emit(char *chunk, size_t *len, const char *line, size_t n)
{
    if (*len + n > CHUNK_BYTES) {
        if (*len) put(chunk, *len);
        *len = 0;
    }
    memcpy(chunk + *len, line, n);
    *len += n;
}

/* "name" with every '"' doubled, whole (a name cut short would be nobody's
 * kernel: the grader would count it as the baseline's); NULL when out of
 * memory. */
static char *quote_name(const char *name)
{
    const char *n = name ? name : "";
    char *out = malloc(2 * strlen(n) + 1);
    if (out == NULL) return NULL;
    size_t k = 0;
    for (const char *p = n; *p; ++p) {
        if (*p == '"') out[k++] = '"';
        out[k++] = *p;
    }
    out[k] = '\0';
    return out;
}

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    *buffer = aligned_alloc(ACTIVITY_RECORD_ALIGNMENT, BUFFER_BYTES);
    *size = *buffer ? BUFFER_BYTES : 0;
    *max_records = 0;
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer,
                                      size_t size, size_t valid)
{
    (void)ctx;
    (void)stream;
    static char chunk[CHUNK_BYTES];
    char line[256];
    size_t len = 0;
    long pid = (long)getpid();
    pthread_mutex_lock(&g_write);
    CUpti_Activity *rec = NULL;
    while (g_on && cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
        if (rec->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL &&
            rec->kind != CUPTI_ACTIVITY_KIND_KERNEL)
            continue;
        const kernel_record *k = (const kernel_record *)rec;
        char *name = quote_name(k->name);
        size_t cap = (name ? strlen(name) : 0) + 128;
        char *text = malloc(cap);
        int n = -1;
        if (name == NULL || text == NULL)
            n = snprintf(line, sizeof line, "\"#incomplete\",\"%ld\",\"(out of memory)\",\"\"\n",
                         pid);
        else if (k->start == 0 || k->end < k->start)
            n = snprintf(text, cap, "\"#incomplete\",\"%ld\",\"%s\",\"\"\n", pid, name);
        else
            n = snprintf(text, cap, "\"%" PRIu64 "\",\"%ld\",\"%s\",\"%" PRIu64 "\"\n", ++g_lines,
                         pid, name, k->end - k->start);
        const char *out = name && text ? text : line;
        if (n > 0 && (size_t)n <= CHUNK_BYTES) emit(chunk, &len, out, (size_t)n);
        else if (n > 0) { /* longer than a chunk: on its own */
            if (len) put(chunk, len);
            len = 0;
            put(out, (size_t)n);
        }
        free(name);
        free(text);
    }
    size_t dropped = 0;
    if (g_on && cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS &&
        dropped > 0) {
        int n = snprintf(line, sizeof line, "\"#dropped\",\"%ld\",\"%zu\",\"\"\n", pid, dropped);
        if (n > 0) emit(chunk, &len, line, (size_t)n);
    }
    if (len && g_on) put(chunk, len);
    pthread_mutex_unlock(&g_write);
    (void)size;
    free(buffer);
}

static void flush_all(void)
{
    if (g_on) (void)cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
}

/* At exit: the last records, then "#end" with the count of kernel lines
 * this process wrote (the grader takes a process's lines only with it). */
static void at_exit(void)
{
    flush_all();
    if (!g_on) return;
    char line[96];
    pthread_mutex_lock(&g_write);
    int n = snprintf(line, sizeof line, "\"#end\",\"%ld\",\"%" PRIu64 "\",\"\"\n",
                     (long)getpid(), g_lines);
    if (n > 0) put(line, (size_t)n);
    pthread_mutex_unlock(&g_write);
}

static void CUPTIAPI on_resource(void *user, CUpti_CallbackDomain domain, CUpti_CallbackId id,
                                 const void *data)
{
    (void)user;
    (void)data;
    if (domain == CUPTI_CB_DOMAIN_RESOURCE && id == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING)
        flush_all();
}

__attribute__((destructor)) static void at_unload(void) { flush_all(); }

/* Called by the CUDA driver (CUDA_INJECTION64_PATH); 1: go on. */
int InitializeInjection(void)
{
    static int done;
    if (done++) return 1;
    const char *path = getenv("FUSIONLAB_KTRACE");
    if (path == NULL || path[0] == '\0') return 1;
    int fd = strlen(path) < sizeof g_path ? open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC,
                                                 0600)
                                          : -1;
    if (fd < 0) {
        fprintf(stderr, "fusion-lab kernel trace: cannot open %s\n", path);
        return 1;
    }
    close(fd);
    snprintf(g_path, sizeof g_path, "%s", path);
    g_on = 1;
    CUpti_SubscriberHandle sub;
    if (cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed) != CUPTI_SUCCESS ||
        cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS) {
        const char *what = "";
        cuptiGetResultString(cuptiGetLastError(), &what);
        fprintf(stderr, "fusion-lab kernel trace: CUPTI would not trace kernels (%s)\n", what);
        g_on = 0;
        return 1;
    }
    if (cuptiSubscribe(&sub, on_resource, NULL) == CUPTI_SUCCESS)
        (void)cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RESOURCE,
                                  CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING);
    atexit(at_exit);
    return 1;
}
