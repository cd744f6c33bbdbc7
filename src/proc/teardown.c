/* teardown.c - stop an engine's whole process tree, bounded in time, as
 * non-blocking steps driven by an event loop (base/loop.h): the caller's
 * (mp_proc_stop_begin: an attempt's one loop, which keeps serving signals
 * and the engine's last words meanwhile) or a private one
 * (mp_proc_teardown, the blocking form).
 *
 * Waiting is event driven: the loop watches the output pipe (a child
 * blocked on a full pipe cannot exit, so it is drained), the main child's
 * pidfd and pidfds of the other live group members and escapees (a pidfd
 * becomes readable when that process exits, whoever its parent is); each
 * event re-checks the step's condition. Every step has a deadline timer.
 * Without pidfd support (kernel < 5.3) a 10 ms re-check timer stands in.
 *
 *   TERM        TERM+CONT sent (and `<runtime> stop`): until the group is
 *               gone or the grace passes (mp_proc_stop_now: at once)
 *   KILL        KILL sent to the group: until it is gone or 2 s
 *   ESCAPEES    marked, then unmarked escapees KILLed until none is left
 *               (2 s each)
 *   CONTAINER   `<runtime> stop` finished (bounded), `<runtime> rm -f`
 *               (10 s)
 *   DONE        *out filled by mp_proc_stop_end */
#include "compat.h"
#include "proc/internal.h"
#include "proc/proc.h"
#include "xalloc.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "err.h"
#include "loop.h"

#define NS_PER_S ((int64_t)1000000000)
#define KILL_WAIT_NS (2 * NS_PER_S)      /* group to vanish after SIGKILL */
#define ESCAPEE_WAIT_NS (2 * NS_PER_S)   /* escapees to vanish after SIGKILL */
#define HELPER_EXTRA_NS (5 * NS_PER_S)   /* `runtime stop` beyond its own -t */
#define RM_WAIT_NS (10 * NS_PER_S)       /* `runtime rm -f` */
#define MAX_WATCH 64                     /* pidfds watched at once besides ours */
#define FALLBACK_TICK_NS (10 * (int64_t)1000000)

static bool pid_in(const pid_t *set, size_t n, pid_t pid)
{
    for (size_t i = 0; i < n; i++)
        if (set[i] == pid)
            return true;
    return false;
}

/* Distinct pids killed outside the group (escapees), shared by both kinds. */
struct killed_set {
    pid_t pid[256];
    size_t n;
    int count;
};

static void count_killed(struct killed_set *k, pid_t pid)
{
    if (pid_in(k->pid, k->n, pid))
        return;
    if (k->n < MP_ARRAY_SIZE(k->pid))
        k->pid[k->n++] = pid;
    k->count++;
}

/* Processes of p still alive: marked ones and unmarked escapees, each once. */
static int count_left(struct mp_proc *p)
{
    pid_t marked[MAX_WATCH], adopted[MAX_WATCH];
    int nm = p->marker ? mp_proc__collect_marked(p->marker, marked, MP_ARRAY_SIZE(marked)) : 0;
    int na = mp_proc__collect_adopted(p, adopted, MP_ARRAY_SIZE(adopted));
    int left = nm > 0 ? nm : 0;
    size_t nmw = (size_t)MP_MIN(left, (int)MP_ARRAY_SIZE(marked));
    for (int i = 0; i < na; i++)
        if (i >= (int)MP_ARRAY_SIZE(adopted) || !pid_in(marked, nmw, adopted[i]))
            left++;
    return left;
}

/* Spawn `<client> args...` (client: p's client words, else its runtime)
 * with its output discarded; NULL on failure. */
static struct mp_proc *run_helper(const struct mp_proc *p, const char *a1, const char *a2,
                                  const char *a3, const char *a4)
{
    char *argv[64];
    size_t n = 0;
    struct mp_proc_spec spec;
    struct mp_proc *h = NULL;

    if (p->client) {
        for (size_t i = 0; p->client[i] && n < MP_ARRAY_SIZE(argv) - 5; i++)
            argv[n++] = p->client[i];
    } else {
        argv[n++] = p->runtime;
    }
    const char *args[4] = {a1, a2, a3, a4};
    for (size_t i = 0; i < 4 && args[i]; i++)
        argv[n++] = (char *)args[i];
    argv[n] = NULL;
    memset(&spec, 0, sizeof(spec));
    spec.argv = argv;
    if (mp_proc_spawn(&spec, &h, NULL) < 0)
        return NULL;
    return h;
}


