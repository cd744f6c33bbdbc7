/* Unit tests: the event loop (base/loop.h) - an fd callback when data
 * arrives and none before; timers in deadline order with ties in start
 * order, stop and restart; a timer re-armed at "now" from its callback runs
 * once per turn (no starvation of fds); an fd deleted by an earlier
 * callback of the same turn gets no callback, even when its number is
 * reused at once; a signalfd delivers every signal; a pidfd fires once when
 * the child exits; hooks run before the wait and may arm timers; a wake-up
 * from another thread ends a wait without deadline; the turn's deadline.
 * Waits have safety deadlines only (a hang becomes a failure). */
#include "compat.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "loop.h"

#define SAFETY_NS ((int64_t)20 * 1000000000)
#define MS ((int64_t)1000000)

struct rec {
    char log[256];
    size_t n;
};

static void add(struct rec *r, char c)
{
    if (r->n + 1 < sizeof(r->log))
        r->log[r->n++] = c;
    r->log[r->n] = '\0';
}

static void on_fd(struct mp_loop *l, int fd, unsigned what, void *ud)
{
    (void)l;
    char b[16];
    if (what & MP_LOOP_IN) {
        ssize_t n = read(fd, b, sizeof(b));
        if (n > 0)
            add(ud, b[0]);
    }
}

static void test_fd_readable(void **state)
{
    (void)state;
    struct mp_loop *l = mp_loop_new();
    assert_non_null(l);
    int p[2];
    assert_int_equal(pipe(p), 0);
    struct rec r = {0};
    assert_int_equal(mp_loop_fd_set(l, p[0], MP_LOOP_IN, on_fd, &r), 0);
    assert_true(mp_loop_fd_watched(l, p[0]));
    assert_int_equal(mp_loop_run_once(l, 0), 0); /* nothing yet, no wait */
    assert_int_equal(r.n, 0);
    assert_int_equal(write(p[1], "x", 1), 1);
    assert_int_equal(mp_loop_run_once(l, mp_now_ns() + SAFETY_NS), 1);
    assert_string_equal(r.log, "x");
    mp_loop_fd_del(l, p[0]);
    assert_false(mp_loop_fd_watched(l, p[0]));
    assert_int_equal(write(p[1], "y", 1), 1);
    assert_int_equal(mp_loop_run_once(l, 0), 0);
    assert_string_equal(r.log, "x");
    /* a hang-up is reported as readable (the reader sees EOF) */
    assert_int_equal(mp_loop_fd_set(l, p[0], MP_LOOP_IN, on_fd, &r), 0);
    close(p[1]);
    assert_true(mp_loop_run_once(l, mp_now_ns() + SAFETY_NS) >= 1);
    assert_string_equal(r.log, "xy");
    close(p[0]);
    mp_loop_free(l);
}

struct tm_ud {
    struct rec *r;
    char c;
};

static void on_timer(struct mp_loop *l, struct mp_loop_timer *t, void *ud)
{
    (void)l;
    (void)t;
    struct tm_ud *u = ud;
    add(u->r, u->c);
}

static void test_timer_order(void **state)
{
    (void)state;
    struct mp_loop *l = mp_loop_new();
    struct rec r = {0};
    struct mp_loop_timer t[6];
    struct tm_ud u[6];
    int64_t base = mp_now_ns();
    /* deadlines: a +3, b +1, c +2, d +1 (after b), e +2 then moved to +4, f stopped */
    const char *names = "abcdef";
    const int when[] = {3, 1, 2, 1, 2, 1};
    for (int i = 0; i < 6; i++) {
        u[i] = (struct tm_ud){&r, names[i]};
        mp_loop_timer_init(&t[i], on_timer, &u[i]);
        mp_loop_timer_start(l, &t[i], base + when[i] * MS);
    }
    mp_loop_timer_start(l, &t[4], base + 4 * MS);
    mp_loop_timer_stop(l, &t[5]);
    assert_false(mp_loop_timer_active(&t[5]));
    assert_true(mp_loop_timer_active(&t[4]));
    assert_int_equal(mp_loop_next_timer(l), base + 1 * MS);
    int64_t safety = mp_now_ns() + SAFETY_NS;
    while (r.n < 5 && mp_now_ns() < safety)
        mp_loop_run_once(l, safety);
    assert_string_equal(r.log, "bdcae");
    assert_true(mp_now_ns() >= base + 4 * MS); /* never early */
    assert_int_equal(mp_loop_next_timer(l), -1);
    mp_loop_free(l);
}

/* a timer that re-arms itself at "now": it runs once per turn, and an fd
 * still gets its turn */
struct rearm {
    int runs;
};

static void on_rearm(struct mp_loop *l, struct mp_loop_timer *t, void *ud)
{
    struct rearm *a = ud;
    a->runs++;
    mp_loop_timer_start(l, t, mp_now_ns() - 5 * MS); /* even in the past */
}

