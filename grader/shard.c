/* grader/shard.c — see shard.h. */
#define _XOPEN_SOURCE 700
#define _DEFAULT_SOURCE
#include "shard.h"
#include "batch.h"
#include "proc.h"

#include <cJSON.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define PLAN_FORMAT "fusion-lab shard plan 1"
/* the first sandbox uid of a batch graded by several workers at once: each
 * worker's steps run as a user of their own (RLIMIT_NPROC counts per user,
 * and no worker's student code may touch another's scratch build) */
#define WORKER_UID_BASE 64000

int shard_parse(const char *v, int *i, int *n)
{
    char *end = NULL;
    long a = strtol(v, &end, 10);
    if (end == v || *end != '/') return -1;
    const char *nb = end + 1;
    long b = strtol(nb, &end, 10);
    if (end == nb || *end != '\0' || !isdigit((unsigned char)v[0])) return -1;
    if (b < 1 || b > SHARD_MAX || a < 0 || a >= b) return -1;
    *i = (int)a;
    *n = (int)b;
    return 0;
}

char *shard_root(const char *out) { return path_join(out, "shards"); }

char *shard_dir(const char *out, int i)
{
    char *root = shard_root(out);
    char *d = xasprintf("%s/%d", root, i);
    free(root);
    return d;
}

/* ---- what a shard writes ------------------------------------------------------ */

int shard_write_plan(const grader *g, int shard, int of, char *const *ids, char *const *paths,
                     int n)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "format", PLAN_FORMAT);
    cJSON_AddNumberToObject(root, "shard", shard);
    cJSON_AddNumberToObject(root, "of", of);
    char *head = roster_header(g);
    cJSON_AddStringToObject(root, "roster_header", head);
    free(head);
    cJSON *subs = cJSON_AddArrayToObject(root, "submissions");
    for (int k = 0; k < n; ++k) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "id", ids[k]);
        cJSON_AddStringToObject(e, "path", paths[k]);
        cJSON_AddItemToArray(subs, e);
    }
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    char *path = path_join(g->out, "plan.json");
    int rc = text ? write_file_atomic(path, text, strlen(text)) : -1;
    if (rc != 0) fprintf(stderr, "fusionlab_grade: cannot write %s\n", path);
    free(path);
    free(text);
    return rc;
}

int shard_write_pieces(const grader *g, const submission *s)
{
    char *dir = path_join(g->out, "pieces");
    mkdir_p(dir);
    char *row = roster_row(g, s);
    char *suite = junit_suite(g, s, NULL);
    char *csv = xasprintf("%s/%s.csv", dir, s->id);
    char *xml = xasprintf("%s/%s.xml", dir, s->id);
    /* the row last: a piece counts once its row is there */
    int rc = write_file_atomic(xml, suite, strlen(suite));
    if (rc == 0) rc = write_file_atomic(csv, row, strlen(row));
    if (rc != 0) fprintf(stderr, "fusionlab_grade: cannot write %s\n", csv);
    free(csv);
    free(xml);
    free(row);
    free(suite);
    free(dir);
    return rc;
}

/* ---- collect ------------------------------------------------------------------ */

typedef struct {
    int of;
    char *header;
    strlist ids, paths;
} plan;

static void plan_free(plan *p)
{
    free(p->header);
    strlist_free(&p->ids);
    strlist_free(&p->paths);
}

