/* tools/skeleton.c — fl_skeleton: a lesson's skeleton (the exercise file a
 * student edits, in lessons/) written from its worked solution (solutions/),
 * so that the two share their launchers, helpers and layout instead of
 * copying them; or a check that the committed skeleton is what the solution
 * gives (ctest -L sources, ./lab skeletons --check).
 *
 *   fl_skeleton [--level LEVEL] SOLUTION [-o SKELETON]
 *   fl_skeleton --check [--level LEVEL] [--lesson NN] SOLUTION SKELETON
 *
 * The markers. The worked solution is the one source of an exercise file.
 * Lines that begin, in column 1, with //@ (a marker) or //| (skeleton text)
 * mark where the skeleton differs from it; every other line is in both.
 *
 *   //@{ A1            a region begins; the name (a TODO id) is optional
 *   ...                the solution's lines
 *   //@ guided         what the guided skeleton shows instead, each line
 *   //| text           written "//| " + the line ("//|" alone: an empty line)
 *   //@ open           what the open skeleton shows instead, the same way
 *   //| text
 *   //@}               the region ends ("//@} A1" also checks the name)
 *
 *   //@[               a span begins that the open level leaves out whole:
 *   ...                shared lines and regions (their open parts would never
 *   //@]               show, so they may have none); spans do not nest, and a
 *                      region lies wholly inside a span or wholly outside it
 *
 * The guided and open parts are optional, in that order; each level falls
 * back on the one before it:
 *
 *   solution  the solution's lines: the file as the compiler sees it, which
 *             is the file less its //@ and //| lines
 *   guided    a region's guided part, else its solution lines (the default:
 *             the skeletons committed in lessons/ are this level)
 *   open      a region's open part, else what guided shows, and nothing
 *             between //@[ and //@]: only the API and the task, no given
 *             kernels, helpers or launcher bodies
 *
 * so a TODO is solution lines, "//@ guided" and the TODO text; code only the
 * solution has is solution lines and an empty guided part; text only the
 * skeleton has is a region whose "//@ guided" follows its "//@{"; a helper
 * the guided level gives is solution lines and an "//@ open" part, or lies in
 * a //@[ ... //@] span with the other code the open level leaves out.
 *
 * Without -o the skeleton goes to standard output; with -o it is written only
 * when it changed (so nothing rebuilds needlessly). --check compares SKELETON
 * with what SOLUTION gives and, where they differ, prints the first line that
 * differs in both and the command that regenerates it; --lesson NN adds the
 * course's words (./lab skeletons, and ./lab check NN for a student who
 * edited the skeleton on purpose). The first malformed marker (a region left
 * open or opened inside another, a stray marker, a skeleton line without its
 * "//| ", an indented marker) stops it with FILE:LINE: error: WHAT.
 *
 * In the course: ./lab skeletons regenerates every lesson's skeletons (the
 * CMake target skeletons), ./lab skeletons --check or ctest -L sources checks
 * them (one test per exercise file, registered by lesson_add).
 *
 * Exit status: 0 done (--check: the skeleton matches); 1 (--check) it does
 * not; 2 a usage or I/O error, or malformed markers, reported as FILE:LINE.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *prog = "fl_skeleton";

enum level { LEVEL_SOLUTION, LEVEL_GUIDED, LEVEL_OPEN };
static const char *const level_names[] = {"solution", "guided", "open"};

/* ---- files as lines ------------------------------------------------------- */

struct line {
    const char *s;
    size_t len; /* without the newline */
    int nl;     /* 1 when a newline ends it (all lines but perhaps the last) */
};

struct text {
    char *data;
    size_t size;
    struct line *lines;
    size_t count;
};

static void *grow(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (q == NULL) {
        fprintf(stderr, "%s: out of memory (%zu bytes)\n", prog, n);
        exit(2);
    }
    return q;
}

