/* capture.c - run a helper command to completion with its output captured
 * (nvidia-smi, squeue, a container runtime's inspect): git's
 * capture_command(), on top of mp_proc_spawn so that the helper gets what
 * every child of moeprobe gets (argv without a shell, stdin /dev/null, its
 * own session, the signal mask emptied and every disposition reset, killed
 * with us) and is always reaped (proc/proc.h). */
#include "compat.h"
#include "proc/proc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "buf.h"
#include "clock.h"
#include "loop.h"
#include "xalloc.h"

#define CAPTURE_TIMEOUT_DEFAULT_S 30.0

/* ud: the output buffer, capped at the bytes kept (buf_set_max). */
static void capture_line(void *ud, const char *line, size_t len, bool truncated)
{
    struct buf *out = ud;
    MP_UNUSED(truncated);
    if (!buf_fits(out, len + 1)) {
        out->toobig = true;
        return; /* read and dropped: the helper must never block on a full pipe */
    }
    buf_add(out, line, len);
    buf_addc(out, '\n');
}

/* A helper running on a caller's loop (proc.h mp_proc_capture_start). */
struct mp_capture_run {
    struct mp_loop *loop;
    struct mp_proc *h;
    struct buf *out;
    size_t caller_max;         /* out's cap, given back at the end */
    int out_fd, pidfd;         /* watched on the loop, -1 when not (any more) */
    bool eof, over;            /* its output ended; done() was called */
    struct mp_loop_timer deadline, tick; /* the timeout; a re-check without a pidfd */
    void (*done)(void *ud);
    void *ud;
};

static void cr_unwatch(struct mp_capture_run *cr)
{
    if (cr->out_fd >= 0)
        mp_loop_fd_del(cr->loop, cr->out_fd);
    if (cr->pidfd >= 0)
        mp_loop_fd_del(cr->loop, cr->pidfd);
    cr->out_fd = cr->pidfd = -1;
    mp_loop_timer_stop(cr->loop, &cr->deadline);
    mp_loop_timer_stop(cr->loop, &cr->tick);
}

static void cr_over(struct mp_capture_run *cr)
{
    if (cr->over)
        return;
    cr->over = true;
    cr_unwatch(cr);
    cr->done(cr->ud);
}

/* Read what is there; over once it has exited and its output ended. */
static void cr_check(struct mp_capture_run *cr)
{
    if (!cr->eof && mp_proc_read_lines(cr->h, capture_line, cr->out) != 0) {
        cr->eof = true;
        if (cr->out_fd >= 0)
            mp_loop_fd_del(cr->loop, cr->out_fd);
        cr->out_fd = -1;
    }
    if (cr->eof && mp_proc_exited(cr->h, NULL))
        cr_over(cr);
}

static void cr_on_output(struct mp_loop *l, int fd, unsigned what, void *ud)
{
    (void)l;
    (void)fd;
    (void)what;
    cr_check(ud);
}

static void cr_on_exit(struct mp_loop *l, int pidfd, void *ud)
{
    struct mp_capture_run *cr = ud;
    (void)l;
    (void)pidfd;
    cr->pidfd = -1; /* the loop dropped the watch */
    if (!mp_proc_exited(cr->h, NULL) && !cr->over) /* not reaped yet: look again soon */
        mp_loop_timer_start(cr->loop, &cr->tick, mp_now_ns() + 10 * (int64_t)1000000);
    cr_check(cr);
}

static void cr_on_tick(struct mp_loop *l, struct mp_loop_timer *t, void *ud)
{
    struct mp_capture_run *cr = ud;
    (void)t;
    cr_check(cr);
    if (!cr->over && cr->pidfd < 0) /* no pidfd to wait on: every 10 ms */
        mp_loop_timer_start(l, &cr->tick, mp_now_ns() + 10 * (int64_t)1000000);
}

static void cr_on_deadline(struct mp_loop *l, struct mp_loop_timer *t, void *ud)
{
    (void)l;
    (void)t;
    cr_over(ud); /* mp_proc_capture_finish kills it */
}

