/* gpus.c - GPU sets for local tasks, what nvidia-smi can tell about them,
 * and small process helpers of the scheduler. */
#include "compat.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sched/internal.h"
#include "xalloc.h"

int mp_sched_gpu_sets(const char *list, int per, struct mp_strv *sets, struct mp_diag *d)
{
    struct mp_strv ids = MP_STRV_INIT;
    const char *p = list;
    int rc = 0;
    while (1) {
        const char *e = strchr(p, ',');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        while (l && (*p == ' ')) {
            p++;
            l--;
        }
        while (l && p[l - 1] == ' ')
            l--;
        if (l == 0) {
            rc = mp_diag_set(d, MP_EUSAGE, 0, "--gpus: empty GPU id in '%s'", list);
            goto out;
        }
        for (size_t k = 0; k < l; k++) {
            char c = p[k];
            if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                  c == '-' || c == '_' || c == ':' || c == '.')) {
                rc = mp_diag_set(d, MP_EUSAGE, 0, "--gpus: '%.*s' is not a GPU id or UUID",
                                 (int)l, p);
                goto out;
            }
        }
        char *id = xstrndup(p, l);
        for (size_t k = 0; k < ids.n; k++) {
            if (!strcmp(ids.v[k], id)) {
                rc = mp_diag_set(d, MP_EUSAGE, 0, "--gpus: GPU '%s' is listed twice", id);
                free(id);
                goto out;
            }
        }
        mp_strv_push_owned(&ids, id);
        if (!e)
            break;
        p = e + 1;
    }
    if (per < 1 || ids.n < (size_t)per) {
        rc = mp_diag_set(d, MP_EUSAGE, 0,
                         "--gpus-per-engine %d needs at least %d GPUs, --gpus lists %zu", per, per,
                         ids.n);
        goto out;
    }
    for (size_t i = 0; i + (size_t)per <= ids.n; i += (size_t)per) {
        struct buf b = BUF_INIT;
        for (size_t k = i; k < i + (size_t)per; k++)
            buf_printf(&b, "%s%s", k > i ? "," : "", ids.v[k]);
        mp_strv_push_owned(sets, buf_detach(&b, NULL));
    }
out:
    mp_strv_release(&ids);
    return rc;
}

void mp_sched_shquote(struct buf *b, const char *s)
{
    buf_addc(b, '\'');
    for (; *s; s++) {
        if (*s == '\'')
            buf_adds(b, "'\\''");
        else
            buf_addc(b, *s);
    }
    buf_addc(b, '\'');
}

int mp_sched_capture(const char *shell_cmd, struct buf *out)
{
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) != 0)
        return -errno;
    pid_t pid = fork();
    if (pid < 0) {
        int e = -errno;
        close(pfd[0]);
        close(pfd[1]);
        return e;
    }
    if (pid == 0) {
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        signal(SIGPIPE, SIG_DFL);
        int nul = open("/dev/null", O_RDONLY);
        if (nul >= 0)
            dup2(nul, 0);
        dup2(pfd[1], 1);
        dup2(pfd[1], 2);
        execl("/bin/sh", "sh", "-c", shell_cmd, (char *)NULL);
        _exit(127);
    }
    close(pfd[1]);
    char tmp[4096];
    for (;;) {
        ssize_t n = read(pfd[0], tmp, sizeof(tmp));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        if (out->len < (1u << 20))
            buf_add(out, tmp, (size_t)n);
    }
    close(pfd[0]);
    int st;
    while (waitpid(pid, &st, 0) < 0) {
        if (errno != EINTR)
            return -errno;
    }
    if (!out->data)
        buf_adds(out, "");
    if (WIFEXITED(st))
        return WEXITSTATUS(st);
    return 128 + WTERMSIG(st);
}

char *mp_sched_gpus_detect(void)
{
    struct buf o = BUF_INIT;
    int rc = mp_sched_capture("nvidia-smi --query-gpu=index --format=csv,noheader 2>/dev/null", &o);
    char *res = NULL;
    if (rc == 0) {
        struct buf ids = BUF_INIT;
        char *save = NULL;
        for (char *l = strtok_r(o.data, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
            char *e = NULL;
            long v = strtol(l, &e, 10);
            if (e == l || v < 0)
                continue;
            buf_printf(&ids, "%s%ld", ids.len ? "," : "", v);
        }
        if (ids.len)
            res = buf_detach(&ids, NULL);
        buf_release(&ids);
    }
    buf_release(&o);
    return res;
}

int mp_sched_gpus_busy(const char *set)
{
    if (!set || !*set)
        return -1;
    struct buf cmd = BUF_INIT, o = BUF_INIT;
    buf_adds(&cmd, "nvidia-smi --query-compute-apps=pid --format=csv,noheader -i ");
    mp_sched_shquote(&cmd, set);
    buf_adds(&cmd, " 2>/dev/null");
    int rc = mp_sched_capture(cmd.data, &o);
    int busy = -1;
    if (rc == 0) {
        busy = 0;
        for (const char *p = o.data; *p; p++) {
            if (*p >= '0' && *p <= '9') {
                busy = 1;
                break;
            }
        }
    }
    buf_release(&cmd);
    buf_release(&o);
    return busy;
}

int mp_sched_find_env(const char *name, const char *value, int sig)
{
    DIR *d = opendir("/proc");
    if (!d)
        return -errno;
    char *want = xasprintf("%s=%s", name, value);
    size_t wl = strlen(want);
    int count = 0;
    pid_t self = getpid();
    struct dirent *de;
    char *env = xmalloc(1 << 16);
    while ((de = readdir(d))) {
        char *e = NULL;
        long pid = strtol(de->d_name, &e, 10);
        if (e == de->d_name || *e || pid <= 0 || pid == self)
            continue;
        char path[64];
        snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
        FILE *sf = fopen(path, "r");
        if (!sf)
            continue;
        char stbuf[512];
        size_t sn = fread(stbuf, 1, sizeof(stbuf) - 1, sf);
        fclose(sf);
        stbuf[sn] = '\0';
        const char *rp = strrchr(stbuf, ')');
        if (rp && rp[1] == ' ' && rp[2] == 'Z')
            continue; /* a zombie holds nothing */
        snprintf(path, sizeof(path), "/proc/%ld/environ", pid);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        ssize_t n = read(fd, env, (1 << 16) - 1);
        close(fd);
        if (n <= 0)
            continue;
        env[n] = '\0';
        bool hit = false;
        for (ssize_t i = 0; i < n && !hit;) {
            size_t l = strnlen(env + i, (size_t)(n - i));
            hit = l == wl && !memcmp(env + i, want, wl);
            i += (ssize_t)l + 1;
        }
        if (hit) {
            count++;
            if (sig)
                kill((pid_t)pid, sig);
        }
    }
    closedir(d);
    free(env);
    free(want);
    return count;
}