static void split_lines(struct text *t)
{
    t->lines = NULL;
    t->count = 0;
    size_t cap = 0;
    for (size_t at = 0; at < t->size;) {
        const char *nl = memchr(t->data + at, '\n', t->size - at);
        size_t len = nl ? (size_t)(nl - (t->data + at)) : t->size - at;
        if (t->count == cap) {
            cap = cap ? 2 * cap : 256;
            t->lines = grow(t->lines, cap * sizeof *t->lines);
        }
        t->lines[t->count++] = (struct line){t->data + at, len, nl != NULL};
        at += len + (nl != NULL);
    }
}

/* Reads `path` whole; returns 0, or -1 with errno set (ENOENT when absent). */
static int read_text(const char *path, struct text *t)
{
    memset(t, 0, sizeof *t);
    FILE *f = fopen(path, "rb");
    if (f == NULL) return -1;
    size_t cap = 0;
    for (;;) {
        if (cap - t->size < 65536) {
            cap = cap ? 2 * cap : 65536;
            t->data = grow(t->data, cap);
        }
        size_t got = fread(t->data + t->size, 1, cap - t->size, f);
        t->size += got;
        if (got == 0) break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(t->data);
        errno = EIO;
        return -1;
    }
    split_lines(t);
    return 0;
}

static void free_text(struct text *t)
{
    free(t->data);
    free(t->lines);
}

/* ---- the markers ---------------------------------------------------------- */

enum kind {
    K_SHARED,   /* any other line */
    K_BEGIN,    /* //@{ [NAME] */
    K_GUIDED,   /* //@ guided */
    K_OPEN,     /* //@ open */
    K_END,      /* //@} [NAME] */
    K_SPAN,     /* //@[ : the open level leaves out what follows */
    K_SPAN_END, /* //@] */
    K_TEXT,     /* //| TEXT, or //| alone */
    K_BAD_TEXT, /* //| followed by something other than a space */
    K_UNKNOWN,  /* //@ followed by anything else */
    K_INDENTED, /* //@ or //| after white space */
};

static int is_blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

/* What line `l` is; for K_BEGIN and K_END *arg is the name (maybe empty),
 * for K_TEXT the skeleton's line. */
static enum kind classify(const struct line *l, struct line *arg)
{
    const char *s = l->s;
    size_t n = l->len;
    *arg = (struct line){s + n, 0, 1};
    if (n >= 3 && memcmp(s, "//|", 3) == 0) {
        if (n == 3) return K_TEXT;
        if (s[3] != ' ') return K_BAD_TEXT;
        *arg = (struct line){s + 4, n - 4, 1};
        return K_TEXT;
    }
    if (n >= 3 && memcmp(s, "//@", 3) == 0) {
        const char *p = s + 3, *e = s + n;
        while (e > p && is_blank(e[-1])) --e;
        if (e - p == 1 && (*p == '[' || *p == ']')) return *p == '[' ? K_SPAN : K_SPAN_END;
        char brace = p < e ? *p : '\0';
        if (brace == '{' || brace == '}') ++p;
        while (p < e && is_blank(*p)) ++p;
        size_t rest = (size_t)(e - p);
        if (brace == '{' || brace == '}') {
            *arg = (struct line){p, rest, 1};
            return brace == '{' ? K_BEGIN : K_END;
        }
        if (rest == 6 && memcmp(p, "guided", 6) == 0) return K_GUIDED;
        if (rest == 4 && memcmp(p, "open", 4) == 0) return K_OPEN;
        return K_UNKNOWN;
    }
    size_t i = 0;
    while (i < n && is_blank(s[i])) ++i;
    if (i > 0 && n - i >= 3 && (memcmp(s + i, "//@", 3) == 0 || memcmp(s + i, "//|", 3) == 0))
        return K_INDENTED;
    return K_SHARED;
}

enum part { PART_SOLUTION, PART_GUIDED, PART_OPEN, PARTS };
static const char *const part_names[] = {"solution", "guided", "open"};

