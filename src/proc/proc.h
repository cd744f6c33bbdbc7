/* proc.h - spawn, supervise and tear down one engine process tree.
 *
 * Model: every engine runs as the leader of its own session and process
 * group (pid == pgid == sid). Its stdout and stderr go into one pipe that we
 * read line by line. Teardown is TERM+CONT to the group, a grace period
 * during which output keeps being drained, KILL to the group, reap, then a
 * scan of /proc/<pid>/environ for the run marker (MOEPROBE_RUN_MARKER=...)
 * that finds processes which escaped the group (setsid, daemonising) and
 * kills them too, and a scan for escapees without the marker (a daemon that
 * cleared its environment): the engine's descendants recorded by pid and
 * start time when teardown began, and - while this is the only engine alive
 * in this process - every process reparented to us (we are a subreaper)
 * that we did not start and that started after the engine. See DESIGN.md "Reliability rules" and
 * reference/c-engineering.md section 3.
 *
 * Threading: loop-thread only. The module keeps a small process-wide
 * registry of the pids it manages (not thread-safe) so that reaping
 * reparented orphans never steals the status of a managed child. All calls
 * are non-blocking except mp_proc_spawn (waits for exec to succeed or fail),
 * mp_proc_teardown (bounded, see there: mp_proc_stop_begin is the same
 * teardown as steps on the caller's event loop) and mp_proc_free (bounded).
 *
 * Errors follow err.h: 0 or a negative code (-errno or MP_E*).
 *
 * Start-up duties of the driver (main), once, before spawning anything:
 *   mp_proc_ignore_sigpipe();      a dead engine's pipe must not kill us
 *   mp_proc_become_subreaper();    escaped grandchildren come back to us
 */
#ifndef MP_PROC_H
#define MP_PROC_H

#include "compat.h"

#include <signal.h>
#include <sys/types.h>

#include "err.h"

/* Name of the marker variable put into every engine's environment. */
#define MP_PROC_MARKER_VAR "MOEPROBE_RUN_MARKER"
/* Longest line delivered by mp_proc_read_lines; longer ones are cut. */
#define MP_PROC_LINE_MAX 65536
/* Room for a marker made by mp_proc_new_marker (including the NUL). */
#define MP_PROC_MARKER_SIZE 48

/* What to run. Every pointer is borrowed for the duration of mp_proc_spawn
 * only (the spawned object keeps its own copies of what it needs). */
struct mp_proc_spec {
    char *const *argv;        /* NULL-terminated; argv[0] looked up in our own PATH (like execvp) */
    char *const *env_add;     /* NULL-terminated "NAME=VALUE" list added to / overriding our environment, or NULL */
    const char *marker;       /* value for MOEPROBE_RUN_MARKER= in the child's environment, or NULL
                               * (then the variable is inherited unchanged and no escapee scan is done) */
    const char *cwd;          /* working directory of the child, or NULL */
    const char *container_runtime; /* "docker"/"podman" when argv is a `docker run ...` command, else NULL */
    const char *container_name;    /* the --name the caller put in argv; stop/rm at teardown */
    char *const *container_client; /* NULL-terminated client words used for stop/rm instead of
                                    * container_runtime alone (`sudo docker -H HOST`), or NULL */
    bool stderr_null;         /* the child's stderr goes to /dev/null instead of the pipe */
};

/* Opaque: one supervised engine (pid, its session/group, output pipe,
 * pidfd when the kernel has them). Owned by the caller; mp_proc_free. */
struct mp_proc;

/* Spawn spec->argv in a new session (setsid), stdin = /dev/null, stdout and
 * stderr into one pipe (stderr to /dev/null with stderr_null) (our end O_NONBLOCK|O_CLOEXEC), every other fd closed
 * in the child, signal mask emptied and every disposition reset to SIG_DFL,
 * PR_SET_PDEATHSIG=SIGKILL (so a SIGKILLed moeprobe takes the engine's
 * leader with it). Blocks only until the exec succeeded or failed.
 *
 * Returns 0 and *out (caller owns; mp_proc_free), or a negative code with
 * d->msg set (d may be NULL):
 *   -ENOENT/-EACCES/... "cannot run 'vllm': No such file or directory"
 *   -ENOENT/...         "cannot change directory to 'X': ..." (cwd)
 *   -EINVAL             empty argv or an env_add entry without '='
 * Exec errors are reported synchronously through a CLOEXEC status pipe; the
 * failed child is reaped before returning. */
