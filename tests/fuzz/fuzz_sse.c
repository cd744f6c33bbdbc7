/* fuzz_sse.c - SSE parser + chunk interpreter under arbitrary input and chunking.
 *
 * The first byte picks the max event size (small, to reach the oversize paths), the next 8 bytes
 * are split sizes; the rest is the stream, fed in those pieces (cycled). Invariants: no event
 * larger than the bound, data NUL-terminated, the same events and the same unterminated tail
 * whatever the chunking (compared with a one-shot parse), and the chunk interpreter never
 * crashes on any event. */
#include "compat.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "err.h"
#include "http/sse.h"

struct acc {
    struct buf log;
    size_t max;
};

static int on_ev(void *ud, const struct mp_sse_event *ev)
{
    struct acc *a = ud;
    if (ev->data_len > a->max || ev->data[ev->data_len] != '\0' || strlen(ev->event) > MP_SSE_FIELD_MAX ||
        strlen(ev->id) > MP_SSE_FIELD_MAX)
        abort();
    struct mp_sse_chunk c;
    int rc = mp_sse_chunk_parse(ev->data, ev->data_len, &c);
    if (rc < 0 && (c.kind != MP_SSE_CHUNK_MALFORMED || c.err_pos > ev->data_len))
        abort();
    if (c.kind == MP_SSE_CHUNK_DATA && c.text && strlen(c.text) != c.text_len)
        abort();
    mp_sse_chunk_release(&c);
    buf_printf(&a->log, "%zu:", ev->data_len);
    buf_add(&a->log, ev->data, ev->data_len);
    buf_adds(&a->log, ev->event);
    buf_addc(&a->log, '\n');
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
    if (n < 9)
        return 0;
    size_t max = 16 + (size_t)d[0] * 8;
    uint8_t splits[8];
    memcpy(splits, d + 1, 8);
    const char *s = (const char *)d + 9;
    size_t len = n - 9;

    struct acc one = { BUF_INIT, max }, many = { BUF_INIT, max };
    struct mp_sse p;
    memset(&p, 0, sizeof(p));
    mp_sse_init(&p, max);
    int r1 = mp_sse_feed(&p, s, len, on_ev, &one);
    int r2 = mp_sse_finish(&p, on_ev, &one);
    uint64_t over1 = p.oversize, cut1 = p.unterminated;
    mp_sse_init(&p, max);
    int lim = 0;
    for (size_t off = 0, k = 0; off < len; k++) {
        size_t piece = 1 + splits[k % 8];
        if (piece > len - off)
            piece = len - off;
        if (mp_sse_feed(&p, s + off, piece, on_ev, &many) == MP_ELIMIT)
            lim = 1;
        off += piece;
    }
    if (mp_sse_finish(&p, on_ev, &many) == MP_ELIMIT)
        lim = 1;
    if (r1 != 0 && r1 != MP_ELIMIT)
        abort();
    if (r2 != 0 && r2 != MP_ELIMIT)
        abort();
    if (one.log.len != many.log.len || memcmp(one.log.data, many.log.data, one.log.len) != 0)
        abort();
    if (p.oversize != over1 || (over1 > 0) != (lim || r1 == MP_ELIMIT || r2 == MP_ELIMIT))
        abort();
    if (p.unterminated != cut1) /* the event the stream ended inside, whatever the chunking */
        abort();
    mp_sse_free(&p);
    buf_release(&one.log);
    buf_release(&many.log);

    /* the error-body extractor on the same bytes */
    char m[64];
    mp_sse_error_body_message(s, len, m, sizeof(m));
    return 0;
}