/* One region: the line (0-based) of its //@{, its name, and where each of
 * its parts' lines start and end. */
struct region {
    size_t at;
    struct line name;
    size_t start[PARTS], end[PARTS];
    int has[PARTS];
};

/* What was generated: the bytes and, for each line, the source line it
 * comes from (1-based), for --check's message. */
struct out {
    char *p;
    size_t n, cap;
    size_t *from;
    size_t lines, lines_cap;
};

static void out_bytes(struct out *o, const char *s, size_t n)
{
    if (o->cap - o->n < n + 1) {
        while (o->cap - o->n < n + 1) o->cap = o->cap ? 2 * o->cap : 65536;
        o->p = grow(o->p, o->cap);
    }
    memcpy(o->p + o->n, s, n);
    o->n += n;
}

static void out_line(struct out *o, const struct line *l, int nl, size_t from)
{
    out_bytes(o, l->s, l->len);
    if (nl) out_bytes(o, "\n", 1);
    if (o->lines == o->lines_cap) {
        o->lines_cap = o->lines_cap ? 2 * o->lines_cap : 256;
        o->from = grow(o->from, o->lines_cap * sizeof *o->from);
    }
    o->from[o->lines++] = from;
}

static int fail_at(const char *path, size_t line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s:%zu: error: ", path, line);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 2;
}

/* "region A1 (line 12)" or "the region of line 12", for messages. */
static const char *region_label(const struct region *r)
{
    static char buf[160];
    if (r->name.len > 0)
        snprintf(buf, sizeof buf, "region %.*s (line %zu)", (int)(r->name.len > 80 ? 80 : r->name.len),
                 r->name.s, r->at + 1);
    else
        snprintf(buf, sizeof buf, "the region of line %zu", r->at + 1);
    return buf;
}

/* A finished region: the lines of the part that `lv` shows. */
static void emit_region(const struct text *t, const struct region *r, enum level lv, struct out *o)
{
    enum part p = PART_SOLUTION;
    if (lv == LEVEL_OPEN && r->has[PART_OPEN])
        p = PART_OPEN;
    else if (lv != LEVEL_SOLUTION && r->has[PART_GUIDED])
        p = PART_GUIDED;
    for (size_t i = r->start[p]; i < r->end[p]; ++i) {
        struct line arg;
        if (p == PART_SOLUTION) {
            out_line(o, &t->lines[i], t->lines[i].nl, i + 1);
        } else {
            classify(&t->lines[i], &arg);
            out_line(o, &arg, 1, i + 1);
        }
    }
}

/* The level `lv` of the marked file `t` (read from `path`) into `o`; 0, or
 * 2 after reporting the first malformed marker as path:line. */
