/* lessons/04-memory-traffic/counters.c — see counters.h. */
#define _POSIX_C_SOURCE 200809L
#include "counters.h"

#include <glob.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef FUSIONLAB_BUILD_DIR
#define FUSIONLAB_BUILD_DIR "build"
#endif
#define PROBE_PATH FUSIONLAB_BUILD_DIR "/probe_04"

static int executable(const char *p) { return access(p, X_OK) == 0; }

int counters_find_ncu(char *buf, size_t len)
{
    const char *env = getenv("NCU");
    if (env && *env && executable(env)) {
        snprintf(buf, len, "%s", env);
        return 0;
    }
    const char *path = getenv("PATH");
    if (path) {
        char *copy = strdup(path), *save = NULL;
        for (char *d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
            snprintf(buf, len, "%s/ncu", d);
            if (executable(buf)) { free(copy); return 0; }
        }
        free(copy);
    }
    const char *fixed[] = {"/usr/local/cuda/bin/ncu", "/opt/cuda/bin/ncu"};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; ++i)
        if (executable(fixed[i])) { snprintf(buf, len, "%s", fixed[i]); return 0; }
    glob_t g;
    if (glob("/opt/nvidia/nsight-compute/*/ncu", 0, NULL, &g) == 0 && g.gl_pathc > 0) {
        snprintf(buf, len, "%s", g.gl_pathv[g.gl_pathc - 1]); /* newest sorts last */
        globfree(&g);
        return 0;
    }
    return -1;
}

/* Split one CSV line into fields (quotes removed); returns the count. */
static int split_csv(char *line, char **field, int max)
{
    int n = 0;
    char *p = line;
    while (*p && n < max) {
        if (*p == '"') {
            char *start = ++p, *w = p;
            while (*p && !(*p == '"' && p[1] != '"')) {
                if (*p == '"') p++; /* "" -> " */
                *w++ = *p++;
            }
            if (*p == '"') p++;
            *w = '\0';
            field[n++] = start;
        } else {
            field[n++] = p;
            while (*p && *p != ',') p++;
        }
        if (*p == ',') *p++ = '\0';
        else if (*p == '\r' || *p == '\n') *p = '\0';
    }
    return n;
}

static double parse_value(const char *v, const char *unit)
{
    char digits[64];
    size_t j = 0;
    for (const char *p = v; *p && j + 1 < sizeof digits; ++p)
        if (*p != ',') digits[j++] = *p; /* ncu may print 1,073,741,824 */
    digits[j] = '\0';
    double x = strtod(digits, NULL);
    if (!strcmp(unit, "Kbyte")) x *= 1e3;
    else if (!strcmp(unit, "Mbyte")) x *= 1e6;
    else if (!strcmp(unit, "Gbyte")) x *= 1e9;
    else if (!strcmp(unit, "KB")) x *= 1024.0;
    else if (!strcmp(unit, "MB")) x *= 1024.0 * 1024.0;
    return x;
}

int counters_parse_csv(const char *text, counters_result *out, char *why, size_t len)
{
    memset(out, 0, sizeof *out);
    char *copy = strdup(text), *save = NULL;
    int col_id = -1, col_kernel = -1, col_metric = -1, col_unit = -1, col_value = -1;
    char last_id[32] = "";
    for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (line[0] != '"') continue; /* ==PROF== lines and program output */
        char *f[64];
        int nf = split_csv(line, f, 64);
        if (col_metric < 0) {
            for (int i = 0; i < nf; ++i) {
                if (!strcmp(f[i], "ID")) col_id = i;
                else if (!strcmp(f[i], "Kernel Name")) col_kernel = i;
                else if (!strcmp(f[i], "Metric Name")) col_metric = i;
                else if (!strcmp(f[i], "Metric Unit")) col_unit = i;
                else if (!strcmp(f[i], "Metric Value")) col_value = i;
            }
            continue;
        }
        if (col_id < 0 || col_kernel < 0 || col_value < 0 || nf <= col_value) continue;
        int is_read = !strcmp(f[col_metric], "dram__bytes_read.sum");
        int is_write = !strcmp(f[col_metric], "dram__bytes_write.sum");
        if (!is_read && !is_write) continue;
        if (strcmp(last_id, f[col_id]) != 0) { /* a new kernel launch */
            snprintf(last_id, sizeof last_id, "%s", f[col_id]);
            if (out->nkernels < COUNTERS_MAX_KERNELS) {
                counters_kernel *k = &out->k[out->nkernels];
                /* keep the name up to the argument list */
                snprintf(k->kernel, sizeof k->kernel, "%.*s",
                         (int)strcspn(f[col_kernel], "("), f[col_kernel]);
            }
            out->nkernels++;
        }
        double v = parse_value(f[col_value], col_unit >= 0 ? f[col_unit] : "byte");
        counters_kernel *k = out->nkernels <= COUNTERS_MAX_KERNELS ? &out->k[out->nkernels - 1] : NULL;
        if (is_read) { out->read += v; if (k) k->read += v; }
        else { out->write += v; if (k) k->write += v; }
    }
    free(copy);
    if (col_metric < 0 || out->nkernels == 0) {
        snprintf(why, len, "ncu reported no kernel metrics");
        return -1;
    }
    if (out->nkernels > COUNTERS_MAX_KERNELS) out->nkernels = COUNTERS_MAX_KERNELS;
    return 0;
}

