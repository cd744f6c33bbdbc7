/* capture.c - run a helper command to completion with its output captured
 * (nvidia-smi, squeue, a container runtime's inspect): git's
 * capture_command(), on top of mp_proc_spawn so that the helper gets what
 * every child of moeprobe gets (argv without a shell, stdin /dev/null, its
 * own session, the signal mask emptied and every disposition reset, killed
 * with us) and is always reaped (proc/proc.h). */
#include "compat.h"
#include "proc/proc.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/wait.h>

#include "buf.h"
#include "clock.h"

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

/* Run c to its end or its timeout: 0 with *status = the waitpid status
 * (-1: killed at the timeout, or unknowable), or a negative code with d->msg
 * when it could not be started. */
static int run(const struct mp_capture *c, double timeout_s, struct buf *out, int *status,
               struct mp_diag *d)
{
    struct mp_proc_spec spec;
    struct mp_proc *h = NULL;
    size_t caller_max = out->max; /* the cap is ours during the run only */

    *status = -1;
    memset(&spec, 0, sizeof(spec));
    spec.argv = c->argv;
    spec.stderr_null = !c->with_stderr;
    int rc = mp_proc_spawn(&spec, &h, d);
    if (rc < 0)
        return rc;
    buf_set_max(out, c->max ? c->max : MP_CAPTURE_MAX);
    int64_t deadline = mp_now_ns() + (int64_t)(timeout_s * 1e9);
    bool eof = false;
    int st = -1;
    for (;;) {
        if (!eof && mp_proc_read_lines(h, capture_line, out) != 0)
            eof = true;
        if (mp_proc_exited(h, &st) && eof)
            break;
        int64_t left = deadline - mp_now_ns();
        if (left <= 0)
            break;
        struct pollfd pf[2];
        nfds_t n = 0;
        if (!eof) {
            pf[n].fd = mp_proc_output_fd(h);
            pf[n].events = POLLIN;
            n++;
        }
        if (mp_proc_pidfd(h) >= 0) {
            pf[n].fd = mp_proc_pidfd(h);
            pf[n].events = POLLIN;
            n++;
        }
        int ms = (int)MP_MIN(left / 1000000 + 1, 10);
        if (poll(n ? pf : NULL, n, ms) < 0 && errno != EINTR)
            break;
    }
    if (mp_proc_exited(h, &st))
        *status = st;
    mp_proc_free(h); /* kills its group and reaps it when it is still running */
    buf_set_max(out, caller_max);
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
