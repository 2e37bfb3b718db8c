/* grader/util.c — see util.h. */
#define _XOPEN_SOURCE 700
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- memory and strings --------------------------------------------------- */

static void out_of_memory(size_t n)
{
    fprintf(stderr, "fusionlab_grade: out of memory (%zu bytes)\n", n);
    _exit(70);
}

void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (p == NULL) out_of_memory(n);
    return p;
}

void *xcalloc(size_t count, size_t size)
{
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (p == NULL) out_of_memory(count * size);
    return p;
}

void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (q == NULL) out_of_memory(n);
    return q;
}

char *xstrdup(const char *s) { return xstrndup(s, strlen(s)); }

char *xstrndup(const char *s, size_t n)
{
    size_t len = strnlen(s, n);
    char *d = xmalloc(len + 1);
    memcpy(d, s, len);
    d[len] = '\0';
    return d;
}

char *xvasprintf(const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0) return xstrdup("");
    char *s = xmalloc((size_t)n + 1);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    return s;
}

char *xasprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = xvasprintf(fmt, ap);
    va_end(ap);
    return s;
}

int starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

void sbuf_addn(sbuf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1) cap *= 2;
        b->s = xrealloc(b->s, cap);
        b->cap = cap;
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
}

void sbuf_add(sbuf *b, const char *s) { sbuf_addn(b, s, strlen(s)); }

void sbuf_addf(sbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = xvasprintf(fmt, ap);
    va_end(ap);
    sbuf_add(b, s);
    free(s);
}

const char *sbuf_str(sbuf *b) { return b->s ? b->s : ""; }

char *sbuf_take(sbuf *b)
{
    char *s = b->s ? b->s : xstrdup("");
    b->s = NULL;
    b->len = b->cap = 0;
    return s;
}

void sbuf_free(sbuf *b)
{
    free(b->s);
    b->s = NULL;
    b->len = b->cap = 0;
}

void strlist_add(strlist *l, const char *s)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 8;
        l->v = xrealloc(l->v, (size_t)l->cap * sizeof *l->v);
    }
    l->v[l->n++] = xstrdup(s);
}

void strlist_addf(strlist *l, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = xvasprintf(fmt, ap);
    va_end(ap);
    strlist_add(l, s);
    free(s);
}

int strlist_has(const strlist *l, const char *s)
{
    for (int i = 0; i < l->n; ++i)
        if (strcmp(l->v[i], s) == 0) return 1;
    return 0;
}

void strlist_free(strlist *l)
{
    for (int i = 0; i < l->n; ++i) free(l->v[i]);
    free(l->v);
    l->v = NULL;
    l->n = l->cap = 0;
}

void strset_add(strset *s, const char *str)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 64;
        s->v = xrealloc(s->v, s->cap * sizeof *s->v);
    }
    s->v[s->n++] = xstrdup(str);
    s->sorted = 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int strset_has(strset *s, const char *str)
{
    if (s->n == 0) return 0;
    if (!s->sorted) {
        qsort(s->v, s->n, sizeof *s->v, cmp_str);
        s->sorted = 1;
    }
    return bsearch(&str, s->v, s->n, sizeof *s->v, cmp_str) != NULL;
}

void strset_free(strset *s)
{
    for (size_t i = 0; i < s->n; ++i) free(s->v[i]);
    free(s->v);
    memset(s, 0, sizeof *s);
}

char *str_replace_all(const char *s, const char *needle, const char *with)
{
    sbuf b = {0};
    size_t nl = strlen(needle);
    if (nl == 0) return xstrdup(s);
    const char *p = s, *hit;
    while ((hit = strstr(p, needle)) != NULL) {
        sbuf_addn(&b, p, (size_t)(hit - p));
        sbuf_add(&b, with);
        p = hit + nl;
    }
    sbuf_add(&b, p);
    return sbuf_take(&b);
}

