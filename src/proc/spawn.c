/* spawn.c - start an engine in its own session with an exec-status pipe.
 *
 * Between fork and exec the child makes only async-signal-safe calls: all
 * memory (path, envp) is prepared before fork. Signals are blocked around
 * fork so no handler of ours runs in the child before the dispositions are
 * reset. The status pipe is CLOEXEC: EOF in the parent means exec worked;
 * a record {stage, errno} means it did not. */
#include "compat.h"
#include "proc/internal.h"
#include "proc/proc.h"
#include "xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

enum { STAGE_SETUP = 1, STAGE_CHDIR = 2, STAGE_EXEC = 3 };

struct exec_rec {
    int stage;
    int err;
};

/* Find name in PATH the way execvp does: names with a '/' are used as is;
 * otherwise the first executable regular file wins; -EACCES when only
 * non-executable candidates were found, else -ENOENT. *out is owned. */
static int resolve_path(const char *name, char **out)
{
    const char *path;
    int rc = -ENOENT;

    *out = NULL;
    if (name[0] == '\0')
        return -ENOENT;
    if (strchr(name, '/')) {
        *out = xstrdup(name);
        return 0;
    }
    path = getenv("PATH");
    if (!path || !*path)
        path = "/usr/local/bin:/usr/bin:/bin";
    while (path) {
        const char *colon = strchr(path, ':');
        size_t dlen = colon ? (size_t)(colon - path) : strlen(path);
        char *cand = dlen ? xasprintf("%.*s/%s", (int)dlen, path, name) : xasprintf("./%s", name);
        struct stat sb;
        if (stat(cand, &sb) == 0 && S_ISREG(sb.st_mode)) {
            if (access(cand, X_OK) == 0) {
                *out = cand;
                return 0;
            }
            rc = -EACCES;
        }
        free(cand);
        path = colon ? colon + 1 : NULL;
    }
    return rc;
}

int mp_proc_find_command(const char *name)
{
    char *path = NULL;
    struct stat sb;
    int rc = resolve_path(name, &path);
    if (rc == 0 && strchr(name, '/')) {
        if (stat(path, &sb) < 0)
            rc = -errno;
        else if (!S_ISREG(sb.st_mode) || access(path, X_OK) < 0)
            rc = -EACCES;
    }
    free(path);
    return rc;
}

static bool same_name(const char *a, const char *b)
{
    size_t la = strcspn(a, "=");
    size_t lb = strcspn(b, "=");
    return la == lb && memcmp(a, b, la) == 0;
}

/* envp = environ minus names overridden by env_add (and the marker), plus
 * env_add, plus the marker. The array is owned by the caller; its strings are
 * borrowed except *marker_entry, which the caller frees too. */
static int build_env(const struct mp_proc_spec *spec, char ***envp_out, char **marker_entry,
                     struct mp_diag *d)
{
    size_t n_env = 0, n_add = 0, k = 0;
    char **envp;

    *envp_out = NULL;
    *marker_entry = NULL;
    for (char **e = environ; e && *e; e++)
        n_env++;
    if (spec->env_add) {
        for (char *const *a = spec->env_add; *a; a++) {
            if (!strchr(*a, '=') || (*a)[0] == '=')
                return mp_diag_set(d, -EINVAL, 0, "bad environment entry '%s': expected NAME=VALUE", *a);
            n_add++;
        }
    }
    if (spec->marker)
        *marker_entry = xasprintf("%s=%s", MP_PROC_MARKER_VAR, spec->marker);
    envp = xcalloc(n_env + n_add + 2, sizeof(*envp));
    for (char **e = environ; e && *e; e++) {
        bool drop = *marker_entry && same_name(*e, *marker_entry);
        for (size_t i = 0; !drop && i < n_add; i++)
            drop = same_name(*e, spec->env_add[i]);
        if (!drop)
            envp[k++] = *e;
    }
    for (size_t i = 0; i < n_add; i++) {
        /* a later env_add entry of the same name wins */
        bool later = false;
        for (size_t j = i + 1; j < n_add && !later; j++)
            later = same_name(spec->env_add[i], spec->env_add[j]);
        if (!later && !(*marker_entry && same_name(spec->env_add[i], *marker_entry)))
            envp[k++] = spec->env_add[i];
    }
    if (*marker_entry)
        envp[k++] = *marker_entry;
    envp[k] = NULL;
    *envp_out = envp;
    return 0;
}

/* Make sure fd is not 0, 1 or 2 (possible when our own stdio is closed),
 * so the child's dup2 calls cannot clobber each other. */
static int move_high(int *fd)
{
    if (*fd > 2)
        return 0;
    int nfd = fcntl(*fd, F_DUPFD_CLOEXEC, 3);
    if (nfd < 0)
        return -errno;
    close(*fd);
    *fd = nfd;
    return 0;
}

