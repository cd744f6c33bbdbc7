/* fuzz_lines.c - the bounded line splitter (base/lines.h) under arbitrary
 * input and chunking.
 *
 * Byte 0 picks the bound (1..64, small to reach the over-long paths), the
 * next 8 bytes are split sizes (0 = a 1-byte piece); the rest is the stream,
 * fed in those pieces (cycled) and then finished. Invariants: the lines are
 * the same as a one-shot feed's and as those of an independent byte-at-a-
 * time model of the contract (same bytes, lengths, truncated flags, order);
 * no line is longer than the bound, a truncated one is exactly the bound,
 * and no line holds a '\n'. */
#include "compat.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "lines.h"

struct acc {
    struct buf log;
    size_t max;
};

static void on_line(void *ud, const char *line, size_t len, bool truncated)
{
    struct acc *a = ud;
    if (len > a->max || (truncated && len != a->max) || memchr(line, '\n', len))
        abort();
    buf_printf(&a->log, "%c%zu:", truncated ? 't' : '-', len);
    buf_add(&a->log, line, len);
    buf_addc(&a->log, '\n');
}

/* The contract, one byte at a time, without the splitter's code. */
static void model(const char *s, size_t n, size_t max, struct acc *a)
{
    char *cur = malloc(max + 1);
    size_t len = 0;
    bool skip = false;
    if (!cur)
        abort();
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\n') {
            if (!skip)
                on_line(a, cur, len && cur[len - 1] == '\r' ? len - 1 : len, false);
            len = 0;
            skip = false;
        } else if (!skip) {
            cur[len++] = s[i];
            if (len > max) {
                on_line(a, cur, max, true);
                skip = true;
                len = 0;
            }
        }
    }
    if (len && !skip)
        on_line(a, cur, cur[len - 1] == '\r' ? len - 1 : len, false);
    free(cur);
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
    if (n < 9)
        return 0;
    size_t max = 1 + d[0] % 64;
    const uint8_t *splits = d + 1;
    const char *s = (const char *)d + 9;
    size_t len = n - 9;

    struct acc one = {BUF_INIT, max}, cut = {BUF_INIT, max}, ref = {BUF_INIT, max};
    struct mp_lines l;
    mp_lines_init(&l, max);
    mp_lines_feed(&l, s, len, on_line, &one);
    mp_lines_finish(&l, on_line, &one);

    /* the same splitter again, after a finish: a new stream */
    size_t off = 0;
    for (unsigned k = 0; off < len; k++) {
        size_t piece = MP_MIN((size_t)(splits[k % 8] ? splits[k % 8] : 1), len - off);
        mp_lines_feed(&l, s + off, piece, on_line, &cut);
        if (l.len > l.max)
            abort();
        off += piece;
    }
    mp_lines_finish(&l, on_line, &cut);
    if (mp_lines_pending(&l))
        abort();
    mp_lines_release(&l);

    model(s, len, max, &ref);
    if (one.log.len != cut.log.len || memcmp(one.log.data, cut.log.data, one.log.len) != 0)
        abort();
    if (one.log.len != ref.log.len || memcmp(one.log.data, ref.log.data, one.log.len) != 0)
        abort();
    buf_release(&one.log);
    buf_release(&cut.log);
    buf_release(&ref.log);
    return 0;
}