/* A teardown in progress. */
struct mp_proc_stop {
    struct mp_proc *p;
    struct mp_loop *loop;            /* borrowed */
    mp_proc_line_cb cb;              /* the engine's lines (may be NULL) */
    void *ud;
    void (*on_step)(void *ud, enum mp_stop_step step);
    void *step_ud;
    enum mp_stop_step step;
    int sub;                         /* ESCAPEES: 0 marked, 1 unmarked; CONTAINER: 0 stop, 1 rm */
    struct mp_teardown t;
    int64_t t0, grace_ns;
    double grace_s;
    struct mp_proc *helper;          /* `<runtime> stop` or `rm -f` in flight, or NULL */
    int out_fd;                      /* p's output pipe while watched, else -1 */
    struct mp_loop_timer deadline;   /* the step's */
    struct mp_loop_timer tick;       /* a re-check (no pidfd to wait on, or one now) */
    int fds[MAX_WATCH];              /* pidfds of other processes, opened here */
    size_t nfds;
    struct killed_set ks;
    bool in_check;                   /* check() runs: a nested call is folded into it */
    bool again;
};

static void check(struct mp_proc_stop *s);

/* Has proc exited (reaped)? Its pidfd closes when it is reaped: the loop
 * forgets it first. */
static bool exited(struct mp_proc_stop *s, struct mp_proc *proc)
{
    if (!proc)
        return true;
    int pfd = proc->pidfd;
    bool gone = mp_proc_exited(proc, NULL);
    if (gone && pfd >= 0)
        mp_loop_fd_del(s->loop, pfd);
    return gone;
}

static void on_pid(struct mp_loop *l, int pidfd, void *ud)
{
    (void)l;
    (void)pidfd;
    check(ud);
}

static void on_tick(struct mp_loop *l, struct mp_loop_timer *t, void *ud)
{
    (void)l;
    (void)t;
    check(ud);
}

static void drop_fds(struct mp_proc_stop *s)
{
    for (size_t i = 0; i < s->nfds; i++) {
        mp_loop_fd_del(s->loop, s->fds[i]);
        close(s->fds[i]);
    }
    s->nfds = 0;
}

/* Wait for any of pids to exit (pidfds, else the re-check tick); a pid
 * already gone asks for a re-check at once. */
static void watch_pids(struct mp_proc_stop *s, const pid_t *pids, size_t n)
{
    drop_fds(s);
    bool tick = false;
    for (size_t i = 0; i < n && s->nfds < MAX_WATCH; i++) {
        int fd = mp_proc__pidfd_open(pids[i]);
        if (fd == -ESRCH) {
            mp_loop_timer_start(s->loop, &s->tick, 0); /* gone already: look again */
            return;
        }
        if (fd < 0 || mp_loop_watch_pid(s->loop, fd, on_pid, s) < 0) {
            if (fd >= 0)
                close(fd);
            tick = true;
            continue;
        }
        s->fds[s->nfds++] = fd;
    }
    if (tick)
        mp_loop_timer_start(s->loop, &s->tick, mp_now_ns() + FALLBACK_TICK_NS);
}

/* The engine's output: lines to cb; at its end the loop forgets the pipe. */
static void drain_output(struct mp_proc_stop *s)
{
    if (s->out_fd < 0)
        return;
    int fd = s->out_fd;
    if (mp_proc_read_lines(s->p, s->cb, s->ud) != 0 || s->p->out_fd < 0) {
        mp_loop_fd_del(s->loop, fd);
        s->out_fd = -1;
    }
}

static void on_output(struct mp_loop *l, int fd, unsigned what, void *ud)
{
    (void)l;
    (void)fd;
    (void)what;
    check(ud);
}

/* The helper's output goes nowhere (read, so it never blocks). */
static void on_helper_output(struct mp_loop *l, int fd, unsigned what, void *ud)
{
    struct mp_proc_stop *s = ud;
    (void)what;
    if (s->helper && mp_proc_read_lines(s->helper, NULL, NULL) != 0)
        mp_loop_fd_del(l, fd);
}

