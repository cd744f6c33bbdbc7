/* fingerprint.c - what the results are only valid for: GPU, compute
 * capability, driver, CUDA, host (the engine and model come from the log). */
#include "report/report.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "xalloc.h"

/* Run a command and return its first output line (trimmed), or NULL. */
static char *first_line_of(const char *const argv[])
{
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) != 0)
        return NULL;
    pid_t pid = fork();
    if (pid < 0) {
        close(pfd[0]);
        close(pfd[1]);
        return NULL;
    }
    if (pid == 0) {
        dup2(pfd[1], 1);
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0)
            dup2(devnull, 2);
        execvp(argv[0], (char *const *)argv);
        _exit(127);
    }
    close(pfd[1]);
    char buf[1024];
    size_t len = 0;
    ssize_t n;
    while (len < sizeof(buf) - 1 && (n = read(pfd[0], buf + len, sizeof(buf) - 1 - len)) != 0) {
        if (n < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        len += (size_t)n;
    }
    close(pfd[0]);
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    buf[len] = '\0';
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || len == 0)
        return NULL;
    char *nl = strchr(buf, '\n');
    if (nl)
        *nl = '\0';
    return xstrdup(buf);
}

void mp_fingerprint_detect(struct mp_fingerprint *fp)
{
    struct utsname u;
    if (uname(&u) == 0)
        fp->host_arch = xasprintf("%s (Linux %s)", u.machine, u.release);
    const char *q[] = {"nvidia-smi", "--query-gpu=name,compute_cap,driver_version",
                       "--format=csv,noheader", NULL};
    char *line = first_line_of(q);
    if (line) {
        char *save = NULL;
        char *name = strtok_r(line, ",", &save);
        char *cc = strtok_r(NULL, ",", &save);
        char *drv = strtok_r(NULL, ",", &save);
#define TRIM(s) ((s) ? (s) + strspn((s), " ") : NULL)
        fp->gpu = name ? xstrdup(TRIM(name)) : NULL;
        fp->compute_capability = cc ? xstrdup(TRIM(cc)) : NULL;
        fp->driver = drv ? xstrdup(TRIM(drv)) : NULL;
#undef TRIM
        free(line);
    } else {
        fp->gpu = xstrdup("no NVIDIA GPU");
    }
}

