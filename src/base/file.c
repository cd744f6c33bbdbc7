/* file.c - bounded whole-file read, atomic write (file.h). */
#include "file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"

static const char *file_kind(mode_t m)
{
    if (S_ISDIR(m))
        return "a directory";
    if (S_ISFIFO(m))
        return "a FIFO";
    if (S_ISCHR(m))
        return "a character device";
    if (S_ISBLK(m))
        return "a block device";
    if (S_ISSOCK(m))
        return "a socket";
    return "not a file";
}

int mp_open_regular(const char *path, struct mp_diag *d)
{
    if (d)
        snprintf(d->file, sizeof(d->file), "%s", path);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0)
        return mp_diag_set(d, -errno, 0, "cannot open: %s", strerror(errno));
    struct stat st;
    int rc = 0;
    if (fstat(fd, &st) != 0)
        rc = mp_diag_set(d, -errno, 0, "cannot stat: %s", strerror(errno));
    else if (!S_ISREG(st.st_mode))
        rc = mp_diag_set(d, MP_EPARSE, 0, "not a regular file (%s)", file_kind(st.st_mode));
    else if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0)
        rc = mp_diag_set(d, -errno, 0, "cannot open: %s", strerror(errno));
    if (rc < 0) {
        close(fd);
        return rc;
    }
    return fd;
}

/* The whole of fd (opened by the caller, closed here) appended to out. */
static int read_fd(int fd, size_t max, struct buf *out, struct mp_diag *d)
{
    int rc = 0;
    size_t start = out->len;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        rc = mp_diag_set(d, -errno, 0, "cannot stat: %s", strerror(errno));
        goto out;
    }
    if (S_ISDIR(st.st_mode)) {
        rc = mp_diag_set(d, -EISDIR, 0, "is a directory");
        goto out;
    }
    char tmp[65536];
    for (;;) {
        ssize_t n = read(fd, tmp, sizeof(tmp));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = mp_diag_set(d, -errno, 0, "read error: %s", strerror(errno));
            goto out;
        }
        if (n == 0)
            break;
        if (out->len - start + (size_t)n > max) {
            rc = mp_diag_set(d, MP_ELIMIT, 0, "larger than %zu bytes", max);
            goto out;
        }
        buf_add(out, tmp, (size_t)n);
    }
out:
    if (rc < 0 && out->len > start) {
        out->len = start;
        out->data[start] = '\0';
    }
    close(fd);
    return rc;
}

int mp_read_file(const char *path, size_t max, struct buf *out, struct mp_diag *d)
{
    if (d)
        snprintf(d->file, sizeof(d->file), "%s", path);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return mp_diag_set(d, -errno, 0, "cannot open: %s", strerror(errno));
    return read_fd(fd, max, out, d);
}

int mp_read_regular_file(const char *path, size_t max, struct buf *out, struct mp_diag *d)
{
    int fd = mp_open_regular(path, d);
    return fd < 0 ? fd : read_fd(fd, max, out, d);
}

int mp_write_file_atomic(const char *dir, const char *name, const char *data, size_t len)
{
    char path[4096], tmp[4200];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
    /* a new file, never one that is there (a stale temporary, or a link
     * planted under this name: unlinked, never written through) */
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0 && errno == EEXIST && unlink(tmp) == 0)
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0)
        return -errno;
    size_t off = 0;
    while (off < len) {
        ssize_t n = write(fd, data + off, len - off);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            int e = -errno;
            close(fd);
            unlink(tmp);
            return e;
        }
        off += (size_t)n;
    }
    if (fsync(fd) != 0 || close(fd) != 0) {
        int e = -errno;
        unlink(tmp);
        return e;
    }
    if (rename(tmp, path) != 0) {
        int e = -errno;
        unlink(tmp);
        return e;
    }
    return 0;
}