static void helper_watch(struct mp_proc_stop *s)
{
    if (!s->helper)
        return;
    if (s->helper->out_fd >= 0)
        mp_loop_fd_set(s->loop, s->helper->out_fd, MP_LOOP_IN, on_helper_output, s);
    if (s->helper->pidfd < 0 || mp_loop_watch_pid(s->loop, s->helper->pidfd, on_pid, s) < 0)
        mp_loop_timer_start(s->loop, &s->tick, mp_now_ns() + FALLBACK_TICK_NS);
}

/* Forget the helper: the loop stops watching it, it is killed if still
 * running and reaped (mp_proc_free, bounded). */
static void helper_drop(struct mp_proc_stop *s)
{
    if (!s->helper)
        return;
    if (s->helper->out_fd >= 0)
        mp_loop_fd_del(s->loop, s->helper->out_fd);
    if (s->helper->pidfd >= 0)
        mp_loop_fd_del(s->loop, s->helper->pidfd);
    mp_proc_free(s->helper);
    s->helper = NULL;
}

static void set_step(struct mp_proc_stop *s, enum mp_stop_step step, int64_t deadline)
{
    s->step = step;
    if (deadline >= 0)
        mp_loop_timer_start(s->loop, &s->deadline, deadline);
    else
        mp_loop_timer_stop(s->loop, &s->deadline);
    if (s->on_step)
        s->on_step(s->step_ud, step);
}

static void finish(struct mp_proc_stop *s)
{
    struct mp_proc *p = s->p;
    drop_fds(s);
    mp_loop_timer_stop(s->loop, &s->tick);
    drain_output(s);
    if (s->out_fd >= 0) {
        mp_loop_fd_del(s->loop, s->out_fd);
        s->out_fd = -1;
    }
    s->t.leftovers = count_left(p);
    if (!p->reaped && s->t.leftovers == 0)
        s->t.leftovers = 1; /* the leader itself (no marker, or stuck) */
    s->t.exit_status = p->reaped ? p->status : -1;
    s->t.seconds = (double)(mp_now_ns() - s->t0) / 1e9;
    p->torn_down = true;
    mp_proc__engine_gone(p);
    set_step(s, MP_STOP_DONE, -1);
}

static void start_rm(struct mp_proc_stop *s)
{
    s->sub = 1;
    s->helper = run_helper(s->p, "rm", "-f", s->p->cname, NULL);
    if (!s->helper) {
        finish(s);
        return;
    }
    helper_watch(s);
    mp_loop_timer_start(s->loop, &s->deadline, mp_now_ns() + RM_WAIT_NS);
    check(s);
}

/* Escapees are dealt with: what the group wrote before dying is still in
 * the pipe; containers are removed. */
static void after_escapees(struct mp_proc_stop *s)
{
    s->t.escapees_killed = s->ks.count;
    drop_fds(s);
    mp_proc_reap_orphans();
    exited(s, s->p);
    drain_output(s);
    if (!((s->p->runtime || s->p->client) && s->p->cname)) {
        finish(s);
        return;
    }
    s->sub = 0;
    set_step(s, MP_STOP_CONTAINER, s->t0 + s->grace_ns + HELPER_EXTRA_NS);
    if (s->helper)
        check(s); /* `stop` still running: wait for it (bounded) */
    else
        start_rm(s);
}

/* One pass over the escapees of the current kind: KILL every one found;
 * true when none is left. */
static bool escapee_pass(struct mp_proc_stop *s)
{
    pid_t pids[MAX_WATCH];
    struct mp_proc *p = s->p;
    int n = s->sub == 0 ? mp_proc__collect_marked(p->marker, pids, MP_ARRAY_SIZE(pids))
                        : mp_proc__collect_adopted(p, pids, MP_ARRAY_SIZE(pids));
    if (n <= 0)
        return true; /* none left (or /proc unreadable: nothing we can do) */
    size_t nw = (size_t)MP_MIN(n, (int)MP_ARRAY_SIZE(pids));
    for (size_t i = 0; i < nw; i++) {
        count_killed(&s->ks, pids[i]);
        kill(pids[i], SIGKILL);
    }
    watch_pids(s, pids, nw);
    return false;
}

