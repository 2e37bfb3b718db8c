/* grader/ahead.c — the next lesson's build and object scan, ahead of time.
 *
 * Grading a lesson is: its files, the build and the object scan (CPU only),
 * then its tests, the speed audit, the worked solution's verifying runs and
 * the sanitizer (the GPU). Once a lesson's timed steps are over (its speed
 * suites ran with its tests, then the audit), nothing left of it times
 * anything, and the next lesson of the batch (the same submission's, or the
 * next submission's first) is built and scanned in a child process of the
 * grader while this one's verifying runs and sanitizer go on. When the next
 * lesson's turn comes, the grader waits for that child and takes what it
 * found: the same state, summary, detail and notes prepare_lesson() would
 * have given in this process, and the build log it wrote. Nothing that
 * times or profiles ever runs beside a build: the child starts after the
 * audit and is waited for before the next lesson's first step.
 *
 * Only a lesson other than the one being graded is built ahead: both use the
 * scratch build, and rebuilding the lesson under test would replace the test
 * program its steps run. A child that ends without its result (killed, or
 * out of memory) costs only time: the lesson is prepared again in this
 * process (the build deletes every stale object first). --no-build-ahead
 * turns it off.
 */
#define _XOPEN_SOURCE 700
#include "stages.h"

#include <cJSON.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct {
    pid_t pid;
    const submission *s;
    const lesson_info *li;
    char *path; /* the child's result, under --work */
} ahead;

static ahead pending; /* at most one child at a time */

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
                       const char *progress)
{
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

void ahead_start(grader *g, const lesson_result *now)
{
    if (g->no_build_ahead || !g->ready || pending.pid > 0 || proc_interrupted()) return;
    if (g->next_s == NULL || g->next_k < 0 || g->next_k >= g->lessons.n) return;
    const lesson_info *li = manifest_find(&g->man, g->lessons.v[g->next_k]);
    /* (the lesson under test keeps its own test program) */
    if (li == NULL || li == now->li) return;
    char *path = xasprintf("%s/ahead-%ld.json", g->work, (long)getpid());
    unlink(path);
    char *progress = xasprintf("%s (ahead)", g->next_progress ? g->next_progress : li->name);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) child_main(g, g->next_s, li, path, progress); /* never returns */
    free(progress);
    if (pid < 0) {
        free(path);
        return; /* built in its turn */
    }
    pending.pid = pid;
    pending.s = g->next_s;
    pending.li = li;
    pending.path = path;
}

/* Wait for the child; 0 and its result in `out` when it wrote one. */
static int ahead_wait(cJSON **out)
{
    *out = NULL;
    int status = 0;
    for (;;) {
        pid_t w = waitpid(pending.pid, &status, 0);
        if (w == pending.pid) break;
        if (w < 0 && errno != EINTR) break;
        if (proc_interrupted()) kill(pending.pid, SIGTERM);
    }
    int rc = -1;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        char *text = read_file(pending.path, 64u << 20, NULL, NULL);
        if (text) {
            *out = cJSON_Parse(text);
            free(text);
            if (*out) rc = 0;
        }
    }
    unlink(pending.path);
    free(pending.path);
    memset(&pending, 0, sizeof pending);
    return rc;
}

int ahead_take(grader *g, const submission *s, lesson_result *lr, lesson_state *st,
               char **summary, char **detail, char **why)
{
    (void)g;
    if (pending.pid <= 0) return -1;
    int mine = pending.s == s && pending.li == lr->li;
    if (!mine) kill(pending.pid, SIGTERM); /* not what comes next: unused */
    cJSON *o = NULL;
    if (ahead_wait(&o) != 0 || !mine) {
        cJSON_Delete(o);
        return -1;
    }
    lesson_state got = (lesson_state)(int)json_num(o, "state");
    if (got == L_INTERRUPTED && !proc_interrupted()) {
        /* the child alone was stopped: prepare it here */
        cJSON_Delete(o);
        return -1;
    }
    *st = got;
    *summary = json_text(o, "summary");
    *detail = json_text(o, "detail");
    *why = json_text(o, "why");
    lr->build_s = json_num(o, "build_s");
    lr->scan_s = json_num(o, "scan_s");
    lr->built_ahead = 1;
    const cJSON *n;
    cJSON_ArrayForEach(n, cJSON_GetObjectItemCaseSensitive(o, "notes"))
    {
        if (cJSON_IsString(n)) strlist_add(&lr->notes, n->valuestring);
    }
    cJSON_Delete(o);
    return 0;
}

void ahead_cancel(void)
{
    if (pending.pid <= 0) return;
    kill(pending.pid, SIGTERM);
    cJSON *o = NULL;
    ahead_wait(&o);
    cJSON_Delete(o);
}
