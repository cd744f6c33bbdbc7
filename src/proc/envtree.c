/* envtree.c - helpers for knob delivery: what an engine's process tree was
 * started with (/proc/PID/environ; proc/proc.h). */
#include "compat.h"
#include "proc/internal.h"
#include "proc/proc.h"
#include "xalloc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>



struct pinfo {
    pid_t pid, ppid, pgrp;
    bool in;
};

static int by_pid(const void *a, const void *b)
{
    pid_t x = ((const struct pinfo *)a)->pid, y = ((const struct pinfo *)b)->pid;
    return (x > y) - (x < y);
}

static void read_comm(pid_t pid, char *out, size_t n)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
    out[0] = '\0';
    FILE *f = fopen(path, "re");
    if (!f)
        return;
    if (fgets(out, (int)n, f))
        out[strcspn(out, "\n")] = '\0';
    fclose(f);
}

/* Inodes of the TCP sockets listening on port in pid's network namespace. */
static size_t listen_inodes(pid_t pid, int port, unsigned long *ino, size_t max)
{
    size_t n = 0;
    static const char *const files[] = {"tcp", "tcp6"};
    for (size_t f = 0; f < 2; f++) {
        char path[64], line[512];
        snprintf(path, sizeof(path), "/proc/%d/net/%s", (int)pid, files[f]);
        FILE *fp = fopen(path, "re");
        if (!fp)
            continue;
        while (fgets(line, sizeof(line), fp)) {
            char local[128];
            unsigned st = 0;
            unsigned long inode = 0;
            /* sl local rem st tx:rx tr:when retrnsmt uid timeout inode */
            if (sscanf(line, " %*s %127s %*s %x %*s %*s %*s %*s %*s %lu", local, &st, &inode) != 3)
                continue;
            const char *colon = strrchr(local, ':');
            if (!colon || st != 0x0A || strtol(colon + 1, NULL, 16) != port || !inode)
                continue;
            if (n < max)
                ino[n++] = inode;
        }
        fclose(fp);
    }
    return n;
}

/* Does pid hold one of the socket inodes? */
static bool holds_socket(pid_t pid, const unsigned long *ino, size_t n)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
    DIR *d = opendir(path);
    if (!d)
        return false;
    struct dirent *de;
    bool found = false;
    while (!found && (de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        char lp[320], target[64];
        snprintf(lp, sizeof(lp), "%s/%s", path, de->d_name);
        ssize_t len = readlink(lp, target, sizeof(target) - 1);
        if (len <= 0)
            continue;
        target[len] = '\0';
        unsigned long v;
        if (sscanf(target, "socket:[%lu]", &v) != 1)
            continue;
        for (size_t i = 0; i < n && !found; i++)
            found = ino[i] == v;
    }
    closedir(d);
    return found;
}

int mp_proc_tree_env(pid_t leader, const char *marker, pid_t root, int port, const char *want,
                     struct mp_proc_envcheck *out)
{
    memset(out, 0, sizeof(*out));
    DIR *dir = opendir("/proc");
    if (!dir)
        return -errno;
    size_t cap = 1024, np = 0;
    struct pinfo *ps = xcalloc(cap, sizeof(*ps));
    pid_t me = getpid();
    struct dirent *de;
    while ((de = readdir(dir)) != NULL) {
        if (np == cap) {
            cap *= 2;
            ps = xreallocarray(ps, cap, sizeof(*ps));
        }
        pid_t pid = mp_proc__pid_name(de->d_name);
        struct mp_proc__stat st;
        if (pid <= 0 || pid == me || mp_proc__read_stat(pid, &st) < 0)
            continue;
        if (st.state == 'Z' || st.state == 'X')
            continue;
        ps[np].pid = pid;
        ps[np].ppid = st.ppid;
        ps[np].pgrp = st.pgrp;
        ps[np].in = (leader > 0 && (pid == leader || st.pgrp == leader)) || (root > 0 && pid == root);
        np++;
    }
    closedir(dir);
    if (marker && *marker) {
        pid_t marked[256];
        int n = mp_proc__collect_marked(marker, marked, MP_ARRAY_SIZE(marked));
        for (int k = 0; k < n && (size_t)k < MP_ARRAY_SIZE(marked); k++) {
            for (size_t i = 0; i < np; i++) {
                if (ps[i].pid == marked[k])
                    ps[i].in = true;
            }
        }
    }
    /* descendants of anything in the tree (parents found by binary search;
     * one pass per generation) */
    qsort(ps, np, sizeof(*ps), by_pid);
    for (bool grew = true; grew;) {
        grew = false;
        for (size_t i = 0; i < np; i++) {
            if (ps[i].in)
                continue;
            struct pinfo key = {.pid = ps[i].ppid};
            const struct pinfo *par = bsearch(&key, ps, np, sizeof(*ps), by_pid);
            if (par && par->in)
                ps[i].in = grew = true;
        }
    }
    const char *eq = strchr(want, '=');
    size_t wlen = strlen(want), nlen = eq ? (size_t)(eq - want) + 1 : wlen;
    char *buf = xmalloc(MP_PROC_ENVIRON_MAX);
    for (size_t i = 0; i < np; i++) {
        if (!ps[i].in)
            continue;
        ssize_t len = mp_proc__read_environ(ps[i].pid, buf, MP_PROC_ENVIRON_MAX);
        /* mid-exec reads as empty for a moment: look again a few times */
        for (int again = 0; len == 0 && again < 64; again++) {
            sched_yield();
            len = mp_proc__read_environ(ps[i].pid, buf, MP_PROC_ENVIRON_MAX);
        }
        if (len == -ENOENT || len == -ESRCH)
            continue; /* gone meanwhile */
        out->processes++;
        bool listens = false;
        if (port > 0) {
            unsigned long ino[16];
            size_t ni = listen_inodes(ps[i].pid, port, ino, MP_ARRAY_SIZE(ino));
            listens = ni > 0 && holds_socket(ps[i].pid, ino, ni);
            if (listens) {
                out->listeners++;
                if (!out->listener) {
                    out->listener = ps[i].pid;
                    read_comm(ps[i].pid, out->listener_comm, sizeof(out->listener_comm));
                }
            }
        }
        if (len <= 0) {
            out->unreadable++;
            out->listeners_unreadable += listens;
            continue;
        }
        bool has = false;
        for (size_t o = 0; o < (size_t)len;) {
            const char *e = buf + o;
            const char *z = memchr(e, '\0', (size_t)len - o);
            size_t elen = z ? (size_t)(z - e) : (size_t)len - o;
            if (elen == wlen && !memcmp(e, want, wlen)) {
                has = true;
                if (!out->pid) {
                    out->pid = ps[i].pid;
                    read_comm(ps[i].pid, out->comm, sizeof(out->comm));
                }
            } else if (!out->other[0] && elen >= nlen && !memcmp(e, want, nlen)) {
                snprintf(out->other, sizeof(out->other), "%.*s", (int)MP_MIN(elen, 255), e);
            }
            o += elen + 1;
        }
        out->listeners_with += listens && has;
    }
    free(buf);
    free(ps);
    return 0;
}