static int generate(const char *path, const struct text *t, enum level lv, struct out *o)
{
    static const char *const text_form = "'//| ' followed by the line, or '//|' alone for an empty line";
    struct region r = {0};
    int in = 0;                     /* inside a region */
    size_t span = 0;                /* the 1-based line of the //@[ we are in, or 0 */
    struct out dropped = {0};       /* where the open level's left-out lines go */
    struct out *into = o;
    enum part part = PART_SOLUTION; /* the part being read, when inside */
    for (size_t i = 0; i < t->count; ++i) {
        struct line arg;
        enum kind k = classify(&t->lines[i], &arg);
        size_t ln = i + 1;
        switch (k) {
        case K_INDENTED:
            return fail_at(path, ln, "a marker or skeleton line must start in column 1 "
                                     "(//@ and //| lines are never indented)");
        case K_UNKNOWN:
            return fail_at(path, ln, "unknown marker '%.*s' (the markers: '//@{ NAME', '//@ guided', "
                                     "'//@ open', '//@}', '//@[', '//@]')", (int)t->lines[i].len, t->lines[i].s);
        case K_SPAN:
        case K_SPAN_END:
            if (in)
                return fail_at(path, ln, "'//@%c' inside %s: a span the open level leaves out holds whole "
                                         "regions; end the region with '//@}' first",
                               k == K_SPAN ? '[' : ']', region_label(&r));
            if (k == K_SPAN && span)
                return fail_at(path, ln, "'//@[' inside the span of line %zu: spans do not nest", span);
            if (k == K_SPAN_END && !span) return fail_at(path, ln, "stray '//@]': no span is open (one begins with '//@[')");
            span = k == K_SPAN ? ln : 0;
            into = span && lv == LEVEL_OPEN ? &dropped : o;
            break;
        case K_BEGIN:
            if (in)
                return fail_at(path, ln, "a region begins inside %s: regions do not nest; "
                                         "end that one with '//@}' first", region_label(&r));
            memset(&r, 0, sizeof r);
            r.at = i;
            r.name = arg;
            r.has[PART_SOLUTION] = 1;
            r.start[PART_SOLUTION] = r.end[PART_SOLUTION] = i + 1;
            in = 1;
            part = PART_SOLUTION;
            break;
        case K_GUIDED:
        case K_OPEN: {
            enum part next = k == K_GUIDED ? PART_GUIDED : PART_OPEN;
            if (!in)
                return fail_at(path, ln, "stray '//@ %s': no region is open (a region begins with '//@{')",
                               part_names[next]);
            if (part >= next)
                return fail_at(path, ln, "'//@ %s' after '//@ %s' in %s: a region's parts come in "
                                         "the order solution, guided, open, each once",
                               part_names[next], part_names[part], region_label(&r));
            if (next == PART_OPEN && span)
                return fail_at(path, ln, "'//@ open' in %s, inside the span of line %zu: the open level "
                                         "leaves that span out, so this part would never show",
                               region_label(&r), span);
            part = next;
            r.has[part] = 1;
            r.start[part] = r.end[part] = i + 1;
            break;
        }
        case K_END:
            if (!in) return fail_at(path, ln, "stray '//@}': no region is open");
            if (arg.len > 0 && (arg.len != r.name.len || memcmp(arg.s, r.name.s, arg.len) != 0))
                return fail_at(path, ln, "'//@} %.*s' ends %s, whose name is '%.*s'", (int)arg.len, arg.s,
                               region_label(&r), (int)r.name.len, r.name.s);
            emit_region(t, &r, lv, into);
            in = 0;
            break;
        case K_TEXT:
        case K_BAD_TEXT:
            if (!in)
                return fail_at(path, ln, "stray skeleton line: '//|' lines belong in a region's guided or "
                                         "open part");
            if (part == PART_SOLUTION)
                return fail_at(path, ln, "skeleton line in the solution part of %s: put '//@ guided' "
                                         "(or '//@ open') before it", region_label(&r));
            if (k == K_BAD_TEXT)
                return fail_at(path, ln, "bad prefix line in the %s part of %s: write %s",
                               part_names[part], region_label(&r), text_form);
            r.end[part] = i + 1;
            break;
        case K_SHARED:
            if (!in) {
                out_line(into, &t->lines[i], t->lines[i].nl, ln);
            } else if (part == PART_SOLUTION) {
                r.end[part] = i + 1;
            } else {
                return fail_at(path, ln, "bad prefix line in the %s part of %s: every line of that part "
                                         "is the skeleton's, written %s (or did you forget its '//@}'?)",
                               part_names[part], region_label(&r), text_form);
            }
            break;
        }
    }
    free(dropped.p);
    free(dropped.from);
    if (in)
        return fail_at(path, r.at + 1, "%s is not closed: end it with '//@}' after its last line",
                       region_label(&r));
    if (span) return fail_at(path, span, "the span that begins here is not closed: end it with '//@]'");
    return 0;
}

/* ---- writing and checking -------------------------------------------------- */

static int same_bytes(const struct text *t, const struct out *o)
{
    return t->size == o->n && (o->n == 0 || memcmp(t->data, o->p, o->n) == 0);
}