static void test_no_starvation(void **state)
{
    (void)state;
    struct mp_loop *l = mp_loop_new();
    struct rearm a = {0};
    struct mp_loop_timer t;
    mp_loop_timer_init(&t, on_rearm, &a);
    mp_loop_timer_start(l, &t, 0);
    int p[2];
    assert_int_equal(pipe(p), 0);
    struct rec r = {0};
    mp_loop_fd_set(l, p[0], MP_LOOP_IN, on_fd, &r);
    assert_int_equal(write(p[1], "z", 1), 1);
    assert_int_equal(mp_loop_run_once(l, mp_now_ns() + SAFETY_NS), 2); /* the fd, the timer once */
    assert_int_equal(a.runs, 1);
    assert_string_equal(r.log, "z");
    assert_int_equal(mp_loop_run_once(l, mp_now_ns() + SAFETY_NS), 1); /* no wait: it is due */
    assert_int_equal(a.runs, 2);
    close(p[0]);
    close(p[1]);
    mp_loop_free(l);
}

/* two readable fds with the same callback: the first one called deletes
 * the other, closes it and opens a new empty pipe with the same number: the
 * other's event of this turn must not reach the callback of the new fd (it
 * would find nothing to read), whichever of the two epoll reports first */
struct pair {
    int fd[2][2];
    int calls, stale;
    int reused; /* write end of the new pipe */
};

static void on_x(struct mp_loop *l, int fd, unsigned what, void *ud)
{
    struct pair *p = ud;
    char c;
    (void)what;
    if (read(fd, &c, 1) != 1) {
        p->stale++;
        return;
    }
    if (p->calls++ > 0)
        return;
    int other = fd == p->fd[0][0] ? p->fd[1][0] : p->fd[0][0];
    mp_loop_fd_del(l, other);
    close(other);
    int q[2];
    assert_int_equal(pipe2(q, O_NONBLOCK), 0);
    if (q[0] != other) { /* keep the test meaningful: the number must be reused */
        assert_int_equal(dup2(q[0], other), other);
        close(q[0]);
    }
    p->reused = q[1];
    mp_loop_fd_set(l, other, MP_LOOP_IN, on_x, p); /* watched again, nothing to read */
}

static void test_stale_event(void **state)
{
    (void)state;
    struct mp_loop *l = mp_loop_new();
    struct pair p = {0};
    for (int i = 0; i < 2; i++) {
        assert_int_equal(pipe2(p.fd[i], O_NONBLOCK), 0);
        mp_loop_fd_set(l, p.fd[i][0], MP_LOOP_IN, on_x, &p);
        assert_int_equal(write(p.fd[i][1], "x", 1), 1);
    }
    assert_int_equal(mp_loop_run_once(l, mp_now_ns() + SAFETY_NS), 1); /* both ready, one call */
    assert_int_equal(p.calls, 1);
    assert_int_equal(p.stale, 0);
    mp_loop_run_once(l, 0);
    assert_int_equal(p.stale, 0); /* the old fd's event was dropped */
    assert_int_equal(write(p.reused, "3", 1), 1);
    mp_loop_run_once(l, mp_now_ns() + SAFETY_NS);
    assert_int_equal(p.calls, 2);
    assert_int_equal(p.stale, 0);
    for (int i = 0; i < 2; i++) {
        close(p.fd[i][0]);
        close(p.fd[i][1]);
    }
    close(p.reused);
    mp_loop_free(l);
}

static void on_sig(struct mp_loop *l, int signo, void *ud)
{
    (void)l;
    add(ud, signo == SIGUSR1 ? '1' : signo == SIGUSR2 ? '2' : '?');
}

static void test_signals(void **state)
{
    (void)state;
    sigset_t set, old;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    sigaddset(&set, SIGUSR2);
    assert_int_equal(sigprocmask(SIG_BLOCK, &set, &old), 0);
    int sfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    assert_true(sfd >= 0);
    struct mp_loop *l = mp_loop_new();
    struct rec r = {0};
    assert_int_equal(mp_loop_watch_signals(l, sfd, on_sig, &r), 0);
    raise(SIGUSR1);
    raise(SIGUSR2);
    int64_t safety = mp_now_ns() + SAFETY_NS;
    while (r.n < 2 && mp_now_ns() < safety)
        mp_loop_run_once(l, safety);
    assert_string_equal(r.log, "12");
    mp_loop_free(l);
    close(sfd);
    sigprocmask(SIG_SETMASK, &old, NULL);
}

static void on_exit_pid(struct mp_loop *l, int pidfd, void *ud)
{
    (void)l;
    (void)pidfd;
    (*(int *)ud)++;
}