static void child_fail(int errw, int stage) MP_NORETURN;
static void child_fail(int errw, int stage)
{
    struct exec_rec r = { stage, errno };
    ssize_t w;
    do {
        w = write(errw, &r, sizeof(r));
    } while (w < 0 && errno == EINTR);
    _exit(127);
}

/* Runs in the child: async-signal-safe calls only. */
static void child(const char *path, char *const *argv, char *const *envp, const char *cwd,
                  int devnull, int outw, int errto, int errw, int maxfd, pid_t parent,
                  const struct rlimit *nofile) MP_NORETURN;
static void child(const char *path, char *const *argv, char *const *envp, const char *cwd,
                  int devnull, int outw, int errto, int errw, int maxfd, pid_t parent,
                  const struct rlimit *nofile)
{
    struct sigaction sa;
    sigset_t none;

    /* dispositions first (signals are still blocked), then the mask */
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = SIG_DFL;
    sigemptyset(&sa.sa_mask);
    for (int s = 1; s < NSIG; s++)
        sigaction(s, &sa, NULL); /* EINVAL for KILL/STOP/reserved: fine */
    if (setsid() < 0)
        child_fail(errw, STAGE_SETUP);
    /* a SIGKILLed moeprobe takes the leader along; if our parent is already
     * gone the signal will never come, so stop here */
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0L, 0L, 0L);
    if (getppid() != parent)
        _exit(127);
    if (dup2(devnull, 0) < 0 || dup2(outw, 1) < 0 || dup2(errto, 2) < 0)
        child_fail(errw, STAGE_SETUP);
    /* Close everything above stderr except the status pipe, which is CLOEXEC
     * and goes away at exec. close_range(CLOEXEC) does it in one call (5.11);
     * the loop is the fallback. */
    if (syscall(SYS_close_range, 3U, ~0U, 4U /* CLOSE_RANGE_CLOEXEC */) != 0) {
        for (int fd = 3; fd < maxfd; fd++)
            if (fd != errw)
                close(fd);
    }
    if (cwd && chdir(cwd) < 0)
        child_fail(errw, STAGE_CHDIR);
    if (nofile)
        setrlimit(RLIMIT_NOFILE, nofile); /* the limit we were given, not the one we raised */
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    execve(path, argv, envp);
    child_fail(errw, STAGE_EXEC);
}

/* The fds of one spawn: /dev/null, the output pipe, the status pipe, the
 * pidfd (-1 when not open). */
struct spawn_fds {
    int devnull, outp[2], errp[2], pidfd;
};

static void spawn_fds_close(struct spawn_fds *f)
{
    if (f->pidfd >= 0)
        close(f->pidfd);
    if (f->devnull >= 0)
        close(f->devnull);
    for (int i = 0; i < 2; i++) {
        if (f->outp[i] >= 0)
            close(f->outp[i]);
        if (f->errp[i] >= 0)
            close(f->errp[i]);
    }
}

/* The highest fd the child closes (the loop fallback of close_range). */
static int child_maxfd(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < 65536)
        return (int)rl.rlim_cur;
    return 65536;
}

/* /dev/null (stdin, and stderr with stderr_null), the output and status
 * pipes, all above stderr. 0 or <0 with d set. */
static int open_fds(const struct mp_proc_spec *spec, struct spawn_fds *f, struct mp_diag *d)
{
    int rc;
    f->devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (f->devnull < 0 || pipe2(f->outp, O_CLOEXEC) < 0 || pipe2(f->errp, O_CLOEXEC) < 0) {
        rc = -errno;
        return mp_diag_set(d, rc, 0, "cannot set up pipes for '%s': %s", spec->argv[0],
                           strerror(-rc));
    }
    if ((rc = move_high(&f->devnull)) < 0 || (rc = move_high(&f->outp[1])) < 0 ||
        (rc = move_high(&f->errp[1])) < 0 || (rc = move_high(&f->outp[0])) < 0 ||
        (rc = move_high(&f->errp[0])) < 0)
        return mp_diag_set(d, rc, 0, "cannot set up pipes for '%s': %s", spec->argv[0],
                           strerror(-rc));
    return 0;
}

/* fork with every signal blocked (no handler of ours runs in the child);
 * the child execs. Returns the pid, or <0 with d set. */
static pid_t fork_child(const struct mp_proc_spec *spec, const char *path, char **envp,
                        const struct spawn_fds *f, struct mp_diag *d)
{
    int maxfd = child_maxfd();
    pid_t me = getpid();
    struct rlimit nofile;
    bool restore_nofile = mp_proc__child_nofile(&nofile);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pid_t pid = fork();
    if (pid == 0)
        child(path, spec->argv, envp, spec->cwd, f->devnull, f->outp[1],
              spec->stderr_null ? f->devnull : f->outp[1], f->errp[1], maxfd, me,
              restore_nofile ? &nofile : NULL);
    int e = errno;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (pid < 0)
        return mp_diag_set(d, -e, 0, "cannot fork for '%s': %s", spec->argv[0], strerror(e));
    return pid;
}

