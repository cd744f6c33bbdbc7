/* teardown.c - stop an engine's whole process tree, bounded in time.
 *
 * Waiting is event driven: poll() on the output pipe (a child blocked on a
 * full pipe cannot exit, so we keep draining), on the main child's pidfd and
 * on pidfds of the other live group members and escapees (a pidfd becomes
 * readable when that process exits, whoever its parent is). Every wait has a
 * deadline. Without pidfd support (kernel < 5.3) the poll gets a 10 ms
 * re-check tick instead. */
#include "compat.h"
#include "proc/internal.h"
#include "proc/proc.h"
#include "xalloc.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "err.h"

#define NS_PER_S ((int64_t)1000000000)
#define KILL_WAIT_NS (2 * NS_PER_S)      /* group to vanish after SIGKILL */
#define ESCAPEE_WAIT_NS (2 * NS_PER_S)   /* marked escapees to vanish after SIGKILL */
#define HELPER_EXTRA_NS (5 * NS_PER_S)   /* `runtime stop` beyond its own -t */
#define RM_WAIT_NS (10 * NS_PER_S)       /* `runtime rm -f` */
#define MAX_WATCH 64                     /* pidfds polled at once besides ours */
#define FALLBACK_TICK_MS 10

static int ms_until(int64_t deadline)
{
    int64_t left = deadline - mp_now_ns();
    if (left <= 0)
        return 0;
    left = (left + 999999) / 1000000;
    return left > 60000 ? 60000 : (int)left;
}

/* Poll: fd (may be -1) for input, plus pidfds of the given pids. Returns
 * after any event or at the deadline. */
static void wait_events(const int *fds, size_t nfds, const pid_t *pids, size_t npids, int64_t deadline)
{
    struct pollfd pf[MAX_WATCH + 8];
    size_t n = 0, opened_from;
    bool have_pidfd = true, gone = false;
    int ms;

    for (size_t i = 0; i < nfds && n < MP_ARRAY_SIZE(pf); i++) {
        if (fds[i] < 0)
            continue;
        pf[n].fd = fds[i];
        pf[n].events = POLLIN;
        pf[n].revents = 0;
        n++;
    }
    opened_from = n;
    for (size_t i = 0; i < npids && n < MP_ARRAY_SIZE(pf); i++) {
        int fd = mp_proc__pidfd_open(pids[i]);
        if (fd == -ESRCH) {
            gone = true; /* already gone: the caller re-checks at once */
            break;
        }
        if (fd < 0) {
            have_pidfd = false;
            continue;
        }
        pf[n].fd = fd;
        pf[n].events = POLLIN;
        pf[n].revents = 0;
        n++;
    }
    ms = ms_until(deadline);
    if (!have_pidfd && ms > FALLBACK_TICK_MS)
        ms = FALLBACK_TICK_MS;
    if (!gone && (n > 0 || ms > 0)) {
        int r = poll(n ? pf : NULL, (nfds_t)n, ms);
        MP_UNUSED(r); /* EINTR or not: the caller re-checks its state */
    }
    for (size_t i = opened_from; i < n; i++)
        close(pf[i].fd);
}

/* Drain what the helper (e.g. `docker stop`) printed, so it never blocks. */
static void drain_quiet(struct mp_proc *h)
{
    if (h && h->out_fd >= 0)
        mp_proc_read_lines(h, NULL, NULL);
}

/* Wait until p's main child is reaped and its group has no live member, or
 * the deadline. Keeps draining p's output into cb and the helper's output
 * into nowhere. Returns true when the group is gone. */
static bool wait_group(struct mp_proc *p, int64_t deadline, mp_proc_line_cb cb, void *ud,
                       struct mp_proc *helper)
{
    for (;;) {
        pid_t members[MAX_WATCH];
        int fds[4];
        int n;
        size_t nwatch;

        if (p->out_fd >= 0)
            mp_proc_read_lines(p, cb, ud);
        drain_quiet(helper);
        if (helper)
            mp_proc_exited(helper, NULL);
        mp_proc_exited(p, NULL);
        n = mp_proc__group_members(p->pid, members, MP_ARRAY_SIZE(members));
        if (n < 0)
            n = 0; /* /proc unreadable: fall back to the main child alone */
        if (p->reaped && n == 0)
            return true;
        if (mp_now_ns() >= deadline)
            return false;
        nwatch = (size_t)MP_MIN(n, (int)MP_ARRAY_SIZE(members));
        /* the main child is watched through its own pidfd (kept open) */
        fds[0] = p->out_fd;
        fds[1] = p->reaped ? -1 : p->pidfd;
        fds[2] = helper && !helper->reaped ? helper->pidfd : -1;
        fds[3] = helper ? helper->out_fd : -1;
        for (size_t i = 0; i < nwatch; i++) {
            if (members[i] == p->pid) {
                members[i] = members[--nwatch];
                break;
            }
        }
        if (!p->reaped && p->pidfd < 0 && nwatch < MP_ARRAY_SIZE(members))
            members[nwatch++] = p->pid; /* no pidfd of ours: the tick fallback */
        wait_events(fds, MP_ARRAY_SIZE(fds), members, nwatch, deadline);
    }
}

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

