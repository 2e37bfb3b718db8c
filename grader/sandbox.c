/* grader/sandbox.c — see sandbox.h. */
#define _XOPEN_SOURCE 700
#define _DEFAULT_SOURCE /* lchown over a tree */
#include "sandbox.h"
#include "proc.h"

#include <dirent.h>
#include <ftw.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NOBODY 65534
#define TMP_BYTES "1073741824" /* the step's /tmp: compilers' and profilers' files */
#define SHM_BYTES "268435456"  /* /dev/shm */

/* Folders of the system every step may read: programs, libraries, the CUDA
 * toolkit and driver. Not /etc (secrets live there), /home, /root, /srv or
 * /var: of /etc only what the dynamic loader and Debian's alternatives
 * need. */
static const char *const kSystem[] = {
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt",
    "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives",
};

static int exists(const char *p)
{
    struct stat st;
    return lstat(p, &st) == 0;
}

/* The folder a program lives under (its bin/'s parent), when it is not
 * already under a system folder: a CUDA toolkit in /usr/local is under /usr,
 * a CMake from pip under /opt, but a toolkit in /home/x/cuda is not. */
static void add_prefix_of(sandbox_cfg *c, const char *program)
{
    const char *path = getenv("PATH");
    if (path == NULL) return;
    char *copy = xstrdup(path);
    char *save = NULL;
    for (char *d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
        char *cand = path_join(d, program);
        char *real = is_file(cand) ? abs_path(cand) : NULL;
        free(cand);
        if (real == NULL) continue;
        char *slash = strrchr(real, '/');
        if (slash) *slash = '\0';                   /* .../bin */
        slash = strrchr(real, '/');
        if (slash && slash != real) *slash = '\0';  /* its prefix */
        int covered = 0;
        for (int i = 0; i < c->system_ro.n; ++i) {
            size_t n = strlen(c->system_ro.v[i]);
            if (strncmp(real, c->system_ro.v[i], n) == 0 && (real[n] == '/' || real[n] == '\0'))
                covered = 1;
        }
        if (!covered && strcmp(real, "/") != 0) strlist_add(&c->system_ro, real);
        free(real);
        break;
    }
    free(copy);
}

/* The device nodes a GPU step sees: /dev/nvidiactl, -uvm, -uvm-tools,
 * -modeset, -caps and, of the GPUs' own /dev/nvidiaN, only c->gpu_minor's
 * when it is known (as a container runtime gives a container its GPUs). */
static void find_gpu_nodes(sandbox_cfg *c)
{
    strlist_free(&c->gpu_nodes);
    glob_t gl;
    if (glob("/dev/nvidia*", 0, NULL, &gl) == 0) {
        for (size_t i = 0; i < gl.gl_pathc; ++i) {
            const char *n = gl.gl_pathv[i] + strlen("/dev/nvidia");
            if (c->gpu_minor >= 0 && *n && strspn(n, "0123456789") == strlen(n) &&
                atoi(n) != c->gpu_minor)
                continue; /* another GPU's */
            strlist_add(&c->gpu_nodes, gl.gl_pathv[i]);
        }
        globfree(&gl);
    }
    if (is_dir("/dev/dri")) strlist_add(&c->gpu_nodes, "/dev/dri");
}

/* The minor number of the one GPU CUDA_VISIBLE_DEVICES names by UUID (what
 * --gpus gives each worker), or -1 (no such single UUID, or nvidia-smi or
 * the driver's /proc entry does not say). */
static int own_gpu_minor(void)
{
    const char *vis = getenv("CUDA_VISIBLE_DEVICES");
    if (vis == NULL || !starts_with(vis, "GPU-") || strchr(vis, ',')) return -1;
    char *argv[] = {"nvidia-smi", "--query-gpu=uuid,pci.bus_id", "--format=csv,noheader", NULL};
    proc_opts o = {.timeout_s = 30};
    proc_result r;
    int minor = proc_run(argv, &o, &r) == 0 ? gpu_minor_of(r.output, vis, "/proc") : -1;
    proc_result_free(&r);
    return minor;
}

void sandbox_system(sandbox_cfg *c)
{
    for (size_t i = 0; i < sizeof kSystem / sizeof kSystem[0]; ++i)
        if (exists(kSystem[i])) strlist_add(&c->system_ro, kSystem[i]);
    static const char *const tools[] = {"nvcc", "cmake", "cc", "nm", "compute-sanitizer", "ncu"};
    for (size_t i = 0; i < sizeof tools / sizeof tools[0]; ++i) add_prefix_of(c, tools[i]);
}