/* EOF on the status pipe: exec worked (0). A record: it did not; the child
 * is reaped and forgotten, <0 with d naming the stage. */
static int wait_exec(const struct mp_proc_spec *spec, pid_t pid, int errr, struct mp_diag *d)
{
    struct exec_rec rec;
    ssize_t r;
    do {
        r = read(errr, &rec, sizeof(rec));
    } while (r < 0 && errno == EINTR);
    if (r == 0)
        return 0;
    int rc, st;
    if (r == (ssize_t)sizeof(rec)) {
        rc = rec.err > 0 ? -rec.err : -EIO;
    } else {
        rc = -EIO;
        rec.stage = STAGE_SETUP;
    }
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    mp_proc__unregister(pid);
    if (rec.stage == STAGE_CHDIR)
        return mp_diag_set(d, rc, 0, "cannot change directory to '%s': %s", spec->cwd,
                           strerror(-rc));
    if (rec.stage == STAGE_EXEC)
        return mp_diag_set(d, rc, 0, "cannot run '%s': %s", spec->argv[0], strerror(-rc));
    return mp_diag_set(d, rc, 0, "cannot start '%s': %s", spec->argv[0], strerror(-rc));
}

/* Our end of the output pipe non-blocking (a blocking fd would break the
 * loop); cannot fail for a fresh pipe, but if it does the child is killed,
 * reaped and forgotten. 0 or <0 with d set. */
static int output_nonblocking(pid_t pid, int fd, struct mp_diag *d)
{
    if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) >= 0)
        return 0;
    int rc = -errno;
    kill(-pid, SIGKILL);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
    mp_proc__unregister(pid);
    return mp_diag_set(d, rc, 0, "cannot make the output pipe non-blocking: %s", strerror(-rc));
}

/* The supervised process: the pid, the fds taken from f, copies of what
 * spec names. */
static struct mp_proc *proc_new(const struct mp_proc_spec *spec, pid_t pid, struct spawn_fds *f)
{
    struct mp_proc *p = xcalloc(1, sizeof(*p));
    p->pid = pid;
    p->pidfd = f->pidfd;
    f->pidfd = -1;
    p->out_fd = f->outp[0];
    f->outp[0] = -1;
    p->status = -1;
    p->name = xstrdup(spec->argv[0]);
    p->marker = spec->marker ? xstrdup(spec->marker) : NULL;
    p->runtime = spec->container_runtime ? xstrdup(spec->container_runtime) : NULL;
    p->cname = spec->container_name ? xstrdup(spec->container_name) : NULL;
    if (spec->container_client && spec->container_client[0]) {
        size_t nc = 0;
        while (spec->container_client[nc])
            nc++;
        p->client = xcalloc(nc + 1, sizeof(*p->client));
        for (size_t i = 0; i < nc; i++)
            p->client[i] = xstrdup(spec->container_client[i]);
    }
    mp_lines_init(&p->lines, MP_PROC_LINE_MAX);
    p->start = mp_proc_starttime(pid);
    if (spec->marker) {
        p->engine = true;
        mp_proc__live_engines_add();
    }
    return p;
}

int mp_proc_spawn(const struct mp_proc_spec *spec, struct mp_proc **out, struct mp_diag *d)
{
    char *path = NULL, *marker_entry = NULL;
    char **envp = NULL;
    struct spawn_fds f = {-1, {-1, -1}, {-1, -1}, -1};

    *out = NULL;
    if (!spec || !spec->argv || !spec->argv[0])
        return mp_diag_set(d, -EINVAL, 0, "empty command");
    int rc = resolve_path(spec->argv[0], &path);
    if (rc < 0) {
        mp_diag_set(d, rc, 0, "cannot run '%s': %s", spec->argv[0], strerror(-rc));
        goto out;
    }
    if ((rc = build_env(spec, &envp, &marker_entry, d)) < 0 || (rc = open_fds(spec, &f, d)) < 0)
        goto out;
    pid_t pid = fork_child(spec, path, envp, &f, d);
    if (pid < 0) {
        rc = pid;
        goto out;
    }
    mp_proc__register(pid);
    /* before anyone could reap it: the pidfd cannot refer to a recycled pid */
    f.pidfd = mp_proc__pidfd_open(pid);
    if (f.pidfd < 0)
        f.pidfd = -1;
    close(f.outp[1]);
    f.outp[1] = -1;
    close(f.errp[1]);
    f.errp[1] = -1;
    if ((rc = wait_exec(spec, pid, f.errp[0], d)) < 0 ||
        (rc = output_nonblocking(pid, f.outp[0], d)) < 0)
        goto out;
    *out = proc_new(spec, pid, &f);
out:
    spawn_fds_close(&f);
    free(envp);
    free(marker_entry);
    free(path);
    return rc;
}