/* KILL every process found by collect (marked: carries p's marker;
 * adopted: p's descendant or orphan outside its group, see internal.h)
 * until none is left or the deadline. Returns the number still alive. */
static int kill_escapees(struct mp_proc *p, bool marked, int64_t deadline, struct killed_set *k)
{
    for (;;) {
        pid_t pids[MAX_WATCH];
        int n = marked ? mp_proc__collect_marked(p->marker, pids, MP_ARRAY_SIZE(pids))
                       : mp_proc__collect_adopted(p, pids, MP_ARRAY_SIZE(pids));
        size_t nw;
        if (n <= 0)
            return 0; /* none left (or /proc unreadable: nothing we can do) */
        nw = (size_t)MP_MIN(n, (int)MP_ARRAY_SIZE(pids));
        for (size_t i = 0; i < nw; i++) {
            count_killed(k, pids[i]);
            kill(pids[i], SIGKILL);
        }
        if (mp_now_ns() >= deadline)
            return n;
        wait_events(NULL, 0, pids, nw, deadline);
        for (size_t i = 0; i < nw; i++) {
            if (pids[i] != p->pid)
                mp_proc__reap_if_child(pids[i]);
        }
        mp_proc_exited(p, NULL);
    }
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

/* Wait for a helper until the deadline, then kill it; always frees it. */
static void finish_helper(struct mp_proc *h, int64_t deadline)
{
    if (!h)
        return;
    while (!mp_proc_exited(h, NULL) && mp_now_ns() < deadline) {
        int fds[2] = { h->out_fd, h->pidfd };
        drain_quiet(h);
        wait_events(fds, 2, h->pidfd < 0 ? &h->pid : NULL, h->pidfd < 0 ? 1 : 0, deadline);
    }
    mp_proc_free(h); /* kills and reaps it if it is still running */
}

int mp_proc_teardown(struct mp_proc *p, double grace_s, mp_proc_line_cb cb, void *ud,
                     struct mp_teardown *out)
{
    struct mp_teardown t;
    int64_t t0 = mp_now_ns(), grace_ns, deadline;
    struct mp_proc *stop = NULL;
    pid_t members[1];
    bool gone;
    int rc = 0;

    memset(&t, 0, sizeof(t));
    if (!(grace_s >= 0))
        grace_s = 0;
    if (grace_s > 86400)
        grace_s = 86400;
    grace_ns = (int64_t)(grace_s * 1e9);
    deadline = t0 + grace_ns;

    t.was_running = !mp_proc_exited(p, NULL);
    /* who belongs to p, before TERM breaks the tree apart */
    if (!p->torn_down)
        mp_proc__track(p);
    if (t.was_running || mp_proc__group_members(p->pid, members, 1) > 0) {
        /* The pgid cannot have been recycled: either the leader is unreaped
         * or a live member still holds the group. */
        kill(-p->pid, SIGTERM);
        kill(-p->pid, SIGCONT);
        if ((p->runtime || p->client) && p->cname) {
            char secs[32];
            snprintf(secs, sizeof(secs), "%.0f", ceil(grace_s));
            stop = run_helper(p, "stop", "-t", secs, p->cname);
        }
        gone = wait_group(p, deadline, cb, ud, stop);
        t.exited_on_term = gone;
        if (!gone) {
            kill(-p->pid, SIGKILL);
            t.killed = true;
            gone = wait_group(p, mp_now_ns() + KILL_WAIT_NS, cb, ud, stop);
        }
    } else if ((p->runtime || p->client) && p->cname) {
        stop = run_helper(p, "stop", "-t", "0", p->cname);
    }

    /* escapees: outside the group by now, found by the marker, or without
     * it (a daemon that cleared its environment) by being p's descendant or
     * orphan (reparented to us) */
    struct killed_set ks;
    memset(&ks, 0, sizeof(ks));
    if (p->marker)
        kill_escapees(p, true, mp_now_ns() + ESCAPEE_WAIT_NS, &ks);
    kill_escapees(p, false, mp_now_ns() + ESCAPEE_WAIT_NS, &ks);
    t.escapees_killed = ks.count;
    mp_proc_reap_orphans();
    mp_proc_exited(p, NULL);
    /* what the group wrote before dying is still in the pipe */
    if (p->out_fd >= 0)
        mp_proc_read_lines(p, cb, ud);

    if ((p->runtime || p->client) && p->cname) {
        struct mp_proc *rm;
        finish_helper(stop, t0 + grace_ns + HELPER_EXTRA_NS);
        stop = NULL;
        rm = run_helper(p, "rm", "-f", p->cname, NULL);
        finish_helper(rm, mp_now_ns() + RM_WAIT_NS);
    }

    t.leftovers = count_left(p);
    if (!p->reaped && t.leftovers == 0)
        t.leftovers = 1; /* the leader itself (no marker, or stuck) */
    t.exit_status = p->reaped ? p->status : -1;
    t.seconds = (double)(mp_now_ns() - t0) / 1e9;
    p->torn_down = true;
    mp_proc__engine_gone(p);
    if (t.leftovers > 0)
        rc = MP_ETIMEOUT;
    if (out)
        *out = t;
    return rc;
}