static int plan_load(const char *path, int want_shard, plan *p, char **why)
{
    memset(p, 0, sizeof *p);
    size_t len = 0;
    char *text = read_file(path, 64u << 20, &len, NULL);
    if (text == NULL) {
        *why = xasprintf("%s cannot be read", path);
        return -1;
    }
    cJSON *root = cJSON_Parse(text);
    free(text);
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(root, "format");
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(root, "shard");
    const cJSON *of = cJSON_GetObjectItemCaseSensitive(root, "of");
    const cJSON *hd = cJSON_GetObjectItemCaseSensitive(root, "roster_header");
    const cJSON *subs = cJSON_GetObjectItemCaseSensitive(root, "submissions");
    int ok = cJSON_IsString(fmt) && strcmp(fmt->valuestring, PLAN_FORMAT) == 0 &&
             cJSON_IsNumber(sh) && sh->valueint == want_shard && cJSON_IsNumber(of) &&
             of->valueint > want_shard && cJSON_IsString(hd) && cJSON_IsArray(subs);
    if (ok) {
        p->of = of->valueint;
        p->header = xstrdup(hd->valuestring);
        const cJSON *e;
        cJSON_ArrayForEach(e, subs)
        {
            const cJSON *id = cJSON_GetObjectItemCaseSensitive(e, "id");
            const cJSON *sp = cJSON_GetObjectItemCaseSensitive(e, "path");
            if (!cJSON_IsString(id) || !cJSON_IsString(sp) || strchr(id->valuestring, '/') ||
                id->valuestring[0] == '.' || id->valuestring[0] == '\0') {
                ok = 0;
                break;
            }
            strlist_add(&p->ids, id->valuestring);
            strlist_add(&p->paths, sp->valuestring);
        }
    }
    cJSON_Delete(root);
    if (!ok) {
        *why = xasprintf("%s is not shard %d's plan", path, want_shard);
        plan_free(p);
        return -1;
    }
    return 0;
}

static int plans_agree(const plan *a, const plan *b)
{
    if (a->of != b->of || strcmp(a->header, b->header) != 0 || a->ids.n != b->ids.n) return 0;
    for (int k = 0; k < a->ids.n; ++k)
        if (strcmp(a->ids.v[k], b->ids.v[k]) != 0 || strcmp(a->paths.v[k], b->paths.v[k]) != 0)
            return 0;
    return 1;
}

/* tests, failures and skipped of a <testsuite> piece */
static int suite_counts(const char *xml, junit_counts *c)
{
    const char *t = strstr(xml, "\" tests=\"");
    int a = 0, f = 0, s = 0;
    if (t == NULL ||
        sscanf(t, "\" tests=\"%d\" failures=\"%d\" errors=\"0\" skipped=\"%d\"", &a, &f, &s) != 3)
        return -1;
    c->tests += a;
    c->failures += f;
    c->skipped += s;
    return 0;
}

