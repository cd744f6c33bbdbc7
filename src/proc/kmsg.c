/* kmsg.c - reading the kernel log (proc/kmsg.h). */
#include "proc/kmsg.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/klog.h>
#include <unistd.h>

#include "err.h"
#include "lines.h"
#include "xalloc.h"

struct sink {
    const char *needle;
    mp_kmsg_cb cb;
    void *ud;
    int lines;
};

static void one(struct sink *s, const char *p, size_t n)
{
    while (n && (p[n - 1] == '\n' || p[n - 1] == '\r'))
        n--;
    if (s->needle && !memmem(p, n, s->needle, strlen(s->needle)))
        return;
    s->lines++;
    s->cb(s->ud, p, n);
}

static void on_line(void *ud, const char *line, size_t len, bool truncated)
{
    MP_UNUSED(truncated);
    one(ud, line, len);
}

/* a file of lines (MOEPROBE_KMSG) */
static int read_file(const char *path, struct sink *s, char *why, size_t whyn)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        int e = errno;
        snprintf(why, whyn, "kernel log not readable: %s: %s", path, strerror(e));
        return -e;
    }
    struct mp_lines l;
    mp_lines_init(&l, 8192);
    char buf[65536];
    size_t total = 0;
    ssize_t n;
    while (total < MP_KMSG_MAX && (n = read(fd, buf, sizeof(buf))) > 0) {
        mp_lines_feed(&l, buf, (size_t)n, on_line, s);
        total += (size_t)n;
    }
    mp_lines_finish(&l, on_line, s);
    mp_lines_release(&l);
    close(fd);
    return s->lines;
}

/* /dev/kmsg: one record per read; EAGAIN is the end, EPIPE a record
 * overwritten while we read (skipped) */
static int read_devkmsg(struct sink *s, int *err)
{
    int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        *err = errno;
        return -1;
    }
    char rec[8192];
    size_t total = 0;
    for (;;) {
        ssize_t n = read(fd, rec, sizeof(rec));
        if (n < 0 && errno == EPIPE)
            continue;
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0 || (total += (size_t)n) > MP_KMSG_MAX)
            break;
        /* continuation lines (" KEY=value") follow the first line */
        const char *nl = memchr(rec, '\n', (size_t)n);
        one(s, rec, nl ? (size_t)(nl - rec) : (size_t)n);
    }
    close(fd);
    return s->lines;
}

/* syslog(2) READ_ALL: "<6>[ 8123.456789] text" lines */
static int read_syslog(struct sink *s, int *err)
{
    int size = klogctl(10 /* SYSLOG_ACTION_SIZE_BUFFER */, NULL, 0);
    if (size <= 0) {
        *err = size < 0 ? errno : ENODATA;
        return -1;
    }
    size = MP_MIN(size, (int)MP_KMSG_MAX);
    char *b = xmalloc((size_t)size);
    int n = klogctl(3 /* SYSLOG_ACTION_READ_ALL */, b, size);
    if (n < 0) {
        *err = errno;
        free(b);
        return -1;
    }
    struct mp_lines l;
    mp_lines_init(&l, 8192);
    mp_lines_feed(&l, b, (size_t)n, on_line, s);
    mp_lines_finish(&l, on_line, s);
    mp_lines_release(&l);
    free(b);
    return s->lines;
}

int mp_kmsg_read(const char *needle, mp_kmsg_cb cb, void *ud, char *why, size_t whyn)
{
    struct sink s = {needle, cb, ud, 0};
    why[0] = '\0';
    const char *over = getenv("MOEPROBE_KMSG");
    if (over && !strcmp(over, "none")) {
        snprintf(why, whyn, "kernel log not read (MOEPROBE_KMSG=none)");
        return MP_EUSAGE;
    }
    if (over && *over)
        return read_file(over, &s, why, whyn);
    int e1 = 0, e2 = 0;
    int rc = read_devkmsg(&s, &e1);
    if (rc >= 0)
        return rc;
    rc = read_syslog(&s, &e2);
    if (rc >= 0)
        return rc;
    bool perm = e1 == EPERM || e1 == EACCES || e2 == EPERM || e2 == EACCES;
    snprintf(why, whyn, "kernel log not readable: /dev/kmsg: %s, syslog(2): %s%s",
             e1 == ENOENT ? "absent" : strerror(e1), strerror(e2),
             perm ? " (no CAP_SYSLOG: reading it needs that capability, or "
                    "kernel.dmesg_restrict=0)"
                  : "");
    return -(e2 ? e2 : e1);
}
