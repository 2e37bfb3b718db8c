/* grader/intake.c — see intake.h. */
#define _XOPEN_SOURCE 700
#include "intake.h"
#include "proc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_ENTRIES 20000
#define MAX_DEPTH 24
#define MAX_IGNORED_LISTED 60

typedef enum { ENT_FILE, ENT_DIR, ENT_LINK, ENT_OTHER } entry_kind;

typedef struct {
    char *raw;          /* the name as the archive lists it (what tar/unzip need) */
    char *name;         /* normalised: no leading ./ */
    entry_kind kind;
    long long size;
    int order;          /* position in the listing */
} entry;

typedef struct {
    entry *v;
    int n, cap;
    int truncated;
} entry_list;

static void entry_add(entry_list *l, const char *raw, entry_kind kind, long long size)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 64;
        l->v = xrealloc(l->v, (size_t)l->cap * sizeof *l->v);
    }
    entry *e = &l->v[l->n++];
    e->raw = xstrdup(raw);
    const char *s = raw;
    while (s[0] == '.' && s[1] == '/') {
        s += 2;
        while (*s == '/') ++s;
    }
    e->name = xstrdup(s);
    size_t len = strlen(e->name);
    while (len > 1 && e->name[len - 1] == '/') e->name[--len] = '\0';
    e->kind = kind;
    e->size = size;
    e->order = l->n - 1;
}

static void entries_free(entry_list *l)
{
    for (int i = 0; i < l->n; ++i) {
        free(l->v[i].raw);
        free(l->v[i].name);
    }
    free(l->v);
}

/* ---- folders ---------------------------------------------------------------- */

static void walk(const char *root, const char *rel, int depth, entry_list *out)
{
    char *dir = rel[0] ? path_join(root, rel) : xstrdup(root);
    DIR *d = opendir(dir);
    if (d == NULL) {
        free(dir);
        return;
    }
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) continue;
        if (out->n >= MAX_ENTRIES) {
            out->truncated = 1;
            break;
        }
        char *r = rel[0] ? xasprintf("%s/%s", rel, de->d_name) : xstrdup(de->d_name);
        char *full = path_join(root, r);
        struct stat st;
        if (lstat(full, &st) == 0) {
            if (S_ISLNK(st.st_mode)) entry_add(out, r, ENT_LINK, 0);
            else if (S_ISREG(st.st_mode)) entry_add(out, r, ENT_FILE, (long long)st.st_size);
            else if (S_ISDIR(st.st_mode)) {
                entry_add(out, r, ENT_DIR, 0);
                if (depth < MAX_DEPTH) walk(root, r, depth + 1, out);
            } else entry_add(out, r, ENT_OTHER, 0);
        }
        free(full);
        free(r);
    }
    closedir(d);
    free(dir);
}

/* Read a regular file of the folder without following a link at the last
 * step; at most max+1 bytes. */
static char *read_folder_file(const char *root, const char *rel, long max, size_t *len)
{
    char *full = path_join(root, rel);
    int fd = open(full, O_RDONLY | O_NOFOLLOW);
    free(full);
    if (fd < 0) return NULL;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return NULL;
    }
    sbuf b = {0};
    char chunk[65536];
    ssize_t n;
    while ((n = read(fd, chunk, sizeof chunk)) > 0) {
        sbuf_addn(&b, chunk, (size_t)n);
        if ((long)b.len > max) break;
    }
    close(fd);
    *len = b.len;
    return sbuf_take(&b);
}

/* ---- archives --------------------------------------------------------------- */

/* Split text into lines (in place); returns the count. */
static int split_lines(char *text, char ***lines)
{
    int n = 0, cap = 64;
    char **v = xmalloc((size_t)cap * sizeof *v);
    char *p = text;
    while (*p) {
        char *e = strchr(p, '\n');
        if (e) *e = '\0';
        if (n == cap) {
            cap *= 2;
            v = xrealloc(v, (size_t)cap * sizeof *v);
        }
        v[n++] = p;
        if (!e) break;
        p = e + 1;
    }
    *lines = v;
    return n;
}

