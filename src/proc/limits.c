/* limits.c - moeprobe's own descriptor limit (proc.h "descriptors"). */
#include "compat.h"
#include "proc/internal.h"
#include "proc/proc.h"

#include <dirent.h>
#include <sys/resource.h>

static struct rlimit child_nofile;
static bool child_nofile_set;

unsigned long mp_proc_raise_nofile(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return 0;
    if (!child_nofile_set) {
        child_nofile = rl; /* what the engines get back (spawn.c) */
        child_nofile_set = true;
    }
    if (rl.rlim_cur < rl.rlim_max) {
        struct rlimit up = {rl.rlim_max, rl.rlim_max};
        if (setrlimit(RLIMIT_NOFILE, &up) == 0)
            rl = up;
    }
    return rl.rlim_cur == RLIM_INFINITY ? ~0UL : (unsigned long)rl.rlim_cur;
}

bool mp_proc__child_nofile(struct rlimit *out)
{
    if (!child_nofile_set)
        return false;
    *out = child_nofile;
    return true;
}

/* Descriptors open now (/proc/self/fd), or 0 when that cannot be read. */
static unsigned long open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return 0;
    unsigned long n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        n += e->d_name[0] != '.';
    closedir(d);
    return n > 0 ? n - 1 : 0; /* the directory's own descriptor */
}

bool mp_proc_fd_fits(long streams, struct mp_proc_fd_room *room)
{
    struct rlimit rl = {0, 0};
    getrlimit(RLIMIT_NOFILE, &rl);
    room->limit = rl.rlim_cur == RLIM_INFINITY ? ~0UL : (unsigned long)rl.rlim_cur;
    room->hard = rl.rlim_max == RLIM_INFINITY ? ~0UL : (unsigned long)rl.rlim_max;
    room->need = (unsigned long)(streams > 0 ? streams : 0) + open_fds() + MP_PROC_FD_RESERVE;
    return room->need <= room->limit;
}
