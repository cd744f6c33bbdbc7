/* scan.c - what /proc tells us: group members, marked processes (escapees),
 * orphaned zombies of ours; and run markers.
 *
 * The marker is matched against /proc/<pid>/environ, the environment a
 * process was exec'd with. A zombie has no environment left (it reads as
 * empty), so zombies are never "marked"; they are dealt with by reaping. */
#include "compat.h"
#include "proc/internal.h"
#include "proc/proc.h"
#include "vec.h"
#include "xalloc.h"

#include <ctype.h>
#include <dirent.h>
#include <sched.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"

/* environ files larger than this are read only this far (a marker sits
 * wherever the engine's launcher put it; 1 MiB is far above ARG_MAX's
 * usual environment share) */

pid_t mp_proc__pid_name(const char *s)
{
    long v = 0;
    if (!*s)
        return 0;
    for (; *s; s++) {
        if (!isdigit((unsigned char)*s))
            return 0;
        v = v * 10 + (*s - '0');
        if (v > 0x7fffffffL)
            return 0;
    }
    return (pid_t)v;
}

int mp_proc__read_stat(pid_t pid, struct mp_proc__stat *st)
{
    char path[64], buf[1024];
    int fd;
    ssize_t n;
    const char *rp;
    int ppid = 0, pgrp = 0;
    unsigned long long start = 0;
    char state = 0;

    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    do {
        n = read(fd, buf, sizeof(buf) - 1);
    } while (n < 0 && errno == EINTR);
    close(fd);
    if (n <= 0)
        return n < 0 ? -errno : -ESRCH;
    buf[n] = '\0';
    /* "pid (comm) S ppid pgrp ..." - comm may contain spaces and ')' */
    rp = strrchr(buf, ')');
    if (!rp || sscanf(rp + 1, " %c %d %d", &state, &ppid, &pgrp) != 3)
        return -EIO;
    /* fields 6..21 skipped, 22 is the start time */
    if (sscanf(rp + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
               &start) != 1)
        start = 0;
    st->state = state;
    st->ppid = (pid_t)ppid;
    st->pgrp = (pid_t)pgrp;
    st->start = start;
    return 0;
}

void mp_proc__reap_if_child(pid_t pid)
{
    int st;
    if (mp_proc__is_managed(pid))
        return;
    while (waitpid(pid, &st, WNOHANG) < 0 && errno == EINTR)
        ;
}

int mp_proc__group_members(pid_t pgid, pid_t *pids, size_t max)
{
    DIR *dir = opendir("/proc");
    struct dirent *de;
    pid_t me = getpid();
    int count = 0;

    if (!dir)
        return -errno;
    while ((de = readdir(dir)) != NULL) {
        struct mp_proc__stat st;
        pid_t pid = mp_proc__pid_name(de->d_name);
        if (pid <= 0 || pid == me)
            continue;
        if (mp_proc__read_stat(pid, &st) < 0 || st.pgrp != pgid)
            continue;
        if (st.state == 'Z' || st.state == 'X') {
            if (st.ppid == me)
                mp_proc__reap_if_child(pid);
            continue;
        }
        if ((size_t)count < max)
            pids[count] = pid;
        count++;
    }
    closedir(dir);
    return count;
}

ssize_t mp_proc__read_environ(pid_t pid, char *buf, size_t bufsz)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    size_t len = 0;
    while (len < bufsz) {
        ssize_t n = read(fd, buf + len, bufsz - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int e = errno;
            close(fd);
            return -e;
        }
        if (n == 0)
            break;
        len += (size_t)n;
    }
    close(fd);
    return (ssize_t)len;
}

/* Does /proc/<pid>/environ contain exactly want (a "NAME=VALUE" entry)?
 * *empty is set when the file read as empty: a zombie, a kernel thread, or
 * a process in the middle of execve() (its new environment not yet in
 * place), which the caller reads again. */
