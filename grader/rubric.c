/* grader/rubric.c — see rubric.h. */
#include "rubric.h"
#include "util.h"

#include <cJSON.h>
#include <stdlib.h>
#include <string.h>

const char *check_kind_name(check_kind k)
{
    switch (k) {
    case KIND_CORRECTNESS: return "correctness";
    case KIND_EDGE: return "edge";
    case KIND_SPEED: return "speed";
    case KIND_SANITIZER: return "sanitizer";
    }
    return "?";
}

static int kind_from(const char *s, check_kind *k)
{
    static const check_kind all[] = {KIND_CORRECTNESS, KIND_EDGE, KIND_SPEED, KIND_SANITIZER};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i)
        if (strcmp(s, check_kind_name(all[i])) == 0) {
            *k = all[i];
            return 0;
        }
    return -1;
}

static double num_or(const cJSON *o, const char *key, double dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

static char *str_or(const cJSON *o, const char *key, const char *dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (cJSON_IsString(v) && v->valuestring) return xstrdup(v->valuestring);
    return dflt ? xstrdup(dflt) : NULL;
}

static int load_check(const cJSON *c, rubric_check *k, const char *where, char **err)
{
    memset(k, 0, sizeof *k);
    if (!cJSON_IsObject(c)) {
        *err = xasprintf("%s: a check must be an object", where);
        return -1;
    }
    k->id = str_or(c, "id", NULL);
    k->name = str_or(c, "name", NULL);
    char *kind = str_or(c, "kind", NULL);
    k->suite = str_or(c, "suite", NULL);
    k->test = str_or(c, "test", NULL);
    k->visibility = str_or(c, "visibility", "visible");
    const cJSON *pts = cJSON_GetObjectItemCaseSensitive(c, "points");
    k->points = cJSON_IsNumber(pts) ? pts->valuedouble : -1.0;
    k->expect_cases = (int)num_or(c, "expect_cases", 0);
    int rc = 0;
    if (k->id == NULL || k->name == NULL) {
        *err = xasprintf("%s: every check needs an \"id\" and a \"name\"", where);
        rc = -1;
    } else if (kind == NULL || kind_from(kind, &k->kind) != 0) {
        *err = xasprintf("%s (%s): \"kind\" must be correctness, edge, speed or sanitizer", where,
                         k->id);
        rc = -1;
    } else if (k->points < 0) {
        *err = xasprintf("%s (%s): \"points\" must be a number >= 0", where, k->id);
        rc = -1;
    } else if (k->kind != KIND_SANITIZER && k->suite == NULL) {
        *err = xasprintf("%s (%s): name the Criterion \"suite\" of the check", where, k->id);
        rc = -1;
    }
    free(kind);
    if (rc != 0) return rc;

    const cJSON *cases = cJSON_GetObjectItemCaseSensitive(c, "cases");
    if (cases != NULL) {
        if (!cJSON_IsArray(cases) || cJSON_GetArraySize(cases) == 0) {
            *err = xasprintf("%s (%s): \"cases\" must be a non-empty list of indices", where, k->id);
            return -1;
        }
        k->n_cases = cJSON_GetArraySize(cases);
        k->cases = xcalloc((size_t)k->n_cases, sizeof *k->cases);
        int i = 0;
        const cJSON *it;
        cJSON_ArrayForEach(it, cases)
        {
            if (!cJSON_IsNumber(it) || it->valueint < 0 ||
                (k->expect_cases > 0 && it->valueint >= k->expect_cases)) {
                *err = xasprintf("%s (%s): case indices must be 0 .. expect_cases-1", where, k->id);
                return -1;
            }
            k->cases[i++] = it->valueint;
        }
        if (k->test == NULL) {
            *err = xasprintf("%s (%s): \"cases\" needs the \"test\" they index", where, k->id);
            return -1;
        }
    }
    static const char *const vis[] = {"visible", "hidden", "after_due_date", "after_published"};
    int vis_ok = 0;
    for (size_t i = 0; i < 4; ++i)
        if (strcmp(k->visibility, vis[i]) == 0) vis_ok = 1;
    if (!vis_ok) {
        *err = xasprintf("%s (%s): \"visibility\" must be visible, hidden, after_due_date or "
                         "after_published", where, k->id);
        return -1;
    }
    return 0;
}

int rubric_load(const char *path, rubric *r, char **err)
{
    memset(r, 0, sizeof *r);
    size_t len = 0;
    char *text = read_file(path, 1 << 20, &len, NULL);
    if (text == NULL) {
        *err = xasprintf("cannot read the rubric %s", path);
        return -1;
    }
    cJSON *root = cJSON_Parse(text);
    if (root == NULL) {
        const char *at = cJSON_GetErrorPtr();
        long line = 1;
        for (const char *p = text; at && p < at && *p; ++p)
            if (*p == '\n') ++line;
        *err = xasprintf("%s is not valid JSON (near line %ld)", path, line);
        free(text);
        return -1;
    }
    free(text);
    const cJSON *speed = cJSON_GetObjectItemCaseSensitive(root, "speed");
    const cJSON *limits = cJSON_GetObjectItemCaseSensitive(root, "limits");
    r->speed_full_within = num_or(speed, "full_marks_within", 1.2);
    r->speed_floor = num_or(speed, "floor", 0.5);
    r->build_timeout_s = num_or(limits, "build_timeout_s", 900);
    r->suite_timeout_s = num_or(limits, "suite_timeout_s", 600);
    r->lesson_timeout_s = num_or(limits, "lesson_timeout_s", 1800);
    r->sanitizer_timeout_s = num_or(limits, "sanitizer_timeout_s", 1200);
    r->max_file_bytes = (long)num_or(limits, "max_file_bytes", 1 << 20);
    int rc = 0;
    if (r->speed_full_within < 1.0 || r->speed_floor < 0.0 || r->speed_floor > 1.0) {
        *err = xasprintf("%s: speed.full_marks_within must be >= 1 and speed.floor in [0, 1]", path);
        rc = -1;
    } else if (r->sanitizer_timeout_s < 4) {
        *err = xasprintf("%s: limits.sanitizer_timeout_s must be at least 4 (one second a tool)",
                         path);
        rc = -1;
    }
    const cJSON *lessons = cJSON_GetObjectItemCaseSensitive(root, "lessons");
    if (rc == 0 && !cJSON_IsObject(lessons)) {
        *err = xasprintf("%s: \"lessons\" must be an object keyed by lesson number (\"01\")", path);
        rc = -1;
    }
    if (rc == 0) {
        int n = cJSON_GetArraySize(lessons);
        r->lessons = xcalloc((size_t)n, sizeof *r->lessons);
        const cJSON *ls;
        cJSON_ArrayForEach(ls, lessons)
        {
            rubric_lesson *l = &r->lessons[r->n++];
            l->number = xstrdup(ls->string);
            l->title = str_or(ls, "title", ls->string);
            const cJSON *checks = cJSON_GetObjectItemCaseSensitive(ls, "checks");
            if (strlen(l->number) != 2 || !cJSON_IsArray(checks)) {
                *err = xasprintf("%s: lesson \"%s\" needs a two-digit key and a \"checks\" list",
                                 path, l->number);
                rc = -1;
                break;
            }
            const cJSON *alone = cJSON_GetObjectItemCaseSensitive(ls, "alone");
            if (alone && !cJSON_IsArray(alone)) {
                *err = xasprintf("%s: lesson %s: \"alone\" must be a list of \"suite\" or "
                                 "\"suite/test\" names", path, l->number);
                rc = -1;
                break;
            }
            l->alone = xcalloc((size_t)cJSON_GetArraySize(alone) + 1, sizeof *l->alone);
            const cJSON *a;
            cJSON_ArrayForEach(a, alone)
            {
                const char *v = cJSON_IsString(a) ? a->valuestring : "";
                int ok = v[0] != '\0' && v[0] != '/', slashes = 0;
                for (const char *p = v; *p && ok; ++p) {
                    if (*p == '/') ok = ++slashes == 1 && p[1] != '\0';
                    else ok = (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
                              (*p >= '0' && *p <= '9') || *p == '_';
                }
                if (!ok) {
                    *err = xasprintf("%s: lesson %s: \"alone\" entry \"%s\" is not \"suite\" "
                                     "or \"suite/test\" (letters, digits and _)", path,
                                     l->number, v);
                    rc = -1;
                    break;
                }
                l->alone[l->n_alone++] = xstrdup(v);
            }
            if (rc != 0) break;
            const cJSON *once = cJSON_GetObjectItemCaseSensitive(ls, "verify_once");
            if (once && !cJSON_IsArray(once)) {
                *err = xasprintf("%s: lesson %s: \"verify_once\" must be a list of suite names",
                                 path, l->number);
                rc = -1;
                break;
            }
            l->verify_once = xcalloc((size_t)cJSON_GetArraySize(once) + 1, sizeof *l->verify_once);
            cJSON_ArrayForEach(a, once)
            {
                const char *v = cJSON_IsString(a) ? a->valuestring : "";
                int ok = v[0] != '\0';
                for (const char *p = v; *p && ok; ++p)
                    ok = (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
                         (*p >= '0' && *p <= '9') || *p == '_';
                if (!ok) {
                    *err = xasprintf("%s: lesson %s: \"verify_once\" entry \"%s\" is not a suite "
                                     "name (letters, digits and _)", path, l->number, v);
                    rc = -1;
                    break;
                }
                l->verify_once[l->n_verify_once++] = xstrdup(v);
            }
            if (rc != 0) break;
            l->checks = xcalloc((size_t)cJSON_GetArraySize(checks), sizeof *l->checks);
            const cJSON *c;
            cJSON_ArrayForEach(c, checks)
            {
                char *where = xasprintf("%s: lesson %s, check %d", path, l->number, l->n + 1);
                rc = load_check(c, &l->checks[l->n], where, err);
                l->n++;
                free(where);
                if (rc != 0) break;
                for (int i = 0; i + 1 < l->n; ++i)
                    if (strcmp(l->checks[i].id, l->checks[l->n - 1].id) == 0) {
                        *err = xasprintf("%s: lesson %s has two checks with id \"%s\"", path,
                                         l->number, l->checks[i].id);
                        rc = -1;
                    }
                if (rc != 0) break;
            }
            if (rc != 0) break;
        }
    }
    cJSON_Delete(root);
    return rc;
}

const rubric_lesson *rubric_find(const rubric *r, const char *number)
{
    for (int i = 0; i < r->n; ++i)
        if (strcmp(r->lessons[i].number, number) == 0) return &r->lessons[i];
    return NULL;
}

void rubric_suites(const rubric_lesson *l, int speed, strlist *out)
{
    for (int i = 0; i < l->n; ++i) {
        const rubric_check *c = &l->checks[i];
        if (!c->suite || strlist_has(out, c->suite)) continue;
        if (speed < 0 || (c->kind == KIND_SPEED) == (speed > 0)) strlist_add(out, c->suite);
    }
}

int rubric_speed_suite(const rubric *r, const char *suite)
{
    for (int l = 0; l < r->n; ++l)
        for (int i = 0; i < r->lessons[l].n; ++i) {
            const rubric_check *c = &r->lessons[l].checks[i];
            if (c->kind == KIND_SPEED && c->suite && strcmp(c->suite, suite) == 0) return 1;
        }
    return 0;
}

int rubric_alone(const rubric_lesson *l, const char *suite, const char *test)
{
    size_t n = strlen(suite);
    for (int i = 0; i < l->n; ++i)
        if (l->checks[i].kind == KIND_SPEED && l->checks[i].suite &&
            strcmp(l->checks[i].suite, suite) == 0)
            return 1;
    for (int i = 0; i < l->n_alone; ++i) {
        const char *a = l->alone[i];
        if (strncmp(a, suite, n) != 0) continue;
        if (a[n] == '\0') return 1;
        if (test && a[n] == '/' && strcmp(a + n + 1, test) == 0) return 1;
    }
    return 0;
}

void rubric_free(rubric *r)
{
    for (int i = 0; i < r->n; ++i) {
        rubric_lesson *l = &r->lessons[i];
        for (int j = 0; j < l->n; ++j) {
            rubric_check *k = &l->checks[j];
            free(k->id); free(k->name); free(k->suite); free(k->test); free(k->cases);
            free(k->visibility);
        }
        free(l->checks);
        for (int j = 0; j < l->n_alone; ++j) free(l->alone[j]);
        free(l->alone);
        for (int j = 0; j < l->n_verify_once; ++j) free(l->verify_once[j]);
        free(l->verify_once);
        free(l->number);
        free(l->title);
    }
    free(r->lessons);
    memset(r, 0, sizeof *r);
}

int rubric_verify_once(const rubric_lesson *l, const char *suite)
{
    for (int i = 0; l && i < l->n_verify_once; ++i)
        if (strcmp(l->verify_once[i], suite) == 0) return 1;
    return 0;
}
