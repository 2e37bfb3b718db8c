/* tests/fl_test.c — see fl_test.h. */
#include "fl_test.h"
#include "device.h"

#include <stdio.h>
#include <stdlib.h>

#ifdef FUSIONLAB_HAVE_CJSON
#include <cJSON.h>
#endif

int fl_test_gpu_count(void) { return fl_device_count(); }

const char *fl_test_error_hint(cudaError_t e)
{
    switch (e) {
    case cudaErrorIllegalAddress:
        return " -- a kernel read or wrote outside its arrays: check the bounds "
               "mask and the index arithmetic (compute-sanitizer names the line)";
    case cudaErrorMisalignedAddress:
        return " -- a vector load/store (float4) on an address that is not "
               "16-byte aligned: check alignment before taking the vector path";
    case cudaErrorLaunchOutOfResources:
        return " -- the block uses too many registers or threads: lower "
               "threads per block";
    case cudaErrorInvalidConfiguration:
        return " -- invalid launch configuration: 1..1024 threads per block, "
               "at least one block, grid.x below 2^31";
    case cudaErrorNoKernelImageForDevice:
        return " -- the build has no code for this GPU: reconfigure with "
               "-DCMAKE_CUDA_ARCHITECTURES=native";
    case cudaErrorMemoryAllocation:
        return " -- out of device memory: is a buffer sized in elements where bytes "
               "were meant (or the reverse), or freed nowhere?";
    case cudaErrorLaunchTimeout:
        return " -- the kernel ran too long (an endless loop?)";
    default:
        return "";
    }
}

void *fl_test_dev_alloc(size_t bytes)
{
    void *p = NULL;
    cudaError_t e = cudaMalloc(&p, bytes ? bytes : 1);
    cr_assert(e == cudaSuccess, "cudaMalloc of %zu bytes failed: %s", bytes,
              cudaGetErrorString(e));
    return p;
}

void *fl_test_host_alloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    cr_assert(p != NULL, "malloc of %zu bytes failed", bytes);
    return p;
}

void fl_test_speed(const char *label, fl_variant *baseline, fl_variant *candidate,
                   double min_speedup, double min_pct_ceiling)
{
    double ceiling = 0.0;
    FL_ASSERT_CUDA(fl_copy_bandwidth_gbs(0, &ceiling));
    fl_variant v[2] = {*baseline, *candidate};
    fl_timing t[2];
    fl_timing_opts o = fl_timing_defaults();
    o.ceiling_gbs = ceiling;
    FL_ASSERT_CUDA(fl_time_variants(v, 2, &o, t));

    double speedup = t[0].us.median / t[1].us.median;
    fprintf(stderr,
            "speed %s: %s %.1f us (%.0f GB/s) | %s %.1f us (%.0f GB/s, %.0f%% of "
            "the %.0f GB/s copy ceiling) | speedup %.2fx | need >= %.2fx and >= "
            "%.0f%%\n",
            label, t[0].name, t[0].us.median, t[0].gbs, t[1].name, t[1].us.median,
            t[1].gbs, t[1].pct_of_ceiling, ceiling, speedup, min_speedup,
            min_pct_ceiling);

    int passed = t[0].check_ok && t[1].check_ok && !t[0].hidden_work &&
                 !t[1].hidden_work && speedup >= min_speedup &&
                 t[1].pct_of_ceiling >= min_pct_ceiling;
    fl_test_speed_record(label, t[0].us.median, t[1].us.median, min_speedup,
                         t[1].pct_of_ceiling, min_pct_ceiling, passed);

    for (int k = 0; k < 2; ++k) {
        cr_assert(t[k].check_ok != 0,
                  "%s %s: wrong after the timed runs (it was right before): %s",
                  t[k].name, label, t[k].check_msg);
        cr_assert(!t[k].hidden_work,
                  "%s %s: the GPU was busy %.1f us per run but the timed stream "
                  "saw only %.1f us: launch all work on the stream you are given",
                  t[k].name, label, t[k].wall_median_us, t[k].event_median_us);
    }
    cr_assert(speedup >= min_speedup,
              "%s %s: %.2fx faster than %s, need >= %.2fx (%.1f us vs %.1f us): "
              "is every intermediate kept in registers, and is each input read "
              "only once?",
              t[1].name, label, speedup, t[0].name, min_speedup, t[1].us.median,
              t[0].us.median);
    cr_assert(t[1].pct_of_ceiling >= min_pct_ceiling,
              "%s %s: %.0f GB/s is %.0f%% of this GPU's %.0f GB/s copy "
              "bandwidth, need >= %.0f%%: use coalesced (and 16-byte) loads and "
              "enough threads to keep many loads in flight",
              t[1].name, label, t[1].gbs, t[1].pct_of_ceiling, ceiling,
              min_pct_ceiling);
}

void fl_test_speed_record(const char *label, double baseline_us, double candidate_us,
                          double min_speedup, double pct_of_ceiling, double min_pct,
                          int passed)
{
    const char *path = getenv("FUSIONLAB_SPEED_LOG");
    if (path == NULL || path[0] == '\0') return;
#ifdef FUSIONLAB_HAVE_CJSON
    cJSON *o = cJSON_CreateObject();
    if (o == NULL) return;
    cJSON_AddStringToObject(o, "suite", criterion_current_suite ? criterion_current_suite->name : "");
    cJSON_AddStringToObject(o, "test", criterion_current_test ? criterion_current_test->name : "");
    cJSON_AddStringToObject(o, "label", label);
    cJSON_AddNumberToObject(o, "baseline_us", baseline_us);
    cJSON_AddNumberToObject(o, "candidate_us", candidate_us);
    cJSON_AddNumberToObject(o, "speedup", candidate_us > 0.0 ? baseline_us / candidate_us : 0.0);
    cJSON_AddNumberToObject(o, "min_speedup", min_speedup);
    cJSON_AddNumberToObject(o, "pct_of_ceiling", pct_of_ceiling);
    cJSON_AddNumberToObject(o, "min_pct", min_pct);
    cJSON_AddBoolToObject(o, "passed", passed != 0);
    char *line = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (line == NULL) return;
    /* one write of one line: the grader reads whole lines only */
    FILE *f = fopen(path, "a");
    if (f != NULL) {
        fprintf(f, "%s\n", line);
        fclose(f);
    } else {
        fprintf(stderr, "FUSIONLAB_SPEED_LOG: cannot append to %s\n", path);
    }
    cJSON_free(line);
#else
    (void)label; (void)baseline_us; (void)candidate_us; (void)min_speedup;
    (void)pct_of_ceiling; (void)min_pct; (void)passed;
    fprintf(stderr, "FUSIONLAB_SPEED_LOG is set, but the tests were built without cJSON: "
                    "no speed record written\n");
#endif
}
