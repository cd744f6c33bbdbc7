/* buf.h - growable, always NUL-terminated byte buffer (value type).
 *
 *   struct buf b = BUF_INIT;   never allocates until something is added
 *   buf_printf(&b, "%d", 3);
 *   buf_release(&b);           frees the contents; b is BUF_INIT again
 *
 * b.data is never NULL (points at a static "" while empty) and may be read
 * as a C string; it is owned by the buffer. buf_detach() hands it to the
 * caller (free() it).
 *
 * An optional hard cap (none unless buf_set_max is called):
 *
 *   buf_set_max(&b, 1 << 20);  len never passes 1 MiB from now on
 *   if (!buf_add(&b, p, n))    an add that would pass it is refused whole:
 *       ...                    b is unchanged and b.toobig is set
 *   buf_add_some(&b, p, n);    or: keep what fits, drop the rest (toobig)
 *
 * buf_add, buf_adds, buf_addc and buf_printf are refused whole;
 * buf_add_json_str is made of several adds and may stop part-way (check
 * toobig). buf_grow and buf_detach ignore the cap. The cap stays through
 * buf_reset, buf_release and buf_detach; buf_init removes it. toobig stays
 * set until buf_reset, buf_release, buf_detach or buf_init. */
#ifndef MP_BUF_H
#define MP_BUF_H

#include "compat.h"

struct buf {
    char *data;
    size_t len;
    size_t cap;    /* bytes allocated (0: data is the static "") */
    size_t max;    /* hard cap on len, 0: none */
    bool toobig;   /* an add was refused or cut by max */
};

extern char buf__empty[];
#define BUF_INIT { buf__empty, 0, 0, 0, false }

void buf_init(struct buf *b);
void buf_release(struct buf *b);
void buf_reset(struct buf *b);             /* len = 0, keeps memory and max */
void buf_grow(struct buf *b, size_t extra); /* room for extra more bytes */
/* The adds return true, or false when max refused them (b unchanged,
 * b->toobig set); without a cap they always succeed (false never comes). */
bool buf_add(struct buf *b, const void *p, size_t n);
bool buf_adds(struct buf *b, const char *s);
bool buf_addc(struct buf *b, char c);
bool buf_printf(struct buf *b, const char *fmt, ...) MP_PRINTF(2, 3);
/* Set the hard cap (0: none). Contents already past it are kept. */
void buf_set_max(struct buf *b, size_t max);
/* Would n more bytes fit under the cap (always true without one)? */
bool buf_fits(const struct buf *b, size_t n);
/* Add the first bytes of p[0..n) that fit under the cap and drop the rest
 * (b->toobig set when any byte was dropped). Returns the bytes added. */
size_t buf_add_some(struct buf *b, const void *p, size_t n);
/* Append s as a JSON string literal including the quotes; invalid UTF-8
 * bytes become U+FFFD, control characters are escaped. */
void buf_add_json_str(struct buf *b, const char *s, size_t n);
/* Copy of s (n bytes) as valid UTF-8: invalid bytes become U+FFFD and NUL
 * bytes are dropped (caller frees). */
char *mp_utf8_clean(const char *s, size_t n);
/* Returns the contents (caller frees) and resets b to BUF_INIT. */
char *buf_detach(struct buf *b, size_t *len_out);

#endif
