/* grader/keys.c — each submission's seed and evidence salt.
 *
 * The batch secret (FUSIONLAB_GRADE_SEED, or 32 random bytes when it is not
 * set) never reaches a test: each submission's runs get a seed and a salt
 * derived from it, its id and the bytes of the files it handed in,
 *
 *   SHA-256("fusionlab-keys-1" 0 secret 0 id 0 (name 0 size 0 bytes)...)
 *     -> first 32 hex digits: the seed, the next 16: the salt
 *
 * so that a seed one submission manages to read is worth nothing to any
 * other, nor to a second try with other files. SHA-256 is coreutils'
 * sha256sum, run on a file in a folder only the grader may read.
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

int keys_derive(grader *g, const char *id, const intake *in, submission_keys *k)
{
    memset(k, 0, sizeof *k);
    if (g->batch_secret == NULL) {
        g->batch_secret = g->seed && g->seed[0] ? xstrdup(g->seed) : random_secret();
        if (g->batch_secret == NULL) return -1;
    }
    sbuf b = {0};
    add0(&b, "fusionlab-keys-1", 16);
    add0(&b, g->batch_secret, strlen(g->batch_secret));
    add0(&b, id, strlen(id));
    for (int i = 0; in && i < in->n_files; ++i) {
        const taken_file *f = &in->files[i];
        if (f->status != FILE_OK) continue;
        char size[32];
        snprintf(size, sizeof size, "%zu", f->len);
        add0(&b, f->name, strlen(f->name));
        add0(&b, size, strlen(size));
        sbuf_addn(&b, f->data, f->len);
    }
    char *dir = path_join(g->work, "keys");
    mkdir_p(dir);
    chmod(dir, 0700);
    char *path = path_join(dir, "input");
    int rc = write_file(path, b.s ? b.s : "", b.len);
    sbuf_free(&b);
    char *hex = rc == 0 ? sha256_file(path) : NULL;
    unlink(path);
    free(path);
    free(dir);
    if (hex == NULL) return -1;
    k->seed = xstrndup(hex, 32);
    k->salt = xstrndup(hex + 32, 16);
    free(hex);
    return 0;
}

void keys_free(submission_keys *k)
{
    free(k->seed);
    free(k->salt);
    memset(k, 0, sizeof *k);
}