int collect_main(const char *out_arg, int locked)
{
    char *out = abs_path(out_arg);
    if (out == NULL || !is_dir(out)) {
        fprintf(stderr, "fusionlab_grade: --collect %s: no such folder\n", out_arg);
        free(out);
        return 2;
    }
    char *why = NULL;
    plan first;
    char *p0dir = shard_dir(out, 0);
    char *p0 = path_join(p0dir, "plan.json");
    int rc = plan_load(p0, 0, &first, &why);
    free(p0);
    free(p0dir);
    if (rc != 0) {
        fprintf(stderr, "fusionlab_grade: --collect %s: no shard 0 to start from (%s): was the "
                        "batch graded with --gpus or --slurm, and did its first shard start?\n",
                out_arg, why);
        free(why);
        free(out);
        return 2;
    }
    int of = first.of;
    /* every shard's plan, where its shard started */
    int *present = xcalloc((size_t)of, sizeof *present); /* 1: started, 2: finished */
    present[0] = 1;
    for (int i = 1; i < of; ++i) {
        char *d = shard_dir(out, i);
        char *pp = path_join(d, "plan.json");
        plan p;
        if (is_file(pp)) {
            if (plan_load(pp, i, &p, &why) != 0 || !plans_agree(&first, &p)) {
                fprintf(stderr, "fusionlab_grade: --collect %s: shard %d belongs to another "
                                "batch (%s): grade the batch again\n",
                        out_arg, i, why ? why : "its plan differs from shard 0's");
                free(why);
                if (why == NULL) plan_free(&p);
                free(pp);
                free(d);
                free(present);
                plan_free(&first);
                        free(out);
                return 2;
            }
            plan_free(&p);
            present[i] = 1;
        }
        free(pp);
        free(d);
    }
    for (int i = 0; i < of; ++i) {
        char *d = shard_dir(out, i);
        char *marker = path_join(d, BATCH_MARKER);
        if (present[i] && !is_file(marker)) present[i] = 2;
        free(marker);
        free(d);
    }
    if (!locked && batch_begin(out, NULL) != 0) {
        free(present);
        plan_free(&first);
        free(out);
        return 2;
    }

    sbuf roster = {0}, suites = {0};
    sbuf_add(&roster, first.header);
    junit_counts cnt = {0, 0, 0};
    int got = 0;
    strlist missing = {0};
    for (int k = 0; k < first.ids.n; ++k) {
        const char *id = first.ids.v[k];
        int i = k % of;
        char *d = shard_dir(out, i);
        char *src = xasprintf("%s/" BATCH_SUBMISSIONS "/%s", d, id);
        char *dst = batch_submission_dir(out, id);
        char *csv = xasprintf("%s/pieces/%s.csv", d, id);
        char *xml = xasprintf("%s/pieces/%s.xml", d, id);
        /* only a finished shard's results move: a running one still writes */
        int moved = present[i] == 2;
        if (moved && is_dir(src)) {
            rm_rf(dst);
            if (rename(src, dst) != 0) {
                fprintf(stderr, "fusionlab_grade: cannot move %s to %s: %s\n", src, dst,
                        strerror(errno));
                moved = 0;
            }
        }
        char *row = moved && is_file(csv) ? read_file(csv, 1u << 20, NULL, NULL) : NULL;
        char *suite = row ? read_file(xml, 256u << 20, NULL, NULL) : NULL;
        if (row && suite && suite_counts(suite, &cnt) == 0) {
            sbuf_add(&roster, row);
            sbuf_add(&suites, suite);
            ++got;
        } else {
            strlist_addf(&missing, "%d", i);
        }
        free(row);
        free(suite);
        free(csv);
        free(xml);
        free(src);
        free(dst);
        free(d);
    }
    int finished = 1;
    for (int i = 0; i < of; ++i) finished = finished && present[i] == 2;
    int complete = finished && got == first.ids.n;
    char *doc = junit_document(sbuf_str(&suites), cnt);
    int wrc = batch_write_file(out, "roster.csv", sbuf_str(&roster), roster.len, complete);
    if (wrc == 0) wrc = batch_write_file(out, "junit.xml", doc, strlen(doc), complete);
    free(doc);
    sbuf_free(&roster);
    sbuf_free(&suites);

    fprintf(stderr, "== collected %d of %d submissions from %d shard%s into %s/roster.csv%s and "
                    "junit.xml%s\n",
            got, first.ids.n, of, of == 1 ? "" : "s", out, complete ? "" : ".partial",
            complete ? "" : ".partial");
    for (int i = 0; i < of; ++i) {
        int lost = 0;
        for (int m = 0; m < missing.n; ++m) lost += atoi(missing.v[m]) == i;
        if (present[i] == 2 && lost == 0) continue;
        char *job = xasprintf("%s/slurm/job.sh", out);
        char *again = is_file(job) ? xasprintf("sbatch --array=%d %s", i, job)
                                   : xasprintf("the same ./lab grade command with --shard %d/%d "
                                               "and --out %s", i, of, out);
        fprintf(stderr, "   shard %d %s (%d submission%s not graded): grade it again (%s), then "
                        "collect again\n",
                i, present[i] == 0 ? "never started" : present[i] == 1 ? "did not finish"
                                                                      : "lost some results",
                lost, lost == 1 ? "" : "s", again);
        free(again);
        free(job);
    }
    if (!locked) batch_end(out, complete);
    strlist_free(&missing);
    free(present);
    plan_free(&first);
    free(out);
    return wrc != 0 ? 2 : complete ? 0 : 1;
}

/* ---- workers ------------------------------------------------------------------ */

static int slurm_pending(const char *out);

/* The start of a batch graded in shards: OUT locked (unless an uncollected
 * Slurm batch is there), every submission's results.json saying `waiting`
 * until it is collected, and no shard of an earlier batch left. 0, or -1
 * (said). */
static int sharded_begin(const shard_launch *L, const char *waiting)
{
    if (mkdir_p(L->out) != 0 || slurm_pending(L->out) || batch_begin(L->out, NULL) != 0)
        return -1;
    batch_placeholders(L->out, L->paths, waiting);
    char *root = shard_root(L->out);
    rm_rf(root);
    mkdir_p(root);
    free(root);
    return 0;
}

/* 1, said, when OUT holds a Slurm batch that was submitted and never
 * collected: its tasks may still be writing into OUT/shards. */
static int slurm_pending(const char *out)
{
    char *marker = path_join(out, BATCH_MARKER), *job = path_join(out, "slurm/job.sh");
    int pending = is_file(marker) && is_file(job);
    if (pending)
        fprintf(stderr, "fusionlab_grade: %s holds a Slurm batch that has not been collected "
                        "(its tasks may still run: squeue --name=fusionlab-grade). Collect it "
                        "(./lab grade --collect %s), or remove %s/slurm to start over there\n",
                out, out, out);
    free(marker);
    free(job);
    return pending;
}

