/* tests/grader/audit_names/test_audit_names.c — ctest grader/audit-names:
 * how the speed audit (grader/audit.c) tells kernels apart, on objects nvcc
 * compiled (no GPU needed).
 *
 *   test_audit_names HARNESS_LIB... -- STATIC_GRID_STRIDE.o STATIC_HARNESS_NAME.o
 *                    EXTERN_C_KERNEL.o
 *
 * - a correct file whose kernel is static (host symbol _ZL..., name on the GPU
 *   _Z...) is the student's: Nsight Compute's rows of it count as theirs;
 * - a file with a static kernel named exactly like a harness kernel: that
 *   kernel is the student's too, it is never left out of the profile by the
 *   harness filter, and its rows make the audit see a name clash (the claim
 *   fails with "rename it");
 * - a kernel with C linkage (extern "C": its name on the GPU is the plain
 *   name, a leading "_" or not) and a static kernel in a named namespace
 *   (host symbol _ZN3labL..., on the GPU _ZN3lab...) are the student's too,
 *   not the baseline's;
 * - the verdict on a claim (audit_judge): the figures against the slack, a
 *   wrong output, an unclean run (the student's only where the worked
 *   solution's audit with that tool ran cleanly), the baseline's and the
 *   harness's kernel counts against the worked solution's (unchecked where
 *   it has none), no kernel of the file's;
 * - verify.c: a report giving fewer cases of a test than the trusted run ran
 *   is the student's shortfall; cases.c: one result of a parameterized test
 *   whose cases ran in one process stands for all of them only when each
 *   passed (or each skipped), by the lines the program wrote, else the test
 *   runs again one process per case;
 * - the kernel trace (grader/ktrace.c) is taken only whole: every process
 *   that wrote kernel lines ended with an "#end" line counting them, and no
 *   record was dropped or left without its times.
 * Exit 0 when all hold; each failure is printed.
 */
#include "../../../grader/audit.c"

#include <math.h>

static int failures;
#define EXPECT(cond, ...)                                                            \
    do {                                                                             \
        if (!(cond)) {                                                               \
            printf("FAIL: ");                                                        \
            printf(__VA_ARGS__);                                                     \
            printf("\n");                                                            \
            ++failures;                                                              \
        }                                                                            \
    } while (0)

static const char *kFlush = "_Z18fl_l2_flush_kernelPK4int4mPi";
static const char *kGridStride = "_Z15add_grid_stridePKfS0_Pfm";

/* verify_lesson of `st` (suite "s") against a trusted run of three passing
 * cases of test "t", with no evidence on either side. */
static char *verify_against_three(suite_run *st, int *fault)
{
    cr_case tc[3] = {{"t", CR_PASSED, "", ""}, {"t", CR_PASSED, "", ""}, {"t", CR_PASSED, "", ""}};
    suite_run tr = {.suite = "s", .state = SR_OK, .cases = tc, .n = 3};
    strlist suites = {0};
    strlist_add(&suites, "s");
    char *none[1] = {NULL};
    char *why = verify_lesson(&suites, st, none, &tr, none, fault);
    strlist_free(&suites);
    return why;
}

