/* gpuwait.h - before an engine starts on a GPU, wait (bounded, reported)
 * until the GPU memory the previous attempt's engine held is free again,
 * so that one start's leftovers (a process still exiting, unified memory
 * not yet returned on a DGX Spark) are never blamed on the next knob.
 *
 * The reference is the memory in use when the run began, before its first
 * engine (read through NVML, observe/telemetry.h, on one sampler the
 * session keeps open): a start waits while more than that, plus a
 * tolerance, is in use, up to max_s, then starts anyway with a warning.
 * Without NVML there is nothing to read and nothing is waited for.
 * Loop-thread only. */
#ifndef MP_RUN_GPUWAIT_H
#define MP_RUN_GPUWAIT_H

#include "compat.h"

#define MP_GPUWAIT_MAX_S 120.0

struct mp_gpu_sampler;

struct mp_gpuwait {
    struct mp_gpu_sampler *s; /* owned (mp_gpuwait_close), NULL: no NVML */
    double base_mib;          /* the memory in use when the run began (-1: unknown) */
    double max_s;             /* the longest wait (MP_GPUWAIT_MAX_S) */
};
#define MP_GPUWAIT_INIT {NULL, -1, MP_GPUWAIT_MAX_S}

/* Is used (MiB) still above base by more than the tolerance: 512 MiB or 2 %
 * of the total, whichever is more? Pure. */
bool mp_gpuwait_busy(double base_mib, double used_mib, double total_mib);

/* Open w on sampler s (taken over; NULL: nothing to wait for) and read the
 * reference now, before any engine of the run starts. */
void mp_gpuwait_open(struct mp_gpuwait *w, struct mp_gpu_sampler *s);
void mp_gpuwait_close(struct mp_gpuwait *w);

/* Before a start: wait while mp_gpuwait_busy, polling every 250 ms, until
 * it is free, w->max_s pass, or a signal other than SIGCHLD comes on
 * signal_fd (>= 0; a SIGCHLD reaps orphans): *signo gets it, and nothing
 * should start. Says on stderr what it waits for and how it ended unless
 * quiet; *waited_s gets the seconds waited. Returns true when the memory
 * is free (or there is nothing to read). */
bool mp_gpuwait_before_start(struct mp_gpuwait *w, int signal_fd, bool quiet, const char *label,
                             double *waited_s, int *signo);

#endif