static void test_pidfd(void **state)
{
    (void)state;
    int rfd[2];
    assert_int_equal(pipe(rfd), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        char c;
        close(rfd[1]);
        _exit(read(rfd[0], &c, 1) == 1 ? 0 : 1); /* exits when told */
    }
    close(rfd[0]);
    int pfd = (int)syscall(SYS_pidfd_open, (long)pid, 0L);
    if (pfd < 0) {
        close(rfd[1]);
        waitpid(pid, NULL, 0);
        skip(); /* kernel < 5.3 */
    }
    struct mp_loop *l = mp_loop_new();
    int fired = 0;
    assert_int_equal(mp_loop_watch_pid(l, pfd, on_exit_pid, &fired), 0);
    assert_int_equal(mp_loop_run_once(l, 0), 0);
    assert_int_equal(fired, 0); /* alive */
    assert_int_equal(write(rfd[1], "x", 1), 1);
    int64_t safety = mp_now_ns() + SAFETY_NS;
    while (!fired && mp_now_ns() < safety)
        mp_loop_run_once(l, safety);
    assert_int_equal(fired, 1);
    assert_false(mp_loop_fd_watched(l, pfd)); /* once */
    mp_loop_run_once(l, 0);
    assert_int_equal(fired, 1);
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    close(pfd);
    close(rfd[1]);
    mp_loop_free(l);
}

struct hk {
    struct mp_loop_timer t;
    int hooks, timers;
};

static void hook_timer(struct mp_loop *l, struct mp_loop_timer *t, void *ud)
{
    (void)l;
    (void)t;
    ((struct hk *)ud)->timers++;
}

static void on_hook(struct mp_loop *l, void *ud)
{
    struct hk *h = ud;
    if (h->hooks++ == 0)
        mp_loop_timer_start(l, &h->t, mp_now_ns()); /* armed before the wait */
}

static void test_hook(void **state)
{
    (void)state;
    struct mp_loop *l = mp_loop_new();
    struct hk h = {0};
    mp_loop_timer_init(&h.t, hook_timer, &h);
    assert_int_equal(mp_loop_hook_add(l, on_hook, &h), 0);
    /* no deadline: only the timer the hook arms can end this wait */
    assert_int_equal(mp_loop_run_once(l, -1), 1);
    assert_int_equal(h.hooks, 1);
    assert_int_equal(h.timers, 1);
    mp_loop_hook_del(l, on_hook, &h);
    mp_loop_run_once(l, 0);
    assert_int_equal(h.hooks, 1);
    mp_loop_free(l);
}

static void *waker(void *arg)
{
    struct timespec ts = {0, 20 * 1000000};
    nanosleep(&ts, NULL); /* let the loop block first (a later wake-up works too) */
    mp_loop_wakeup(arg);
    return NULL;
}

static void on_safety(struct mp_loop *l, struct mp_loop_timer *t, void *ud)
{
    (void)l;
    (void)t;
    *(bool *)ud = true;
}

static void test_wakeup_and_deadline(void **state)
{
    (void)state;
    struct mp_loop *l = mp_loop_new();
    bool fired = false;
    struct mp_loop_timer safety;
    mp_loop_timer_init(&safety, on_safety, &fired);
    mp_loop_timer_start(l, &safety, mp_now_ns() + SAFETY_NS);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, waker, l), 0);
    assert_int_equal(mp_loop_run_once(l, -1), 0); /* woken, no callback */
    assert_false(fired);
    pthread_join(th, NULL);
    /* a deadline ends a turn with no event */
    int64_t t0 = mp_now_ns();
    assert_int_equal(mp_loop_run_once(l, t0 + 30 * MS), 0);
    assert_true(mp_now_ns() >= t0 + 30 * MS);
    assert_false(fired);
    mp_loop_timer_stop(l, &safety);
    mp_loop_free(l);
}

static void stopper(struct mp_loop *l, struct mp_loop_timer *t, void *ud)
{
    (void)t;
    (*(int *)ud)++;
    mp_loop_stop(l);
}

static void test_run_stop(void **state)
{
    (void)state;
    struct mp_loop *l = mp_loop_new();
    int n = 0;
    struct mp_loop_timer t;
    mp_loop_timer_init(&t, stopper, &n);
    mp_loop_timer_start(l, &t, mp_now_ns() + MS);
    assert_int_equal(mp_loop_run(l), 0);
    assert_int_equal(n, 1);
    mp_loop_timer_start(l, &t, mp_now_ns() + MS);
    assert_int_equal(mp_loop_run(l), 0); /* runs again after a stop */
    assert_int_equal(n, 2);
    mp_loop_free(l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fd_readable),   cmocka_unit_test(test_timer_order),
        cmocka_unit_test(test_no_starvation), cmocka_unit_test(test_stale_event),
        cmocka_unit_test(test_signals),       cmocka_unit_test(test_pidfd),
        cmocka_unit_test(test_hook),          cmocka_unit_test(test_wakeup_and_deadline),
        cmocka_unit_test(test_run_stop),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