int sandbox_init(sandbox_cfg *c, long uid, char **why)
{
    memset(c, 0, sizeof *c);
    *why = NULL;
    c->drop_ids = geteuid() == 0;
    c->uid = uid >= 0 ? (uid_t)uid : (uid_t)NOBODY;
    c->gid = uid >= 0 ? (gid_t)uid : (gid_t)NOBODY;
    sandbox_system(c);
    c->gpu_minor = own_gpu_minor();
    find_gpu_nodes(c);
    const char *env = getenv("FUSIONLAB_BWRAP");
    c->bwrap = xstrdup(env && env[0] ? env : "bwrap");
    c->enabled = 1;

    /* a first sandbox, exactly as the steps get theirs */
    char *argv[] = {"true", NULL};
    sandbox_step st = {0};
    strlist full = {0};
    sandbox_argv(c, &st, argv, &full);
    proc_opts o = {.timeout_s = 30, .set_ids = c->drop_ids, .uid = c->uid, .gid = c->gid};
    proc_result r;
    int rc = proc_run(full.v, &o, &r);
    if (rc != 0) {
        char *t = trim_middle(r.output, 400, 400);
        if (!r.started)
            *why = xasprintf("bubblewrap (%s) is not installed: apt-get install bubblewrap "
                             "(./lab grade installs it as root)", c->bwrap);
        else
            *why = xasprintf("bubblewrap cannot make a sandbox here (%s%s%s): it needs "
                             "unprivileged user namespaces (sysctl "
                             "kernel.unprivileged_userns_clone=1 or user.max_user_namespaces "
                             "> 0; in a container, one that allows them)",
                             t[0] ? "it said: " : "exit status ", t[0] ? t : "",
                             t[0] ? "" : "?");
        free(t);
        c->enabled = 0;
    }
    proc_result_free(&r);
    strlist_free(&full);
    if (c->enabled && c->gpu_minor >= 0) {
        /* the GPU must still be there with only its own node: nvidia-smi,
         * in a GPU step's sandbox, lists its UUID; else every node, said */
        char *smi[] = {"nvidia-smi", "--query-gpu=uuid", "--format=csv,noheader", NULL};
        sandbox_step gs = {.gpu = 1};
        strlist g = {0};
        sandbox_argv(c, &gs, smi, &g);
        proc_opts go = {.timeout_s = 30, .set_ids = c->drop_ids, .uid = c->uid, .gid = c->gid};
        proc_result gr;
        const char *vis = getenv("CUDA_VISIBLE_DEVICES");
        /* (only the UUID counts: nvidia-smi may also complain of the GPUs
         * whose nodes are missing, and exit with an error for them) */
        proc_run(g.v, &go, &gr);
        if (strstr(gr.output, vis) == NULL) {
            fprintf(stderr, "== note: GPU %s was not visible in a sandbox holding only its own "
                            "device node (/dev/nvidia%d); the steps see every GPU's node, and "
                            "CUDA_VISIBLE_DEVICES alone keeps them to this one\n",
                    vis, c->gpu_minor);
            c->gpu_minor = -1;
            find_gpu_nodes(c);
        }
        proc_result_free(&gr);
        strlist_free(&g);
    }
    return c->enabled ? 0 : -1;
}

int sandbox_check_readable(const sandbox_cfg *c, const char *path, char **why)
{
    *why = NULL;
    if (!c->enabled) return 0;
    const char *ro[] = {path, NULL};
    sandbox_step st = {.ro = ro};
    char *argv[] = {"test", "-r", (char *)path, "-a", "-x", (char *)path, NULL};
    strlist full = {0};
    sandbox_argv(c, &st, argv, &full);
    proc_opts o = {.timeout_s = 30, .set_ids = c->drop_ids, .uid = c->uid, .gid = c->gid};
    proc_result r;
    int rc = proc_run(full.v, &o, &r);
    if (rc != 0)
        *why = xasprintf("the sandbox's user (uid %ld) cannot read %s: put the course and the "
                         "--work folder where every user may read them (each folder on the "
                         "way must be world-executable), or pick another user with "
                         "--sandbox-uid", (long)c->uid, path);
    proc_result_free(&r);
    strlist_free(&full);
    return rc == 0 ? 0 : -1;
}

static void add2(strlist *l, const char *a, const char *b)
{
    strlist_add(l, a);
    strlist_add(l, b);
}

static void add3(strlist *l, const char *a, const char *b, const char *c)
{
    strlist_add(l, a);
    strlist_add(l, b);
    strlist_add(l, c);
}