static bool environ_has(pid_t pid, const char *want, size_t wlen, char *buf, size_t bufsz,
                        bool *empty)
{
    ssize_t got = mp_proc__read_environ(pid, buf, bufsz);
    size_t len = got > 0 ? (size_t)got : 0;
    if (got < 0) { /* gone, or not ours to read */
        *empty = false;
        return false;
    }
    *empty = len == 0;
    for (size_t i = 0; i < len;) {
        const char *e = buf + i;
        const char *z = memchr(e, '\0', len - i);
        size_t elen = z ? (size_t)(z - e) : len - i;
        if (elen == wlen && memcmp(e, want, wlen) == 0)
            return true;
        i += elen + 1;
    }
    return false;
}

/* ---- descendants and adopted orphans ----------------------------------- */

struct psent {
    pid_t pid, ppid, pgrp;
    char state;
    unsigned long long start;
};

/* Every process but ourselves; *out owned by the caller. Returns the count
 * (>= 0) or -errno. */
static int snapshot(struct psent **out)
{
    DIR *dir = opendir("/proc");
    struct dirent *de;
    pid_t me = getpid();
    size_t n = 0, cap = 0;
    struct psent *v = NULL;

    *out = NULL;
    if (!dir)
        return -errno;
    while ((de = readdir(dir)) != NULL) {
        struct mp_proc__stat st;
        pid_t pid = mp_proc__pid_name(de->d_name);
        if (pid <= 0 || pid == me || mp_proc__read_stat(pid, &st) < 0)
            continue;
        mp_grow(v, cap, n + 1);
        v[n++] = (struct psent){ pid, st.ppid, st.pgrp, st.state, st.start };
    }
    closedir(dir);
    *out = v;
    return (int)n;
}

static bool known_has(const struct mp_proc *p, pid_t pid, unsigned long long start)
{
    for (size_t i = 0; i < p->nknown; i++)
        if (p->known[i].pid == pid && p->known[i].start == start)
            return true;
    return false;
}

#define KNOWN_MAX 4096 /* bound on what one engine's tree is remembered by */

static void known_add(struct mp_proc *p, pid_t pid, unsigned long long start)
{
    if (known_has(p, pid, start) || p->nknown >= KNOWN_MAX)
        return;
    mp_grow(p->known, p->capknown, p->nknown + 1);
    p->known[p->nknown++] = (struct mp_proc__known){ pid, start };
}

/* An orphan of p's tree: reparented to us, not one we started (managed), not
 * older than p. Meaningful only while p is the only live engine. */
static bool adopted_by(const struct mp_proc *p, const struct psent *e, pid_t me)
{
    return e->ppid == me && e->pid != p->pid && !mp_proc__is_managed(e->pid) &&
           p->start != 0 && e->start >= p->start;
}

static bool dead_state(char c)
{
    return c == 'Z' || c == 'X';
}

void mp_proc__track(struct mp_proc *p)
{
    struct psent *v = NULL;
    int n = snapshot(&v);
    pid_t me = getpid();
    bool sole = mp_proc__live_engines() == 1 && p->engine;

    if (n <= 0) {
        free(v);
        return;
    }
    /* mark roots, then spread to children until nothing changes (a tree
     * is rarely deep; each pass is linear) */
    bool *in = xcalloc((size_t)n, sizeof(*in));
    for (int i = 0; i < n; i++)
        in[i] = v[i].ppid == p->pid || (sole && adopted_by(p, &v[i], me));
    for (bool grew = true; grew;) {
        grew = false;
        for (int i = 0; i < n; i++) {
            if (in[i])
                continue;
            for (int j = 0; j < n; j++) {
                if (in[j] && v[i].ppid == v[j].pid) {
                    in[i] = grew = true;
                    break;
                }
            }
        }
    }
    for (int i = 0; i < n; i++)
        if (in[i] && !dead_state(v[i].state) && v[i].start)
            known_add(p, v[i].pid, v[i].start);
    free(in);
    free(v);
}

int mp_proc__collect_adopted(struct mp_proc *p, pid_t *pids, size_t max)
{
    struct psent *v = NULL;
    int n = snapshot(&v);
    pid_t me = getpid();
    bool sole = mp_proc__live_engines() == 1 && p->engine;
    int count = 0;

    if (n < 0)
        return n;
    for (int i = 0; i < n; i++) {
        const struct psent *e = &v[i];
        if (dead_state(e->state) || e->pid == p->pid || e->pgrp == p->pid)
            continue; /* zombies are reaped, the group is killed as a group */
        if (!known_has(p, e->pid, e->start) && !(sole && adopted_by(p, e, me)))
            continue;
        known_add(p, e->pid, e->start);
        if ((size_t)count < max)
            pids[count] = e->pid;
        count++;
    }
    free(v);
    return count;
}

