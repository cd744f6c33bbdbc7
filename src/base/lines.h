/* lines.h - one bounded line splitter (a push parser).
 *
 *   struct mp_lines l;
 *   mp_lines_init(&l, 65536);             bound: bytes kept per line
 *   mp_lines_feed(&l, chunk, n, cb, ud);  any chunk boundary, as often as needed
 *   mp_lines_finish(&l, cb, ud);          at end of input: the last partial line
 *   mp_lines_release(&l);
 *
 * The contract:
 * - Bytes in, complete lines out, through cb. The lines a stream gives do not
 *   depend on how it is cut into chunks (split it at every offset: the same
 *   lines, the same order, the same truncated flags).
 * - A line is the bytes before a '\n'. cb gets it without the '\n' and
 *   without one CR directly before it ("\n" and "\r\n" endings). line is NOT
 *   NUL-terminated and is valid during the call only: it points into the
 *   caller's chunk or into l's buffer.
 * - NUL bytes are data: kept in the line, never ending one.
 * - The bound counts the bytes before the '\n' (a CR before it included). A
 *   longer line is delivered once, as soon as it passes the bound, cut to its
 *   first max bytes with truncated = true (its CR, if any, is not stripped);
 *   the rest of it, up to and including its '\n', is dropped.
 * - A final line without '\n' is held (partial input: more may come) and is
 *   delivered only by mp_lines_finish (a trailing CR stripped), which also
 *   resets the state for a new stream.
 * - Memory: one buffer of max bytes, allocated when a line first straddles
 *   a chunk boundary; nothing per line. A line wholly inside a chunk is
 *   passed to cb without a copy.
 * - cb may be NULL (lines are counted and dropped). cb must not feed l. */
#ifndef MP_LINES_H
#define MP_LINES_H

#include "compat.h"

struct mp_lines {
    char *buf;     /* the partial line, max bytes (owned), NULL until needed */
    size_t len;    /* bytes in buf */
    size_t max;    /* the bound, > 0 */
    bool skipping; /* inside the dropped rest of an over-long line */
};

/* Called once per line; see the contract above. */
typedef void (*mp_lines_cb)(void *ud, const char *line, size_t len, bool truncated);

/* An empty splitter with bound max (> 0). Allocates nothing. */
void mp_lines_init(struct mp_lines *l, size_t max);
/* Frees the buffer; l is empty again (same bound) and may be reused. */
void mp_lines_release(struct mp_lines *l);

/* Split n more bytes of the stream. Returns the number of lines delivered. */
size_t mp_lines_feed(struct mp_lines *l, const char *p, size_t n, mp_lines_cb cb, void *ud);

/* End of the stream: deliver the held partial line, if it has any byte and
 * is not the rest of an over-long line already delivered, and reset l for a
 * new stream (the buffer is kept). Returns the number of lines delivered
 * (0 or 1). */
size_t mp_lines_finish(struct mp_lines *l, mp_lines_cb cb, void *ud);

/* Is a partial line held (bytes since the last '\n', or the dropped rest of
 * an over-long line)? */
static inline bool mp_lines_pending(const struct mp_lines *l)
{
    return l->len > 0 || l->skipping;
}

/* Are the bytes now arriving the dropped rest of an over-long line (already
 * delivered)? */
static inline bool mp_lines_skipping(const struct mp_lines *l)
{
    return l->skipping;
}

#endif