int mp_proc_spawn(const struct mp_proc_spec *spec, struct mp_proc **out, struct mp_diag *d);

/* Pid of the main child (== its pgid and sid). */
pid_t mp_proc_pid(const struct mp_proc *p);

/* Our end of the output pipe: poll it for POLLIN. -1 after EOF. */
int mp_proc_output_fd(const struct mp_proc *p);

/* A pidfd of the main child that becomes readable (POLLIN) when it exits,
 * for the caller's poll set; -1 when the kernel has no pidfd (< 5.3) or
 * after the child was reaped. Owned by p. */
int mp_proc_pidfd(const struct mp_proc *p);

/* Called once per output line. line is NOT NUL-terminated, excludes the
 * '\n' and a CR directly before it (CRLF is stripped to nothing); it is only
 * valid during the call. truncated: the line was longer than
 * MP_PROC_LINE_MAX; line holds its first MP_PROC_LINE_MAX bytes and the rest
 * of that line is skipped. */
typedef void (*mp_proc_line_cb)(void *ud, const char *line, size_t len, bool truncated);

/* Read what is available without blocking (at most about 1 MiB per call so
 * a flooding engine cannot starve the caller's loop) and call cb once per
 * complete line (cb may be NULL: lines are discarded). Memory stays bounded
 * by MP_PROC_LINE_MAX whatever the engine writes.
 * Returns 0 (more may come: poll again), 1 at EOF (a partial last line has
 * been delivered; the fd is closed and mp_proc_output_fd() returns -1;
 * further calls return 1), or -errno on a read error. */
int mp_proc_read_lines(struct mp_proc *p, mp_proc_line_cb cb, void *ud);

/* Non-blocking: true once the main child has exited and was reaped; then
 * *status (may be NULL) is the waitpid status, or -1 when it was unknowable
 * (someone else reaped it). Never reaps any other process. */
bool mp_proc_exited(struct mp_proc *p, int *status);

/* How a teardown went. */
struct mp_teardown {
    bool was_running;        /* main child still alive when teardown began */
    bool exited_on_term;     /* TERM+CONT was sent and the group was gone within grace */
    bool killed;             /* KILL to the group was needed */
    int escapees_killed;     /* processes outside the group that had to be killed: marked ones,
                              * and unmarked descendants / orphans reparented to us */
    int leftovers;           /* such processes (or the leader) still alive at the end (should be 0) */
    int exit_status;         /* waitpid status of the main child; -1 unknown or not reaped */
    double seconds;          /* teardown duration */
};

/* Stop everything p started:
 *  1. TERM and CONT to the group (CONT: a stopped engine must see TERM); for
 *     containers also `<client> stop -t <ceil(grace)> <name>` in parallel (client:
 *     container_client, else container_runtime);
 *  2. keep draining output (cb gets the lines, may be NULL) and reaping for up
 *     to grace_s, until the main child is reaped and no live process is left in
 *     the group;
 *  3. otherwise KILL to the group and wait (bounded, 2 s) for it to empty;
 *  4. with a marker: KILL every process whose environment carries it (escaped
 *     with setsid, or reparented to us as subreaper), reap the ones that are
 *     our children, repeat until none is left (bounded, 2 s); then the same
 *     for unmarked escapees outside the group: descendants of p seen when
 *     teardown began (pid + start time, so a reused pid is never hit) and,
 *     while p is the only engine (proc spawned with a marker) alive in this
 *     process, unmanaged processes reparented to us that started after p
 *     (bounded, 2 s);
 *  5. containers: wait for the stop command (bounded), then `<client> rm -f
 *     <name>` (bounded, 10 s).
 * Never blocks longer than grace_s + about 4 s (+ about 20 s for containers),
 * even if the engine floods its pipe, ignores TERM, stops itself or has
 * escaped grandchildren. Calling it again is harmless.
 * Returns 0 when everything is gone, MP_ETIMEOUT when the main child or a
 * marked process survived (details in *out, which may be NULL). */
int mp_proc_teardown(struct mp_proc *p, double grace_s, mp_proc_line_cb cb, void *ud,
                     struct mp_teardown *out);

/* The same teardown as non-blocking steps on the caller's loop (base/loop.h):
 * each step waits on loop events (the output pipe, pidfds) and a deadline
 * timer, so the caller's loop keeps serving its other watches (signals, the
 * engine's last words, transfers) meanwhile. */
