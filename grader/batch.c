/* grader/batch.c — see batch.h. */
#define _XOPEN_SOURCE 700
#define _DEFAULT_SOURCE /* flock */
#include "batch.h"

#include <cJSON.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <unistd.h>

/* ---- ids ---------------------------------------------------------------------- */

char *batch_make_id(const char *path, const submission *subs, int n)
{
    char *base = xstrdup(path);
    size_t len = strlen(base);
    while (len > 1 && base[len - 1] == '/') base[--len] = '\0';
    char *id = xstrdup(path_base(base));
    free(base);
    static const char *const exts[] = {".tar.gz", ".tgz", ".tar", ".zip"};
    for (size_t i = 0; i < sizeof exts / sizeof exts[0]; ++i)
        if (ends_with(id, exts[i]) && strlen(id) > strlen(exts[i])) {
            id[strlen(id) - strlen(exts[i])] = '\0';
            break;
        }
    for (char *p = id; *p; ++p)
        if (!isalnum((unsigned char)*p) && *p != '-' && *p != '_' && *p != '.') *p = '_';
    if (id[0] == '.' || id[0] == '-') id[0] = '_';
    if (id[0] == '\0') {
        free(id);
        id = xstrdup("submission");
    }
    char *unique = NULL;
    for (int k = 1;; ++k) {
        char suffix[16] = "";
        if (k > 1) snprintf(suffix, sizeof suffix, "-%d", k);
        size_t keep = strlen(id), room = BATCH_ID_MAX - strlen(suffix);
        unique = xasprintf("%.*s%s", (int)(keep < room ? keep : room), id, suffix);
        int clash = 0;
        for (int i = 0; i < n && !clash; ++i)
            clash = subs[i].id != NULL && strcasecmp(subs[i].id, unique) == 0;
        if (!clash) break;
        free(unique);
    }
    free(id);
    return unique;
}

char *batch_submission_dir(const char *out, const char *id)
{
    char *subs = path_join(out, BATCH_SUBMISSIONS);
    char *dir = path_join(subs, id);
    free(subs);
    return dir;
}

/* ---- where --out and --work may be ------------------------------------------------ */

enum { IS = 1, INSIDE = 2, HOLDS = 4 };

/* `dir` (option `opt`, given as `given`) against `other` (a `what`): 1, said,
 * when their relation is one of `refused`. */
static int misplaced(const char *opt, const char *given, const char *dir, const char *what,
                     const char *other, int refused)
{
    const char *how = NULL;
    if (strcmp(dir, other) == 0) {
        if (refused & IS) how = "is";
    } else if (path_within(other, dir)) {
        if (refused & INSIDE) how = "lies inside";
    } else if (path_within(dir, other)) {
        if (refused & HOLDS) how = "holds";
    }
    if (how == NULL) return 0;
    fprintf(stderr, "fusionlab_grade: refusing %s %s: it %s %s %s (the grader writes and "
                    "deletes files there); choose another folder\n",
            opt, given, how, what, other);
    return 1;
}

