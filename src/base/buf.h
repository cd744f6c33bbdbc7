/* buf.h - growable, always NUL-terminated byte buffer (value type).
 *
 *   struct buf b = BUF_INIT;   never allocates until something is added
 *   buf_printf(&b, "%d", 3);
 *   buf_release(&b);           frees the contents; b is BUF_INIT again
 *
 * b.data is never NULL (points at a static "" while empty) and may be read
 * as a C string; it is owned by the buffer. buf_detach() hands it to the
 * caller (free() it). */
#ifndef MP_BUF_H
#define MP_BUF_H

#include "compat.h"

struct buf {
    char *data;
    size_t len;
    size_t cap;
};

extern char buf__empty[];
#define BUF_INIT { buf__empty, 0, 0 }

void buf_init(struct buf *b);
void buf_release(struct buf *b);
void buf_reset(struct buf *b);             /* len = 0, keeps memory */
void buf_grow(struct buf *b, size_t extra); /* room for extra more bytes */
void buf_add(struct buf *b, const void *p, size_t n);
void buf_adds(struct buf *b, const char *s);
void buf_addc(struct buf *b, char c);
void buf_printf(struct buf *b, const char *fmt, ...) MP_PRINTF(2, 3);
/* Append s as a JSON string literal including the quotes; invalid UTF-8
 * bytes become U+FFFD, control characters are escaped. */
void buf_add_json_str(struct buf *b, const char *s, size_t n);
/* Copy of s (n bytes) as valid UTF-8: invalid bytes become U+FFFD and NUL
 * bytes are dropped (caller frees). */
char *mp_utf8_clean(const char *s, size_t n);
/* Returns the contents (caller frees) and resets b to BUF_INIT. */
char *buf_detach(struct buf *b, size_t *len_out);

#endif
