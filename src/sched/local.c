/* local.c - run tasks on this host's GPU sets, one task per set at a time,
 * all supervised by one poll loop (see internal.h, mp_sched_run_local). */
#include "compat.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "proc/proc.h"
#include "sched/internal.h"
#include "sched/sched.h"
#include "store/store.h"
#include "xalloc.h"

/* bounds of the hand-over checks */
#define LEFTOVER_RECHECK_MS 50
#define LEFTOVER_GIVEUP_S 10
#define BUSY_RECHECK_MS 1000
#define BUSY_GIVEUP_S 300

enum slot_state { S_IDLE, S_RUNNING, S_RELEASING, S_RETIRED };

struct slot {
    const char *gpus;           /* CUDA_VISIBLE_DEVICES value, "" = not pinned */
    int port;                   /* fixed port for its tasks, 0 = the task picks */
    enum slot_state st;
    size_t task;
    struct mp_proc *p;
    int logfd;
    char marker[MP_PROC_MARKER_SIZE];
    struct mp_sched_rec rec;
    int64_t release_start, recheck_at; /* monotonic ns */
};

struct loop {
    struct mp_sched_plan *pl;
    struct slot *s;
    size_t ns;
    size_t done, running;
};

/* A task's output line into its task.log, through the process's mask
 * (the task masks what it prints itself; this is the same mask again, for
 * what it could not know, and for output it printed before its own mask). */
static void log_line(void *ud, const char *line, size_t len, bool truncated)
{
    struct slot *s = ud;
    if (s->logfd < 0)
        return;
    size_t ml = 0;
    char *m = mp_store_mask_apply_ex(mp_store_mask_process(), line, len,
                                     MP_MASK_WORDS | (truncated ? MP_MASK_CUT : 0), NULL, &ml);
    struct iovec iov[2] = {{m, ml}, {(void *)"\n", 1}};
    ssize_t w = writev(s->logfd, iov, 2);
    free(m);
    MP_UNUSED(w); /* best effort: the task's own store holds its results */
}

static void say(const struct loop *L, const char *name, const char *what)
{
    if (L->pl->quiet)
        return;
    fprintf(stderr, "moeprobe: [%zu/%zu done, %zu running] %s %s\n", L->done, L->pl->n,
            L->running, name, what);
}

