/* loop.h - the one event loop: file descriptors, timers, signals, process
 * exits and a before-sleep hook, on one thread (Redis' ae in spirit: no
 * domain knowledge; everything that waits in moeprobe is an fd event or a
 * timer of a loop).
 *
 *   struct mp_loop *l = mp_loop_new();
 *   mp_loop_fd_set(l, fd, MP_LOOP_IN, on_readable, ud);
 *   struct mp_loop_timer t;
 *   mp_loop_timer_init(&t, on_timer, ud);
 *   mp_loop_timer_start(l, &t, mp_now_ns() + 500000000);
 *   while (!done)
 *       mp_loop_run_once(l, -1);
 *   mp_loop_free(l);
 *
 * One turn (mp_loop_run_once): the before-sleep hooks run (in the order they
 * were added; they may start timers and add fds), then the loop waits
 * (epoll) until an fd is ready, the earliest timer is due, mp_loop_wakeup is
 * called or the turn's deadline passes, then calls the ready fds' callbacks,
 * then the due timers' callbacks in deadline order (ties: the order they
 * were started). A timer started during a turn's timer pass at a time
 * already passed runs on the next turn, which then does not wait: a
 * callback cannot starve the loop by re-arming itself at "now".
 *
 * Ownership: the loop never owns the fds it watches (the caller closes them,
 * after mp_loop_fd_del); it never owns a struct mp_loop_timer (the caller's
 * memory, which must stay valid while the timer runs). Callbacks may add,
 * change and delete any fd or timer, including their own; an fd deleted
 * during a turn gets no further callback in that turn, even when its number
 * is reused at once.
 *
 * Threading: loop-thread only, except mp_loop_wakeup (async-signal-safe,
 * any thread). Errors follow err.h: 0 or -errno. */
#ifndef MP_LOOP_H
#define MP_LOOP_H

#include "compat.h"

struct mp_loop; /* opaque: an epoll set, a timer heap, the hooks */

/* fd events (interest and what happened): IN also on hang-up and error,
 * so a reader sees EOF or the error from its read(); ERR is set besides. */
#define MP_LOOP_IN 0x1u
#define MP_LOOP_OUT 0x2u
#define MP_LOOP_ERR 0x4u /* hang-up or error (reported, never asked for) */

typedef void (*mp_loop_fd_cb)(struct mp_loop *l, int fd, unsigned events, void *ud);

/* A timer: embed it in the object it belongs to, init once, start and stop
 * as often as needed. Fields are the loop's. */
struct mp_loop_timer {
    int64_t when_ns;       /* monotonic deadline while active */
    uint64_t seq;          /* start order (ties, and the one-pass rule) */
    size_t slot;           /* heap index + 1; 0 = not active */
    void (*cb)(struct mp_loop *l, struct mp_loop_timer *t, void *ud);
    void *ud;
};

/* A new loop, or NULL with errno set (EMFILE, ...). */
struct mp_loop *mp_loop_new(void);
/* Free the loop (accepts NULL). Watched fds are left open, active timers
 * are left as they are (never called again). */
void mp_loop_free(struct mp_loop *l);

/* Watch fd for events (MP_LOOP_IN and/or MP_LOOP_OUT; 0 = stay registered
 * without asking for anything), calling cb(l, fd, what, ud) when one
 * happens; replaces an earlier watch of fd. Returns 0 or -errno (-EBADF,
 * -EPERM for a regular file). */
int mp_loop_fd_set(struct mp_loop *l, int fd, unsigned events, mp_loop_fd_cb cb, void *ud);
/* Stop watching fd (harmless when it is not watched; call it before
 * closing fd, or after: a closed fd has already left the epoll set). */
void mp_loop_fd_del(struct mp_loop *l, int fd);
/* True when fd is watched. */
bool mp_loop_fd_watched(const struct mp_loop *l, int fd);

void mp_loop_timer_init(struct mp_loop_timer *t,
                        void (*cb)(struct mp_loop *l, struct mp_loop_timer *t, void *ud), void *ud);
/* (Re)start t to fire once at when_ns (monotonic, mp_now_ns; a past time
 * fires on the next turn). */
void mp_loop_timer_start(struct mp_loop *l, struct mp_loop_timer *t, int64_t when_ns);
/* Stop t (harmless when not active). */
void mp_loop_timer_stop(struct mp_loop *l, struct mp_loop_timer *t);
static inline bool mp_loop_timer_active(const struct mp_loop_timer *t)
{
    return t->slot != 0;
}

/* Watch a signalfd: every signal read from it is passed to cb (one call per
 * signal, in arrival order). The fd stays the caller's. 0 or -errno. */
int mp_loop_watch_signals(struct mp_loop *l, int sfd, void (*cb)(struct mp_loop *l, int signo, void *ud),
                          void *ud);
/* Watch a pidfd once: cb runs when the process has exited (the watch is
 * removed before the call; the pidfd stays the caller's). 0 or -errno. */
int mp_loop_watch_pid(struct mp_loop *l, int pidfd, void (*cb)(struct mp_loop *l, int pidfd, void *ud),
                      void *ud);

/* Add a hook run at the start of every turn, before the wait (at most 8;
 * -ENOSPC beyond). Returns 0. mp_loop_hook_del removes it (cb and ud both
 * match). */
int mp_loop_hook_add(struct mp_loop *l, void (*cb)(struct mp_loop *l, void *ud), void *ud);
void mp_loop_hook_del(struct mp_loop *l, void (*cb)(struct mp_loop *l, void *ud), void *ud);

/* One turn: hooks, then wait at most until deadline_ns (monotonic; <0: no
 * deadline of its own, only timers and fds end the wait; 0 or past: do not
 * wait), then the callbacks. Returns the number of fd and timer callbacks
 * made, or -errno when the wait failed (EINTR is a turn with 0 callbacks). */
int mp_loop_run_once(struct mp_loop *l, int64_t deadline_ns);
/* Turns until mp_loop_stop is called (from a callback or hook). 0, or the
 * first -errno of a turn. */
int mp_loop_run(struct mp_loop *l);
void mp_loop_stop(struct mp_loop *l);

/* Make the current or next wait return at once. Async-signal-safe; any
 * thread. */
void mp_loop_wakeup(struct mp_loop *l);

/* The earliest active timer's deadline, or -1 when none is active. */
int64_t mp_loop_next_timer(const struct mp_loop *l);

#endif