/* `s` as one word of a POSIX shell command line. */
static void put_word(FILE *f, const char *s)
{
    if (*s != '\0' && strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./-+=:,@%")
                          == strlen(s)) {
        fputs(s, f);
        return;
    }
    fputc('\'', f);
    for (; *s; ++s) {
        if (*s == '\'')
            fputs("'\\''", f);
        else
            fputc(*s, f);
    }
    fputc('\'', f);
}

static void put_regen_command(FILE *f, const char *self, enum level lv, const char *sol, const char *skel)
{
    fputs("    ", f);
    put_word(f, self);
    if (lv != LEVEL_GUIDED) fprintf(f, " --level %s", level_names[lv]);
    fputc(' ', f);
    put_word(f, sol);
    fputs(" -o ", f);
    put_word(f, skel);
    fputc('\n', f);
}

static void put_line(FILE *f, const char *label, const struct text *t, size_t k)
{
    fprintf(f, "    %s ", label);
    if (k >= t->count) {
        fputs("(end of file)\n", f);
        return;
    }
    fwrite(t->lines[k].s, 1, t->lines[k].len, f);
    fputs(t->lines[k].nl ? "\n" : "   (no newline at the end of the file)\n", f);
}

/* --check: 0 when `skel` holds exactly the bytes of `o`, else 1 with the
 * first line that differs and how to regenerate. */
static int check(const char *self, enum level lv, const char *lesson, const char *sol, const char *skel,
                 struct out *o)
{
    struct text have, want;
    if (read_text(skel, &have) != 0) {
        fprintf(stderr, "%s: cannot read %s: %s\n", prog, skel, strerror(errno));
        return 2;
    }
    if (same_bytes(&have, o)) {
        free_text(&have);
        return 0;
    }
    want = (struct text){o->p, o->n, NULL, 0};
    split_lines(&want);
    size_t k = 0;
    while (k < have.count && k < want.count && have.lines[k].len == want.lines[k].len &&
           have.lines[k].nl == want.lines[k].nl &&
           memcmp(have.lines[k].s, want.lines[k].s, have.lines[k].len) == 0)
        ++k;
    FILE *f = stderr;
    fprintf(f, "%s: %s is not the %s skeleton that %s gives.\n", prog, skel, level_names[lv], sol);
    fprintf(f, "  The first difference is at line %zu:\n", k + 1);
    put_line(f, "committed:", &have, k);
    put_line(f, "generated:", &want, k);
    if (k < want.count) fprintf(f, "    (the generated line comes from %s:%zu)\n", sol, o->from[k]);
    fprintf(f, "  If the worked solution changed, regenerate the skeleton (this overwrites it)\n"
               "  and commit both:\n");
    put_regen_command(f, self, lv, sol, skel);
    if (lesson != NULL) fprintf(f, "  or, for every lesson: ./lab skeletons\n");
    fprintf(f, "  If the skeleton was edited by hand, make the change in the solution instead\n"
               "  (the skeleton's text is its //| lines) and regenerate.\n");
    if (lesson != NULL) {
        fprintf(f, "  This test guards the course's sources: each skeleton in lessons/ must be what\n"
                   "  its worked solution's markers give (tools/skeleton.c describes them).\n"
                   "  If you are a student and edited the skeleton on purpose: this failure is\n"
                   "  expected and says nothing about your work; do not regenerate (that would\n"
                   "  overwrite your file). Your check is ./lab check %s.\n",
                lesson);
    }
    free(want.lines);
    free_text(&have);
    return 1;
}

