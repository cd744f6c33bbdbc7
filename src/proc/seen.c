/* seen.c - the engine's processes as moeprobe sees them while it runs, and
 * ending what a dead run recorded (proc.h "the engine's processes"). */
#include "compat.h"
#include "proc/internal.h"
#include "proc/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

size_t mp_proc_watch(struct mp_proc *p, size_t from, mp_proc_seen_cb cb, void *ud)
{
    if (!p)
        return from;
    mp_proc__track(p); /* adds every new descendant / adopted orphan to p->known */
    for (size_t i = from; i < p->nknown; i++)
        cb(ud, p->known[i].pid, p->known[i].start);
    return p->nknown;
}

const char *mp_proc_boot_id(void)
{
    static char id[40];
    static bool read_once;
    if (read_once)
        return id;
    read_once = true;
    int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return id;
    ssize_t n;
    do {
        n = read(fd, id, sizeof(id) - 1);
    } while (n < 0 && errno == EINTR);
    close(fd);
    if (n <= 0) {
        id[0] = '\0';
        return id;
    }
    id[n] = '\0';
    id[strcspn(id, "\n")] = '\0';
    return id;
}

bool mp_proc_end_seen(pid_t pid, unsigned long long start, const char *boot_id)
{
    const char *now = mp_proc_boot_id();
    if (pid <= 1 || pid == getpid() || !start || !boot_id || !*boot_id || !*now ||
        strcmp(boot_id, now) != 0)
        return false;
    /* a pidfd pins the process: checked after it is opened, the start time
     * cannot belong to a process that replaced ours in between */
    int pfd = mp_proc__pidfd_open(pid);
    bool same = mp_proc_starttime(pid) == start; /* else gone, or the pid reused */
    bool killed = same && mp_proc__pidfd_kill(pfd, pid, SIGKILL) == 0;
    if (pfd >= 0)
        close(pfd);
    return killed;
}