static int start_task(struct loop *L, struct slot *s, size_t ti)
{
    struct mp_sched_plan *pl = L->pl;
    struct mp_sched_task *t = &pl->t[ti];
    if (mkdir(t->dir, 0777) != 0 && errno != EEXIST) {
        mp_error("cannot create '%s': %s", t->dir, strerror(errno));
        return -1;
    }
    struct mp_strv argv = MP_STRV_INIT, env = MP_STRV_INIT;
    mp_sched_child_argv(pl, ti, s->port, &argv);
    mp_proc_new_marker(s->marker, sizeof(s->marker));
    if (*s->gpus)
        mp_strv_push_owned(&env, xasprintf("CUDA_VISIBLE_DEVICES=%s", s->gpus));
    mp_strv_push_owned(&env, xasprintf("%s=1", MP_SCHED_CHILD_VAR));
    mp_strv_push_owned(&env, xasprintf("%s=%s", MP_SCHED_TASK_VAR, s->marker));
    char *logp = xasprintf("%s/task.log", t->dir);
    s->logfd = open(logp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    free(logp);
    memset(&s->rec, 0, sizeof(s->rec));
    s->rec.candidate = xstrdup(t->name);
    s->rec.gpus = xstrdup(s->gpus);
    char host[256] = "";
    gethostname(host, sizeof(host) - 1);
    s->rec.host = xstrdup(host);
    s->rec.exit_code = -1;
    s->rec.start_ns = mp_wall_ns();
    mp_sched_rec_write(t->dir, &s->rec);
    struct mp_proc_spec spec = {
        .argv = mp_strv_array(&argv),
        .env_add = mp_strv_array(&env),
        .marker = s->marker,
    };
    struct mp_diag d = MP_DIAG_INIT;
    int rc = mp_proc_spawn(&spec, &s->p, &d);
    mp_strv_release(&argv);
    mp_strv_release(&env);
    if (rc < 0) {
        mp_error("cannot start the task for '%s': %s", t->name, d.msg);
        if (s->logfd >= 0)
            close(s->logfd);
        s->logfd = -1;
        mp_sched_rec_release(&s->rec);
        return -1;
    }
    s->task = ti;
    s->st = S_RUNNING;
    L->running++;
    say(L, t->name, "started");
    if (!pl->quiet && *s->gpus)
        fprintf(stderr, "moeprobe:   %s: CUDA_VISIBLE_DEVICES=%s\n", t->name, s->gpus);
    return 0;
}

/* The task's main process is gone (or is being torn down): make sure the
 * whole task is gone, then check its GPUs before handing them on. */
static void task_exited(struct loop *L, struct slot *s, double grace_s)
{
    struct mp_teardown td;
    mp_proc_teardown(s->p, grace_s, log_line, s, &td);
    int st = td.exit_status;
    int code = -1;
    if (st != -1)
        code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    s->rec.exit_code = code;
    mp_proc_free(s->p);
    s->p = NULL;
    if (s->logfd >= 0)
        close(s->logfd);
    s->logfd = -1;
    s->st = S_RELEASING;
    s->release_start = mp_now_ns();
    s->recheck_at = s->release_start; /* check at once */
    L->running--;
}

static void release_done(struct loop *L, struct slot *s, const char *note)
{
    struct mp_sched_task *t = &L->pl->t[s->task];
    s->rec.end_ns = mp_wall_ns();
    if (note)
        s->rec.note = xstrdup(note);
    mp_sched_rec_write(t->dir, &s->rec);
    L->done++;
    char what[64];
    snprintf(what, sizeof(what), "finished (exit %d)", s->rec.exit_code);
    say(L, t->name, what);
    mp_sched_rec_release(&s->rec);
}

/* One hand-over check of a releasing slot. */
static void release_check(struct loop *L, struct slot *s)
{
    int64_t now = mp_now_ns();
    double waited = (double)(now - s->release_start) / 1e9;
    int left = mp_proc_find_env(MP_SCHED_TASK_VAR, s->marker, SIGKILL);
    mp_proc_reap_orphans();
    if (left > 0) {
        if (waited > LEFTOVER_GIVEUP_S) {
            mp_error("GPUs %s: %d process(es) of task '%s' survive SIGKILL; not using these "
                     "GPUs again",
                     *s->gpus ? s->gpus : "(unpinned)", left, L->pl->t[s->task].name);
            release_done(L, s, "processes survived teardown; GPU set retired");
            s->st = S_RETIRED;
            return;
        }
        s->recheck_at = now + (int64_t)LEFTOVER_RECHECK_MS * 1000000;
        return;
    }
    if (mp_sched_gpus_busy(s->gpus) == 1) {
        if (waited > BUSY_GIVEUP_S) {
            mp_error("GPUs %s still run a compute process %d s after task '%s' ended; not "
                     "using them again",
                     s->gpus, BUSY_GIVEUP_S, L->pl->t[s->task].name);
            release_done(L, s, "GPU memory not released; GPU set retired");
            s->st = S_RETIRED;
            return;
        }
        s->recheck_at = now + (int64_t)BUSY_RECHECK_MS * 1000000;
        return;
    }
    release_done(L, s, NULL);
    s->st = S_IDLE;
}

int mp_sched_run_local(struct mp_sched_plan *pl, const struct mp_strv *sets, int signal_fd)
{
    struct loop L = {.pl = pl, .ns = sets->n};
    L.s = xcalloc(sets->n + 1, sizeof(*L.s));
    for (size_t k = 0; k < sets->n; k++) {
        L.s[k].gpus = sets->v[k];
        L.s[k].port = pl->port ? pl->port + (int)k : 0;
        L.s[k].logfd = -1;
    }
    for (size_t i = 0; i < pl->n; i++)
        L.done += pl->t[i].skip;
    /* the task's own teardown gets its grace; we wait that plus its engine's */
    double grace = pl->grace_s + 15;
    size_t next = 0;
    int signo = 0, rc = 0;
    struct pollfd *pfd = xcalloc(sets->n + 2, sizeof(*pfd));
    struct slot **who = xcalloc(sets->n + 2, sizeof(*who));
    for (;;) {
        /* hand free GPU sets to pending tasks */
        for (size_t k = 0; k < L.ns && !signo; k++) {
            while (next < pl->n && pl->t[next].skip)
                next++;
            if (L.s[k].st != S_IDLE || next >= pl->n)
                continue;
            if (start_task(&L, &L.s[k], next) < 0) {
                rc = MP_EXIT_INTERNAL;
                signo = -1;
                break;
            }
            next++;
        }
        while (next < pl->n && pl->t[next].skip)
            next++;
        bool busy = false, usable = false;
        for (size_t k = 0; k < L.ns; k++) {
            busy = busy || L.s[k].st == S_RUNNING || L.s[k].st == S_RELEASING;
            usable = usable || L.s[k].st != S_RETIRED;
        }
        if (!busy && (next >= pl->n || !usable || signo))
            break;
        /* wait */
        size_t np = 0;
        pfd[np].fd = signal_fd;
        pfd[np].events = POLLIN;
        who[np++] = NULL;
        int64_t now = mp_now_ns(), wake = -1;
        for (size_t k = 0; k < L.ns; k++) {
            struct slot *s = &L.s[k];
            if (s->st == S_RUNNING && mp_proc_output_fd(s->p) >= 0) {
                pfd[np].fd = mp_proc_output_fd(s->p);
                pfd[np].events = POLLIN;
                who[np++] = s;
            }
            if (s->st == S_RELEASING && (wake < 0 || s->recheck_at < wake))
                wake = s->recheck_at;
        }
        int timeout = -1;
        if (wake >= 0)
            timeout = wake <= now ? 0 : (int)((wake - now) / 1000000 + 1);
        int n = poll(pfd, np, timeout);
        if (n < 0 && errno != EINTR) {
            mp_error("poll: %s", strerror(errno));
            rc = MP_EXIT_INTERNAL;
            signo = -1;
        }
        if (pfd[0].revents & POLLIN) {
            struct signalfd_siginfo si;
            while (read(signal_fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
                if (si.ssi_signo == SIGCHLD)
                    continue;
                if (!signo)
                    signo = (int)si.ssi_signo;
            }
            mp_proc_reap_orphans();
        }
        for (size_t i = 1; i < np; i++) {
            if (pfd[i].revents && who[i]->st == S_RUNNING)
                mp_proc_read_lines(who[i]->p, log_line, who[i]);
        }
        for (size_t k = 0; k < L.ns; k++) {
            struct slot *s = &L.s[k];
            if (s->st == S_RUNNING && mp_proc_exited(s->p, NULL))
                task_exited(&L, s, grace);
        }
        if (signo) {
            /* TERM to every task at once, then collect them one by one */
            for (size_t k = 0; k < L.ns; k++) {
                if (L.s[k].st == S_RUNNING)
                    kill(-mp_proc_pid(L.s[k].p), SIGTERM);
            }
            for (size_t k = 0; k < L.ns; k++) {
                if (L.s[k].st == S_RUNNING)
                    task_exited(&L, &L.s[k], grace);
            }
        }
        now = mp_now_ns();
        for (size_t k = 0; k < L.ns; k++) {
            struct slot *s = &L.s[k];
            if (s->st == S_RELEASING && s->recheck_at <= now)
                release_check(&L, s);
        }
    }
    if (next < pl->n && !signo)
        mp_error("no usable GPU set left: %zu candidate(s) not run", pl->n - next);
    for (size_t k = 0; k < L.ns; k++)
        mp_sched_rec_release(&L.s[k].rec);
    free(pfd);
    free(who);
    free(L.s);
    if (signo > 0)
        return 128 + signo;
    return rc;
}
