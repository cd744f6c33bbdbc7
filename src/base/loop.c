/* loop.c - the event loop (loop.h): an epoll set whose entries carry the
 * fd and a generation number (so an event of an fd deleted, or deleted and
 * reused, earlier in the same turn is recognised as stale and dropped), a
 * binary min-heap of timers ordered by (deadline, start order), an eventfd
 * for wake-ups, and a short list of before-sleep hooks. */
#include "loop.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "clock.h"
#include "xalloc.h"

#define MAX_HOOKS 8
#define EVENTS_PER_TURN 256

enum slot_kind { SLOT_FD = 1, SLOT_SIGNALS, SLOT_PID, SLOT_WAKE };

/* What is known about one fd number. */
struct slot {
    enum slot_kind kind; /* 0: not watched */
    unsigned want;       /* MP_LOOP_IN | MP_LOOP_OUT as registered */
    uint32_t gen;        /* bumped at every delete: stale events are dropped */
    mp_loop_fd_cb cb;
    void (*sig_cb)(struct mp_loop *l, int signo, void *ud);
    void (*pid_cb)(struct mp_loop *l, int pidfd, void *ud);
    void *ud;
};

struct hook {
    void (*cb)(struct mp_loop *l, void *ud);
    void *ud;
};

struct mp_loop {
    int epfd;
    int wakefd;
    struct slot *slots; /* indexed by fd */
    size_t nslots;
    struct mp_loop_timer **heap;
    size_t nheap, capheap;
    uint64_t next_seq;
    struct hook hooks[MAX_HOOKS];
    size_t nhooks;
    bool stop;
};

/* ---------- fds ---------- */

static struct slot *slot_of(struct mp_loop *l, int fd)
{
    size_t i = (size_t)fd;
    if (i >= l->nslots) {
        size_t n = l->nslots ? l->nslots : 64;
        while (n <= i)
            n *= 2;
        l->slots = xreallocarray(l->slots, n, sizeof(*l->slots));
        memset(l->slots + l->nslots, 0, (n - l->nslots) * sizeof(*l->slots));
        l->nslots = n;
    }
    return &l->slots[i];
}

static uint32_t to_epoll(unsigned events)
{
    return ((events & MP_LOOP_IN) ? (uint32_t)EPOLLIN : 0u) |
           ((events & MP_LOOP_OUT) ? (uint32_t)EPOLLOUT : 0u);
}

static unsigned from_epoll(uint32_t ev)
{
    unsigned r = 0;
    if (ev & (EPOLLIN | EPOLLHUP | EPOLLERR | EPOLLRDHUP))
        r |= MP_LOOP_IN;
    if (ev & EPOLLOUT)
        r |= MP_LOOP_OUT;
    if (ev & (EPOLLHUP | EPOLLERR))
        r |= MP_LOOP_ERR;
    return r;
}

/* Register fd as kind with interest events; the callbacks are set by the
 * caller afterwards. */
static int watch(struct mp_loop *l, int fd, enum slot_kind kind, unsigned events)
{
    if (fd < 0)
        return -EBADF;
    struct slot *s = slot_of(l, fd);
    struct epoll_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.events = to_epoll(events);
    ev.data.u64 = ((uint64_t)s->gen << 32) | (uint32_t)fd;
    /* always told to the kernel, even with unchanged events: the fd may have
     * been closed and its number reused since it was watched */
    int op = s->kind ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
    if (epoll_ctl(l->epfd, op, fd, &ev) != 0) {
        /* the fd was closed and reopened behind our back (ENOENT), or it
         * is still in the set from before a close we were not told of */
        if (errno == ENOENT)
            op = EPOLL_CTL_ADD;
        else if (errno == EEXIST)
            op = EPOLL_CTL_MOD;
        else
            return -errno;
        if (epoll_ctl(l->epfd, op, fd, &ev) != 0)
            return -errno;
    }
    s->kind = kind;
    s->want = events;
    return 0;
}

int mp_loop_fd_set(struct mp_loop *l, int fd, unsigned events, mp_loop_fd_cb cb, void *ud)
{
    int rc = watch(l, fd, SLOT_FD, events & (MP_LOOP_IN | MP_LOOP_OUT));
    if (rc < 0)
        return rc;
    struct slot *s = &l->slots[fd];
    s->cb = cb;
    s->ud = ud;
    return 0;
}

void mp_loop_fd_del(struct mp_loop *l, int fd)
{
    if (fd < 0 || (size_t)fd >= l->nslots || !l->slots[fd].kind)
        return;
    epoll_ctl(l->epfd, EPOLL_CTL_DEL, fd, NULL); /* ENOENT/EBADF after a close: fine */
    struct slot *s = &l->slots[fd];
    uint32_t gen = s->gen + 1;
    memset(s, 0, sizeof(*s));
    s->gen = gen;
}