int main(int argc, char **argv)
{
    int sep = 1;
    while (sep < argc && strcmp(argv[sep], "--") != 0) ++sep;
    if (sep + 3 >= argc) {
        fprintf(stderr, "usage: %s HARNESS_LIB... -- GRID_STRIDE.o HARNESS_NAME.o EXTERN_C.o\n",
                argv[0]);
        return 2;
    }
    grader g;
    memset(&g, 0, sizeof g);
    strset harness = {0};
    kernels_of(&g, argv + 1, sep - 1, 0, &harness);
    EXPECT(strset_has(&harness, kFlush), "the harness libraries define no %s", kFlush);

    /* the correct file of another design */
    strset mine = {0}, base = {0};
    kernels_of(&g, &argv[sep + 1], 1, 0, &mine);
    EXPECT(strset_has(&mine, kGridStride), "a static kernel is not taken for the student's");
    const char *csv = "\"ID\",\"Kernel Name\",\"gpu__time_duration.sum\"\n"
                      "\"1\",\"_Z18fl_l2_flush_kernelPK4int4mPi\",\"1000\"\n"
                      "\"2\",\"_Z15add_grid_stridePKfS0_Pfm\",\"20\"\n"
                      "\"3\",\"_Z13ew_add_kernelPKfS0_Pfm\",\"60\"\n";
    audit_sum a;
    memset(&a, 0, sizeof a);
    sum_csv(csv, &mine, &harness, &base, &a);
    EXPECT(a.student_n == 1 && a.student_ns == 20.0 && a.baseline_n == 1 && a.clash == NULL,
           "correct static kernel: student %d (%.0f ns), baseline %d, clash %s", a.student_n,
           a.student_ns, a.baseline_n, a.clash ? a.clash : "none");
    char *re = harness_filter(&harness, &mine);
    EXPECT(re && strstr(re, kFlush) && !strstr(re, "fill"),
           "the filter must leave out the harness's flush and keep its fill: %s", re);
    free(re);
    free(a.clash);
    strlist_free(&a.seen);
    strset_free(&mine);

    /* the hostile file */
    kernels_of(&g, &argv[sep + 2], 1, 0, &mine);
    EXPECT(strset_has(&mine, kFlush), "the static kernel with a harness name is not the student's");
    re = harness_filter(&harness, &mine);
    EXPECT(re && !strstr(re, kFlush), "the filter leaves the student's kernel out: %s", re);
    free(re);
    memset(&a, 0, sizeof a);
    sum_csv(csv, &mine, &harness, &base, &a);
    EXPECT(a.clash && strcmp(a.clash, kFlush) == 0, "no name clash seen (%s)",
           a.clash ? a.clash : "none");
    free(a.clash);
    strlist_free(&a.seen);
    strset_free(&mine);

    /* C linkage: the trace and ncu name the kernel add_c_linkage */
    kernels_of(&g, &argv[sep + 3], 1, 0, &mine);
    EXPECT(strset_has(&mine, "add_c_linkage") && !strset_has(&mine, "launch_c_linkage"),
           "an extern \"C\" kernel is not taken for the student's (or its launcher is)");
    EXPECT(strset_has(&mine, "_tail_c_linkage"),
           "an extern \"C\" kernel whose name starts with _ is not taken for the student's");
    EXPECT(strset_has(&mine, "_ZN3lab12scale_staticEPfm"),
           "a static kernel in a namespace is not taken for the student's under its GPU name");
    memset(&a, 0, sizeof a);
    sum_csv("\"ID\",\"Kernel Name\",\"gpu__time_duration.sum\"\n"
            "\"1\",\"add_c_linkage\",\"20\"\n\"2\",\"_Z13ew_add_kernelPKfS0_Pfm\",\"60\"\n",
            &mine, &harness, &base, &a);
    EXPECT(a.student_n == 1 && a.baseline_n == 1, "extern \"C\" kernel: student %d, baseline %d",
           a.student_n, a.baseline_n);
    free(a.clash);
    strlist_free(&a.seen);
    strset_free(&mine);
    strset_free(&harness);

    /* the kernel trace: what the grader reads (its header, then the lines
     * of ktrace.c); a trace that is not whole sends the audit to ncu */
    static const char *const head = "\"ID\",\"Process ID\",\"Kernel Name\","
                                    "\"gpu__time_duration.sum\"\n";
    static const struct {
        const char *body, *why; /* why: a word of the reason, NULL when whole */
    } traces[] = {
        {"\"1\",\"10\",\"_Z1kv\",\"5\"\n\"2\",\"10\",\"_Z1kv\",\"6\"\n\"1\",\"11\",\"_Z1kv\",\"7\"\n"
         "\"#end\",\"10\",\"2\",\"\"\n\"#end\",\"11\",\"1\",\"\"\n", NULL},
        {"\"1\",\"10\",\"_Z1kv\",\"5\"\n", "did not reach its end"},
        {"\"1\",\"10\",\"_Z1kv\",\"5\"\n\"#end\",\"10\",\"2\",\"\"\n", "counted 2"},
        {"\"1\",\"10\",\"_Z1kv\",\"5\"\n\"#dropped\",\"10\",\"3\",\"\"\n\"#end\",\"10\",\"1\",\"\"\n",
         "dropped"},
        {"\"#incomplete\",\"10\",\"_Z1kv\",\"\"\n\"#end\",\"10\",\"0\",\"\"\n", "no times"},
        {"\"1\",\"10\",\"_Z1kv\"\n\"#end\",\"10\",\"1\",\"\"\n", "malformed"},
        {"", "no kernel"},
    };
    for (size_t i = 0; i < sizeof traces / sizeof traces[0]; ++i) {
        char *text = xasprintf("%s%s", head, traces[i].body);
        char *why = trace_whole(text);
        if (traces[i].why == NULL)
            EXPECT(why == NULL, "trace %zu: a whole trace refused: %s", i, why);
        else
            EXPECT(why && strstr(why, traces[i].why), "trace %zu: want \"%s\", got %s", i,
                   traces[i].why, why ? why : "a whole trace");
        free(why);
        free(text);
    }
    /* the verdict on one claim */
    {
        speed_rec claim = {.suite = "speed", .test = "t", .speedup = 2.0, .passed = 1};
        speed_rec ref = {.speedup = 2.5, .audit_speedup = 2.0, .audit_baseline_n = 4,
                         .audit_harness_n = 10};
        snprintf(ref.audit_tool, sizeof ref.audit_tool, "CUPTI");
        strset none = {0};
        speed_rec far = ref;
        far.speedup = 4.0;
        EXPECT(honest_factor(NULL) == 1.0 && fabs(honest_factor(&ref) - 1.25) < 1e-12 &&
                   honest_factor(&far) == HONEST_MAX,
               "the worked solution's factor: %g, %g, %g", honest_factor(NULL),
               honest_factor(&ref), honest_factor(&far));
        audit_sum ok;
        memset(&ok, 0, sizeof ok);
        ok.tool = "CUPTI";
        ok.ran = ok.clean_exit = 1;
        ok.student_n = 5, ok.baseline_n = 4, ok.harness_n = 10, ok.rows = 19;
        ok.student_ns = 100, ok.baseline_ns = 200; /* measured 2x */
        static const struct {
            const char *what;
            int rc, ref, unclean, wrong, base_n, harn_n, student_n;
            double claim;
            audit_verdict want;
            const char *word;
        } cases[] = {
            {"consistent", 0, 1, 0, 0, 4, 10, 5, 2.0, AUDIT_CONSISTENT, "consistent"},
            {"within the slack", 0, 1, 0, 0, 4, 10, 5, 2.55, AUDIT_CONSISTENT, "consistent"},
            {"over the slack", 0, 1, 0, 0, 4, 10, 5, 2.7, AUDIT_FAILS, "claims 2.70x"},
            {"wrong output", 0, 1, 0, 1, 4, 10, 5, 2.0, AUDIT_FAILS, "wrong output"},
            {"unclean, reference clean", 0, 1, 1, 0, 4, 10, 5, 2.0, AUDIT_FAILS, "did not end"},
            {"unclean, measured nothing, reference clean", -1, 1, 1, 0, 0, 0, 0, 2.0, AUDIT_FAILS,
             "did not end"},
            {"unclean, measured nothing, no reference", -1, 0, 1, 0, 0, 0, 0, 2.0, AUDIT_NOT_RUN,
             "not run"},
            {"unclean, no reference, figures fine", 0, 0, 1, 0, 4, 10, 5, 2.0, AUDIT_CONSISTENT,
             "consistent"},
            {"a kernel more counted as the baseline's", 0, 1, 0, 0, 5, 10, 5, 2.0, AUDIT_FAILS,
             "neither your file's"},
            {"a kernel more under a harness name", 0, 1, 0, 0, 4, 11, 5, 2.0, AUDIT_FAILS,
             "harness's names"},
            {"counts not checked without a reference", 0, 0, 0, 0, 5, 11, 5, 2.0,
             AUDIT_CONSISTENT, "consistent"},
            {"no kernel of the file's", 0, 1, 0, 0, 4, 10, 0, 2.0, AUDIT_FAILS, "no kernel of your"},
        };
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
            audit_sum a = ok;
            claim.speedup = cases[i].claim;
            a.clean_exit = !cases[i].unclean;
            a.exit_note = cases[i].unclean ? "killed by signal 11" : NULL;
            a.wrong = cases[i].wrong ? "y[3] wrong" : NULL;
            a.baseline_n = cases[i].base_n;
            a.harness_n = cases[i].harn_n;
            a.student_n = cases[i].student_n;
            if (cases[i].rc != 0) a.rows = 0;
            sbuf text = {0};
            audit_verdict v = audit_judge(&claim, &a, cases[i].rc, NULL,
                                          cases[i].ref ? &ref : NULL, 1.0, &none, &text);
            EXPECT(v == cases[i].want && strstr(sbuf_str(&text), cases[i].word),
                   "verdict, %s: got %d (%s), want %d with \"%s\"", cases[i].what, (int)v,
                   sbuf_str(&text), (int)cases[i].want, cases[i].word);
            sbuf_free(&text);
        }
    }

    /* a case of the worked solution's run that did not end (crashed, timed
     * out, killed) vouches for no pass; one that ran to its end and
     * compared nothing does */
    {
        cr_case tc[2] = {{"t", CR_PASSED, "", ""}, {"t", CR_CRASHED, "", ""}};
        cr_case sc[2] = {{"t", CR_PASSED, "", ""}, {"t", CR_PASSED, "", ""}};
        suite_run tr = {.suite = "s", .state = SR_OK, .cases = tc, .n = 2};
        suite_run st = {.suite = "s", .state = SR_OK, .cases = sc, .n = 2};
        strlist suites = {0};
        strlist_add(&suites, "s");
        char *none[1] = {NULL};
        int fault = 0;
        char *why = verify_lesson(&suites, &st, none, &tr, none, &fault);
        EXPECT(why && strstr(why, "did not finish every case") && fault,
               "a crashed trusted case vouched for a pass, or was not called the grader's "
               "fault (%d): %s", fault, why ? why : "(borne out)");
        free(why);
        /* three claims against two trusted cases, one of them cut: the third
         * claim is the student's own shortfall */
        cr_case sc3[3] = {{"t", CR_PASSED, "", ""}, {"t", CR_PASSED, "", ""},
                          {"t", CR_PASSED, "", ""}};
        suite_run st3 = {.suite = "s", .state = SR_OK, .cases = sc3, .n = 3};
        why = verify_lesson(&suites, &st3, none, &tr, none, &fault);
        EXPECT(why && !fault, "a shortfall beyond the trusted run's cut cases was called the "
               "grader's fault: %s", why ? why : "(borne out)");
        free(why);
        tc[1].status = CR_FAILED;
        why = verify_lesson(&suites, &st, none, &tr, none, &fault);
        EXPECT(why == NULL && !fault, "two trusted cases that ran to their end did not vouch: %s",
               why);
        free(why);
        strlist_free(&suites);
    }

    /* a report that gives fewer cases of a test than the trusted run ran
     * (one result standing for a test of three cases) is the student's */
    {
        cr_case sc[1] = {{"t", CR_PASSED, "", ""}};
        suite_run st = {.suite = "s", .state = SR_OK, .cases = sc, .n = 1};
        int fault = 1;
        char *why = verify_against_three(&st, &fault);
        EXPECT(why && strstr(why, "the report gives 1 case;") && !fault,
               "a report of 1 case against 3 trusted ones was borne out, or called the "
               "grader's fault: %s", why ? why : "(borne out)");
        free(why);
    }

    /* a run without its report that lists fewer cases than the trusted run
     * ran (its output forged, or cut short) gets the rest as not passed */
    {
        suite_run st = {.suite = "s", .state = SR_NO_REPORT, .n = 1};
        st.cases = xcalloc(2, sizeof *st.cases);
        st.cases[0] = (cr_case){xstrdup("t"), CR_PASSED, xstrdup(""), xstrdup("")};
        int fault = 0;
        char *why = verify_against_three(&st, &fault);
        int killed = 0;
        for (int k = 0; k < st.n; ++k) killed += st.cases[k].status == CR_KILLED;
        EXPECT(st.n == 3 && killed == 2 && why == NULL,
               "a run without its report listing 1 case of 3 was not given the other 2 as not "
               "passed (%d cases, %d killed): %s", st.n, killed, why ? why : "(borne out)");
        free(why);
        st.suite = xstrdup("s");
        suite_run_free(&st);
    }

    /* cases.c: one result of a test whose cases ran together stands for all
     * of them only when every case passed, or every one skipped */
    {
        static const struct {
            const char *what, *report;
            cr_status st;
            int results;         /* results of "t" in the run (its shares) */
            int jobs;            /* the run's --jobs */
            int want_n;          /* cases of "t" after, -1: none (runs again) */
            cr_status want_st;
        } cases[] = {
            {"all passed", "param s/t 4 1\nran s/t 4 0 4 0\n", CR_PASSED, 1, 1, 4, CR_PASSED},
            {"all skipped", "param s/t 3 1\nran s/t 3 0 0 3\n", CR_SKIPPED, 1, 1, 3, CR_SKIPPED},
            {"the runner and the process both", "param s/t 4 1\nparam s/t 4 1\nran s/t 4 0 4 0\n",
             CR_PASSED, 1, 1, 4, CR_PASSED},
            {"two shares, all passed", "param s/t 5 2\nran s/t 5 1 3 0\nran s/t 5 0 2 0\n",
             CR_PASSED, 2, 2, 5, CR_PASSED},
            {"two shares, all skipped", "param s/t 5 2\nran s/t 5 0 0 2\nran s/t 5 1 0 3\n",
             CR_SKIPPED, 2, 2, 5, CR_SKIPPED},
            {"two shares, one result", "param s/t 5 2\nran s/t 5 0 2 0\nran s/t 5 1 3 0\n",
             CR_PASSED, 1, 2, -1, CR_FAILED},
            {"two shares, one ran line", "param s/t 5 2\nran s/t 5 0 2 0\n", CR_PASSED, 2, 2, -1,
             CR_FAILED},
            {"two shares, one share twice", "param s/t 5 2\nran s/t 5 0 2 0\nran s/t 5 0 2 0\n",
             CR_PASSED, 2, 2, -1, CR_FAILED},
            {"a share of the wrong size", "param s/t 5 2\nran s/t 5 0 3 0\nran s/t 5 1 2 0\n",
             CR_PASSED, 2, 2, -1, CR_FAILED},
            {"a share past P", "param s/t 5 2\nran s/t 5 0 2 0\nran s/t 5 2 3 0\n", CR_PASSED, 2, 2,
             -1, CR_FAILED},
            {"a case failed", "param s/t 4 1\nran s/t 4 0 4 0\n", CR_FAILED, 1, 1, -1, CR_FAILED},
            {"crashed", "param s/t 4 1\n", CR_CRASHED, 1, 1, -1, CR_FAILED},
            {"passed, no ran line", "param s/t 4 1\n", CR_PASSED, 1, 1, -1, CR_FAILED},
            {"passed, one skipped", "param s/t 4 1\nran s/t 4 0 3 1\n", CR_PASSED, 1, 1, -1, CR_FAILED},
            {"skipped, one ran", "param s/t 4 1\nran s/t 4 0 1 3\n", CR_SKIPPED, 1, 1, -1, CR_FAILED},
            {"ran line of another size", "param s/t 4 1\nran s/t 5 0 5 0\n", CR_PASSED, 1, 1, -1,
             CR_FAILED},
            {"params that disagree", "param s/t 4 1\nparam s/t 6 1\nran s/t 4 0 4 0\n", CR_PASSED,
             1, 1, -1, CR_FAILED},
            {"two processes for one share", "param s/t 4 1\nran s/t 4 0 4 0\nran s/t 4 0 4 0\n",
             CR_PASSED, 1, 1, -1, CR_FAILED},
            {"no lines: an ordinary test", "", CR_PASSED, 1, 1, 1, CR_PASSED},
            {"another suite's lines", "param s2/t 4 1\nran s2/t 4 0 4 0\n", CR_PASSED, 1, 1, 1,
             CR_PASSED},
            {"lines that do not parse", "param s/t four 1\nparam s/t 4\nran s/t 4 0 4 0 x\n",
             CR_PASSED, 1, 1, 1, CR_PASSED},
            {"P other than the run's --jobs", "param s/t 4 1\nran s/t 4 0 4 0\n", CR_PASSED, 1, 4,
             -1, CR_FAILED},
            {"four shares of a run of --jobs 4", "param s/t 4 4\nran s/t 4 0 1 0\n"
             "ran s/t 4 1 1 0\nran s/t 4 2 1 0\nran s/t 4 3 1 0\n", CR_PASSED, 4, 4, 4, CR_PASSED},
            {"more cases than a test may have", "param s/t 5000 1\nran s/t 5000 0 5000 0\n",
             CR_PASSED, 1, 1, 1, CR_PASSED},
        };
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
            suite_run sr = {.suite = "s", .state = SR_OK};
            int m = cases[i].results + 2;
            sr.cases = xcalloc((size_t)m, sizeof *sr.cases);
            for (int k = 0; k < m; ++k) {
                const char *name = k == 0 ? "a" : k == m - 1 ? "z" : "t";
                int is_t = name[0] == 't';
                sr.cases[k].test = xstrdup(name);
                sr.cases[k].status = is_t ? cases[i].st : CR_PASSED;
                sr.cases[k].message = xstrdup(is_t ? "why" : "");
                sr.cases[k].extra = xstrdup("");
            }
            sr.n = m;
            char *again = cases_expand(&sr, cases[i].report, cases[i].jobs);
            int n_t = 0, ok_st = 1, others = 0;
            for (int k = 0; k < sr.n; ++k) {
                if (strcmp(sr.cases[k].test, "t") == 0) {
                    ++n_t;
                    ok_st &= sr.cases[k].status == cases[i].want_st &&
                             strcmp(sr.cases[k].message, "why") == 0;
                } else {
                    ++others;
                }
            }
            if (cases[i].want_n < 0)
                EXPECT(again && strcmp(again, "t") == 0 && n_t == 0 && others == 2,
                       "cases.c, %s: want t to run again (and no result of it kept), got "
                       "again=%s, %d results of t", cases[i].what, again ? again : "(none)", n_t);
            else
                EXPECT(again == NULL && n_t == cases[i].want_n && ok_st && others == 2,
                       "cases.c, %s: want %d results of t, got %d (again=%s)", cases[i].what,
                       cases[i].want_n, n_t, again ? again : "(none)");
            free(again);
            sr.suite = xstrdup("s");
            suite_run_free(&sr);
        }
        /* a run that ended without its report is not expanded */
        cr_case one[1] = {{"t", CR_PASSED, "", ""}};
        suite_run killed = {.suite = "s", .state = SR_KILLED, .cases = one, .n = 1};
        char *again = cases_expand(&killed, "param s/t 4 1\nran s/t 4 0 4 0\n", 1);
        EXPECT(again == NULL && killed.n == 1 && killed.cases == one,
               "cases.c expanded a run that ended without its report");
        free(again);
    }

    /* what a verify_once run measured is handed on only whole */
    {
        static const struct {
            const char *text;
            int n, whole;
        } cases[] = {
            {"softmax_fused 32768 4096 536870912 536870912 1\n", 1, 1},
            {"a 1 2 3 4 1\nb 5 6 7.5e8 8 2\n", 2, 1},
            {"a 1 2 3 4 1\nb 5 6 7 8 2\n", 3, 0},       /* a case that ran left no line */
            {"a 1 2 3 4 1\nb 5 6 7 8", 2, 0},           /* cut short */
            {"a 1 2 3 4 1 extra\n", 1, 0},
            {"a 0 2 3 4 1\n", 1, 0},                    /* no rows */
            {"a 1 2 -3 4 1\n", 1, 0},                   /* bytes must be counted */
            {"a 1 2 nan 4 1\n", 1, 0},
            {"", 0, 0},
        };
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
            char *m = measured_lines(cases[i].text, cases[i].n);
            EXPECT((m != NULL) == cases[i].whole, "measured_lines case %zu: got %s, want %s", i,
                   m ? "taken" : "refused", cases[i].whole ? "taken" : "refused");
            free(m);
        }
    }

    if (failures == 0)
        printf("PASS: a static kernel is the student's; one named like a harness kernel stays in "
               "the profile and is a name clash; an extern \"C\" kernel is the student's; a "
               "kernel trace is taken only whole; the verdicts on claims hold; measurements are "
               "handed on only whole; a trusted case that did not end vouches for nothing; a "
               "report of fewer cases than the trusted run is the student's, or, cut short, the rest "
               "count as not passed; results of cases "
               "run together stand for their cases only when whole\n");
    return failures ? 1 : 0;
}