int batch_check_paths(const char *course, const char *out, const char *work,
                      const strlist *paths)
{
    char *o = abs_path_any(out);
    char *w = work ? abs_path_any(work) : o ? path_join(o, ".work") : NULL;
    if (o == NULL || w == NULL) {
        fprintf(stderr, "fusionlab_grade: cannot resolve --out %s or --work %s\n", out,
                work ? work : "(default)");
        free(o);
        free(w);
        return -1;
    }
    const char *wgiven = work ? work : "(default: OUT/.work)";
    int bad_out = 0, bad_work = 0; /* one reason each is enough */
    for (int i = 0; i < paths->n && !(bad_out && bad_work); ++i) {
        char *p = abs_path_any(paths->v[i]);
        if (p == NULL) continue; /* intake says it cannot be read */
        if (!bad_out) bad_out = misplaced("--out", out, o, "the submission", p, IS | INSIDE | HOLDS);
        if (!bad_work)
            bad_work = misplaced("--work", wgiven, w, "the submission", p, IS | INSIDE | HOLDS);
        free(p);
    }
    char *c = abs_path(course); /* a missing course tree is reported later */
    if (c && !bad_out) bad_out = misplaced("--out", out, o, "the course tree", c, IS | HOLDS);
    if (c && !bad_work) bad_work = misplaced("--work", wgiven, w, "the course tree", c, IS | HOLDS);
    if (!bad_out) bad_out = misplaced("--out", out, o, "the scratch folder (--work)", w, INSIDE);
    char *subs = path_join(o, BATCH_SUBMISSIONS);
    if (!bad_work) bad_work = misplaced("--work", wgiven, w, "the results' folder", subs, IS | INSIDE);
    free(subs);
    free(c);
    free(o);
    free(w);
    return bad_out || bad_work ? -1 : 0;
}

/* ---- locks, stale files, the marker ---------------------------------------------------- */

static int lock_fd[2] = {-1, -1};

static int take_lock(const char *dir, int slot)
{
    char *path = path_join(dir, ".lock");
    /* close-on-exec: no test or build the grader runs can hold or drop it */
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0) {
        fprintf(stderr, "fusionlab_grade: cannot open %s: %s\n", path, strerror(errno));
        free(path);
        return -1;
    }
    free(path);
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        char buf[32] = {0};
        ssize_t got = pread(fd, buf, sizeof buf - 1, 0);
        long pid = got > 0 ? strtol(buf, NULL, 10) : 0;
        if (e == EWOULDBLOCK) {
            if (pid > 0)
                fprintf(stderr, "fusionlab_grade: another grading batch (pid %ld) is using %s\n",
                        pid, dir);
            else
                fprintf(stderr, "fusionlab_grade: another grading batch is using %s\n", dir);
        } else {
            fprintf(stderr, "fusionlab_grade: cannot lock %s: %s\n", dir, strerror(e));
        }
        close(fd);
        return -1;
    }
    char pid[32];
    int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)n, 0) != n)
        fprintf(stderr, "fusionlab_grade: note: cannot write the pid into %s/.lock\n", dir);
    lock_fd[slot] = fd;
    return 0;
}

static void release_locks(void)
{
    for (int i = 0; i < 2; ++i) {
        if (lock_fd[i] >= 0) close(lock_fd[i]);
        lock_fd[i] = -1;
    }
}

static int is_batch_file(const char *name)
{
    static const char *const names[] = {"roster.csv", "junit.xml"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i) {
        size_t n = strlen(names[i]);
        /* the file, NAME.partial, NAME.tmp<pid> from write_file_atomic */
        if (strncmp(name, names[i], n) == 0 && (name[n] == '\0' || name[n] == '.')) return 1;
    }
    return strcmp(name, BATCH_MARKER) == 0;
}

static void write_marker(const char *out, const char *text)
{
    char *path = path_join(out, BATCH_MARKER);
    char *when = utc_timestamp();
    char *full = xasprintf("fusion-lab grade, pid %ld, %s: %s", (long)getpid(), when, text);
    if (write_file_atomic(path, full, strlen(full)) != 0)
        fprintf(stderr, "fusionlab_grade: cannot write %s\n", path);
    free(full);
    free(when);
    free(path);
}

