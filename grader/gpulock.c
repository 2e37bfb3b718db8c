/* grader/gpulock.c — several workers on one GPU (--per-gpu K): who may use
 * it when.
 *
 * Workers that share a GPU share a lock folder (--gpu-lock DIR, made by the
 * parent: DIR/gpu and DIR/gate). A step that times, profiles or reads the
 * GPU's free memory holds the GPU alone (flock LOCK_EX on DIR/gpu); a step
 * that only computes and compares holds it shared (LOCK_SH). Each hold
 * passes DIR/gate first, so a worker waiting to hold the GPU alone stops
 * new shared holders from coming in ahead of it (writer preference: without
 * it, workers that take turns holding it shared could keep it from the
 * timed steps for as long as the batch lasts).
 *
 * The grader takes the lock before it starts a step and lets go after the
 * step has ended; the waiting happens outside every time limit (a step's
 * own limit starts when its process does; the lesson's budget leaves out
 * the waits). The descriptors are close-on-exec: no process of a step, and
 * so no student code, ever holds the lock or can reach its files (they are
 * under the grader's --work, which no sandbox binds).
 */
#define _XOPEN_SOURCE 700
#define _DEFAULT_SOURCE
#include "grade.h"
#include "proc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

static int lock_open(const char *dir, const char *name)
{
    char *path = path_join(dir, name);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
        fprintf(stderr, "fusionlab_grade: cannot open the GPU lock %s: %s\n", path,
                strerror(errno));
    free(path);
    return fd;
}

/* flock, again after a signal that did not interrupt the batch */
static int lock_wait(int fd, int op)
{
    while (flock(fd, op) != 0) {
        if (errno != EINTR || proc_interrupted()) return -1;
    }
    return 0;
}

int gpu_lock_open(grader *g)
{
    g->gpu_fd = g->gate_fd = -1;
    if (g->gpu_lock == NULL) return 0;
    g->gpu_fd = lock_open(g->gpu_lock, "gpu");
    g->gate_fd = lock_open(g->gpu_lock, "gate");
    return g->gpu_fd >= 0 && g->gate_fd >= 0 ? 0 : -1;
}

double gpu_hold(grader *g, gpu_use use)
{
    if (g->gpu_lock == NULL || g->gpu_fd < 0 || g->gate_fd < 0) return 0.0;
    double t0 = now_s();
    if (lock_wait(g->gate_fd, LOCK_EX) == 0) {
        lock_wait(g->gpu_fd, use == GPU_ALONE ? LOCK_EX : LOCK_SH);
        flock(g->gate_fd, LOCK_UN);
    }
    double waited = now_s() - t0;
    g->gpu_waited_s += waited;
    return waited;
}

void gpu_release(grader *g)
{
    if (g->gpu_lock == NULL || g->gpu_fd < 0) return;
    flock(g->gpu_fd, LOCK_UN);
}
