/* grader/manifest.c — see manifest.h. */
#include "manifest.h"

#include <cJSON.h>
#include <stdlib.h>
#include <string.h>

static char *json_str(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) && v->valuestring ? xstrdup(v->valuestring) : NULL;
}

static int json_strlist(const cJSON *o, const char *key, strlist *out)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, key);
    if (a == NULL) return 0;
    if (!cJSON_IsArray(a)) return -1;
    const cJSON *it;
    cJSON_ArrayForEach(it, a)
    {
        if (!cJSON_IsString(it)) return -1;
        strlist_add(out, it->valuestring);
    }
    return 0;
}

/* A file name a student may submit: no folders, nothing hidden. */
static int plain_name(const char *s)
{
    if (s[0] == '\0' || s[0] == '.' || s[0] == '-') return 0;
    for (const char *p = s; *p; ++p)
        if (!(('a' <= *p && *p <= 'z') || ('A' <= *p && *p <= 'Z') || ('0' <= *p && *p <= '9') ||
              *p == '_' || *p == '.' || *p == '-'))
            return 0;
    return 1;
}

/* The "build" object of a lesson entry; 0, or -1 when a path is missing. */
static int load_build(const cJSON *entry, lesson_build *b, int has_test, int has_solution)
{
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(entry, "build");
    if (!cJSON_IsObject(o)) return -1;
    b->student_lib = json_str(o, "student_lib");
    b->student_rules = json_str(o, "student_rules");
    b->baseline_lib = json_str(o, "baseline_lib");
    b->scan_rules = json_str(o, "scan_rules");
    b->test_bin = json_str(o, "test_bin");
    b->test_rules = json_str(o, "test_rules");
    b->solution_test_bin = json_str(o, "solution_test_bin");
    b->test_source = json_str(o, "test_source");
    b->solution_lib = json_str(o, "solution_lib");
    if (json_strlist(o, "student_objects", &b->student_objects) != 0) return -1;
    if (!b->student_lib || !b->student_rules || !b->baseline_lib || !b->scan_rules ||
        b->student_objects.n == 0)
        return -1;
    if (has_test && (!b->test_bin || !b->test_rules)) return -1;
    if (has_solution && !b->solution_test_bin) return -1;
    return 0;
}

static void free_build(lesson_build *b)
{
    free(b->student_lib); free(b->student_rules); free(b->baseline_lib); free(b->scan_rules);
    free(b->test_bin); free(b->test_rules); free(b->solution_test_bin);
    free(b->test_source);
    free(b->solution_lib);
    strlist_free(&b->student_objects);
    memset(b, 0, sizeof *b);
}

int manifest_load(const char *path, manifest *m, char **err)
{
    memset(m, 0, sizeof *m);
    size_t len = 0;
    char *text = read_file(path, 1 << 20, &len, NULL);
    if (text == NULL) {
        *err = xasprintf("cannot read the manifest %s (configure the course first: ./lab test)",
                         path);
        return -1;
    }
    cJSON *root = cJSON_Parse(text);
    free(text);
    if (root == NULL) {
        *err = xasprintf("%s is not valid JSON", path);
        return -1;
    }
    const cJSON *lessons = cJSON_GetObjectItemCaseSensitive(root, "lessons");
    if (!cJSON_IsArray(lessons)) {
        *err = xasprintf("%s has no \"lessons\" list", path);
        cJSON_Delete(root);
        return -1;
    }
    m->student_root = json_str(root, "student_root");
    m->generator = json_str(root, "generator");
    const cJSON *kt = cJSON_GetObjectItemCaseSensitive(root, "kernel_trace");
    if (cJSON_IsObject(kt)) { /* (optional: only where CUPTI was found) */
        m->kernel_trace = json_str(kt, "file");
        m->kernel_trace_target = json_str(kt, "target");
        if (m->kernel_trace == NULL || m->kernel_trace_target == NULL) {
            free(m->kernel_trace);
            free(m->kernel_trace_target);
            m->kernel_trace = m->kernel_trace_target = NULL;
        }
    }
    if (json_strlist(root, "harness_libs", &m->harness_libs) != 0 || m->harness_libs.n == 0 ||
        m->generator == NULL) {
        *err = xasprintf("%s does not say where the build keeps its libraries (written by an "
                         "older course: configure the build again)", path);
        cJSON_Delete(root);
        return -1;
    }
    int n = cJSON_GetArraySize(lessons);
    m->lessons = xcalloc((size_t)n, sizeof *m->lessons);
    const cJSON *it;
    cJSON_ArrayForEach(it, lessons)
    {
        lesson_info *l = &m->lessons[m->n];
        l->name = json_str(it, "name");
        l->number = json_str(it, "number");
        l->slug = json_str(it, "slug");
        l->test = json_str(it, "test");
        l->solution_test = json_str(it, "solution_test");
        int bad = l->name == NULL || l->number == NULL || strlen(l->number) != 2 ||
                  json_strlist(it, "exercise", &l->exercise) != 0 || l->exercise.n == 0 ||
                  json_strlist(it, "tools", &l->tools) != 0;
        if (!bad && load_build(it, &l->b, l->test != NULL, l->solution_test != NULL) != 0)
            bad = 1;
        for (int i = 0; !bad && i < l->exercise.n; ++i)
            if (!plain_name(l->exercise.v[i])) bad = 1;
        if (!bad && !plain_name(l->name)) bad = 1;
        m->n++;
        if (bad) {
            *err = xasprintf("%s: lesson entry %d is malformed", path, m->n);
            cJSON_Delete(root);
            return -1;
        }
    }
    cJSON_Delete(root);
    return 0;
}

const lesson_info *manifest_find(const manifest *m, const char *number)
{
    for (int i = 0; i < m->n; ++i)
        if (strcmp(m->lessons[i].number, number) == 0) return &m->lessons[i];
    return NULL;
}

void manifest_free(manifest *m)
{
    for (int i = 0; i < m->n; ++i) {
        lesson_info *l = &m->lessons[i];
        free(l->name); free(l->number); free(l->slug); free(l->test); free(l->solution_test);
        strlist_free(&l->exercise);
        strlist_free(&l->tools);
        free_build(&l->b);
    }
    free(m->lessons);
    free(m->student_root);
    free(m->generator);
    free(m->kernel_trace);
    free(m->kernel_trace_target);
    strlist_free(&m->harness_libs);
    memset(m, 0, sizeof *m);
}

int manifest_adopt_build(manifest *m, manifest *from)
{
    for (int i = 0; i < m->n; ++i) {
        lesson_info *mine = &m->lessons[i];
        lesson_info *theirs = (lesson_info *)manifest_find(from, mine->number);
        if (theirs == NULL) return -1;
        free_build(&mine->b);
        mine->b = theirs->b;
        memset(&theirs->b, 0, sizeof theirs->b);
    }
    free(m->generator);
    m->generator = from->generator;
    from->generator = NULL;
    free(m->kernel_trace);
    free(m->kernel_trace_target);
    m->kernel_trace = from->kernel_trace;
    m->kernel_trace_target = from->kernel_trace_target;
    from->kernel_trace = from->kernel_trace_target = NULL;
    strlist_free(&m->harness_libs);
    m->harness_libs = from->harness_libs;
    memset(&from->harness_libs, 0, sizeof from->harness_libs);
    return 0;
}
