/* internal.h - shared between the src/proc/ files only; not a public API.
 *
 * Symbols here use the mp_proc__ prefix (double underscore: internal). */
#ifndef MP_PROC_INTERNAL_H
#define MP_PROC_INTERNAL_H

#include "compat.h"
#include "lines.h"
#include "proc/proc.h"

#include <sys/syscall.h>
#include <sys/types.h>

/* Syscalls without glibc wrappers on Debian 12. These numbers are the same
 * on every architecture that uses the unified syscall table (all but
 * alpha), so old kernel headers get them here instead of #ifdefs in .c
 * files; an old kernel answers ENOSYS and we fall back. */
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_close_range
#define SYS_close_range 436
#endif

struct mp_proc {
    pid_t pid;             /* main child == pgid == sid */
    int pidfd;             /* -1: none (old kernel, or closed after reaping) */
    int out_fd;            /* our read end of the output pipe; -1 after EOF */
    bool reaped;           /* main child waited for */
    int status;            /* waitpid status once reaped; -1 unknown */
    char *name;            /* argv[0] as given, for messages (owned) */
    char *marker;          /* owned copy or NULL */
    char *runtime;         /* container runtime (owned) or NULL */
    char *cname;           /* container name (owned) or NULL */
    char **client;         /* client words for stop/rm (owned, NULL-terminated) or NULL */
    struct mp_lines lines; /* output line assembly, bound MP_PROC_LINE_MAX (owned) */
    bool torn_down;        /* mp_proc_teardown finished once */
    unsigned long long start; /* start time of the main child (clock ticks), 0 unknown */
    bool engine;           /* spawned with a marker: counted in mp_proc__live_engines */
    struct mp_proc__known *known; /* descendants seen (owned), see mp_proc__track */
    size_t nknown, capknown;
};

/* A process identified across time: a pid with its start time is never a
 * recycled pid. */
struct mp_proc__known {
    pid_t pid;
    unsigned long long start;
};

/* Engines (procs spawned with a marker) spawned and not yet torn down or
 * freed. While there is exactly one, a process reparented to us that we did
 * not start belongs to it (we are a subreaper: orphans of our children's
 * trees come to us). */
struct rlimit;
/* The RLIMIT_NOFILE moeprobe was started with, for its children (limits.c):
 * false when mp_proc_raise_nofile never ran. */
bool mp_proc__child_nofile(struct rlimit *out);

int mp_proc__live_engines(void);
void mp_proc__live_engines_add(void);          /* at spawn, with p->engine set */
void mp_proc__engine_gone(struct mp_proc *p); /* clears p->engine; idempotent */

/* Record p's descendants now alive (pid + start time) in p->known: the
 * processes whose parent chain leads to p's main child, and - while p is the
 * only live engine - the processes reparented to us that started after p
 * and are not managed, with their own descendants. One pass over /proc. */
void mp_proc__track(struct mp_proc *p);

/* Live processes of p's that are outside its group and carry no marker:
 * the known ones still alive with the same start time, plus (while p is
 * the only live engine) unmanaged children of ours that started after p.
 * Each one found is added to p->known. Written into pids (at most max);
 * returns the total count or -errno. */
int mp_proc__collect_adopted(struct mp_proc *p, pid_t *pids, size_t max);

/* Registry of managed main-child pids (see proc.h threading note). */
void mp_proc__register(pid_t pid);
void mp_proc__unregister(pid_t pid);
bool mp_proc__is_managed(pid_t pid);

/* pidfd helpers: -1 / -errno when unsupported (ENOSYS) or on error. */
int mp_proc__pidfd_open(pid_t pid);
int mp_proc__pidfd_kill(int pidfd, pid_t pid, int sig); /* falls back to kill(pid) when pidfd < 0 */

/* The pid a /proc entry name stands for ("1234"), or 0 for any other name. */
pid_t mp_proc__pid_name(const char *name);

/* Bytes of /proc/<pid>/environ read at most (one buffer of this size). */
#define MP_PROC_ENVIRON_MAX (1024 * 1024)
/* Read /proc/<pid>/environ into buf (at most bufsz bytes); its length, or
 * -errno (gone, or not ours to read). The one reader of the engine's and
 * every scanned process's environment (envtree.c, scan.c). */
ssize_t mp_proc__read_environ(pid_t pid, char *buf, size_t bufsz);

/* One parsed /proc/<pid>/stat. */
struct mp_proc__stat {
    char state;            /* R, S, D, Z, T, ... */
    pid_t ppid;
    pid_t pgrp;
    unsigned long long start; /* field 22: start time in clock ticks since boot */
};
/* Read /proc/<pid>/stat; 0 or -errno. */
int mp_proc__read_stat(pid_t pid, struct mp_proc__stat *st);

/* Live (non-zombie) members of process group pgid, excluding ourselves,
 * written into pids (at most max); zombie members that are our own
 * unmanaged children are reaped on the way. Returns the total count of live
 * members (may exceed max) or -errno. */
int mp_proc__group_members(pid_t pgid, pid_t *pids, size_t max);

/* Live processes (not ourselves) carrying MOEPROBE_RUN_MARKER=marker, into
 * pids (at most max). Returns the total count or -errno. */
int mp_proc__collect_marked(const char *marker, pid_t *pids, size_t max);
/* The same for any exact NAME=VALUE entry (name or value NULL/"": none). */
int mp_proc__collect_env(const char *name, const char *value, pid_t *pids, size_t max);

/* Reap pid if it is our exited, unmanaged child (WNOHANG); no-op otherwise. */
void mp_proc__reap_if_child(pid_t pid);

#endif