/* -o: write `o` to `skel` unless it already holds it. */
static int write_skeleton(const char *sol, const char *skel, enum level lv, const struct out *o)
{
    struct stat a, b;
    if (stat(sol, &a) == 0 && stat(skel, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
        fprintf(stderr, "%s: -o %s is the solution itself: refusing to overwrite it\n", prog, skel);
        return 2;
    }
    struct text old;
    if (read_text(skel, &old) == 0) {
        int same = same_bytes(&old, o);
        free_text(&old);
        if (same) {
            printf("%s: up to date\n", skel);
            return 0;
        }
    }
    FILE *f = fopen(skel, "wb");
    if (f == NULL) {
        fprintf(stderr, "%s: cannot write %s: %s\n", prog, skel, strerror(errno));
        return 2;
    }
    size_t put = fwrite(o->p, 1, o->n, f);
    if (fclose(f) != 0 || put != o->n) {
        fprintf(stderr, "%s: cannot write %s: %s\n", prog, skel, strerror(errno));
        return 2;
    }
    printf("%s: written (the %s level of %s)\n", skel, level_names[lv], sol);
    return 0;
}

/* ---- main ------------------------------------------------------------------ */

static int usage(FILE *f, int rc)
{
    fprintf(f, "usage: %s [--level LEVEL] SOLUTION [-o SKELETON]\n"
               "       %s --check [--level LEVEL] [--lesson NN] SOLUTION SKELETON\n"
               "Writes the skeleton of a marked worked solution (to standard output, or to\n"
               "SKELETON when it changed), or checks a committed one. LEVEL: guided (the\n"
               "default), open, or solution (the solution less its markers). The markers are\n"
               "described at the top of tools/skeleton.c.\n",
            prog, prog);
    return rc;
}

int main(int argc, char **argv)
{
    const char *self = argv[0], *out_path = NULL, *lesson = NULL;
    const char *files[2] = {NULL, NULL};
    int nfiles = 0, checking = 0;
    enum level lv = LEVEL_GUIDED;
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) return usage(stdout, 0);
        if (strcmp(a, "--check") == 0) {
            checking = 1;
        } else if (strcmp(a, "--level") == 0 || strcmp(a, "-o") == 0 || strcmp(a, "--lesson") == 0) {
            if (i + 1 == argc) {
                fprintf(stderr, "%s: %s needs a value\n", prog, a);
                return usage(stderr, 2);
            }
            const char *v = argv[++i];
            if (strcmp(a, "-o") == 0) {
                out_path = v;
            } else if (strcmp(a, "--lesson") == 0) {
                lesson = v;
            } else {
                int found = 0;
                for (int l = LEVEL_SOLUTION; l <= LEVEL_OPEN; ++l)
                    if (strcmp(v, level_names[l]) == 0) {
                        lv = (enum level)l;
                        found = 1;
                    }
                if (!found) {
                    fprintf(stderr, "%s: unknown level '%s' (levels: solution, guided, open)\n", prog, v);
                    return 2;
                }
            }
        } else if (a[0] == '-' && a[1] != '\0') {
            fprintf(stderr, "%s: unknown option '%s'\n", prog, a);
            return usage(stderr, 2);
        } else if (nfiles < 2) {
            files[nfiles++] = a;
        } else {
            fprintf(stderr, "%s: unexpected argument '%s'\n", prog, a);
            return usage(stderr, 2);
        }
    }
    if (nfiles != 1 + checking || (checking && out_path != NULL)) return usage(stderr, 2);

    struct text src;
    if (read_text(files[0], &src) != 0) {
        fprintf(stderr, "%s: cannot read %s: %s\n", prog, files[0], strerror(errno));
        return 2;
    }
    struct out o = {0};
    int rc = generate(files[0], &src, lv, &o);
    if (rc == 0) {
        if (checking)
            rc = check(self, lv, lesson, files[0], files[1], &o);
        else if (out_path != NULL)
            rc = write_skeleton(files[0], out_path, lv, &o);
        else if ((o.n > 0 && fwrite(o.p, 1, o.n, stdout) != o.n) || fflush(stdout) != 0)
            rc = 2;
    }
    free(o.p);
    free(o.from);
    free_text(&src);
    return rc;
}