int mp_proc__collect_env(const char *name, const char *value, pid_t *pids, size_t max)
{
    DIR *dir;
    struct dirent *de;
    pid_t me = getpid();
    int count = 0;
    char *want, *buf;
    size_t wlen;

    if (!name || !*name || !value || !*value)
        return 0;
    dir = opendir("/proc");
    if (!dir)
        return -errno;
    want = xasprintf("%s=%s", name, value);
    wlen = strlen(want);
    buf = xmalloc(MP_PROC_ENVIRON_MAX);
    while ((de = readdir(dir)) != NULL) {
        struct mp_proc__stat st;
        pid_t pid = mp_proc__pid_name(de->d_name);
        if (pid <= 0 || pid == me)
            continue;
        bool empty = false, has = environ_has(pid, want, wlen, buf, MP_PROC_ENVIRON_MAX, &empty);
        /* mid-exec reads as empty for a moment: look again a few times */
        for (int again = 0; !has && empty && again < 64; again++) {
            sched_yield();
            has = environ_has(pid, want, wlen, buf, MP_PROC_ENVIRON_MAX, &empty);
        }
        if (!has)
            continue;
        /* exiting but not yet a zombie still shows its environment */
        if (mp_proc__read_stat(pid, &st) == 0 && (st.state == 'Z' || st.state == 'X'))
            continue;
        if ((size_t)count < max)
            pids[count] = pid;
        count++;
    }
    closedir(dir);
    free(buf);
    free(want);
    return count;
}

int mp_proc__collect_marked(const char *marker, pid_t *pids, size_t max)
{
    return mp_proc__collect_env(MP_PROC_MARKER_VAR, marker, pids, max);
}

int mp_proc_find_env(const char *name, const char *value, int sig)
{
    pid_t pids[1024];
    int n = mp_proc__collect_env(name, value, pids, MP_ARRAY_SIZE(pids));
    if (n > 0 && sig != 0) {
        for (int i = 0; i < n && (size_t)i < MP_ARRAY_SIZE(pids); i++)
            kill(pids[i], sig);
    }
    return n;
}

int mp_proc_find_marked(const char *marker, int sig)
{
    return mp_proc_find_env(MP_PROC_MARKER_VAR, marker, sig);
}

void mp_proc_reap_orphans(void)
{
    DIR *dir = opendir("/proc");
    struct dirent *de;
    pid_t me = getpid();

    if (!dir)
        return;
    while ((de = readdir(dir)) != NULL) {
        struct mp_proc__stat st;
        pid_t pid = mp_proc__pid_name(de->d_name);
        if (pid <= 0 || pid == me)
            continue;
        if (mp_proc__read_stat(pid, &st) < 0 || st.ppid != me)
            continue;
        if (st.state == 'Z' || st.state == 'X')
            mp_proc__reap_if_child(pid);
    }
    closedir(dir);
}

void mp_proc_new_marker(char *out, size_t outsz)
{
    uint64_t r = 0;
    if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r)) {
        /* no entropy yet: time and pid still make it unique on this host */
        r = (uint64_t)mp_now_ns() ^ ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)out;
    }
    snprintf(out, outsz, "%d-%016llx", (int)getpid(), (unsigned long long)r);
}

unsigned long long mp_proc_starttime(pid_t pid)
{
    struct mp_proc__stat st;
    return mp_proc__read_stat(pid, &st) == 0 ? st.start : 0;
}

int mp_proc_end_leftover(pid_t pid, unsigned long long start, const char *marker)
{
    int killed = 0;
    if (pid > 1 && start && mp_proc_starttime(pid) == start) {
        /* the same process (not a reused pid): its whole group */
        if (kill(-pid, SIGKILL) == 0 || kill(pid, SIGKILL) == 0)
            killed++;
    }
    if (marker && *marker) {
        int n = mp_proc_find_marked(marker, SIGKILL);
        if (n > 0)
            killed += n;
    }
    return killed;
}