int mp_proc_capture_start(struct mp_loop *loop, const struct mp_capture *c, struct buf *out,
                          void (*done)(void *ud), void *ud, struct mp_capture_run **run_out,
                          struct mp_diag *d)
{
    struct mp_proc_spec spec;
    memset(&spec, 0, sizeof(spec));
    spec.argv = c->argv;
    spec.stderr_null = !c->with_stderr;
    struct mp_proc *h = NULL;
    *run_out = NULL;
    int rc = mp_proc_spawn(&spec, &h, d);
    if (rc < 0)
        return rc;
    struct mp_capture_run *cr = xcalloc(1, sizeof(*cr));
    *cr = (struct mp_capture_run){.loop = loop, .h = h, .out = out, .caller_max = out->max,
                                  .out_fd = -1, .pidfd = -1, .done = done, .ud = ud};
    buf_set_max(out, c->max ? c->max : MP_CAPTURE_MAX); /* the cap is ours during the run only */
    mp_loop_timer_init(&cr->deadline, cr_on_deadline, cr);
    mp_loop_timer_init(&cr->tick, cr_on_tick, cr);
    double timeout_s = c->timeout_s > 0 ? c->timeout_s : CAPTURE_TIMEOUT_DEFAULT_S;
    mp_loop_timer_start(loop, &cr->deadline, mp_now_ns() + (int64_t)(timeout_s * 1e9));
    int fd = mp_proc_output_fd(h);
    if (fd >= 0 && mp_loop_fd_set(loop, fd, MP_LOOP_IN, cr_on_output, cr) == 0)
        cr->out_fd = fd;
    else
        cr->eof = fd < 0;
    fd = mp_proc_pidfd(h);
    if (fd >= 0 && mp_loop_watch_pid(loop, fd, cr_on_exit, cr) == 0)
        cr->pidfd = fd;
    if (cr->pidfd < 0 || (cr->out_fd < 0 && !cr->eof)) /* something is not watched: look */
        mp_loop_timer_start(loop, &cr->tick, mp_now_ns());
    *run_out = cr;
    return 0;
}

bool mp_proc_capture_over(const struct mp_capture_run *cr)
{
    return cr->over;
}

int mp_proc_capture_finish(struct mp_capture_run *cr)
{
    if (!cr)
        return -1;
    cr_unwatch(cr);
    if (!cr->eof)
        mp_proc_read_lines(cr->h, capture_line, cr->out); /* what it wrote so far */
    int st = -1;
    if (!mp_proc_exited(cr->h, &st))
        st = -1;
    mp_proc_free(cr->h); /* kills its group and reaps it when it is still running */
    buf_set_max(cr->out, cr->caller_max);
    free(cr);
    return st;
}

static void run_done(void *ud)
{
    mp_loop_stop(ud);
}

/* Run c to its end or its timeout on a loop of its own: 0 with *status =
 * the waitpid status (-1: killed at the timeout, or unknowable), or a
 * negative code with d->msg when it could not be started. */
static int run(const struct mp_capture *c, double timeout_s, struct buf *out, int *status,
               struct mp_diag *d)
{
    *status = -1;
    struct mp_loop *l = mp_loop_new();
    if (!l) {
        int e = errno;
        return mp_diag_set(d, -e, 0, "cannot run '%s': %s", c->argv[0], strerror(e));
    }
    struct mp_capture cc = *c;
    cc.timeout_s = timeout_s;
    struct mp_capture_run *cr;
    int rc = mp_proc_capture_start(l, &cc, out, run_done, l, &cr, d);
    if (rc < 0) {
        mp_loop_free(l);
        return rc;
    }
    while (!mp_proc_capture_over(cr))
        if (mp_loop_run(l) < 0)
            break;
    *status = mp_proc_capture_finish(cr);
    mp_loop_free(l);
    return 0;
}

int mp_proc_run_capture(const struct mp_capture *c, struct buf *out, struct mp_diag *d)
{
    double timeout_s = c->timeout_s > 0 ? c->timeout_s : CAPTURE_TIMEOUT_DEFAULT_S;
    int st = -1;
    int rc = run(c, timeout_s, out, &st, d);
    if (rc < 0)
        return rc;
    if (st == -1) {
        mp_diag_set(d, MP_ETIMEOUT, 0, "'%s' did not finish within %.0f s (killed)", c->argv[0],
                    timeout_s);
        return MP_ETIMEOUT;
    }
    if (WIFEXITED(st))
        return WEXITSTATUS(st);
    return 128 + WTERMSIG(st);
}

int mp_proc_capture(char *const *argv, double timeout_s, struct buf *out, int *status,
                    struct mp_diag *d)
{
    struct mp_capture c = {.argv = argv, .timeout_s = timeout_s, .with_stderr = true};
    return run(&c, timeout_s, out, status, d);
}