static int run_listing(char *const argv[], char **out, char **why)
{
    /* the listing alone (tar's warnings go to stderr); on failure, again
     * with stderr for the reason */
    proc_opts o = {.timeout_s = 60, .head = 8 << 20, .tail = 1, .discard_stderr = 1};
    proc_result r;
    int rc = proc_run(argv, &o, &r);
    if (rc != 0) {
        proc_result_free(&r);
        o.discard_stderr = 0;
        proc_run(argv, &o, &r);
        char *msg = trim_middle(r.output, 400, 200);
        size_t n = strlen(msg);
        while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == ' ')) msg[--n] = '\0';
        const char *m = msg;
        while (*m == '\n') ++m;
        *why = xasprintf("%s could not list it%s: %s", argv[0], r.timed_out ? " (timed out)" : "",
                         m);
        free(msg);
        proc_result_free(&r);
        return -1;
    }
    if (r.output_bytes > (size_t)(8 << 20)) {
        *why = xstrdup("its listing is larger than 8 MiB: too many entries");
        proc_result_free(&r);
        return -1;
    }
    *out = r.output;
    return 0;
}

/* `tar -tf` gives the names, `tar -tvf` the types and sizes, line for line. */
static int list_tar(const char *archive, entry_list *out, char **why)
{
    char *names = NULL, *verbose = NULL;
    char *a1[] = {"tar", "--quoting-style=escape", "-tf", (char *)archive, NULL};
    char *a2[] = {"tar", "--quoting-style=escape", "-tvf", (char *)archive, NULL};
    if (run_listing(a1, &names, why) != 0) return -1;
    if (run_listing(a2, &verbose, why) != 0) {
        free(names);
        return -1;
    }
    char **nl, **vl;
    int nn = split_lines(names, &nl), nv = split_lines(verbose, &vl);
    int rc = 0;
    if (nn != nv) {
        *why = xasprintf("its two listings disagree (%d and %d entries)", nn, nv);
        rc = -1;
    }
    for (int i = 0; rc == 0 && i < nn; ++i) {
        if (nl[i][0] == '\0') continue;
        if (out->n >= MAX_ENTRIES) {
            *why = xasprintf("it has more than %d entries", MAX_ENTRIES);
            rc = -1;
            break;
        }
        entry_kind k;
        switch (vl[i][0]) {
        case '-': k = ENT_FILE; break;
        case 'd': k = ENT_DIR; break;
        case 'l': case 'h': k = ENT_LINK; break;
        default: k = ENT_OTHER; break;
        }
        long long size = 0;
        char perm[32], owner[256], sz[64];
        if (sscanf(vl[i], "%31s %255s %63s", perm, owner, sz) == 3) size = atoll(sz);
        entry_add(out, nl[i], k, size);
    }
    free(nl);
    free(vl);
    free(names);
    free(verbose);
    return rc;
}

/* `unzip -Z1` gives the names, `unzip -Z` (zipinfo) the types and sizes. */
static int list_zip(const char *archive, entry_list *out, char **why)
{
    char *names = NULL, *info = NULL;
    char *a1[] = {"unzip", "-Z1", (char *)archive, NULL};
    char *a2[] = {"unzip", "-Z", (char *)archive, NULL};
    if (run_listing(a1, &names, why) != 0) return -1;
    if (run_listing(a2, &info, why) != 0) {
        free(names);
        return -1;
    }
    char **nl, **il;
    int nn = split_lines(names, &nl), ni = split_lines(info, &il);
    /* zipinfo's entry lines: perms version os size type method date time name */
    int k = 0, rc = 0;
    for (int i = 0; i < ni && rc == 0; ++i) {
        char perm[32], ver[32], os[32], sz[64];
        if (sscanf(il[i], "%31s %31s %31s %63s", perm, ver, os, sz) != 4) continue;
        if (strlen(perm) < 7 || !(ver[0] >= '0' && ver[0] <= '9' && strchr(ver, '.'))) continue;
        if (k >= nn) break;
        if (out->n >= MAX_ENTRIES) {
            *why = xasprintf("it has more than %d entries", MAX_ENTRIES);
            rc = -1;
            break;
        }
        entry_kind kind = ENT_FILE;
        if (perm[0] == 'l') kind = ENT_LINK;
        else if (perm[0] == 'd' || ends_with(nl[k], "/")) kind = ENT_DIR;
        else if (perm[0] != '-' && perm[0] != '?') kind = ENT_OTHER;
        entry_add(out, nl[k], kind, atoll(sz));
        ++k;
    }
    if (rc == 0 && k != nn) {
        *why = xasprintf("its two listings disagree (%d and %d entries)", nn, k);
        rc = -1;
    }
    free(nl);
    free(il);
    free(names);
    free(info);
    return rc;
}