int batch_begin(const char *out, const char *work)
{
    if (take_lock(out, 0) != 0) return -1;
    if (work && strcmp(work, out) != 0 && take_lock(work, 1) != 0) {
        release_locks();
        return -1;
    }
    DIR *d = opendir(out);
    if (d == NULL) {
        fprintf(stderr, "fusionlab_grade: cannot read %s: %s\n", out, strerror(errno));
        release_locks();
        return -1;
    }
    strlist stale = {0};
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (is_batch_file(e->d_name)) strlist_add(&stale, e->d_name);
    closedir(d);
    int rc = 0;
    for (int i = 0; i < stale.n; ++i) {
        char *path = path_join(out, stale.v[i]);
        if (rm_rf(path) != 0) {
            fprintf(stderr, "fusionlab_grade: cannot remove the previous batch's %s\n", path);
            rc = -1;
        }
        free(path);
    }
    strlist_free(&stale);
    char *subs = path_join(out, BATCH_SUBMISSIONS);
    if (mkdir_p(subs) != 0) {
        fprintf(stderr, "fusionlab_grade: cannot create %s\n", subs);
        rc = -1;
    }
    free(subs);
    if (rc != 0) {
        release_locks();
        return -1;
    }
    write_marker(out, "a grading batch is running here, or was killed. roster.csv and "
                      "junit.xml are written only when every submission is graded (until "
                      "then: roster.csv.partial, junit.xml.partial); a results.json says "
                      "\"grading did not finish\" until its submission is graded.\n");
    return 0;
}

void batch_end(const char *out, int complete)
{
    if (complete) {
        char *path = path_join(out, BATCH_MARKER);
        unlink(path);
        free(path);
    } else {
        write_marker(out, "this grading batch was interrupted: submissions/ holds incomplete "
                          "results (their results.json say so); roster.csv.partial and "
                          "junit.xml.partial list what was graded.\n");
    }
    release_locks();
}

void batch_leave(const char *out)
{
    (void)out;
    release_locks();
}

int batch_write_file(const char *out, const char *name, const char *data, size_t len,
                     int complete)
{
    char *done = path_join(out, name);
    char *partial = xasprintf("%s.partial", done);
    int rc = write_file_atomic(complete ? done : partial, data, len);
    if (rc != 0) fprintf(stderr, "fusionlab_grade: cannot write %s\n", complete ? done : partial);
    else if (complete) unlink(partial);
    free(partial);
    free(done);
    return rc;
}

/* ---- a batch that could not start -------------------------------------------------------- */

void batch_placeholders(const char *out, const strlist *paths, const char *text)
{
    submission *ids = xcalloc((size_t)paths->n, sizeof *ids);
    char *msg = xstrdup(text);
    utf8_sanitize(msg);
    for (int i = 0; i < paths->n; ++i) {
        ids[i].id = batch_make_id(paths->v[i], ids, i);
        char *dir = batch_submission_dir(out, ids[i].id);
        rm_rf(dir);
        mkdir_p(dir);
        char *given = xstrdup(paths->v[i]);
        utf8_sanitize(given);
        cJSON *r = cJSON_CreateObject();
        cJSON_AddNumberToObject(r, "score", 0);
        cJSON_AddStringToObject(r, "output", msg);
        cJSON_AddStringToObject(r, "visibility", "visible");
        cJSON_AddItemToObject(r, "tests", cJSON_CreateArray());
        cJSON *extra = cJSON_AddObjectToObject(r, "extra_data");
        cJSON_AddStringToObject(extra, "submission", ids[i].id);
        cJSON_AddStringToObject(extra, "submission_path", given);
        cJSON_AddBoolToObject(extra, "complete", 0);
        char *json = cJSON_Print(r);
        char *path = path_join(dir, "results.json");
        if (json == NULL || write_file_atomic(path, json, strlen(json)) != 0)
            fprintf(stderr, "fusionlab_grade: cannot write %s\n", path);
        cJSON_free(json);
        cJSON_Delete(r);
        free(path);
        free(given);
        free(dir);
    }
    for (int i = 0; i < paths->n; ++i) free(ids[i].id);
    free(ids);
    free(msg);
}

void batch_not_graded(const char *out, const strlist *paths, const char *why)
{
    if (mkdir_p(out) != 0 || batch_begin(out, NULL) != 0) return;
    char *msg = xasprintf("not graded: the grader could not start: %s", why);
    batch_placeholders(out, paths, msg);
    free(msg);
    batch_end(out, 1);
}