enum mp_stop_step {
    MP_STOP_TERM,      /* 1-2: TERM+CONT sent, the grace runs */
    MP_STOP_KILL,      /* 3: KILL sent to the group (grace over, or mp_proc_stop_now) */
    MP_STOP_ESCAPEES,  /* 4: escapees found and KILLed */
    MP_STOP_CONTAINER, /* 5: the container's stop and rm -f */
    MP_STOP_DONE,      /* finished: mp_proc_stop_end */
};
struct mp_proc_stop;
struct mp_loop;
/* Begin tearing p down on loop (borrowed; p and loop must outlive the
 * teardown). cb gets p's output lines, as in mp_proc_teardown; on_step (may
 * be NULL) is called with each step entered, DONE last (possibly from
 * within this call: a process already gone). While it runs, p's output fd
 * and pidfd are the teardown's (the caller stops watching them first).
 * Never NULL. */
struct mp_proc_stop *mp_proc_stop_begin(struct mp_proc *p, struct mp_loop *loop, double grace_s,
                                        mp_proc_line_cb cb, void *ud,
                                        void (*on_step)(void *ud, enum mp_stop_step step),
                                        void *step_ud);
/* Cut the grace short (a second Ctrl-C): KILL the group now. Only in
 * MP_STOP_TERM; harmless otherwise and for NULL. */
void mp_proc_stop_now(struct mp_proc_stop *s);
/* The step s is in (MP_STOP_DONE for NULL). */
enum mp_stop_step mp_proc_stop_step(const struct mp_proc_stop *s);
/* Free s, with *out (may be NULL) as mp_proc_teardown fills it and its
 * return value; before DONE it stops where it is and reports that. NULL: 0. */
int mp_proc_stop_end(struct mp_proc_stop *s, struct mp_teardown *out);

/* Release p (accepts NULL). Normally after mp_proc_teardown. If the main
 * child was never reaped, its group gets SIGKILL and it is waited for (at
 * most 2 s; if it is stuck in the kernel it is handed to
 * mp_proc_reap_orphans), so no zombie is left behind. */
void mp_proc_free(struct mp_proc *p);

/* Can mp_proc_spawn run name (found as it finds it: a name with a '/' as
 * is, else the first executable regular file in PATH), checked without
 * running it? 0, -ENOENT, -EACCES or another -errno of stat(2). */
int mp_proc_find_command(const char *name);

/* ---- helpers run to completion (capture.c) ----
 *
 * The only way the rest of moeprobe runs a helper command (nvidia-smi,
 * squeue, `podman inspect`), in the manner of git's capture_command(): argv
 * without a shell (argv[0] looked up in PATH), through mp_proc_spawn, so
 * the helper gets stdin = /dev/null, its own session, an empty signal mask
 * and default dispositions (it is never run with our SIGINT/SIGTERM
 * blocked) and PR_SET_PDEATHSIG; it is killed (its group) at the timeout
 * and always reaped before the call returns, never left behind. Output
 * beyond the cap is read and dropped, so the helper cannot block. Blocks
 * for at most timeout_s (+ about 2 s for the kill); signals for moeprobe
 * that arrive meanwhile stay pending for the caller's signalfd. */
#define MP_CAPTURE_MAX (1024 * 1024) /* default cap on the output kept */
struct buf;
struct mp_capture {
    char *const *argv;  /* NULL-terminated; borrowed for the call */
    double timeout_s;   /* <= 0: 30 s */
    size_t max;         /* bytes of output kept (whole lines, each + '\n'); 0: MP_CAPTURE_MAX */
    bool with_stderr;   /* stderr joins stdout in the output; false: /dev/null */
};
/* Run c->argv to completion, its output appended to out (lines, '\n' after
 * each). Returns its exit status (0..255), 128+N when a signal N ended it,
 * MP_ETIMEOUT when it ran past the timeout (killed; d->msg says so), or
 * another negative code with d->msg set (d may be NULL) when it could not be
 * started (-ENOENT: not installed). */
int mp_proc_run_capture(const struct mp_capture *c, struct buf *out, struct mp_diag *d);

/* The same with stderr in the output and the default cap; *status gets the
 * waitpid status (-1 when it was killed for the timeout or unknowable).
 * Returns 0, or a negative code with d->msg set when it could not be run. */
int mp_proc_capture(char *const *argv, double timeout_s, struct buf *out, int *status,
                    struct mp_diag *d);

/* The same on a caller's loop, without blocking: c->argv is started (c is
 * read during the call only) and watched on loop; its output joins out as
 * it comes (capped as above); done(ud) is called once, from a loop
 * callback, when it has exited and its output ended, or when its timeout
 * passed. *run gets the run. Returns 0, or a negative code with d->msg set
 * (d may be NULL) when it could not be started (*run NULL). */