int split_words(const char *s, strlist *out, char **why)
{
    strlist words = {0};
    sbuf w = {0};
    int in_word = 0;
    *why = NULL;
    for (const char *p = s; *p; ++p) {
        char c = *p;
        if (c == ' ' || c == '\t' || c == '\n') {
            if (in_word) strlist_add(&words, sbuf_str(&w));
            sbuf_free(&w);
            in_word = 0;
            continue;
        }
        if (c == '\\' && p[1] == '\n') { /* a continued line: nothing */
            ++p;
            continue;
        }
        in_word = 1;
        if (c == '\\') {
            if (p[1] == '\0') {
                *why = xstrdup("a backslash at the end, escaping nothing");
                break;
            }
            sbuf_addn(&w, ++p, 1);
        } else if (c == '\'') {
            const char *end = strchr(p + 1, '\'');
            if (end == NULL) {
                *why = xasprintf("a ' at column %d is never closed", (int)(p - s) + 1);
                break;
            }
            sbuf_addn(&w, p + 1, (size_t)(end - p - 1)); /* ('' alone: an empty word) */
            p = end;
        } else if (c == '"') {
            const char *q = p + 1;
            for (; *q && *q != '"'; ++q) {
                if (*q == '\\' && q[1] && strchr("\\\"$`", q[1])) ++q;
                else if (*q == '\\' && q[1] == '\n') {
                    ++q;
                    continue;
                }
                sbuf_addn(&w, q, 1);
            }
            if (*q != '"') {
                *why = xasprintf("a \" at column %d is never closed", (int)(p - s) + 1);
                break;
            }
            p = q;
        } else {
            sbuf_addn(&w, p, 1);
        }
    }
    if (*why == NULL && in_word) strlist_add(&words, sbuf_str(&w));
    sbuf_free(&w);
    if (*why == NULL)
        for (int i = 0; i < words.n; ++i) strlist_add(out, words.v[i]);
    strlist_free(&words);
    return *why == NULL ? 0 : -1;
}

void sbuf_add_sh_quoted(sbuf *b, const char *s)
{
    sbuf_add(b, "'");
    for (; *s; ++s) {
        if (*s == '\'') sbuf_add(b, "'\\''");
        else sbuf_addn(b, s, 1);
    }
    sbuf_add(b, "'");
}

void make_dep_words(const char *s, strlist *out)
{
    sbuf w = {0};
    int in_word = 0;
    for (const char *p = s;; ++p) {
        char c = *p;
        if (c == '\\' && (p[1] == '\n' || (p[1] == '\r' && p[2] == '\n'))) {
            p += p[1] == '\r' ? 2 : 1; /* a continued line: a blank */
            c = ' ';
        } else if (c == '\\' && (p[1] == ' ' || p[1] == '#')) {
            sbuf_addn(&w, ++p, 1);
            in_word = 1;
            continue;
        } else if (c == '$' && p[1] == '$') {
            sbuf_addn(&w, ++p, 1);
            in_word = 1;
            continue;
        }
        if (c == '\0' || c == ' ' || c == '\t' || c == '\n' || c == '\r') {
            if (in_word) strlist_add(out, sbuf_str(&w));
            sbuf_free(&w);
            in_word = 0;
            if (c == '\0') break;
            continue;
        }
        sbuf_addn(&w, &c, 1);
        in_word = 1;
    }
    sbuf_free(&w);
}

int gpu_minor_of(const char *smi, const char *uuid, const char *proc)
{
    int minor = -1;
    char *copy = xstrdup(smi), *save = NULL;
    for (char *line = strtok_r(copy, "\n", &save); line && minor < 0;
         line = strtok_r(NULL, "\n", &save)) {
        char *comma = strchr(line, ',');
        if (comma == NULL) continue;
        *comma = '\0';
        char *bus = comma + 1;
        while (*bus == ' ') ++bus;
        bus[strcspn(bus, " \r")] = '\0';
        if (strcmp(line, uuid) != 0) continue;
        /* nvidia-smi: 00000000:19:00.0; the driver's folder: 0000:19:00.0 */
        char *colon = strchr(bus, ':');
        if (colon && colon - bus == 8 && strncmp(bus, "0000", 4) == 0) bus += 4;
        for (char *c = bus; *c; ++c)
            if (*c >= 'A' && *c <= 'F') *c = (char)(*c - 'A' + 'a');
        if (*bus == '\0' || strchr(bus, '/') || strstr(bus, "..")) break;
        char *info = xasprintf("%s/driver/nvidia/gpus/%s/information", proc, bus);
        char *text = read_file(info, 1 << 16, NULL, NULL);
        const char *m = text ? strstr(text, "Device Minor:") : NULL;
        if (m) {
            char *end = NULL;
            long v = strtol(m + strlen("Device Minor:"), &end, 10);
            if (end != m + strlen("Device Minor:") && v >= 0 && v < 4096) minor = (int)v;
        }
        free(text);
        free(info);
        break;
    }
    free(copy);
    return minor;
}