/* The argument vector of worker/task i: the shard options first, then what
 * the instructor gave (the submissions included). */
static char **worker_argv(const shard_launch *L, int i, int of, const char *work, long uid,
                          int jobs, const char *gpu_lock)
{
    char **v = xcalloc((size_t)L->passthru.n + 16, sizeof *v);
    int k = 0;
    v[k++] = xstrdup(L->self);
    v[k++] = xstrdup("--shard");
    v[k++] = xasprintf("%d/%d", i, of);
    v[k++] = xstrdup("--out");
    v[k++] = xstrdup(L->out);
    if (work) {
        v[k++] = xstrdup("--work");
        v[k++] = xstrdup(work);
    }
    if (L->no_sandbox) {
        v[k++] = xstrdup("--no-sandbox");
    } else if (uid >= 0) {
        v[k++] = xstrdup("--sandbox-uid");
        v[k++] = xasprintf("%ld", uid);
    }
    if (jobs > 0) {
        v[k++] = xstrdup("--jobs");
        v[k++] = xasprintf("%d", jobs);
    }
    if (gpu_lock) {
        v[k++] = xstrdup("--gpu-lock");
        v[k++] = xstrdup(gpu_lock);
    }
    for (int j = 0; j < L->passthru.n; ++j) v[k++] = xstrdup(L->passthru.v[j]);
    v[k] = NULL;
    return v;
}

static void argv_free(char **v)
{
    for (char **p = v; *p; ++p) free(*p);
    free(v);
}

/* the sandbox users of `n` workers; -1 each when the grader's default (one
 * worker) or no sandbox. -1 when one of them is an account of this machine. */
static int worker_uids(const shard_launch *L, int n, long *uids)
{
    for (int i = 0; i < n; ++i) uids[i] = -1;
    if (L->no_sandbox || (n == 1 && L->sandbox_uid < 0)) {
        if (n == 1) uids[0] = L->sandbox_uid;
        return 0;
    }
    if (geteuid() != 0) {
        /* only root can start a step as another user: every worker's steps
         * run as this one, and count against one process limit */
        fprintf(stderr, "== note: not root: the %d workers' sandboxed steps all run as uid %ld "
                        "(one process limit among them); as root each gets a user of its own\n",
                n, (long)geteuid());
        return 0;
    }
    long base = L->sandbox_uid >= 0 ? L->sandbox_uid : WORKER_UID_BASE;
    for (int i = 0; i < n; ++i) {
        uids[i] = base + i;
        if (i == 0 && L->sandbox_uid >= 0) continue; /* the instructor's own choice */
        struct passwd *pw = getpwuid((uid_t)uids[i]);
        if (pw) {
            fprintf(stderr, "fusionlab_grade: worker %d would run student code as uid %ld, which "
                            "is the account '%s' here: give the first of %d unused user ids "
                            "with --sandbox-uid N (worker i runs as N + i)\n",
                    i, uids[i], pw->pw_name, n);
            return -1;
        }
    }
    return 0;
}

/* The GPUs of --gpus: "all" (CUDA_VISIBLE_DEVICES's entries as they are,
 * or every GPU nvidia-smi lists) or a comma-separated list of nvidia-smi
 * indices or UUIDs. A worker is given its GPU by UUID where nvidia-smi
 * tells it, so that CUDA's own order of devices cannot give it another one.
 * `labels` get what is printed, `ids` what CUDA_VISIBLE_DEVICES is set to. */
