/* grader/ahead.c — the next lesson's build and object scan, ahead of time.
 *
 * Grading a lesson is: its files, the build and the object scan (CPU only),
 * then its tests, the speed audit, the worked solution's verifying runs and
 * the sanitizer (the GPU). Once a lesson's timed steps are over (its speed
 * suites ran with its tests, then the audit), nothing left of it times
 * anything, and the next lesson of the batch (the same submission's, or the
 * next submission's first) is built and scanned in a child process of the
 * grader while this one's verifying runs go on (the worked solution's code,
 * not the student's). When the next lesson is the same submission's, the
 * child goes on beside this lesson's sanitizer too: that runs the same
 * student's code, which may see only its own next lesson being made, and
 * times nothing. The next submission's first lesson is waited for before
 * the sanitizer: no student's code runs beside another submission's build,
 * and nothing that times runs beside any build. When the
 * next lesson's turn comes, it takes what the child found, the state,
 * summary, detail and notes prepare_lesson() would have given in this
 * process, and the build log it wrote, but only a verdict no process could
 * have changed (built and scanned clean; not handed in; refused at intake):
 * a build or scan that failed beside the verifying runs or the sanitizer
 * is done again, in turn and alone, and only that counts (and a sanitizer
 * verdict that a neighbour could have caused is checked again once the
 * child has ended: stage_run.c). A child that ends without its
 * result costs only time the same way.
 *
 * When the next lesson and the one after it are both the same submission's
 * as the lesson being graded, a second child builds the one after, at the
 * same time: a lesson's steps left after its timed ones are not always as
 * long as the next build (lesson 04's verifying runs and sanitizer, about
 * 4 s, against lesson 05's build, 8-11 s on an H100 host), and the lesson
 * before offers more (lesson 03's, about 11 s). Its result waits, kept, for
 * its turn, and both children are waited for before anything times again.
 * The two builds share the scratch build: each makes only its own lesson's
 * targets (the student library and the test program, whose folders no
 * other lesson's rules touch; stage_build.c), and the harness they link is
 * built before the batch.
 *
 * Only a lesson other than the one being graded is built ahead: both use the
 * scratch build, and rebuilding the lesson under test would replace the test
 * program its steps run. --no-build-ahead turns it off.
 */
#define _XOPEN_SOURCE 700
#include "stages.h"

#include <cJSON.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* a child builds one lesson: the next, and the one after it (above) */
#define AHEAD_SLOTS 2

typedef struct {
    pid_t pid;             /* the child, until it is reaped */
    const submission *s;   /* what it prepares */
    const lesson_info *li;
    char *path;            /* its result, under --work */
    cJSON *result;         /* once reaped: what it found, or NULL */
    int reaped;
} ahead;

static ahead slots[AHEAD_SLOTS]; /* a slot is free when neither running nor reaped */

static char *json_text(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? xstrdup(v->valuestring) : NULL;
}

static double json_num(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : 0.0;
}

/* In the child: prepare the lesson and write what came of it to `path`. */
static void child_main(grader *g, const submission *s, const lesson_info *li, const char *path,
                       const char *progress, pid_t parent)
{
    /* it ends with the grader (a grader killed outright leaves no build
     * writing into --out), yields the CPUs to the steps beside it, and holds
     * none of the GPU lock's descriptors (closed, never unlocked: the
     * parent's hold stays) */
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(1);
    setpriority(PRIO_PROCESS, 0, 10);
    if (g->gpu_fd >= 0) close(g->gpu_fd);
    if (g->gate_fd >= 0) close(g->gate_fd);
    g->gpu_fd = g->gate_fd = -1;
    lesson_result lr;
    memset(&lr, 0, sizeof lr);
    lr.li = li;
    lr.rl = rubric_find(&g->rub, li->number);
    char *summary = NULL, *detail = NULL, *why = NULL;
    lesson_state st = prepare_lesson(g, (submission *)s, &lr, progress, &summary, &detail, &why);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "state", (double)st);
    if (summary) cJSON_AddStringToObject(o, "summary", summary);
    if (detail) cJSON_AddStringToObject(o, "detail", detail);
    if (why) cJSON_AddStringToObject(o, "why", why);
    cJSON_AddNumberToObject(o, "build_s", lr.build_s);
    cJSON_AddNumberToObject(o, "scan_s", lr.scan_s);
    cJSON *notes = cJSON_AddArrayToObject(o, "notes");
    for (int i = 0; i < lr.notes.n; ++i) cJSON_AddItemToArray(notes, cJSON_CreateString(lr.notes.v[i]));
    char *text = cJSON_PrintUnformatted(o);
    int ok = text && write_file_atomic(path, text, strlen(text)) == 0;
    fflush(NULL);
    _exit(ok ? 0 : 1);
}

static ahead *find(const submission *s, const lesson_info *li)
{
    for (int i = 0; i < AHEAD_SLOTS; ++i)
        if ((slots[i].pid > 0 || slots[i].reaped) && slots[i].s == s && slots[i].li == li)
            return &slots[i];
    return NULL;
}

static void forget(ahead *a)
{
    cJSON_Delete(a->result);
    free(a->path);
    memset(a, 0, sizeof *a);
}

