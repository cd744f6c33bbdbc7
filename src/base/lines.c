#include "lines.h"

#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

void mp_lines_init(struct mp_lines *l, size_t max)
{
    l->buf = NULL;
    l->len = 0;
    l->max = max ? max : 1;
    l->skipping = false;
}

void mp_lines_release(struct mp_lines *l)
{
    free(l->buf);
    mp_lines_init(l, l->max);
}

static void emit(const char *p, size_t len, bool truncated, mp_lines_cb cb, void *ud)
{
    if (!truncated && len > 0 && p[len - 1] == '\r')
        len--;
    if (cb)
        cb(ud, p, len, truncated);
}

static void hold(struct mp_lines *l, const char *p, size_t n)
{
    if (!l->buf)
        l->buf = xmalloc(l->max);
    memcpy(l->buf + l->len, p, n);
    l->len += n;
}

size_t mp_lines_feed(struct mp_lines *l, const char *p, size_t n, mp_lines_cb cb, void *ud)
{
    size_t lines = 0;
    while (n > 0) {
        const char *nl = memchr(p, '\n', n);
        size_t seg = nl ? (size_t)(nl - p) : n;
        if (!l->skipping) {
            size_t room = l->max - l->len;
            if (seg > room) {
                /* over the bound: deliver the first max bytes now */
                if (l->len) {
                    hold(l, p, room);
                    emit(l->buf, l->max, true, cb, ud);
                } else {
                    emit(p, l->max, true, cb, ud);
                }
                lines++;
                l->len = 0;
                l->skipping = true;
            } else if (nl) {
                if (l->len) {
                    hold(l, p, seg);
                    emit(l->buf, l->len, false, cb, ud);
                } else {
                    emit(p, seg, false, cb, ud); /* wholly in the chunk: no copy */
                }
                lines++;
                l->len = 0;
            } else {
                hold(l, p, seg);
            }
        }
        if (!nl)
            break;
        l->skipping = false;
        p = nl + 1;
        n -= seg + 1;
    }
    return lines;
}

size_t mp_lines_finish(struct mp_lines *l, mp_lines_cb cb, void *ud)
{
    size_t lines = 0;
    if (l->len > 0 && !l->skipping) {
        emit(l->buf, l->len, false, cb, ud);
        lines = 1;
    }
    l->len = 0;
    l->skipping = false;
    return lines;
}