/* Read one member to memory through a pipe; at most max+1 bytes kept. */
static char *read_member(int zip, const char *archive, const entry *e, int occurrence, long max,
                         size_t *len, char **why)
{
    char occ[32];
    snprintf(occ, sizeof occ, "--occurrence=%d", occurrence);
    char *tar_argv[] = {"tar", "--no-wildcards", occ, "-xOf", (char *)archive, "--", e->raw, NULL};
    char *zip_argv[] = {"unzip", "-p", (char *)archive, e->raw, NULL};
    proc_opts o = {.timeout_s = 60, .head = (size_t)max + 1, .tail = 1, .discard_stderr = 1};
    proc_result r;
    int rc = proc_run(zip ? zip_argv : tar_argv, &o, &r);
    if (rc != 0) {
        proc_result_free(&r);
        o.discard_stderr = 0; /* again, for the reason */
        proc_run(zip ? zip_argv : tar_argv, &o, &r);
        char *msg = trim_middle(r.output, 300, 100);
        *why = xasprintf("could not be extracted: %s", msg);
        free(msg);
        proc_result_free(&r);
        return NULL;
    }
    /* the capture keeps the head and a one-byte tail: the size is what counts */
    *len = r.output_bytes;
    if (r.output_bytes > (size_t)max) {
        proc_result_free(&r);
        return xstrdup("");
    }
    return r.output;
}

/* ---- the common part -------------------------------------------------------- */

/* By name; entries of the same name keep their archive order (the last copy
 * wins, as when tar extracts). */
static int entry_cmp(const void *a, const void *b)
{
    const entry *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    if (c != 0) return c;
    return (x->order > y->order) - (x->order < y->order);
}

static const char *unsafe_reason(const entry *e)
{
    if (e->raw[0] == '/') return "absolute path";
    const char *p = e->raw;
    while (*p) {
        const char *s = strchr(p, '/');
        size_t n = s ? (size_t)(s - p) : strlen(p);
        if (n == 2 && p[0] == '.' && p[1] == '.') return "contains ..";
        if (!s) break;
        p = s + 1;
    }
    if (e->kind == ENT_LINK) return "link";
    if (e->kind == ENT_OTHER) return "special file (device, pipe or socket)";
    return NULL;
}

/* A prefix we can hand to tar and unzip literally. */
static int usable_prefix(const char *p)
{
    if (p[0] == '-') return 0;
    for (; *p; ++p)
        if (*p == '*' || *p == '?' || *p == '[' || *p == ']' || *p == '\\') return 0;
    return 1;
}

static int count_matches(const entry_list *l, const manifest *m, const char *prefix)
{
    int hits = 0;
    for (int i = 0; i < l->n; ++i) {
        if (l->v[i].kind == ENT_DIR || !starts_with(l->v[i].name, prefix)) continue;
        const char *rest = l->v[i].name + strlen(prefix);
        for (int j = 0; j < m->n; ++j) {
            size_t nl = strlen(m->lessons[j].name);
            if (strncmp(rest, m->lessons[j].name, nl) != 0 || rest[nl] != '/') continue;
            if (strlist_has(&m->lessons[j].exercise, rest + nl + 1)) ++hits;
        }
    }
    return hits;
}

/* The folder the lesson folders sit in: "", "lessons/", "T/" or "T/lessons/"
 * for a top-level folder T; the one with the most manifest files wins. */
static char *choose_prefix(const entry_list *l, const manifest *m)
{
    strlist cands = {0};
    strlist_add(&cands, "");
    strlist_add(&cands, "lessons/");
    for (int i = 0; i < l->n; ++i) {
        const char *slash = strchr(l->v[i].name, '/');
        if (slash == NULL) continue;
        char *top = xstrndup(l->v[i].name, (size_t)(slash - l->v[i].name) + 1);
        if (!strlist_has(&cands, top) && usable_prefix(top)) {
            strlist_add(&cands, top);
            strlist_addf(&cands, "%slessons/", top);
        }
        free(top);
        if (cands.n > 200) break;
    }
    int best = 0, best_hits = 0;
    for (int i = 0; i < cands.n; ++i) {
        int h = count_matches(l, m, cands.v[i]);
        if (h > best_hits) {
            best_hits = h;
            best = i;
        }
    }
    char *p = xstrdup(cands.v[best]);
    strlist_free(&cands);
    return p;
}