static int gpu_list(const char *spec, strlist *labels, strlist *ids)
{
    strlist idx = {0}, uuid = {0}; /* nvidia-smi's view, when it answers */
    char *argv[] = {"nvidia-smi", "--query-gpu=index,uuid", "--format=csv,noheader", NULL};
    proc_opts o = {.timeout_s = 30};
    proc_result r;
    if (proc_run(argv, &o, &r) == 0) {
        char *save = NULL;
        for (char *line = strtok_r(r.output, "\n", &save); line;
             line = strtok_r(NULL, "\n", &save)) {
            char *comma = strchr(line, ',');
            if (comma == NULL) continue;
            *comma = '\0';
            char *u = comma + 1;
            while (*u == ' ') ++u;
            strlist_add(&idx, line);
            strlist_add(&uuid, u);
        }
    }
    proc_result_free(&r);

    char *copy = NULL;
    const char *vis = getenv("CUDA_VISIBLE_DEVICES");
    int from_env = 0;
    if (strcmp(spec, "all") == 0) {
        if (vis && vis[0]) {
            copy = xstrdup(vis);
            from_env = 1;
        } else if (idx.n) {
            sbuf b = {0};
            for (int i = 0; i < idx.n; ++i) sbuf_addf(&b, "%s%s", i ? "," : "", idx.v[i]);
            copy = sbuf_take(&b);
        } else {
            fprintf(stderr, "fusionlab_grade: --gpus all: nvidia-smi lists no GPU here "
                            "(grade without one: --no-gpu)\n");
            strlist_free(&idx);
            strlist_free(&uuid);
            return -1;
        }
    } else {
        copy = xstrdup(spec);
    }
    int rc = 0;
    char *save = NULL;
    for (char *t = strtok_r(copy, ", \t", &save); t && rc == 0;
         t = strtok_r(NULL, ", \t", &save)) {
        for (const char *c = t; *c && rc == 0; ++c)
            if (!isalnum((unsigned char)*c) && *c != '-') {
                fprintf(stderr, "fusionlab_grade: --gpus: '%s' is not a GPU index or UUID\n", t);
                rc = -1;
            }
        if (rc) break;
        const char *id = t;
        if (!from_env)
            for (int i = 0; i < idx.n; ++i)
                if (strcmp(idx.v[i], t) == 0) id = uuid.v[i];
        if (strlist_has(ids, id)) {
            fprintf(stderr, "fusionlab_grade: --gpus: GPU %s is listed twice (two workers on "
                            "one GPU would share it in their speed checks)\n", t);
            rc = -1;
            break;
        }
        strlist_add(labels, t);
        strlist_add(ids, id);
    }
    free(copy);
    strlist_free(&idx);
    strlist_free(&uuid);
    if (rc == 0 && ids->n == 0) {
        fprintf(stderr, "fusionlab_grade: --gpus %s names no GPU\n", spec);
        rc = -1;
    }
    return rc;
}

