/* capture.c - an attempt's watches on its loop: the engine's output into
 * server.log and server.times (masked, capped) with what its lines tell
 * (raised as events), its exit, the signalfd, the attach-mode log follower
 * (see att_internal.h). Facts and events only: the table decides. */
#include "run/att_internal.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "escape.h"
#include "logs/announce.h"
#include "logs/logscan.h"
#include "proc/proc.h"
#include "engine/ports.h"
#include "store/store.h"
#include "xalloc.h"

static void check_announce(struct att *a, const char *line, size_t len)
{
    struct mp_announce an;
    if (mp_announce_parse(line, len, &an) != MP_ANNOUNCE_TCP || a->r->announced_port)
        return;
    a->r->announced_port = an.port;
    if (mp_ports_judge(a->argv, a->argc, a->container, an.port, a->o->port, a->mismatch_why,
                       sizeof(a->mismatch_why)) == MP_PORT_MISMATCH) {
        a->announce_line = a->nlines;
        att_raise(a, EV_PORT_ELSEWHERE);
    }
}

/* What a line's scan found that the table acts on. */
static void line_events(struct att *a, unsigned ev)
{
    unsigned fresh = ev & ~a->events;
    a->events |= ev;
    if (fresh & MP_LOGEV_FATAL)
        att_raise(a, EV_FATAL);
    if (fresh & MP_LOGEV_READY)
        att_raise(a, EV_READY_LINE);
}

void mp_att_on_line(void *ud, const char *line, size_t len, bool truncated)
{
    struct att *a = ud;
    a->nlines++;
    if (a->ls)
        line_events(a, mp_logscan_line(a->ls, line, len));
    if (!a->nondefault && len > 20 && memmem(line, len, "non-default args: {", 19)) {
        a->nondefault = xstrndup(line, len);
        a->nondefault_line = a->nlines;
    }
    if (a->o->progress) {
        /* masked whole, then cut: no part of a secret reaches the live line */
        size_t ml = 0;
        char *m = mp_term_mask(line, len, &ml);
        size_t n = MP_MIN(ml, sizeof(a->last_line) - 1);
        for (size_t i = 0; i < n; i++) /* shown on a terminal: printable ASCII only */
            a->last_line[i] = (m[i] >= 0x20 && m[i] < 0x7f) ? m[i] : '?';
        a->last_line[n] = '\0';
        free(m);
    }
    if (a->state == ST_STARTING) { /* where it listens, and its selections, before ready */
        check_announce(a, line, len);
        if (!a->selected && a->ls &&
            mp_selstop_line(&a->sel, line, len, mp_logscan_result(a->ls))) {
            a->selected = true; /* the selections are all in (logs/selstop.h) */
            att_raise(a, EV_SELECTED);
        }
    }
    if (a->log_capped || a->ev_errno)
        return;
    if (a->log_bytes + (long)len + 1 > LOG_CAP_BYTES) {
        a->log_capped = true;
        mp_att_ev_ok(a, fputs("[moeprobe: server.log capped at 512 MiB; the engine flooded its output]\n",
                       a->logf) >= 0, "server.log");
        return;
    }
    a->log_bytes += (long)len + 1;
    /* masked before anything is written; a cut line's tail that begins a
     * secret is masked too */
    bool changed = false;
    size_t mlen = 0;
    char *masked = mp_store_mask_apply_ex(a->mask, line, len, truncated ? MP_MASK_CUT : 0,
                                          &changed, &mlen);
    if (changed) {
        line = masked;
        len = mlen;
    }
    bool ok = fwrite(line, 1, len, a->logf) == len;
    free(masked);
    if (ok && truncated)
        ok = fputs(" [moeprobe: line truncated]", a->logf) >= 0;
    if (ok)
        ok = fputc('\n', a->logf) != EOF;
    if (mp_att_ev_ok(a, ok, "server.log"))
        mp_att_ev_ok(a, fprintf(a->timesf, "%.3f\n", (double)(mp_now_ns() - a->t_spawn) / 1e9) > 0,
              "server.times");
}

void mp_att_check_exit(struct att *a)
{
    if (a->exited || !a->proc || a->stop)
        return;
    int st, pfd = a->pidfd;
    if (!mp_proc_exited(a->proc, &st))
        return;
    if (pfd >= 0) { /* closed by the reaping: the loop forgets it first */
        mp_loop_fd_del(a->loop, pfd);
        a->pidfd = -1;
    }
    a->exited = true;
    a->exit_status = st;
    a->lines_at_exit = a->nlines;
    att_raise(a, EV_EXIT);
}