static int looks_binary(const char *data, size_t len)
{
    size_t ctrl = 0;
    for (size_t i = 0; i < len; ++i) {
        unsigned char c = (unsigned char)data[i];
        if (c == 0) return 1;
        if (c < 0x20 && c != '\n' && c != '\t' && c != '\r' && c != '\f') ++ctrl;
    }
    return len > 0 && ctrl * 20 > len; /* more than 5% control bytes */
}

static void add_ignored(intake *in, const char *name, const char *why)
{
    if (in->ignored.n == MAX_IGNORED_LISTED) {
        strlist_add(&in->ignored, "... (more not listed)");
        return;
    }
    if (in->ignored.n > MAX_IGNORED_LISTED) return;
    if (why) strlist_addf(&in->ignored, "%s (%s)", name, why);
    else strlist_add(&in->ignored, name);
}

void intake_load(const char *path, const manifest *m, long max_bytes, intake *in)
{
    memset(in, 0, sizeof *in);
    in->path = xstrdup(path);
    int nfiles = 0;
    for (int j = 0; j < m->n; ++j) nfiles += m->lessons[j].exercise.n;
    in->files = xcalloc((size_t)nfiles, sizeof *in->files);
    for (int j = 0; j < m->n; ++j)
        for (int k = 0; k < m->lessons[j].exercise.n; ++k) {
            taken_file *f = &in->files[in->n_files++];
            f->lesson = &m->lessons[j];
            f->name = m->lessons[j].exercise.v[k];
            f->status = FILE_MISSING;
        }

    struct stat st;
    int zip = 0, archive = 0;
    char *abs = NULL;
    if (stat(path, &st) != 0) {
        in->kind = xstrdup("missing");
        in->refused = 1;
        in->refusal = xasprintf("%s does not exist", path);
        return;
    }
    if (S_ISDIR(st.st_mode)) {
        in->kind = xstrdup("folder");
    } else if (S_ISREG(st.st_mode) && (ends_with(path, ".tar.gz") || ends_with(path, ".tgz") ||
                                       ends_with(path, ".tar"))) {
        in->kind = xstrdup("tar archive");
        archive = 1;
    } else if (S_ISREG(st.st_mode) && ends_with(path, ".zip")) {
        in->kind = xstrdup("zip archive");
        archive = zip = 1;
    } else {
        in->kind = xstrdup("unknown");
        in->refused = 1;
        in->refusal = xstrdup("not a folder, .tar.gz, .tgz, .tar or .zip: nothing was graded");
        return;
    }

    entry_list l = {0};
    if (archive) {
        abs = abs_path(path); /* starts with '/': never read as an option */
        char *why = NULL;
        int rc = abs ? (zip ? list_zip(abs, &l, &why) : list_tar(abs, &l, &why)) : -1;
        if (rc != 0) {
            in->refused = 1;
            in->refusal = xasprintf("the archive could not be read: %s",
                                    why ? why : "no such file");
            free(why);
            free(abs);
            entries_free(&l);
            return;
        }
        for (int i = 0; i < l.n; ++i) {
            const char *r = unsafe_reason(&l.v[i]);
            if (r) strlist_addf(&in->unsafe, "%s (%s)", l.v[i].raw, r);
        }
        if (in->unsafe.n > 0) {
            in->refused = 1;
            in->refusal = xasprintf("the archive has %d unsafe entr%s (absolute paths, `..` or "
                                    "links): it was refused and nothing was extracted",
                                    in->unsafe.n, in->unsafe.n == 1 ? "y" : "ies");
            free(abs);
            entries_free(&l);
            return;
        }
    } else {
        walk(path, "", 0, &l);
        if (l.truncated)
            strlist_addf(&in->notes, "the folder holds more than %d entries: only the first "
                         "were looked at", MAX_ENTRIES);
    }

    qsort(l.v, (size_t)l.n, sizeof *l.v, entry_cmp); /* reports list names in order */
    in->prefix = choose_prefix(&l, m);
    char *taken = xcalloc((size_t)(l.n ? l.n : 1), 1);
    for (int f = 0; f < in->n_files; ++f) {
        taken_file *tf = &in->files[f];
        char *want = xasprintf("%s%s/%s", in->prefix, tf->lesson->name, tf->name);
        int last = -1, count = 0;
        for (int i = 0; i < l.n; ++i)
            if (strcmp(l.v[i].name, want) == 0 && l.v[i].kind != ENT_DIR) {
                last = i;
                ++count;
                taken[i] = 1;
            }
        if (last < 0) {
            free(want);
            continue;
        }
        const entry *e = &l.v[last];
        int occurrence = 0; /* tar counts copies by the name as stored */
        for (int i = 0; i <= last; ++i)
            if (strcmp(l.v[i].raw, e->raw) == 0) ++occurrence;
        if (count > 1)
            strlist_addf(&in->notes, "%s appears %d times in the archive: the last copy was used",
                         want, count);
        if (e->kind == ENT_LINK) {
            tf->status = FILE_LINK;
            tf->note = xasprintf("%s is a link: links are not followed", want);
        } else if (e->kind != ENT_FILE) {
            tf->status = FILE_UNREADABLE;
            tf->note = xasprintf("%s is not a regular file", want);
        } else if (e->size > max_bytes) {
            tf->status = FILE_TOO_LARGE;
            tf->note = xasprintf("%s is %lld bytes, more than the %ld allowed", want, e->size,
                                 max_bytes);
        } else {
            size_t len = 0;
            char *why = NULL;
            char *data = archive ? read_member(zip, abs, e, occurrence, max_bytes, &len, &why)
                                 : read_folder_file(path, e->raw, max_bytes, &len);
            if (data == NULL) {
                tf->status = FILE_UNREADABLE;
                tf->note = xasprintf("%s %s", want, why ? why : "could not be read");
            } else if ((long)len > max_bytes) {
                tf->status = FILE_TOO_LARGE;
                tf->note = xasprintf("%s is more than the %ld bytes allowed", want, max_bytes);
                free(data);
            } else if (looks_binary(data, len)) {
                tf->status = FILE_BINARY;
                tf->note = xasprintf("%s is not source text (binary data): it was not compiled",
                                     want);
                free(data);
            } else {
                tf->status = FILE_OK;
                tf->data = data;
                tf->len = len;
            }
            free(why);
        }
        free(want);
    }
    for (int i = 0; i < l.n; ++i) {
        if (taken[i] || l.v[i].kind == ENT_DIR) continue;
        const char *why = NULL;
        if (l.v[i].kind == ENT_LINK) why = "link, not followed";
        else if (strchr(l.v[i].raw, '\\')) why = "odd characters in its name";
        else if (!starts_with(l.v[i].name, in->prefix)) why = "outside the lesson folders";
        else {
            const char *rest = l.v[i].name + strlen(in->prefix);
            const lesson_info *li = NULL;
            for (int j = 0; j < m->n && !li; ++j) {
                size_t nl = strlen(m->lessons[j].name);
                if (strncmp(rest, m->lessons[j].name, nl) == 0 && rest[nl] == '/')
                    li = &m->lessons[j];
            }
            if (li == NULL) why = "not a lesson folder";
            else why = "not a file students change";
        }
        add_ignored(in, l.v[i].raw, why);
    }
    free(taken);
    free(abs);
    entries_free(&l);
}

taken_file *intake_lesson_files(intake *in, const lesson_info *l, int *n)
{
    *n = 0;
    for (int f = 0; f < in->n_files; ++f)
        if (in->files[f].lesson == l) {
            *n = l->exercise.n;
            return &in->files[f];
        }
    return NULL;
}

int intake_lesson_submitted(const intake *in, const lesson_info *l)
{
    for (int f = 0; f < in->n_files; ++f)
        if (in->files[f].lesson == l && in->files[f].status != FILE_MISSING) return 1;
    return 0;
}

void intake_free(intake *in)
{
    for (int f = 0; f < in->n_files; ++f) {
        free(in->files[f].data);
        free(in->files[f].note);
    }
    free(in->files);
    free(in->path);
    free(in->kind);
    free(in->refusal);
    free(in->prefix);
    strlist_free(&in->unsafe);
    strlist_free(&in->ignored);
    strlist_free(&in->notes);
    memset(in, 0, sizeof *in);
}