int gpus_main(shard_launch *L, const char *spec)
{
    strlist gpus = {0}, cuda_ids = {0};
    if (gpu_list(spec, &gpus, &cuda_ids) != 0) {
        strlist_free(&gpus);
        strlist_free(&cuda_ids);
        return 2;
    }
    int per = L->per_gpu > 1 ? L->per_gpu : 1;
    int n = gpus.n * per < L->n_subs ? gpus.n * per : L->n_subs;
    long *uids = xcalloc((size_t)n, sizeof *uids);
    if (worker_uids(L, n, uids) != 0 ||
        sharded_begin(L, "grading did not finish: the batch is being graded on several GPUs")) {
        free(uids);
        strlist_free(&gpus);
        strlist_free(&cuda_ids);
        return 2;
    }
    char *work = L->work ? abs_path_any(L->work) : path_join(L->out, ".work");
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (cpus < 1) cpus = 2;
    int jobs = L->jobs_given ? 0 : cpus / n > 0 ? (int)(cpus / n) : 1;
    int ngpu = n < gpus.n ? n : gpus.n;
    if (per == 1)
        fprintf(stderr, "== grading %d submission%s on %d GPU%s, one worker each:\n", L->n_subs,
                L->n_subs == 1 ? "" : "s", n, n == 1 ? "" : "s");
    else
        fprintf(stderr, "== grading %d submission%s on %d GPU%s, %d workers in all (up to %d a "
                "GPU; what times or reads the free memory runs alone on its GPU):\n",
                L->n_subs, L->n_subs == 1 ? "" : "s", ngpu, ngpu == 1 ? "" : "s", n, per);
    pid_t *pids = xcalloc((size_t)n, sizeof *pids);
    for (int i = 0; i < n && !proc_interrupted(); ++i) {
        int gi = i % gpus.n; /* worker i's GPU: round robin */
        char *w = per == 1 ? xasprintf("%s/gpu-%s", work, gpus.v[gi])
                           : xasprintf("%s/gpu-%s-w%d", work, gpus.v[gi], i / gpus.n);
        /* the lock the workers of one GPU share (gpulock.c); under --work,
         * which no sandbox binds */
        char *lock = NULL;
        if (per > 1) {
            lock = xasprintf("%s/gpu-%s.lock", work, gpus.v[gi]);
            if (mkdir_p(lock) != 0) {
                fprintf(stderr, "fusionlab_grade: cannot create %s\n", lock);
                free(lock);
                free(w);
                break;
            }
            /* the GPU's reference is measured anew for each batch
             * (reference_for_batch): none from an earlier one */
            char *ref = path_join(lock, "reference.json");
            if (i < gpus.n && unlink(ref) != 0 && errno != ENOENT) {
                fprintf(stderr, "fusionlab_grade: cannot remove %s: %s\n", ref,
                        strerror(errno));
                free(ref);
                free(lock);
                free(w);
                break;
            }
            free(ref);
        }
        char **argv = worker_argv(L, i, n, w, uids[i], jobs, lock);
        free(lock);
        fprintf(stderr, "   worker %d: GPU %s", i, gpus.v[gi]);
        if (strcmp(gpus.v[gi], cuda_ids.v[gi]) != 0) fprintf(stderr, " (%s)", cuda_ids.v[gi]);
        fprintf(stderr, ", shard %d of %d, scratch %s", i, n, w);
        if (uids[i] >= 0) fprintf(stderr, ", sandbox uid %ld", uids[i]);
        fprintf(stderr, "\n");
        fflush(stderr);
        pid_t parent = getpid();
        pid_t pid = fork();
        if (pid == 0) {
            /* a worker ends with the batch that started it */
            prctl(PR_SET_PDEATHSIG, SIGTERM);
            if (getppid() != parent) _exit(130);
            setenv("CUDA_VISIBLE_DEVICES", cuda_ids.v[gi], 1);
            setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID", 1);
            execv(argv[0], argv);
            fprintf(stderr, "fusionlab_grade: cannot start worker %d (%s): %s\n", i, argv[0],
                    strerror(errno));
            _exit(127);
        }
        pids[i] = pid;
        argv_free(argv);
        free(w);
    }
    int failed = 0, left = 0, signalled = 0;
    for (int i = 0; i < n; ++i) left += pids[i] > 0;
    while (left > 0) {
        if (proc_interrupted() && !signalled) {
            for (int i = 0; i < n; ++i)
                if (pids[i] > 0) kill(pids[i], SIGTERM);
            signalled = 1;
        }
        int status = 0;
        pid_t pid = waitpid(-1, &status, 0);
        if (pid < 0) {
            if (errno != EINTR) break;
            if (proc_interrupted() && !signalled) {
                for (int i = 0; i < n; ++i)
                    if (pids[i] > 0) kill(pids[i], SIGTERM);
                signalled = 1;
            }
            continue;
        }
        for (int i = 0; i < n; ++i)
            if (pids[i] == pid) {
                pids[i] = 0;
                --left;
                int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
                if (code != 0) {
                    ++failed;
                    fprintf(stderr, "== worker %d (GPU %s) ended with status %d\n", i,
                            gpus.v[i % gpus.n], code);
                }
            }
    }
    int rc = collect_main(L->out, 1);
    batch_end(L->out, rc == 0);
    free(pids);
    free(work);
    free(uids);
    strlist_free(&gpus);
    strlist_free(&cuda_ids);
    if (proc_interrupted()) return 130;
    return rc == 0 && failed == 0 ? 0 : rc == 2 ? 2 : 1;
}

/* ---- Slurm -------------------------------------------------------------------- */

/* `path` for sbatch's filename patterns (--output): a '%' stands for
 * itself only doubled */
static char *slurm_pattern_path(const char *path) { return str_replace_all(path, "%", "%%"); }

/* One #SBATCH line: sbatch reads the rest of the line as a command line of
 * its own, quotes included, so an option with a blank or a quote in it is
 * written in double quotes (a " or \ inside escaped) */
static void sbatch_line(sbuf *b, const char *opt)
{
    sbuf_add(b, "#SBATCH ");
    if (strpbrk(opt, " \t\r\v\f\"'\\#") == NULL) { /* (an unquoted # starts a comment) */
        sbuf_add(b, opt);
    } else {
        sbuf_add(b, "\"");
        for (const char *p = opt; *p; ++p) {
            if (*p == '"' || *p == '\\') sbuf_add(b, "\\");
            sbuf_addn(b, p, 1);
        }
        sbuf_add(b, "\"");
    }
    sbuf_add(b, "\n");
}