struct mp_loop;
struct mp_capture_run;
int mp_proc_capture_start(struct mp_loop *loop, const struct mp_capture *c, struct buf *out,
                          void (*done)(void *ud), void *ud, struct mp_capture_run **run,
                          struct mp_diag *d);
/* Has done() been called? */
bool mp_proc_capture_over(const struct mp_capture_run *run);
/* End run, whenever: the loop stops watching it, a helper still running
 * (its timeout passed, or the caller gives up) is killed and reaped
 * (bounded, as mp_proc_free), the output it wrote so far is read. Returns
 * its waitpid status, or -1 when it was killed or the status is unknowable;
 * frees run (NULL: -1). */
int mp_proc_capture_finish(struct mp_capture_run *run);

/* The environment of an engine's process tree, for knob delivery: the
 * leader's process group, the processes carrying the run marker, and every
 * descendant of the leader (or of root, when root > 0: a container's first
 * process). */
struct mp_proc_envcheck {
    int processes;        /* live processes examined */
    int unreadable;       /* of them, whose environment could not be read */
    pid_t pid;            /* the first one whose environment holds want, or 0 */
    char comm[64];        /* its name (/proc/PID/comm) */
    char other[256];      /* when none holds it: "NAME=<value>" of the first process that
                           * has NAME with another value (the value as found), or "" */
    int listeners;        /* processes of the tree listening on the port (port > 0) */
    int listeners_with;   /* of them, whose environment holds want */
    int listeners_unreadable; /* of them, whose environment could not be read */
    pid_t listener;       /* the first listener, or 0 */
    char listener_comm[64];
};
/* Look for the exact entry want ("NAME=VALUE") in the initial environment
 * (/proc/PID/environ) of every process of the tree of leader (leader <= 0:
 * none) and marker (NULL: none) and of root's tree (root <= 0: none); with
 * port > 0 also find the processes of the tree that listen on that TCP port
 * (their socket inodes in /proc/PID/net/tcp{,6} against /proc/PID/fd): the
 * engine itself, as opposed to a wrapper around it.
 * Returns 0 (see *out), or -errno when /proc cannot be read. */
int mp_proc_tree_env(pid_t leader, const char *marker, pid_t root, int port, const char *want,
                     struct mp_proc_envcheck *out);

/* Ignore SIGPIPE for this process (a closed engine pipe or socket must not
 * kill moeprobe). main calls it once at start-up. Children get SIG_DFL back. */
void mp_proc_ignore_sigpipe(void);

/* Make this process a child subreaper (PR_SET_CHILD_SUBREAPER) so escaped
 * grandchildren are reparented to us; returns 0 or -errno. */
int mp_proc_become_subreaper(void);

/* Reap exited children that no live mp_proc owns (reparented orphans):
 * scans /proc for zombies whose PPid is ours and reaps each with
 * waitpid(pid, WNOHANG). Never touches a managed pid, never waitpid(-1).
 * Contract for other code that forks: wait for your own children by pid
 * before returning to the loop (a zombie of yours that is unregistered when
 * this runs would be reaped here). Non-blocking. */
void mp_proc_reap_orphans(void);

/* Count live (non-zombie) processes other than ourselves whose initial
 * environment contains exactly MOEPROBE_RUN_MARKER=<marker>; with sig != 0
 * also send them sig. Returns the count, or -errno if /proc is unreadable. */
int mp_proc_find_marked(const char *marker, int sig);
/* The same for any exact NAME=VALUE entry (the scheduler's task marker):
 * the one environment-marker scan of moeprobe, which reads a process caught
 * in the middle of execve() (an empty environment for a moment) again.
 * name or value NULL or "": 0. */
int mp_proc_find_env(const char *name, const char *value, int sig);

/* Start time of pid (/proc/PID/stat field 22, clock ticks since boot), or 0
 * when there is no such process. A pid with the start time recorded at
 * spawn is the same process, not a reused pid. */
unsigned long long mp_proc_starttime(pid_t pid);

/* End what a dead run left of one engine: SIGKILL the group of pid when pid
 * still has start time start (start 0 = unknown: the group is left alone),
 * and every process carrying marker (NULL or "" = none). Returns the number
 * of processes (or groups) signalled. */
int mp_proc_end_leftover(pid_t pid, unsigned long long start, const char *marker);

