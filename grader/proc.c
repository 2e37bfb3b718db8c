/* grader/proc.c — see proc.h. */
#define _XOPEN_SOURCE 700
#define _DEFAULT_SOURCE /* setgroups */
#include "proc.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <grp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t g_stop = 0;

static void on_stop(int sig)
{
    (void)sig;
    g_stop = 1;
}

void proc_install_signal_handlers(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}

int proc_interrupted(void) { return g_stop != 0; }

/* The captured output: all of the first `head` bytes, and the last `tail`
 * bytes in a ring. */
typedef struct {
    sbuf head;
    char *ring;
    size_t tail, ring_len, ring_pos;
    size_t total, head_cap;
} capture;

static void capture_add(capture *c, const char *s, size_t n)
{
    c->total += n;
    if (c->head.len < c->head_cap) {
        size_t k = c->head_cap - c->head.len;
        if (k > n) k = n;
        sbuf_addn(&c->head, s, k);
        s += k;
        n -= k;
    }
    for (size_t i = 0; i < n && c->tail > 0; ++i) {
        c->ring[c->ring_pos] = s[i];
        c->ring_pos = (c->ring_pos + 1) % c->tail;
        if (c->ring_len < c->tail) c->ring_len++;
    }
}

static char *capture_take(capture *c)
{
    sbuf b = {0};
    sbuf_add(&b, sbuf_str(&c->head));
    size_t dropped = c->total - c->head.len - c->ring_len;
    if (c->ring_len > 0) {
        if (dropped > 0) sbuf_addf(&b, "\n[... %zu bytes of output cut ...]\n", dropped);
        size_t start = c->ring_len < c->tail ? 0 : c->ring_pos;
        for (size_t i = 0; i < c->ring_len; ++i) {
            char ch = c->ring[(start + i) % c->tail];
            sbuf_addn(&b, &ch, 1);
        }
    }
    sbuf_free(&c->head);
    free(c->ring);
    return sbuf_take(&b);
}

static void set_limit(int which, unsigned long long v)
{
    if (v == 0) return;
    /* never above what the grader itself may use: only root could raise it */
    struct rlimit cur;
    if (getrlimit(which, &cur) == 0 && cur.rlim_max != RLIM_INFINITY && (rlim_t)v > cur.rlim_max)
        v = (unsigned long long)cur.rlim_max;
    struct rlimit rl = {(rlim_t)v, (rlim_t)v};
    if (setrlimit(which, &rl) != 0) {
        fprintf(stderr, "cannot set a limit (%d): %s\n", which, strerror(errno));
        _exit(126);
    }
}

/* The run's limits, then its user: after setuid the limits cannot be raised
 * again by what runs. Nothing is left to chance: any failure stops the run. */
static void child_limits_and_ids(const proc_opts *o)
{
    const proc_limits *l = o->limits;
    if (l) {
        set_limit(RLIMIT_AS, l->as_bytes);
        set_limit(RLIMIT_DATA, l->data_bytes);
        set_limit(RLIMIT_FSIZE, l->fsize_bytes);
        if (l->cpu_s > 0) set_limit(RLIMIT_CPU, (unsigned long long)(l->cpu_s + 1.0));
        if (l->nproc > 0) set_limit(RLIMIT_NPROC, (unsigned long long)l->nproc);
        struct rlimit none = {0, 0};
        setrlimit(RLIMIT_CORE, &none);
    }
    if (o->set_ids) {
        if (setgroups(0, NULL) != 0 || setgid(o->gid) != 0 || setuid(o->uid) != 0 ||
            setuid(0) == 0) {
            fprintf(stderr, "cannot become uid %ld: %s\n", (long)o->uid, strerror(errno));
            _exit(126);
        }
    }
}