int slurm_main(shard_launch *L, const char *sbatch_opts, int shards)
{
    /* the instructor's sbatch options, split as a shell would (quotes keep
     * blanks: --comment='class of 2026') */
    strlist opt_words = {0};
    char *why = NULL;
    if (split_words(sbatch_opts, &opt_words, &why) != 0) {
        fprintf(stderr, "fusionlab_grade: --slurm '%s': %s\n", sbatch_opts, why);
        free(why);
        return 2;
    }
    if (strchr(L->out, '\\')) { /* sbatch: a backslash in a file name turns its patterns off */
        fprintf(stderr, "fusionlab_grade: --slurm: OUT (%s) holds a backslash, which would keep "
                        "Slurm from naming each task's log: choose another folder\n", L->out);
        strlist_free(&opt_words);
        return 2;
    }
    for (int j = 0; j < opt_words.n; ++j)
        if (strchr(opt_words.v[j], '\n')) {
            fprintf(stderr, "fusionlab_grade: --slurm: option %d holds a newline (a #SBATCH line "
                            "cannot)\n", j + 1);
            strlist_free(&opt_words);
            return 2;
        }
    int n = shards > 0 ? shards : (L->n_subs + 7) / 8;
    if (n > L->n_subs) n = L->n_subs;
    if (n < 1) n = 1;
    long *uids = xcalloc((size_t)n, sizeof *uids);
    char cwd[4096];
    if (worker_uids(L, n, uids) != 0) {
        free(uids);
        strlist_free(&opt_words);
        return 2;
    }
    if (getcwd(cwd, sizeof cwd) == NULL) {
        fprintf(stderr, "fusionlab_grade: cannot tell the current folder\n");
        free(uids);
        strlist_free(&opt_words);
        return 2;
    }
    if (sharded_begin(L, "grading did not finish: the batch was submitted to Slurm and has "
                         "not been collected")) {
        free(uids);
        strlist_free(&opt_words);
        return 2;
    }
    char *log_pattern = slurm_pattern_path(L->out);
    char *sdir = path_join(L->out, "slurm");
    rm_rf(sdir);
    mkdir_p(sdir);

    /* the task's command line: shard i of n; its own scratch folder under
     * --work when one was given (tasks may share a node), its own sandbox
     * user when several run (uid base + i) */
    sbuf job = {0};
    sbuf_addf(&job, "#!/bin/sh\n# fusion-lab grade: Slurm array task i grades shard i of %d "
                    "(written by ./lab grade --slurm;\n# collect with ./lab grade --collect "
                    "OUT once every task has ended)\n",
              n);
    /* the instructor's sbatch options, so that a task run again with
     * `sbatch --array=i job.sh` gets the same partition, GPU and limits */
    sbuf_add(&job, "#SBATCH --job-name=fusionlab-grade\n");
    {
        char *o = xasprintf("--output=%s/slurm/shard-%%a.log", log_pattern);
        sbatch_line(&job, o);
        free(o);
    }
    for (int j = 0; j < opt_words.n; ++j)
        if (strcmp(opt_words.v[j], "--wait") != 0 && strcmp(opt_words.v[j], "-W") != 0)
            sbatch_line(&job, opt_words.v[j]);
    sbuf_add(&job, "set -eu\n");
    sbuf_add(&job, "i=${SLURM_ARRAY_TASK_ID:?submit this with sbatch --array=0-");
    sbuf_addf(&job, "%d}\n", n - 1);
    /* a computed sandbox user (every task's, but task 0's when it is the
     * instructor's own --sandbox-uid) must be no account on the node the
     * task runs on: the submitting host could only look at its own */
    sbuf_add(&job, "unused=--sandbox-uid-unused\n");
    if (L->sandbox_uid >= 0) sbuf_add(&job, "[ \"$i\" != 0 ] || unused=\n");
    sbuf_add(&job, "cd ");
    sbuf_add_sh_quoted(&job, cwd);
    sbuf_add(&job, "\nexec ");
    sbuf_add_sh_quoted(&job, L->self);
    sbuf_addf(&job, " --shard \"$i/%d\" --out ", n);
    sbuf_add_sh_quoted(&job, L->out);
    if (L->work) {
        char *w = abs_path_any(L->work);
        sbuf_add(&job, " --work ");
        sbuf_add_sh_quoted(&job, w ? w : L->work);
        sbuf_add(&job, "\"/shard-$i\"");
        free(w);
    }
    /* a computed user (every task's but the instructor's own --sandbox-uid
     * for task 0) must be no account on the node the task runs on either */
    if (L->no_sandbox) sbuf_add(&job, " --no-sandbox");
    else if (uids[0] >= 0 && n > 1)
        sbuf_addf(&job, " --sandbox-uid \"$((%ld + i))\" $unused", uids[0]);
    else if (uids[0] >= 0) sbuf_addf(&job, " --sandbox-uid %ld", uids[0]);
    for (int j = 0; j < L->passthru.n; ++j) {
        sbuf_add(&job, " ");
        sbuf_add_sh_quoted(&job, L->passthru.v[j]);
    }
    sbuf_add(&job, "\n");
    char *script = path_join(sdir, "job.sh");
    int rc = write_file(script, sbuf_str(&job), job.len);
    sbuf_free(&job);
    if (rc == 0) rc = chmod(script, 0755);
    if (rc != 0) {
        fprintf(stderr, "fusionlab_grade: cannot write %s\n", script);
        batch_end(L->out, 0);
        free(script);
        free(sdir);
        free(uids);
        free(log_pattern);
        strlist_free(&opt_words);
        return 2;
    }

    strlist argv = {0};
    strlist_add(&argv, "sbatch");
    strlist_addf(&argv, "--array=0-%d", n - 1);
    strlist_add(&argv, "--job-name=fusionlab-grade");
    strlist_addf(&argv, "--output=%s/slurm/shard-%%a.log", log_pattern);
    int wait = 0;
    for (int j = 0; j < opt_words.n; ++j) {
        strlist_add(&argv, opt_words.v[j]);
        if (strcmp(opt_words.v[j], "--wait") == 0 || strcmp(opt_words.v[j], "-W") == 0) wait = 1;
    }
    strlist_add(&argv, script);
    char **av = xcalloc((size_t)argv.n + 1, sizeof *av);
    for (int j = 0; j < argv.n; ++j) av[j] = argv.v[j];
    fprintf(stderr, "== submitting %d submission%s as a Slurm job array of %d task%s:", L->n_subs,
            L->n_subs == 1 ? "" : "s", n, n == 1 ? "" : "s");
    for (int j = 0; j < argv.n; ++j) fprintf(stderr, " %s", argv.v[j]);
    fprintf(stderr, "\n");
    /* the lock is not held while the tasks run (they lock their own shard
     * folders); BATCH_IN_PROGRESS stays until --collect finds them done */
    batch_leave(L->out);
    proc_opts o = {.timeout_s = 0, .cwd = cwd};
    proc_result r;
    rc = proc_run(av, &o, &r);
    fputs(r.output, stderr);
    int code = 0;
    if (!r.started || (rc != 0 && !wait)) {
        fprintf(stderr, "fusionlab_grade: sbatch failed (%s); nothing was submitted\n",
                r.started ? "see above" : "is Slurm's client installed? Debian: slurm-client");
        code = 2;
    } else if (wait && (r.interrupted || proc_interrupted())) {
        fprintf(stderr, "== stopped while waiting for the job array: its tasks may still run "
                        "(squeue --name=fusionlab-grade); collect when they have ended:\n   "
                        "./lab grade --collect %s\n", L->out);
        code = 130;
    } else if (wait) {
        fprintf(stderr, "== the job array has ended%s; collecting\n",
                rc == 0 ? "" : " (sbatch --wait reports a task that failed)");
        code = collect_main(L->out, 0);
    } else {
        fprintf(stderr, "== submitted. Task i's log: %s/shard-i.log. When every task has ended "
                        "(squeue --name=fusionlab-grade), put the batch together:\n   ./lab grade "
                        "--collect %s\n",
                sdir, L->out);
    }
    proc_result_free(&r);
    free(av);
    strlist_free(&argv);
    free(script);
    free(sdir);
    free(uids);
    free(log_pattern);
    strlist_free(&opt_words);
    return code;
}
