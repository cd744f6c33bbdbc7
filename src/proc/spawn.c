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

int mp_proc_spawn(const struct mp_proc_spec *spec, struct mp_proc **out, struct mp_diag *d)
{
    int rc = 0;
    char *path = NULL, *marker_entry = NULL;
    char **envp = NULL;
    int devnull = -1, outp[2] = { -1, -1 }, errp[2] = { -1, -1 }, pidfd = -1;
    sigset_t all, old;
    bool masked = false;
    struct rlimit rl;
    int maxfd = 1024;
    pid_t pid = -1, me = getpid();
    struct exec_rec rec;
    ssize_t r;
    struct mp_proc *p;

    *out = NULL;
    if (!spec || !spec->argv || !spec->argv[0])
        return mp_diag_set(d, -EINVAL, 0, "empty command");
    rc = resolve_path(spec->argv[0], &path);
    if (rc < 0) {
        mp_diag_set(d, rc, 0, "cannot run '%s': %s", spec->argv[0], strerror(-rc));
        goto out;
    }
    rc = build_env(spec, &envp, &marker_entry, d);
    if (rc < 0)
        goto out;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < 65536)
        maxfd = (int)rl.rlim_cur;
    else
        maxfd = 65536;

    devnull = open("/dev/null", O_RDWR | O_CLOEXEC); /* stdin, and stderr with stderr_null */
    if (devnull < 0 || pipe2(outp, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0) {
        rc = -errno;
        mp_diag_set(d, rc, 0, "cannot set up pipes for '%s': %s", spec->argv[0], strerror(-rc));
        goto out;
    }
    if ((rc = move_high(&devnull)) < 0 || (rc = move_high(&outp[1])) < 0 ||
        (rc = move_high(&errp[1])) < 0 || (rc = move_high(&outp[0])) < 0 ||
        (rc = move_high(&errp[0])) < 0) {
        mp_diag_set(d, rc, 0, "cannot set up pipes for '%s': %s", spec->argv[0], strerror(-rc));
        goto out;
    }

    struct rlimit nofile;
    bool restore_nofile = mp_proc__child_nofile(&nofile);
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    masked = true;
    pid = fork();
    if (pid == 0)
        child(path, spec->argv, envp, spec->cwd, devnull, outp[1], spec->stderr_null ? devnull : outp[1],
              errp[1], maxfd, me, restore_nofile ? &nofile : NULL);
    if (pid < 0) {
        rc = -errno;
        mp_diag_set(d, rc, 0, "cannot fork for '%s': %s", spec->argv[0], strerror(-rc));
        goto out;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    masked = false;
    mp_proc__register(pid);
    /* before anyone could reap it: the pidfd cannot refer to a recycled pid */
    pidfd = mp_proc__pidfd_open(pid);
    if (pidfd < 0)
        pidfd = -1;
    close(outp[1]);
    outp[1] = -1;
    close(errp[1]);
    errp[1] = -1;

    do {
        r = read(errp[0], &rec, sizeof(rec));
    } while (r < 0 && errno == EINTR);
    if (r != 0) {
        int st;
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
            mp_diag_set(d, rc, 0, "cannot change directory to '%s': %s", spec->cwd, strerror(-rc));
        else if (rec.stage == STAGE_EXEC)
            mp_diag_set(d, rc, 0, "cannot run '%s': %s", spec->argv[0], strerror(-rc));
        else
            mp_diag_set(d, rc, 0, "cannot start '%s': %s", spec->argv[0], strerror(-rc));
        goto out;
    }

    if (fcntl(outp[0], F_SETFL, fcntl(outp[0], F_GETFL) | O_NONBLOCK) < 0) {
        /* cannot happen for a fresh pipe; a blocking fd would break the loop */
        rc = -errno;
        kill(-pid, SIGKILL);
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            ;
        mp_proc__unregister(pid);
        mp_diag_set(d, rc, 0, "cannot make the output pipe non-blocking: %s", strerror(-rc));
        goto out;
    }
    p = xcalloc(1, sizeof(*p));
    p->pid = pid;
    p->pidfd = pidfd;
    pidfd = -1;
    p->out_fd = outp[0];
    outp[0] = -1;
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
    *out = p;
    rc = 0;

out:
    if (masked)
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (pidfd >= 0)
        close(pidfd);
    if (devnull >= 0)
        close(devnull);
    for (int i = 0; i < 2; i++) {
        if (outp[i] >= 0)
            close(outp[i]);
        if (errp[i] >= 0)
            close(errp[i]);
    }
    free(envp);
    free(marker_entry);
    free(path);
    return rc;
}