bool mp_loop_fd_watched(const struct mp_loop *l, int fd)
{
    return fd >= 0 && (size_t)fd < l->nslots && l->slots[fd].kind != 0;
}

int mp_loop_watch_signals(struct mp_loop *l, int sfd, void (*cb)(struct mp_loop *l, int signo, void *ud),
                          void *ud)
{
    int rc = watch(l, sfd, SLOT_SIGNALS, MP_LOOP_IN);
    if (rc == 0) {
        l->slots[sfd].sig_cb = cb;
        l->slots[sfd].ud = ud;
    }
    return rc;
}

int mp_loop_watch_pid(struct mp_loop *l, int pidfd, void (*cb)(struct mp_loop *l, int pidfd, void *ud),
                      void *ud)
{
    int rc = watch(l, pidfd, SLOT_PID, MP_LOOP_IN);
    if (rc == 0) {
        l->slots[pidfd].pid_cb = cb;
        l->slots[pidfd].ud = ud;
    }
    return rc;
}

/* ---------- timers: a binary min-heap on (when_ns, seq) ---------- */

static bool before(const struct mp_loop_timer *a, const struct mp_loop_timer *b)
{
    return a->when_ns < b->when_ns || (a->when_ns == b->when_ns && a->seq < b->seq);
}

static void heap_put(struct mp_loop *l, size_t i, struct mp_loop_timer *t)
{
    l->heap[i] = t;
    t->slot = i + 1;
}

static void sift_up(struct mp_loop *l, size_t i)
{
    struct mp_loop_timer *t = l->heap[i];
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!before(t, l->heap[p]))
            break;
        heap_put(l, i, l->heap[p]);
        i = p;
    }
    heap_put(l, i, t);
}

static void sift_down(struct mp_loop *l, size_t i)
{
    struct mp_loop_timer *t = l->heap[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= l->nheap)
            break;
        if (c + 1 < l->nheap && before(l->heap[c + 1], l->heap[c]))
            c++;
        if (!before(l->heap[c], t))
            break;
        heap_put(l, i, l->heap[c]);
        i = c;
    }
    heap_put(l, i, t);
}

void mp_loop_timer_init(struct mp_loop_timer *t,
                        void (*cb)(struct mp_loop *l, struct mp_loop_timer *t, void *ud), void *ud)
{
    memset(t, 0, sizeof(*t));
    t->cb = cb;
    t->ud = ud;
}

void mp_loop_timer_stop(struct mp_loop *l, struct mp_loop_timer *t)
{
    if (!t->slot)
        return;
    size_t i = t->slot - 1;
    t->slot = 0;
    l->nheap--;
    if (i == l->nheap)
        return;
    heap_put(l, i, l->heap[l->nheap]);
    if (i > 0 && before(l->heap[i], l->heap[(i - 1) / 2]))
        sift_up(l, i);
    else
        sift_down(l, i);
}

void mp_loop_timer_start(struct mp_loop *l, struct mp_loop_timer *t, int64_t when_ns)
{
    mp_loop_timer_stop(l, t);
    if (l->nheap == l->capheap) {
        l->capheap = l->capheap ? l->capheap * 2 : 16;
        l->heap = xreallocarray(l->heap, l->capheap, sizeof(*l->heap));
    }
    t->when_ns = when_ns;
    t->seq = l->next_seq++;
    heap_put(l, l->nheap++, t);
    sift_up(l, l->nheap - 1);
}

int64_t mp_loop_next_timer(const struct mp_loop *l)
{
    return l->nheap ? l->heap[0]->when_ns : -1;
}

/* ---------- hooks, wake-up ---------- */

int mp_loop_hook_add(struct mp_loop *l, void (*cb)(struct mp_loop *l, void *ud), void *ud)
{
    if (l->nhooks == MAX_HOOKS)
        return -ENOSPC;
    l->hooks[l->nhooks].cb = cb;
    l->hooks[l->nhooks].ud = ud;
    l->nhooks++;
    return 0;
}

void mp_loop_hook_del(struct mp_loop *l, void (*cb)(struct mp_loop *l, void *ud), void *ud)
{
    for (size_t i = 0; i < l->nhooks; i++) {
        if (l->hooks[i].cb == cb && l->hooks[i].ud == ud) {
            memmove(&l->hooks[i], &l->hooks[i + 1], (l->nhooks - i - 1) * sizeof(l->hooks[0]));
            l->nhooks--;
            return;
        }
    }
}

