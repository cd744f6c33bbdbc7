/* signals.c - the run loop's signal set-up and its undoing (proc.h). */
#include "proc/proc.h"

#include <errno.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

int mp_signals_setup(sigset_t *old)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGQUIT); /* Ctrl-\: an interruption like Ctrl-C, not a core dump */
    sigaddset(&set, SIGCHLD);
    signal(SIGPIPE, SIG_IGN);
    if (sigprocmask(SIG_BLOCK, &set, old) != 0)
        return -errno;
    int fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    if (fd < 0) {
        int e = -errno;
        sigprocmask(SIG_SETMASK, old, NULL);
        return e;
    }
    return fd;
}

int mp_signals_begin(struct mp_signals *s)
{
    s->fd = -1;
    int fd = mp_signals_setup(&s->old);
    if (fd < 0)
        return fd;
    s->fd = fd;
    mp_proc_become_subreaper(); /* best effort: escapees are also found by marker */
    return 0;
}

void mp_signals_end(struct mp_signals *s)
{
    if (s->fd < 0)
        return;
    mp_proc_reap_orphans();
    sigprocmask(SIG_SETMASK, &s->old, NULL);
    close(s->fd);
    s->fd = -1;
}