/* The signalfd: SIGCHLD reaps orphans and looks at the engine; any other
 * signal is queued for the table. */
static void on_signal(struct mp_loop *l, int signo, void *ud)
{
    struct att *a = ud;
    (void)l;
    if (signo == SIGCHLD) {
        mp_proc_reap_orphans();
        mp_att_check_exit(a);
        return;
    }
    if (a->nsig_q < MP_ARRAY_SIZE(a->sig_q))
        a->sig_q[a->nsig_q++] = signo;
    att_raise(a, EV_SIGNAL);
}

/* The engine's output pipe is readable: its lines (at most about 1 MiB a
 * turn, so a flood cannot starve the loop), or its end. */
static void on_output(struct mp_loop *l, int fd, unsigned what, void *ud)
{
    struct att *a = ud;
    (void)what;
    if (mp_proc_read_lines(a->proc, mp_att_on_line, a) != 0) {
        mp_loop_fd_del(l, fd);
        a->eof = true;
        att_raise(a, EV_EOF);
        mp_att_check_exit(a);
    }
}

static void on_pidfd(struct mp_loop *l, int pidfd, void *ud)
{
    struct att *a = ud;
    (void)l;
    (void)pidfd;
    a->pidfd = -1; /* the one-shot watch is gone; the fd stays the proc's */
    mp_att_check_exit(a);
}

/* Attach mode: read what the followed log file gained since the last look
 * (at most 4 MiB a look, so a flood cannot starve the loop) and hand its
 * complete lines to on_line (a line longer than MP_ATT_FOLLOW_LINE_MAX goes
 * on cut, as soon as it passes the bound). A partial last line waits for
 * the rest: the file is still being written. A regular file is always
 * "readable", so it is read on a timer instead of being watched. */
void mp_att_follow_log(struct att *a)
{
    if (a->follow_fd < 0)
        return;
    char chunk[65536];
    for (int turns = 0; turns < 64; turns++) {
        ssize_t n = read(a->follow_fd, chunk, sizeof(chunk));
        if (n <= 0)
            return;
        mp_lines_feed(&a->follow, chunk, (size_t)n, mp_att_on_line, a);
    }
}

/* Every 100 ms: the attach-mode log, the exit check without a pidfd, the
 * live progress line. */
static void on_tick(struct mp_loop *l, struct mp_loop_timer *t, void *ud)
{
    struct att *a = ud;
    mp_att_follow_log(a);
    if (a->pidfd < 0)
        mp_att_check_exit(a);
    if (!mp_att_watch_procs(a)) /* the engine's processes into the store, as they appear */
        mp_att_io_error(a);
    if (a->state != ST_DONE)
        mp_loop_timer_start(l, t, mp_now_ns() + 100000000LL);
}

void mp_att_watch(struct att *a)
{
    if (a->o->signal_fd >= 0)
        mp_loop_watch_signals(a->loop, a->o->signal_fd, on_signal, a);
    int outfd = a->proc ? mp_proc_output_fd(a->proc) : -1;
    if (outfd >= 0)
        mp_loop_fd_set(a->loop, outfd, MP_LOOP_IN, on_output, a);
    int pfd = a->proc ? mp_proc_pidfd(a->proc) : -1;
    if (pfd >= 0 && mp_loop_watch_pid(a->loop, pfd, on_pidfd, a) == 0)
        a->pidfd = pfd;
    mp_loop_timer_init(&a->t_tick, on_tick, a);
    mp_loop_timer_start(a->loop, &a->t_tick, mp_now_ns() + 100000000LL);
}

void mp_att_unwatch_engine(struct att *a)
{
    int outfd = a->proc ? mp_proc_output_fd(a->proc) : -1;
    if (outfd >= 0)
        mp_loop_fd_del(a->loop, outfd);
    if (a->pidfd >= 0)
        mp_loop_fd_del(a->loop, a->pidfd);
    a->pidfd = -1;
}

void mp_att_unwatch_signals(struct att *a)
{
    if (a->o->signal_fd >= 0)
        mp_loop_fd_del(a->loop, a->o->signal_fd);
}

/* The evidence is current on disk every turn (one write a turn, not a
 * line): someone tailing server.log sees it, and a kill -9 of moeprobe
 * loses nothing the engine said before the turn. */
void mp_att_flush(struct att *a)
{
    if (a->logf && !a->ev_errno && mp_att_ev_ok(a, fflush(a->logf) == 0, "server.log"))
        mp_att_ev_ok(a, fflush(a->timesf) == 0, "server.times");
}