static void start_escapees(struct mp_proc_stop *s, int sub)
{
    s->sub = sub;
    set_step(s, MP_STOP_ESCAPEES, mp_now_ns() + ESCAPEE_WAIT_NS);
    if (escapee_pass(s)) {
        if (sub == 0)
            start_escapees(s, 1);
        else
            after_escapees(s);
    }
}

static void check_escapees(struct mp_proc_stop *s)
{
    for (size_t i = 0; i < s->ks.n; i++)
        if (s->ks.pid[i] != s->p->pid)
            mp_proc__reap_if_child(s->ks.pid[i]);
    exited(s, s->p);
    if (!escapee_pass(s))
        return;
    if (s->sub == 0)
        start_escapees(s, 1);
    else
        after_escapees(s);
}

/* TERM / KILL: is the main child reaped and its group empty? Else wait for
 * the members (the main child through its own pidfd). */
static void check_group(struct mp_proc_stop *s)
{
    struct mp_proc *p = s->p;
    drain_output(s);
    if (s->helper && exited(s, s->helper))
        helper_drop(s); /* `stop` finished */
    exited(s, p);
    pid_t members[MAX_WATCH];
    int n = mp_proc__group_members(p->pid, members, MP_ARRAY_SIZE(members));
    if (n < 0)
        n = 0; /* /proc unreadable: fall back to the main child alone */
    if (p->reaped && n == 0) {
        if (s->step == MP_STOP_TERM)
            s->t.exited_on_term = true;
        start_escapees(s, p->marker ? 0 : 1);
        return;
    }
    size_t nwatch = (size_t)MP_MIN(n, (int)MP_ARRAY_SIZE(members));
    for (size_t i = 0; i < nwatch; i++) {
        if (members[i] == p->pid) {
            members[i] = members[--nwatch];
            break;
        }
    }
    if (!p->reaped && p->pidfd < 0 && nwatch < MP_ARRAY_SIZE(members))
        members[nwatch++] = p->pid; /* no pidfd of ours: the tick fallback */
    watch_pids(s, members, nwatch);
}

static void check_container(struct mp_proc_stop *s)
{
    if (s->helper && !exited(s, s->helper))
        return;
    helper_drop(s);
    if (s->sub == 0)
        start_rm(s);
    else
        finish(s);
}

/* Something happened (an exit, output, a tick): look at the step's
 * condition again. A call made while one runs is folded into it. */
static void check(struct mp_proc_stop *s)
{
    if (s->in_check) {
        s->again = true;
        return;
    }
    s->in_check = true;
    do {
        s->again = false;
        switch (s->step) {
        case MP_STOP_TERM:
        case MP_STOP_KILL:
            check_group(s);
            break;
        case MP_STOP_ESCAPEES:
            check_escapees(s);
            break;
        case MP_STOP_CONTAINER:
            check_container(s);
            break;
        case MP_STOP_DONE:
            break;
        }
    } while (s->again && s->step != MP_STOP_DONE);
    s->in_check = false;
}

static void kill_now(struct mp_proc_stop *s)
{
    kill(-s->p->pid, SIGKILL);
    s->t.killed = true;
    set_step(s, MP_STOP_KILL, mp_now_ns() + KILL_WAIT_NS);
    check(s);
}

static void on_deadline(struct mp_loop *l, struct mp_loop_timer *t, void *ud)
{
    struct mp_proc_stop *s = ud;
    (void)l;
    (void)t;
    switch (s->step) {
    case MP_STOP_TERM:
        kill_now(s);
        break;
    case MP_STOP_KILL:
        start_escapees(s, s->p->marker ? 0 : 1);
        break;
    case MP_STOP_ESCAPEES:
        if (s->sub == 0)
            start_escapees(s, 1);
        else
            after_escapees(s);
        break;
    case MP_STOP_CONTAINER:
        helper_drop(s); /* past its time: killed */
        if (s->sub == 0)
            start_rm(s);
        else
            finish(s);
        break;
    case MP_STOP_DONE:
        break;
    }
}

