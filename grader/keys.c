/* grader/keys.c — the batch's seed and evidence salt.
 *
 * The batch secret (FUSIONLAB_GRADE_SEED, or 32 random bytes when it is not
 * set) never reaches a test. Every submission of a batch gets the same seed
 * and salt, derived from it and from every submission the batch holds (the
 * whole list, in every shard, in the order of the ids): each one's id and
 * the bytes of the files it handed in,
 *
 *   SHA-256("fusionlab-keys-2" 0 secret 0 "batch" 0 N 0 (D 0)...)
 *     -> first 32 hex digits: the seed, the next 16: the salt
 *   D = SHA-256("fusionlab-submission-1" 0 id 0 M 0 (name 0 size 0 bytes)...)
 *       (in hex; M files, each taken whole)
 *
 * so that every student meets the same inputs, and the worked solution's
 * run on them, which the verify stage bears each report out against, is
 * made once for the batch by each grader process (stage_run.c, verify_runs;
 * each --gpus worker and Slurm task is one, and without a secret each draws
 * its own random one: its inputs are then its own). A seed that a
 * submission reads from its own process is worth nothing outside that run:
 * no step of one submission can reach another's (the sandbox, steps.c), and
 * a second try, or any other change to any file of the batch, gives every
 * submission new inputs (so does grading some of a batch again on their
 * own). SHA-256 is coreutils' sha256sum, run on a file in a folder only the
 * grader may read.
 */
#define _XOPEN_SOURCE 700
#include "grade.h"
#include "proc.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* 32 random bytes, in hex, for a batch run without a secret. */
static char *random_secret(void)
{
    unsigned char b[32];
    int fd = open("/dev/urandom", O_RDONLY);
    ssize_t n = fd >= 0 ? read(fd, b, sizeof b) : -1;
    if (fd >= 0) close(fd);
    if (n != (ssize_t)sizeof b) return NULL;
    char *hex = xmalloc(2 * sizeof b + 1);
    for (size_t i = 0; i < sizeof b; ++i) snprintf(hex + 2 * i, 3, "%02x", b[i]);
    return hex;
}

static char *sha256_file(const char *path)
{
    char *argv[] = {"sha256sum", "--", (char *)path, NULL};
    proc_opts o = {.timeout_s = 60};
    proc_result r;
    char *hex = NULL;
    if (proc_run(argv, &o, &r) == 0 && strlen(r.output) >= 64) hex = xstrndup(r.output, 64);
    proc_result_free(&r);
    return hex;
}

static void add0(sbuf *b, const char *s, size_t n)
{
    sbuf_addn(b, s, n);
    sbuf_addn(b, "", 1);
}

/* SHA-256(b) in hex, b hashed in a folder only the grader may read; b is
 * freed. NULL when it could not be made. */
static char *sha256_of(grader *g, sbuf *b)
{
    char *dir = path_join(g->work, "keys");
    mkdir_p(dir);
    chmod(dir, 0700);
    char *path = path_join(dir, "input");
    int rc = write_file(path, b->s ? b->s : "", b->len);
    sbuf_free(b);
    char *hex = rc == 0 ? sha256_file(path) : NULL;
    unlink(path);
    free(path);
    free(dir);
    return hex;
}

/* The seed and salt of SHA-256(b); b is freed. */
static int keys_from(grader *g, sbuf *b, submission_keys *k)
{
    char *hex = sha256_of(g, b);
    if (hex == NULL) return -1;
    k->seed = xstrndup(hex, 32);
    k->salt = xstrndup(hex + 32, 16);
    free(hex);
    return 0;
}

static int secret_ready(grader *g)
{
    if (g->batch_secret == NULL)
        g->batch_secret = g->seed && g->seed[0] ? xstrdup(g->seed) : random_secret();
    return g->batch_secret ? 0 : -1;
}

static void add_files(sbuf *b, const intake *in)
{
    for (int i = 0; in && i < in->n_files; ++i) {
        const taken_file *f = &in->files[i];
        if (f->status != FILE_OK) continue;
        char size[32];
        snprintf(size, sizeof size, "%zu", f->len);
        add0(b, f->name, strlen(f->name));
        add0(b, size, strlen(size));
        sbuf_addn(b, f->data, f->len);
    }
}

int keys_derive(grader *g, const char *id, const intake *in, submission_keys *k)
{
    memset(k, 0, sizeof *k);
    if (secret_ready(g) != 0) return -1;
    sbuf b = {0};
    add0(&b, "fusionlab-keys-1", 16);
    add0(&b, g->batch_secret, strlen(g->batch_secret));
    add0(&b, id, strlen(id));
    add_files(&b, in);
    return keys_from(g, &b, k);
}

int keys_derive_batch(grader *g, char *const *ids, char *const *paths, int n,
                      submission_keys *k)
{
    memset(k, 0, sizeof *k);
    if (secret_ready(g) != 0) return -1;
    /* in the order of the ids, so that the same submissions give the same
     * inputs whatever order they are graded in */
    int *order = xcalloc((size_t)n + 1, sizeof *order);
    for (int i = 0; i < n; ++i) {
        int j = i;
        for (; j > 0 && strcmp(ids[order[j - 1]], ids[i]) > 0; --j) order[j] = order[j - 1];
        order[j] = i;
    }
    sbuf b = {0};
    char num[32];
    add0(&b, "fusionlab-keys-2", 16);
    add0(&b, g->batch_secret, strlen(g->batch_secret));
    add0(&b, "batch", 5);
    snprintf(num, sizeof num, "%d", n);
    add0(&b, num, strlen(num));
    int rc = 0;
    for (int o = 0; o < n && rc == 0; ++o) {
        /* each submission's files hashed on their own: one submission's
         * bytes in memory at a time */
        int i = order[o];
        intake in;
        intake_load(paths[i], &g->man, g->rub.max_file_bytes, &in);
        int m = 0;
        for (int f = 0; f < in.n_files; ++f) m += in.files[f].status == FILE_OK;
        sbuf one = {0};
        add0(&one, "fusionlab-submission-1", 22);
        add0(&one, ids[i], strlen(ids[i]));
        snprintf(num, sizeof num, "%d", m);
        add0(&one, num, strlen(num));
        add_files(&one, &in);
        intake_free(&in);
        char *hex = sha256_of(g, &one);
        if (hex == NULL) rc = -1;
        else add0(&b, hex, strlen(hex));
        free(hex);
    }
    free(order);
    if (rc != 0) {
        sbuf_free(&b);
        return -1;
    }
    return keys_from(g, &b, k);
}

void keys_copy(const submission_keys *from, submission_keys *to)
{
    to->seed = from->seed ? xstrdup(from->seed) : NULL;
    to->salt = from->salt ? xstrdup(from->salt) : NULL;
}

void keys_free(submission_keys *k)
{
    free(k->seed);
    free(k->salt);
    memset(k, 0, sizeof *k);
}