void utf8_sanitize(char *s)
{
    unsigned char *p = (unsigned char *)s, *w = p;
    while (*p) {
        unsigned c = *p;
        int n = 0;
        if (c < 0x80) {
            int bad = (c < 0x20 && c != '\n' && c != '\t' && c != '\r') || c == 0x7f;
            *w++ = bad ? '?' : (unsigned char)c;
            ++p;
            continue;
        }
        if ((c & 0xE0) == 0xC0 && c >= 0xC2) n = 1;
        else if ((c & 0xF0) == 0xE0) n = 2;
        else if ((c & 0xF8) == 0xF0 && c <= 0xF4) n = 3;
        int ok = n > 0;
        for (int i = 1; ok && i <= n; ++i)
            if ((p[i] & 0xC0) != 0x80) ok = 0;
        /* overlong three-byte forms and UTF-16 surrogates */
        if (ok && n == 2 && ((c == 0xE0 && p[1] < 0xA0) || (c == 0xED && p[1] >= 0xA0))) ok = 0;
        if (ok && n == 3 && ((c == 0xF0 && p[1] < 0x90) || (c == 0xF4 && p[1] >= 0x90))) ok = 0;
        if (!ok) {
            *w++ = '?';
            ++p;
            continue;
        }
        /* U+FFFE and U+FFFF: well-formed, but no character (XML 1.0 forbids them) */
        if (n == 2 && c == 0xEF && p[1] == 0xBF && p[2] >= 0xBE) {
            *w++ = '?';
            p += 3;
            continue;
        }
        /* the C1 controls (U+0080-U+009F) and the bidirectional overrides and
         * isolates (U+202A-U+202E, U+2066-U+2069): they make text read in
         * another order than it is written */
        int c1 = n == 1 && c == 0xC2 && p[1] <= 0x9F;
        int bidi = n == 2 && c == 0xE2 &&
                   ((p[1] == 0x80 && p[2] >= 0xAA && p[2] <= 0xAE) ||
                    (p[1] == 0x81 && p[2] >= 0xA6 && p[2] <= 0xA9));
        if (c1 || bidi) {
            *w++ = '?';
            p += n + 1;
            continue;
        }
        for (int i = 0; i <= n; ++i) *w++ = *p++;
    }
    *w = '\0';
}

/* ---- escaping ------------------------------------------------------------------ */

void xml_escape(sbuf *b, const char *s, int attr)
{
    char *t = xstrdup(s);
    utf8_sanitize(t);
    for (const char *p = t; *p;) {
        size_t run = strcspn(p, "&<>\"'\r\n\t");
        sbuf_addn(b, p, run);
        p += run;
        if (*p == '\0') break;
        switch (*p) {
        case '&': sbuf_add(b, "&amp;"); break;
        case '<': sbuf_add(b, "&lt;"); break;
        case '>': sbuf_add(b, "&gt;"); break; /* and so never "]]>" */
        case '"': sbuf_add(b, "&quot;"); break;
        case '\'': sbuf_add(b, "&apos;"); break;
        case '\r': sbuf_add(b, "&#13;"); break; /* a raw CR would be read as a line end */
        case '\n': sbuf_add(b, attr ? "&#10;" : "\n"); break;
        default: sbuf_add(b, attr ? "&#9;" : "\t"); break;
        }
        ++p;
    }
    free(t);
}

void csv_field(sbuf *b, const char *s)
{
    char *t = xstrdup(s);
    utf8_sanitize(t);
    int formula = t[0] != '\0' && strchr("=+-@\t\r", t[0]) != NULL;
    int quote = strpbrk(t, ",\"\r\n") != NULL;
    if (quote) sbuf_add(b, "\"");
    if (formula) sbuf_add(b, "'");
    for (const char *p = t; *p;) {
        size_t run = strcspn(p, "\"");
        sbuf_addn(b, p, run);
        p += run;
        if (*p == '"') {
            sbuf_add(b, "\"\"");
            ++p;
        }
    }
    if (quote) sbuf_add(b, "\"");
    free(t);
}

