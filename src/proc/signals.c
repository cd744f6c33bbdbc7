/* signals.c - the run loop's signal set-up (proc.h). */
#include "proc/proc.h"

#include <errno.h>
#include <signal.h>
#include <sys/signalfd.h>

int mp_signals_setup(sigset_t *old)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
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