/* Only a verdict no process of the child's could have changed is taken
 * as it is: the files are in and built and scanned clean, or the lesson
 * was not handed in or was refused at intake. A failure of the build or
 * the scan is looked at again, in turn and alone: beside the steps of
 * the lesson before it, the child's processes shared the machine, its
 * time and the sandbox user's limits, and a step that could not start
 * or ran out of time there says nothing of the student's files. */
static int takeable(const ahead *a)
{
    if (a->result == NULL) return 0;
    lesson_state got = (lesson_state)(int)json_num(a->result, "state");
    return got == L_GRADED || got == L_NOT_SUBMITTED || got == L_REFUSED;
}

static void start_one(grader *g, const lesson_result *now, submission *s, int k,
                      const char *tag)
{
    if (s == NULL || k < 0 || k >= g->lessons.n) return;
    const lesson_info *li = manifest_find(&g->man, g->lessons.v[k]);
    /* (the lesson under test keeps its own test program; a lesson built two
     * ahead is not built again: its result waits, and one that failed is
     * prepared again in its turn, as any failure ahead) */
    if (li == NULL || li == now->li || find(s, li)) return;
    ahead *a = NULL;
    for (int i = 0; i < AHEAD_SLOTS && a == NULL; ++i)
        if (slots[i].pid <= 0 && !slots[i].reaped) a = &slots[i];
    if (a == NULL) return;
    char *path = xasprintf("%s/ahead-%ld-%d.json", g->work, (long)getpid(), (int)(a - slots));
    unlink(path);
    char *progress = xasprintf("%s (ahead)", tag ? tag : li->name);
    fflush(NULL);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) child_main(g, s, li, path, progress, parent); /* never returns */
    free(progress);
    if (pid < 0) {
        free(path);
        return; /* built in its turn */
    }
    a->pid = pid;
    a->s = s;
    a->li = li;
    a->path = path;
}

void ahead_start(grader *g, const lesson_result *now)
{
    if (g->no_build_ahead || !g->ready || proc_interrupted()) return;
    start_one(g, now, g->next_s, g->next_k, g->next_progress);
    /* g->after_s is set only when it and the next lesson are the
     * submission's being graded */
    start_one(g, now, g->after_s, g->after_k, g->after_progress);
}

/* Whether a child is building and every child building builds a lesson of
 * `s` (the one being graded): such builds may go on beside the sanitizer's
 * run of s's own code (lesson.c). */
int ahead_for(const submission *s)
{
    int any = 0;
    for (int i = 0; i < AHEAD_SLOTS; ++i)
        if (slots[i].pid > 0) {
            if (slots[i].s != s) return 0;
            any = 1;
        }
    return any;
}

/* Reap one child (stopping it first when the batch was interrupted: a
 * SIGTERM to the grader alone does not reach it) and keep what it wrote. */
static void reap(ahead *a)
{
    if (a->pid <= 0) return;
    int status = 0, signalled = 0;
    double t_kill = 0.0;
    for (;;) {
        if (proc_interrupted() && !signalled) {
            kill(a->pid, SIGTERM);
            signalled = 1;
            t_kill = now_s();
        }
        pid_t w = waitpid(a->pid, &status, signalled ? WNOHANG : 0);
        if (w == a->pid) break;
        if (w < 0 && errno != EINTR) break;
        if (signalled) {
            if (now_s() - t_kill > 10.0) kill(a->pid, SIGKILL);
            struct timespec ts = {0, 50 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        char *text = read_file(a->path, 64u << 20, NULL, NULL);
        if (text) a->result = cJSON_Parse(text);
        free(text);
    }
    unlink(a->path);
    a->pid = 0;
    a->reaped = 1;
}

/* Wait for every child building */
void ahead_finish(void)
{
    for (int i = 0; i < AHEAD_SLOTS; ++i) reap(&slots[i]);
}

int ahead_take(const submission *s, lesson_result *lr, lesson_state *st, char **summary,
               char **detail, char **why)
{
    /* a child for another submission is not what comes next: stopped and
     * forgotten (one of this submission's, for a later lesson, is kept) */
    for (int i = 0; i < AHEAD_SLOTS; ++i)
        if ((slots[i].pid > 0 || slots[i].reaped) && slots[i].s != s) {
            if (slots[i].pid > 0) kill(slots[i].pid, SIGTERM);
            reap(&slots[i]);
            forget(&slots[i]);
        }
    ahead *a = find(s, lr->li);
    if (a == NULL) return -1;
    reap(a);
    if (!takeable(a)) { /* prepared again here, in turn and alone */
        forget(a);
        return -1;
    }
    const cJSON *o = a->result;
    *st = (lesson_state)(int)json_num(o, "state");
    *summary = json_text(o, "summary");
    *detail = json_text(o, "detail");
    *why = json_text(o, "why");
    lr->build_s = json_num(o, "build_s");
    lr->scan_s = json_num(o, "scan_s");
    lr->built_ahead = *st == L_GRADED;
    const cJSON *n;
    cJSON_ArrayForEach(n, cJSON_GetObjectItemCaseSensitive(o, "notes"))
    {
        if (cJSON_IsString(n)) strlist_add(&lr->notes, n->valuestring);
    }
    forget(a);
    return 0;
}

void ahead_cancel(void)
{
    for (int i = 0; i < AHEAD_SLOTS; ++i) {
        if (slots[i].pid > 0) kill(slots[i].pid, SIGTERM);
        reap(&slots[i]);
        forget(&slots[i]);
    }
}