void md_escape(sbuf *b, const char *s)
{
    char *t = xstrdup(s);
    utf8_sanitize(t);
    int digits = 1; /* only digits so far: "1." or "1)" would start a list */
    for (const char *p = t; *p; ++p) {
        char c = *p;
        if (c == '\n' || c == '\r' || c == '\t') {
            sbuf_add(b, " ");
            digits = 0;
            continue;
        }
        int first = p == t;
        if (strchr("\\`*_[]<>|~&!#$", c) || (first && strchr("-+=", c)) ||
            (!first && digits && (c == '.' || c == ')')))
            sbuf_add(b, "\\");
        sbuf_addn(b, p, 1);
        if (!isdigit((unsigned char)c)) digits = 0;
    }
    free(t);
}

void md_code_block(sbuf *b, const char *s)
{
    char *t = xstrdup(s);
    utf8_sanitize(t);
    size_t run = 0, longest = 0;
    for (const char *p = t; *p; ++p) {
        run = *p == '`' ? run + 1 : 0;
        if (run > longest) longest = run;
    }
    size_t n = longest >= 3 ? longest + 1 : 3;
    char *fence = xmalloc(n + 1);
    memset(fence, '`', n);
    fence[n] = '\0';
    sbuf_addf(b, "%s\n%s%s%s\n", fence, t, t[0] && !ends_with(t, "\n") ? "\n" : "", fence);
    free(fence);
    free(t);
}

char *trim_middle(const char *s, size_t head, size_t tail)
{
    size_t len = strlen(s);
    if (len <= head + tail + 64) return xstrdup(s);
    size_t h = head, t = len - tail;
    /* cut at line ends when one is within 200 bytes */
    for (size_t i = h; i > 0 && h - i < 200; --i)
        if (s[i - 1] == '\n') { h = i; break; }
    for (size_t i = t; i < len && i - t < 200; ++i)
        if (s[i] == '\n') { t = i + 1; break; }
    /* never inside a UTF-8 sequence */
    while (h > 0 && ((unsigned char)s[h] & 0xC0) == 0x80) --h;
    while (t < len && ((unsigned char)s[t] & 0xC0) == 0x80) ++t;
    sbuf b = {0};
    sbuf_addn(&b, s, h);
    sbuf_addf(&b, "\n[... %zu bytes cut ...]\n", t - h);
    sbuf_add(&b, s + t);
    return sbuf_take(&b);
}

/* ---- files and paths ------------------------------------------------------- */

static char *read_stream(FILE *f, size_t cap, size_t *len, int *truncated)
{
    sbuf b = {0};
    char chunk[65536];
    size_t n;
    int more = 0;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (b.len + n > cap) {
            sbuf_addn(&b, chunk, cap - b.len);
            more = 1;
            break;
        }
        sbuf_addn(&b, chunk, n);
    }
    fclose(f);
    if (len) *len = b.len;
    if (truncated) *truncated = more;
    return sbuf_take(&b);
}

char *read_file(const char *path, size_t cap, size_t *len, int *truncated)
{
    FILE *f = fopen(path, "rb");
    return f ? read_stream(f, cap, len, truncated) : NULL;
}

char *read_step_file(const char *path, size_t cap, size_t *len, int *truncated)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return NULL;
    struct stat st;
    FILE *f = NULL;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (f = fdopen(fd, "rb")) == NULL) {
        close(fd);
        return NULL;
    }
    return read_stream(f, cap, len, truncated);
}

int write_file(const char *path, const char *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (f == NULL) return -1;
    size_t w = fwrite(data, 1, len, f);
    int rc = fclose(f);
    return (w == len && rc == 0) ? 0 : -1;
}

int write_file_atomic(const char *path, const char *data, size_t len)
{
    char *tmp = xasprintf("%s.tmp%ld", path, (long)getpid());
    int rc = write_file(tmp, data, len);
    if (rc == 0) rc = rename(tmp, path);
    if (rc != 0) unlink(tmp);
    free(tmp);
    return rc;
}

int mkdir_p(const char *path)
{
    char *p = xstrdup(path);
    for (char *q = p + 1; *q; ++q) {
        if (*q != '/') continue;
        *q = '\0';
        if (mkdir(p, 0755) != 0 && errno != EEXIST) { free(p); return -1; }
        *q = '/';
    }
    int rc = mkdir(p, 0755);
    if (rc != 0 && errno == EEXIST && is_dir(p)) rc = 0;
    free(p);
    return rc;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st; (void)ftw;
    if (flag == FTW_DP) return rmdir(path) == 0 ? 0 : -1;
    return unlink(path) == 0 ? 0 : -1;
}