/* ---- the engine's processes, as seen (seen.c) ----
 * Called with each process of p's tree seen for the first time: a
 * descendant of its leader, or (while p is the only engine alive here) an
 * orphan reparented to us that started after p - a daemon that left the
 * group and cleared its environment included. */
typedef void (*mp_proc_seen_cb)(void *ud, pid_t pid, unsigned long long start);
/* Look at /proc now (one scan; the same bookkeeping teardown uses for
 * escapees without the marker) and call cb for every process of p's tree
 * first seen since the count `from` a previous call returned (0 the first
 * time; the leader itself is not reported: it is known from the spawn).
 * Returns the new count. Non-blocking; loop thread only. */
size_t mp_proc_watch(struct mp_proc *p, size_t from, mp_proc_seen_cb cb, void *ud);
/* This boot's id (/proc/sys/kernel/random/boot_id, read once), "" when
 * unreadable: a start time is a clock-tick count since boot, so a recorded
 * process is only ever matched within the boot it was seen in. */
const char *mp_proc_boot_id(void);
/* End a process a dead run recorded: SIGKILL pid when it is still that
 * process (boot_id equal to this boot's, non-empty; start time equal).
 * Returns true when it was signalled. */
bool mp_proc_end_seen(pid_t pid, unsigned long long start, const char *boot_id);

/* ---- descriptors (limits.c) ----
 * moeprobe's connections are its own resource: running out of them is
 * moeprobe's failure, never the engine's. */
/* Raise the soft RLIMIT_NOFILE to the hard limit (main, once, at start)
 * and remember the old soft limit: every process mp_proc_spawn starts gets
 * it back, so an engine runs with the limit it was given. Returns the soft
 * limit now in force (~0UL: unlimited; 0: unknown). */
unsigned long mp_proc_raise_nofile(void);
/* Descriptors moeprobe keeps beyond one per request in flight: the store
 * and its -wal/-shm, the evidence files, the engine's pipe, the loop, the
 * signalfd, /health and /metrics connections, helpers (about 20 measured
 * with 100..400 requests in flight; docs/store.md). */
#define MP_PROC_FD_RESERVE 64
struct mp_proc_fd_room {
    unsigned long need;   /* streams + descriptors open now + MP_PROC_FD_RESERVE */
    unsigned long limit;  /* soft RLIMIT_NOFILE (~0UL: unlimited) */
    unsigned long hard;   /* hard RLIMIT_NOFILE */
};
/* Can this process hold `streams` requests in flight at once? Fills *room. */
bool mp_proc_fd_fits(long streams, struct mp_proc_fd_room *room);

/* Write a fresh unique marker "<pid>-<16 random hex digits>" into out
 * (outsz >= MP_PROC_MARKER_SIZE recommended; truncated otherwise). */
void mp_proc_new_marker(char *out, size_t outsz);

/* Describe a waitpid status in words: "exited with status 0",
 * "killed by signal 9 (Killed)", "killed by signal 11 (Segmentation fault),
 * core dumped", "exit status unknown" (status -1). */
void mp_proc_describe_status(int status, char *out, size_t n);

/* Block SIGINT/SIGTERM/SIGHUP/SIGQUIT/SIGCHLD, ignore SIGPIPE, and return a
 * signalfd for them (the run loop watches it), or -errno (the mask is then
 * restored). *old receives the previous mask to restore. */
int mp_signals_setup(sigset_t *old);

/* What a run of moeprobe sets up once and undoes at its end, in one place
 * (the command session of cli/, the scheduler of sched/): */
struct mp_signals {
    int fd;        /* the signalfd (mp_signals_setup), -1 when not set up */
    sigset_t old;  /* the mask to restore */
};
#define MP_SIGNALS_INIT {.fd = -1}
/* mp_signals_setup, then mp_proc_become_subreaper. 0, or -errno (nothing
 * changed, s->fd = -1). */
int mp_signals_begin(struct mp_signals *s);
/* Reap orphaned children (mp_proc_reap_orphans), restore the mask, close
 * the signalfd. Harmless when not begun (MP_SIGNALS_INIT) and twice. */
void mp_signals_end(struct mp_signals *s);

/* The absolute path of the running executable (/proc/self/exe) into out
 * (NUL-terminated). 0, -ENAMETOOLONG, or -errno. */
int mp_proc_self_exe(char *out, size_t outsz);

/* The file a process's initial environment is read from ("/proc/PID/environ"),
 * for evidence messages that name it; returns out. */
const char *mp_proc_environ_file(pid_t pid, char *out, size_t outsz);

#endif
