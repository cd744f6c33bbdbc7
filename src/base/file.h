/* file.h - whole-file read with a hard bound, and atomic write.
 *
 * Errors follow err.h: 0 or -errno / MP_ELIMIT, with d (may be NULL)
 * filled: d->file = path, d->msg = what went wrong ("cannot open: No such
 * file or directory", "larger than 1048576 bytes", "is a directory"). */
#ifndef MP_FILE_H
#define MP_FILE_H

#include "compat.h"

#include "err.h"

struct buf;

/* Append the whole of path to out (NUL-terminated as every buf). A file
 * larger than max bytes is an error (MP_ELIMIT), never silently cut; out
 * then holds nothing new. A directory is -EISDIR. */
int mp_read_file(const char *path, size_t max, struct buf *out, struct mp_diag *d);

/* Open path for reading only when it is a regular file: opened with
 * O_NONBLOCK (so a FIFO without a writer cannot block the open), its type
 * checked with fstat, O_NONBLOCK cleared again. Returns the descriptor
 * (O_CLOEXEC; caller closes), or -errno with d filled ("cannot open: ..."),
 * or MP_EPARSE for another type: "not a regular file (a FIFO)" (a
 * directory, a character device, a block device, a socket). */
int mp_open_regular(const char *path, struct mp_diag *d);
/* mp_read_file for a regular file only (mp_open_regular's refusals): for
 * input that names a file by its place in a folder (a checkpoint's
 * config.json), where a FIFO there must be an error, not a wait. */
int mp_read_regular_file(const char *path, size_t max, struct buf *out, struct mp_diag *d);

/* Write data to dir/name atomically: a new temporary file in dir (created
 * with O_EXCL|O_NOFOLLOW), fsync, rename over name. A reader sees the old
 * file or the new one, never a part; a symbolic link at name (or at the
 * temporary's name) is replaced, never written through. 0 or -errno. */
int mp_write_file_atomic(const char *dir, const char *name, const char *data, size_t len);

#endif