/* out->v[out->n] = NULL, so that out->v can be an argv. */
static void terminate(strlist *out)
{
    strlist_add(out, "");
    free(out->v[--out->n]);
    out->v[out->n] = NULL;
}

void sandbox_argv(const sandbox_cfg *c, const sandbox_step *st, char *const argv[],
                  strlist *out)
{
    if (!c->enabled) {
        for (int i = 0; argv[i]; ++i) strlist_add(out, argv[i]);
        terminate(out);
        return;
    }
    strlist_add(out, c->bwrap);
    static const char *const ns[] = {"--unshare-user", "--unshare-pid", "--unshare-net",
                                     "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
                                     "--die-with-parent", "--new-session", "--clearenv"};
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; ++i) strlist_add(out, ns[i]);
    char id[32];
    snprintf(id, sizeof id, "%d", NOBODY);
    add2(out, "--uid", id);
    add2(out, "--gid", id);
    add2(out, "--hostname", "sandbox");
    /* the environment: nothing of the grader's (its seed least of all) */
    const char *path = getenv("PATH");
    add3(out, "--setenv", "PATH", path ? path : "/usr/local/bin:/usr/bin:/bin");
    add3(out, "--setenv", "HOME", "/tmp");
    add3(out, "--setenv", "TMPDIR", "/tmp");
    add3(out, "--setenv", "LANG", "C.UTF-8");
    static const char *const pass[] = {"LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES", "CUDA_HOME",
                                       "CUDA_PATH", "NCCL_NVLS_ENABLE"};
    for (size_t i = 0; i < sizeof pass / sizeof pass[0]; ++i) {
        const char *v = getenv(pass[i]);
        if (v) add3(out, "--setenv", pass[i], v);
    }
    for (const char *const *e = st->env; e && *e; ++e) {
        const char *eq = strchr(*e, '=');
        if (eq == NULL) continue;
        char *name = xstrndup(*e, (size_t)(eq - *e));
        add3(out, "--setenv", name, eq + 1);
        free(name);
    }
    /* the system, read-only; a private /tmp, /proc of its own pid space and
     * the minimal /dev (null, zero, random, tty...) */
    for (int i = 0; i < c->system_ro.n; ++i) add3(out, "--ro-bind-try", c->system_ro.v[i],
                                                  c->system_ro.v[i]);
    /* every writable tmpfs has a size: memory is not a place to fill */
    add2(out, "--proc", "/proc");
    add2(out, "--dev", "/dev");
    if (st->gpu) {
        for (int i = 0; i < c->gpu_nodes.n; ++i)
            add3(out, "--dev-bind-try", c->gpu_nodes.v[i], c->gpu_nodes.v[i]);
        add3(out, "--ro-bind-try", "/sys", "/sys");
        add3(out, "--ro-bind-try", "/run/nvidia-persistenced", "/run/nvidia-persistenced");
    }
    add2(out, "--size", SHM_BYTES);
    add2(out, "--tmpfs", "/dev/shm");
    add2(out, "--remount-ro", "/dev");
    add2(out, "--size", TMP_BYTES);
    add2(out, "--tmpfs", "/tmp");
    for (const char *const *p = st->ro; p && *p; ++p) add3(out, "--ro-bind-try", *p, *p);
    for (const char *const *p = st->rw; p && *p; ++p) add3(out, "--bind", *p, *p);
    for (const char *const *p = st->hide; p && *p; ++p) {
        if (is_dir(*p)) {
            add2(out, "--size", "4096");
            add2(out, "--tmpfs", *p);
            add2(out, "--remount-ro", *p);
        } else if (exists(*p)) {
            add3(out, "--ro-bind", "/dev/null", *p);
        }
    }
    if (st->chdir) add2(out, "--chdir", st->chdir);
    strlist_add(out, "--");
    for (int i = 0; argv[i]; ++i) strlist_add(out, argv[i]);
    terminate(out);
}

static uid_t g_own_uid;
static gid_t g_own_gid;

static int own_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st; (void)flag; (void)ftw;
    return lchown(path, g_own_uid, g_own_gid) == 0 ? 0 : -1;
}

int sandbox_own(const sandbox_cfg *c, const char *path)
{
    if (!c->enabled || !c->drop_ids) return 0;
    g_own_uid = c->uid;
    g_own_gid = c->gid;
    return nftw(path, own_one, 32, FTW_PHYS) == 0 ? 0 : -1;
}

void sandbox_free(sandbox_cfg *c)
{
    free(c->bwrap);
    strlist_free(&c->system_ro);
    strlist_free(&c->gpu_nodes);
    memset(c, 0, sizeof *c);
}