void mp_loop_wakeup(struct mp_loop *l)
{
    uint64_t one = 1;
    ssize_t w = write(l->wakefd, &one, sizeof(one)); /* async-signal-safe */
    MP_UNUSED(w);
}

void mp_loop_stop(struct mp_loop *l)
{
    l->stop = true;
}

/* ---------- life ---------- */

struct mp_loop *mp_loop_new(void)
{
    int ep = epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0)
        return NULL;
    int wfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (wfd < 0) {
        int e = errno;
        close(ep);
        errno = e;
        return NULL;
    }
    struct mp_loop *l = xcalloc(1, sizeof(*l));
    l->epfd = ep;
    l->wakefd = wfd;
    if (watch(l, wfd, SLOT_WAKE, MP_LOOP_IN) < 0) {
        int e = errno;
        mp_loop_free(l);
        errno = e;
        return NULL;
    }
    return l;
}

void mp_loop_free(struct mp_loop *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->nheap; i++)
        l->heap[i]->slot = 0;
    close(l->epfd);
    close(l->wakefd);
    free(l->slots);
    free(l->heap);
    free(l);
}

/* ---------- a turn ---------- */

static int wait_ms(const struct mp_loop *l, int64_t deadline_ns)
{
    int64_t now = mp_now_ns(), t = -1;
    if (l->nheap)
        t = MP_MAX((int64_t)0, l->heap[0]->when_ns - now);
    if (deadline_ns >= 0) {
        int64_t d = MP_MAX((int64_t)0, deadline_ns - now);
        t = t < 0 ? d : MP_MIN(t, d);
    }
    if (t < 0)
        return -1;
    t = (t + 999999) / 1000000; /* round up: never wake before the time */
    return t > INT_MAX ? INT_MAX : (int)t;
}

static void drain_signals(struct mp_loop *l, int fd, struct slot *s)
{
    void (*cb)(struct mp_loop *, int, void *) = s->sig_cb;
    void *ud = s->ud;
    uint32_t gen = s->gen;
    struct signalfd_siginfo si;
    while (read(fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
        cb(l, (int)si.ssi_signo, ud);
        if (l->slots[fd].gen != gen) /* the callback stopped watching */
            break;
    }
}

/* One epoll event; returns 1 when a caller's callback ran. */
static int dispatch(struct mp_loop *l, const struct epoll_event *ev)
{
    int fd = (int)(uint32_t)ev->data.u64;
    uint32_t gen = (uint32_t)(ev->data.u64 >> 32);
    if ((size_t)fd >= l->nslots)
        return 0;
    struct slot *s = &l->slots[fd];
    if (!s->kind || s->gen != gen)
        return 0; /* deleted (and maybe reused) earlier in this turn */
    unsigned what = from_epoll(ev->events);
    switch (s->kind) {
    case SLOT_FD:
        s->cb(l, fd, what, s->ud);
        break;
    case SLOT_SIGNALS:
        drain_signals(l, fd, s);
        break;
    case SLOT_PID: {
        void (*cb)(struct mp_loop *, int, void *) = s->pid_cb;
        void *ud = s->ud;
        mp_loop_fd_del(l, fd); /* once */
        cb(l, fd, ud);
        break;
    }
    case SLOT_WAKE: {
        uint64_t v;
        ssize_t r = read(fd, &v, sizeof(v)); /* EAGAIN: already drained */
        MP_UNUSED(r);
        return 0;
    }
    }
    return 1;
}

int mp_loop_run_once(struct mp_loop *l, int64_t deadline_ns)
{
    for (size_t i = 0; i < l->nhooks; i++)
        l->hooks[i].cb(l, l->hooks[i].ud);
    struct epoll_event evs[EVENTS_PER_TURN];
    int n = epoll_wait(l->epfd, evs, EVENTS_PER_TURN, l->stop ? 0 : wait_ms(l, deadline_ns));
    if (n < 0) {
        if (errno != EINTR)
            return -errno;
        n = 0;
    }
    int calls = 0;
    for (int i = 0; i < n; i++)
        calls += dispatch(l, &evs[i]);
    /* due timers; one started during this pass waits for the next turn */
    int64_t now = mp_now_ns();
    uint64_t limit = l->next_seq;
    while (l->nheap && l->heap[0]->when_ns <= now && l->heap[0]->seq < limit) {
        struct mp_loop_timer *t = l->heap[0];
        mp_loop_timer_stop(l, t);
        t->cb(l, t, t->ud);
        calls++;
    }
    return calls;
}

int mp_loop_run(struct mp_loop *l)
{
    l->stop = false;
    while (!l->stop) {
        int rc = mp_loop_run_once(l, -1);
        if (rc < 0) {
            l->stop = false;
            return rc;
        }
    }
    l->stop = false;
    return 0;
}