static void child_exec(char *const argv[], const proc_opts *o, int out_fd)
{
    setpgid(0, 0);
    signal(SIGPIPE, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, 0);
    dup2(out_fd, 1);
    if (o->discard_stderr) {
        int null_out = open("/dev/null", O_WRONLY);
        if (null_out >= 0) dup2(null_out, 2);
    } else {
        dup2(out_fd, 2);
    }
    if (o->cwd && chdir(o->cwd) != 0) {
        fprintf(stderr, "cannot enter %s: %s\n", o->cwd, strerror(errno));
        _exit(126);
    }
    child_limits_and_ids(o);
    if (o->clear_env) {
        const char *p = getenv("PATH");
        char *path = strdup(p ? p : "/usr/bin:/bin");
        clearenv();
        if (path) setenv("PATH", path, 1);
        free(path);
    }
    for (const char *const *u = o->env_unset; u && *u; ++u) unsetenv(*u);
    for (const char *const *e = o->env_set; e && *e; ++e) {
        const char *eq = strchr(*e, '=');
        if (eq == NULL) continue;
        char name[256];
        size_t n = (size_t)(eq - *e);
        if (n >= sizeof name) continue;
        memcpy(name, *e, n);
        name[n] = '\0';
        setenv(name, eq + 1, 1);
    }
    execvp(argv[0], argv);
    fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(127);
}

int proc_run(char *const argv[], const proc_opts *o, proc_result *r)
{
    proc_opts defaults = {0};
    if (o == NULL) o = &defaults;
    memset(r, 0, sizeof *r);
    double grace = o->grace_s > 0 ? o->grace_s : 5.0;
    capture c = {0};
    c.head_cap = o->head ? o->head : 256 * 1024;
    c.tail = o->tail ? o->tail : 256 * 1024;
    c.ring = xmalloc(c.tail);

    int fds[2];
    if (pipe(fds) != 0) {
        r->output = xasprintf("cannot make a pipe: %s", strerror(errno));
        free(c.ring);
        return -1;
    }
    double t0 = now_s();
    pid_t pid = fork();
    if (pid < 0) {
        r->output = xasprintf("cannot fork: %s", strerror(errno));
        close(fds[0]);
        close(fds[1]);
        free(c.ring);
        return -1;
    }
    if (pid == 0) {
        close(fds[0]);
        child_exec(argv, o, fds[1]);
    }
    setpgid(pid, pid); /* both sides set it: whichever runs first wins the race */
    close(fds[1]);
    r->started = 1;
    fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK);

    int status = 0, exited = 0, pipe_open = 1;
    double term_at = -1.0;
    while (!exited || pipe_open) {
        double t = now_s() - t0;
        int want_kill = 0;
        if (!exited && o->timeout_s > 0 && t >= o->timeout_s && !r->timed_out) {
            r->timed_out = 1;
            want_kill = 1;
        }
        if (!exited && g_stop && !r->interrupted) {
            r->interrupted = 1;
            want_kill = 1;
        }
        if (want_kill && term_at < 0) {
            kill(-pid, SIGTERM);
            term_at = now_s();
        }
        if (term_at >= 0 && now_s() - term_at >= grace) kill(-pid, SIGKILL);
        if (exited && pipe_open) {
            /* the main process is gone; a leftover test process may still
             * hold the pipe: end the group, then drain what is buffered */
            kill(-pid, SIGKILL);
        }

        int wait_ms = 200;
        if (pipe_open) {
            struct pollfd p = {.fd = fds[0], .events = POLLIN};
            int pr = poll(&p, 1, wait_ms);
            if (pr > 0) {
                char buf[65536];
                ssize_t n = read(fds[0], buf, sizeof buf);
                if (n > 0) {
                    for (ssize_t i = 0; i < n; ++i)
                        if (buf[i] == '\0') buf[i] = '?'; /* keep it a C string */
                    capture_add(&c, buf, (size_t)n);
                }
                else if (n == 0 || (errno != EAGAIN && errno != EINTR)) pipe_open = 0;
            }
        } else {
            struct timespec ts = {0, 50 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
        if (!exited) {
            pid_t w = waitpid(pid, &status, WNOHANG);
            if (w == pid) exited = 1;
            else if (w < 0 && errno != EINTR) exited = 1;
        }
    }
    close(fds[0]);
    kill(-pid, SIGKILL); /* nothing of the group outlives the run */
    r->elapsed_s = now_s() - t0;
    if (WIFEXITED(status)) r->exit_code = WEXITSTATUS(status);
    else if (WIFSIGNALED(status)) {
        r->term_signal = WTERMSIG(status);
        r->exit_code = 128 + r->term_signal;
    }
    r->output_bytes = c.total;
    r->output = capture_take(&c);
    if (r->exit_code == 127 && strstr(r->output, "cannot run ") == r->output) r->started = 0;
    return (r->exit_code == 0 && !r->timed_out && !r->interrupted) ? 0 : -1;
}

void proc_result_free(proc_result *r)
{
    free(r->output);
    r->output = NULL;
}
