/* gpuwait.c - the wait for the previous engine's GPU memory (gpuwait.h). */
#include "run/gpuwait.h"

#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "clock.h"
#include "err.h"
#include "observe/telemetry.h"
#include "proc/proc.h"

#define MIB (1024.0 * 1024.0)

bool mp_gpuwait_busy(double base_mib, double used_mib, double total_mib)
{
    double tol = MP_MAX(512.0, 0.02 * total_mib);
    return base_mib >= 0 && used_mib > base_mib + tol;
}

static bool read_mib(struct mp_gpu_sampler *s, double *used, double *total)
{
    unsigned long long u, t;
    if (mp_gpu_memory_now(s, &u, &t) < 0)
        return false;
    *used = (double)u / MIB;
    *total = (double)t / MIB;
    return true;
}

/* Up to 250 ms for the signalfd: a SIGCHLD reaps orphans (as the attempt's
 * loop does), any other signal is returned; 0 when none came. */
static int wait_signal(int signal_fd)
{
    struct pollfd p = {.fd = signal_fd, .events = POLLIN};
    if (poll(&p, signal_fd >= 0 ? 1 : 0, 250) <= 0)
        return 0;
    struct signalfd_siginfo si;
    while (read(signal_fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
        if ((int)si.ssi_signo != SIGCHLD)
            return (int)si.ssi_signo;
        mp_proc_reap_orphans();
    }
    return 0;
}

void mp_gpuwait_open(struct mp_gpuwait *w, struct mp_gpu_sampler *s)
{
    double used, total;
    w->s = s;
    w->base_mib = s && read_mib(s, &used, &total) ? used : -1;
}

void mp_gpuwait_close(struct mp_gpuwait *w)
{
    mp_gpu_sampler_close(w->s);
    w->s = NULL;
}

bool mp_gpuwait_before_start(struct mp_gpuwait *w, int signal_fd, bool quiet, const char *label,
                             double *waited_s, int *signo)
{
    double used, total;
    struct mp_gpu_sampler *s = w->s;
    *waited_s = 0;
    *signo = 0;
    if (!s || w->base_mib < 0 || !read_mib(s, &used, &total))
        return true; /* no NVML: nothing to read */
    if (!mp_gpuwait_busy(w->base_mib, used, total))
        return true;
    if (!quiet)
        fprintf(stderr, "moeprobe: %s: waiting for the GPU memory the previous engine held to be "
                        "freed: %.1f GiB in use, %.1f GiB before the run's first engine (at most "
                        "%.0f s)\n",
                label, used / 1024, w->base_mib / 1024, w->max_s);
    int64_t t0 = mp_now_ns();
    bool busy = true;
    while (busy && (double)(mp_now_ns() - t0) / 1e9 < w->max_s) {
        if ((*signo = wait_signal(signal_fd)) != 0)
            break; /* interrupted: the caller starts nothing */
        busy = read_mib(s, &used, &total) && mp_gpuwait_busy(w->base_mib, used, total);
    }
    *waited_s = (double)(mp_now_ns() - t0) / 1e9;
    if (*signo)
        return false;
    if (!quiet && !busy)
        fprintf(stderr, "moeprobe: %s: the GPU memory was freed after %.1f s\n", label, *waited_s);
    else if (!quiet)
        mp_warn("%s: after %.0f s the GPU still has %.1f GiB more in use than before the run's "
                "first engine (another process may hold it): starting anyway",
                label, *waited_s, (used - w->base_mib) / 1024);
    return !busy;
}