struct mp_proc_stop *mp_proc_stop_begin(struct mp_proc *p, struct mp_loop *loop, double grace_s,
                                        mp_proc_line_cb cb, void *ud,
                                        void (*on_step)(void *ud, enum mp_stop_step step),
                                        void *step_ud)
{
    struct mp_proc_stop *s = xcalloc(1, sizeof(*s));
    s->p = p;
    s->loop = loop;
    s->cb = cb;
    s->ud = ud;
    s->out_fd = -1;
    mp_loop_timer_init(&s->deadline, on_deadline, s);
    mp_loop_timer_init(&s->tick, on_tick, s);
    if (!(grace_s >= 0))
        grace_s = 0;
    if (grace_s > 86400)
        grace_s = 86400;
    s->grace_s = grace_s;
    s->grace_ns = (int64_t)(grace_s * 1e9);
    s->t0 = mp_now_ns();
    s->step = MP_STOP_TERM;
    if (p->out_fd >= 0 && mp_loop_fd_set(loop, p->out_fd, MP_LOOP_IN, on_output, s) == 0)
        s->out_fd = p->out_fd;
    if (p->pidfd >= 0 && !p->reaped)
        mp_loop_watch_pid(loop, p->pidfd, on_pid, s);
    s->t.was_running = !exited(s, p);
    /* who belongs to p, before TERM breaks the tree apart */
    if (!p->torn_down)
        mp_proc__track(p);
    pid_t members[1];
    bool container = (p->runtime || p->client) && p->cname;
    /* the callbacks may run from here on */
    s->on_step = on_step;
    s->step_ud = step_ud;
    if (s->t.was_running || mp_proc__group_members(p->pid, members, 1) > 0) {
        /* The pgid cannot have been recycled: either the leader is unreaped
         * or a live member still holds the group. */
        kill(-p->pid, SIGTERM);
        kill(-p->pid, SIGCONT);
        if (container) {
            char secs[32];
            snprintf(secs, sizeof(secs), "%.0f", ceil(grace_s));
            s->helper = run_helper(p, "stop", "-t", secs, p->cname);
            helper_watch(s);
        }
        set_step(s, MP_STOP_TERM, s->t0 + s->grace_ns);
        check(s);
    } else {
        if (container) {
            s->helper = run_helper(p, "stop", "-t", "0", p->cname);
            helper_watch(s);
        }
        start_escapees(s, p->marker ? 0 : 1);
    }
    return s;
}

void mp_proc_stop_now(struct mp_proc_stop *s)
{
    if (s && s->step == MP_STOP_TERM)
        kill_now(s);
}

enum mp_stop_step mp_proc_stop_step(const struct mp_proc_stop *s)
{
    return s ? s->step : MP_STOP_DONE;
}

int mp_proc_stop_end(struct mp_proc_stop *s, struct mp_teardown *out)
{
    if (!s)
        return 0;
    int rc = 0;
    if (s->step != MP_STOP_DONE) { /* given up half-way: what is known now */
        mp_loop_timer_stop(s->loop, &s->deadline);
        helper_drop(s);
        finish(s);
    }
    mp_loop_timer_stop(s->loop, &s->deadline);
    mp_loop_timer_stop(s->loop, &s->tick);
    if (s->t.leftovers > 0)
        rc = MP_ETIMEOUT;
    if (out)
        *out = s->t;
    free(s);
    return rc;
}

int mp_proc_teardown(struct mp_proc *p, double grace_s, mp_proc_line_cb cb, void *ud,
                     struct mp_teardown *out)
{
    struct mp_loop *l = mp_loop_new();
    if (!l) { /* no fds left for a loop: the quick way */
        kill(-p->pid, SIGKILL);
        mp_proc_exited(p, NULL);
        if (out) {
            memset(out, 0, sizeof(*out));
            out->killed = true;
            out->leftovers = p->reaped ? 0 : 1;
            out->exit_status = p->reaped ? p->status : -1;
        }
        return p->reaped ? 0 : MP_ETIMEOUT;
    }
    struct mp_proc_stop *s = mp_proc_stop_begin(p, l, grace_s, cb, ud, NULL, NULL);
    while (mp_proc_stop_step(s) != MP_STOP_DONE)
        if (mp_loop_run_once(l, -1) < 0)
            break;
    int rc = mp_proc_stop_end(s, out);
    mp_loop_free(l);
    return rc;
}
