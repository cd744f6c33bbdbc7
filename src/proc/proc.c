/* proc.c - the mp_proc object: registry of managed pids, exit status,
 * line reading, release, and small process-wide set-up calls.
 *
 * Invariant: a main child's pid stays in the registry from fork until we
 * reaped it (or handed it over to mp_proc_reap_orphans in mp_proc_free), so
 * orphan reaping can never steal its status. */
#include "compat.h"
#include "proc/internal.h"
#include "proc/proc.h"
#include "xalloc.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "loop.h"

/* ---- registry ---------------------------------------------------------- */

static pid_t *reg;
static size_t reg_n, reg_cap;

void mp_proc__register(pid_t pid)
{
    if (reg_n == reg_cap) {
        reg_cap = reg_cap ? reg_cap * 2 : 8;
        reg = xreallocarray(reg, reg_cap, sizeof(*reg));
    }
    reg[reg_n++] = pid;
}

void mp_proc__unregister(pid_t pid)
{
    for (size_t i = 0; i < reg_n; i++) {
        if (reg[i] == pid) {
            reg[i] = reg[--reg_n];
            break;
        }
    }
    if (reg_n == 0) {
        /* keep leak checkers quiet when nothing is managed any more */
        free(reg);
        reg = NULL;
        reg_cap = 0;
    }
}

bool mp_proc__is_managed(pid_t pid)
{
    for (size_t i = 0; i < reg_n; i++)
        if (reg[i] == pid)
            return true;
    return false;
}

/* ---- live engines ------------------------------------------------------ */

static int live_engines;

int mp_proc__live_engines(void)
{
    return live_engines;
}

void mp_proc__live_engines_add(void)
{
    live_engines++;
}

void mp_proc__engine_gone(struct mp_proc *p)
{
    if (p->engine) {
        p->engine = false;
        live_engines--;
    }
}

/* ---- pidfd ------------------------------------------------------------- */

/* No glibc wrapper before 2.36, so go through syscall(). Kernels before
 * 5.3 answer -ENOSYS and the callers fall back to plain pids with a poll
 * tick. */
int mp_proc__pidfd_open(pid_t pid)
{
    long fd = syscall(SYS_pidfd_open, (long)pid, 0L);
    if (fd < 0)
        return -errno;
    return (int)fd;
}

int mp_proc__pidfd_kill(int pidfd, pid_t pid, int sig)
{
    if (pidfd >= 0) {
        if (syscall(SYS_pidfd_send_signal, (long)pidfd, (long)sig, NULL, 0L) == 0)
            return 0;
        if (errno != ENOSYS)
            return -errno;
    }
    if (kill(pid, sig) == 0)
        return 0;
    return -errno;
}

/* ---- accessors --------------------------------------------------------- */

pid_t mp_proc_pid(const struct mp_proc *p)
{
    return p->pid;
}

int mp_proc_output_fd(const struct mp_proc *p)
{
    return p->out_fd;
}

int mp_proc_pidfd(const struct mp_proc *p)
{
    return p->pidfd;
}

static void mark_reaped(struct mp_proc *p, int status)
{
    p->reaped = true;
    p->status = status;
    mp_proc__unregister(p->pid);
    if (p->pidfd >= 0) {
        close(p->pidfd);
        p->pidfd = -1;
    }
}

bool mp_proc_exited(struct mp_proc *p, int *status)
{
    if (!p->reaped) {
        int st = 0;
        pid_t r;
        do {
            r = waitpid(p->pid, &st, WNOHANG);
        } while (r < 0 && errno == EINTR);
        if (r == p->pid)
            mark_reaped(p, st);
        else if (r < 0 && errno == ECHILD)
            mark_reaped(p, -1); /* stolen by someone's waitpid(-1): status lost */
    }
    if (p->reaped && status)
        *status = p->status;
    return p->reaped;
}

/* ---- lines ------------------------------------------------------------- */

#define READ_CHUNK 65536
#define READ_BUDGET (16 * READ_CHUNK) /* per call: bounded work in a flood */

int mp_proc_read_lines(struct mp_proc *p, mp_proc_line_cb cb, void *ud)
{
    char chunk[READ_CHUNK];
    size_t total = 0;

    if (p->out_fd < 0)
        return 1;
    while (total < READ_BUDGET) {
        ssize_t r = read(p->out_fd, chunk, sizeof(chunk));
        if (r < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return 0;
            return -errno;
        }
        if (r == 0) {
            mp_lines_finish(&p->lines, cb, ud);
            close(p->out_fd);
            p->out_fd = -1;
            return 1;
        }
        mp_lines_feed(&p->lines, chunk, (size_t)r, cb, ud);
        total += (size_t)r;
    }
    return 0;
}