/* (rm_rf's first passes: every folder readable, writable and searchable by
 * its owner, as a step may have left one that its owner, the grader or the
 * sandbox user, could not empty; links are not followed, FTW_PHYS) */
static int dnr_seen, unlock_depth;

static int own_folder(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)ftw;
    if (flag == FTW_D || flag == FTW_DNR) {
        if ((st->st_mode & S_IRWXU) != S_IRWXU) chmod(path, (st->st_mode & 0777) | S_IRWXU);
        if (flag == FTW_DNR) {
            /* unlocked now: walked into at once (a chain of locked folders
             * in one pass, up to a depth; the next pass goes on from there) */
            if (unlock_depth < 32) {
                ++unlock_depth;
                nftw(path, own_folder, 8, FTW_PHYS);
                --unlock_depth;
            } else {
                dnr_seen = 1;
            }
        }
    }
    return 0;
}

int rm_rf(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0) return errno == ENOENT ? 0 : -1;
    if (!S_ISDIR(st.st_mode)) return unlink(path);
    /* a folder that could not be read is readable after its pass, and its
     * own folders are reached by the next (a chain of them: one pass each) */
    for (int pass = 0; pass < 64; ++pass) {
        dnr_seen = 0;
        unlock_depth = 0;
        nftw(path, own_folder, 32, FTW_PHYS);
        if (!dnr_seen) break;
    }
    return nftw(path, rm_one, 32, FTW_DEPTH | FTW_PHYS);
}

int copy_file(const char *from, const char *to)
{
    size_t len = 0;
    char *data = read_file(from, (size_t)1 << 30, &len, NULL);
    if (data == NULL) return -1;
    int rc = write_file(to, data, len);
    free(data);
    return rc;
}

int is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

char *abs_path(const char *path)
{
    char buf[PATH_MAX];
    if (realpath(path, buf) == NULL) return NULL;
    return xstrdup(buf);
}

char *abs_path_any(const char *path)
{
    char *full;
    if (path[0] == '/') {
        full = xstrdup(path);
    } else {
        char cwd[PATH_MAX];
        if (getcwd(cwd, sizeof cwd) == NULL) return NULL;
        full = path_join(cwd, path);
    }
    /* the longest leading part that exists, through realpath; the rest by name */
    strlist rest = {0};
    char *head = xstrdup(full);
    char *real = NULL;
    for (;;) {
        real = abs_path(head);
        if (real != NULL) break;
        char *slash = strrchr(head, '/');
        if (slash == NULL) break;
        if (slash[1]) strlist_add(&rest, slash + 1);
        if (slash == head) {
            slash[1] = '\0'; /* "/" always resolves */
        } else {
            *slash = '\0';
        }
    }
    free(head);
    free(full);
    if (real == NULL) {
        strlist_free(&rest);
        return NULL;
    }
    sbuf b = {0};
    sbuf_add(&b, strcmp(real, "/") == 0 ? "" : real);
    free(real);
    for (int i = rest.n - 1; i >= 0; --i) {
        const char *c = rest.v[i];
        if (strcmp(c, ".") == 0) continue;
        if (strcmp(c, "..") == 0) {
            const char *slash = strrchr(sbuf_str(&b), '/');
            if (slash) {
                b.len = (size_t)(slash - b.s);
                b.s[b.len] = '\0';
            }
            continue;
        }
        sbuf_addf(&b, "/%s", c);
    }
    strlist_free(&rest);
    if (b.len == 0) sbuf_add(&b, "/");
    return sbuf_take(&b);
}

int path_within(const char *outer, const char *inner)
{
    size_t n = strlen(outer);
    if (strcmp(outer, "/") == 0) return inner[0] == '/';
    return strncmp(outer, inner, n) == 0 && (inner[n] == '\0' || inner[n] == '/');
}

char *path_join(const char *a, const char *b)
{
    if (b[0] == '/' || a[0] == '\0') return xstrdup(b);
    return xasprintf("%s%s%s", a, ends_with(a, "/") ? "" : "/", b);
}

const char *path_base(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

char *utc_timestamp(void)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    char buf[64];
    strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
    return xstrdup(buf);
}