int counters_measure(const char *launcher, size_t rows, size_t cols, counters_result *out,
                     char *why, size_t len)
{
    char ncu[1024];
    if (counters_find_ncu(ncu, sizeof ncu) != 0) {
        snprintf(why, len,
                 "Nsight Compute (ncu) is not installed: it comes with the CUDA toolkit "
                 "(nsight-compute package) or from developer.nvidia.com/nsight-compute; "
                 "set NCU=/path/to/ncu if it lives elsewhere. Falling back to timing only.");
        return -1;
    }
    if (!executable(PROBE_PATH)) {
        snprintf(why, len, "the probe program %s is missing (build it: cmake --build build)",
                 PROBE_PATH);
        return -2;
    }
    /* ncu runs in a session of its own (setsid, where there is one) with no
     * terminal input: it then cannot signal or stop the process group of
     * whoever called us (a test runner, say). */
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "exec $(command -v setsid) '%s' --csv --print-units base "
             "--metrics dram__bytes_read.sum,dram__bytes_write.sum "
             "'%s' --run %s --rows %zu --cols %zu </dev/null 2>&1",
             ncu, PROBE_PATH, launcher, rows, cols);
    /* A test runner may watch its own children with a SIGCHLD handler (the
     * test framework's sandbox does, and dies when ncu exits): while ncu
     * runs, children are ours, with the default disposition. */
    struct sigaction dfl, saved;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(SIGCHLD, &dfl, &saved);
    FILE *p = popen(cmd, "r");
    if (!p) {
        sigaction(SIGCHLD, &saved, NULL);
        snprintf(why, len, "could not start ncu");
        return -2;
    }
    size_t cap = 1 << 16, used = 0;
    char *text = malloc(cap);
    size_t got;
    while (text && (got = fread(text + used, 1, cap - used - 1, p)) > 0) {
        used += got;
        if (used + 1 == cap) {
            char *bigger = realloc(text, cap *= 2);
            if (!bigger) { free(text); text = NULL; break; }
            text = bigger;
        }
    }
    int status = pclose(p);
    sigaction(SIGCHLD, &saved, NULL);
    if (!text) {
        snprintf(why, len, "out of memory reading ncu's output");
        return -2;
    }
    text[used] = '\0';
    int rc = 0;
    if (strstr(text, "ERR_NVGPUCTRPERM")) {
        snprintf(why, len,
                 "ncu may not read the GPU's performance counters here (ERR_NVGPUCTRPERM). "
                 "Run as root, or allow all users: put 'options nvidia "
                 "NVreg_RestrictProfilingToAdminUsers=0' in /etc/modprobe.d/ and reboot "
                 "(see developer.nvidia.com/ERR_NVGPUCTRPERM). Falling back to timing only.");
        rc = -1;
    } else if (counters_parse_csv(text, out, why, len) != 0) {
        const char *e = strstr(text, "==ERROR==");
        snprintf(why, len, "ncu gave no counters (exit status %d)%s%.300s", status,
                 e ? ": " : "", e ? e : "");
        rc = -2;
    }
    free(text);
    return rc;
}