/* ---- release ----------------------------------------------------------- */

static void on_tick(struct mp_loop *l, struct mp_loop_timer *t, void *ud)
{
    (void)l;
    (void)t;
    (void)ud; /* the turn ends; the caller looks again */
}

static void on_gone(struct mp_loop *l, int pidfd, void *ud)
{
    (void)l;
    (void)pidfd;
    (void)ud;
}

/* Wait (bounded) until p is reaped: its pidfd on a loop of our own, or a
 * 10 ms re-check timer without one. */
static void wait_reaped(struct mp_proc *p, int64_t deadline)
{
    struct mp_loop *l = mp_loop_new();
    if (!l)
        return; /* no fd for a loop: mp_proc_reap_orphans gets it later */
    struct mp_loop_timer tick;
    mp_loop_timer_init(&tick, on_tick, NULL);
    int watched = -1;
    while (!mp_proc_exited(p, NULL) && mp_now_ns() < deadline) {
        if (p->pidfd >= 0 && watched < 0 && mp_loop_watch_pid(l, p->pidfd, on_gone, NULL) == 0)
            watched = p->pidfd;
        if (watched < 0)
            mp_loop_timer_start(l, &tick, MP_MIN(deadline, mp_now_ns() + 10 * (int64_t)1000000));
        mp_loop_run_once(l, deadline);
    }
    mp_loop_free(l); /* before anything else can get the pidfd's number */
}

void mp_proc_free(struct mp_proc *p)
{
    if (!p)
        return;
    if (!p->reaped) {
        /* Not torn down (or the leader is stuck): make sure it dies and is
         * waited for, bounded, via its pidfd when we have one. */
        kill(-p->pid, SIGKILL);
        kill(p->pid, SIGKILL);
        wait_reaped(p, mp_now_ns() + 2 * (int64_t)1000000000);
        if (!p->reaped)
            mp_proc__unregister(p->pid); /* hand it to mp_proc_reap_orphans */
    }
    if (p->pidfd >= 0)
        close(p->pidfd);
    if (p->out_fd >= 0)
        close(p->out_fd);
    mp_proc__engine_gone(p);
    free(p->known);
    free(p->name);
    free(p->marker);
    free(p->runtime);
    free(p->cname);
    for (size_t i = 0; p->client && p->client[i]; i++)
        free(p->client[i]);
    free(p->client);
    mp_lines_release(&p->lines);
    free(p);
}

/* ---- process-wide ------------------------------------------------------ */

void mp_proc_ignore_sigpipe(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = SIG_IGN;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGPIPE, &sa, NULL);
}

int mp_proc_become_subreaper(void)
{
    if (prctl(PR_SET_CHILD_SUBREAPER, 1L, 0L, 0L, 0L) < 0)
        return -errno;
    return 0;
}

void mp_proc_describe_status(int status, char *out, size_t n)
{
    if (n == 0)
        return;
    if (status == -1) {
        snprintf(out, n, "exit status unknown");
    } else if (WIFEXITED(status)) {
        snprintf(out, n, "exited with status %d", WEXITSTATUS(status));
    } else if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        const char *name = strsignal(sig);
        snprintf(out, n, "killed by signal %d (%s)%s", sig, name ? name : "unknown",
                 WCOREDUMP(status) ? ", core dumped" : "");
    } else if (WIFSTOPPED(status)) {
        snprintf(out, n, "stopped by signal %d", WSTOPSIG(status));
    } else {
        snprintf(out, n, "unrecognised wait status 0x%x", (unsigned)status);
    }
}

int mp_proc_self_exe(char *out, size_t outsz)
{
    if (outsz < 2)
        return -ENAMETOOLONG;
    ssize_t n = readlink("/proc/self/exe", out, outsz - 1);
    if (n < 0)
        return -errno;
    if ((size_t)n >= outsz - 1)
        return -ENAMETOOLONG; /* possibly cut: readlink does not say */
    out[n] = '\0';
    return n > 0 ? 0 : -ENOENT;
}

const char *mp_proc_environ_file(pid_t pid, char *out, size_t outsz)
{
    snprintf(out, outsz, "/proc/%d/environ", (int)pid);
    return out;
}
