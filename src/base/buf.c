#include "buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

char buf__empty[1];

void buf_init(struct buf *b)
{
    b->data = buf__empty;
    b->len = 0;
    b->cap = 0;
    b->max = 0;
    b->toobig = false;
}

/* Empty and unallocated, the cap kept. */
static void buf_empty(struct buf *b)
{
    size_t max = b->max;
    buf_init(b);
    b->max = max;
}

void buf_release(struct buf *b)
{
    if (b->cap)
        free(b->data);
    buf_empty(b);
}

void buf_reset(struct buf *b)
{
    b->len = 0;
    b->toobig = false;
    if (b->cap)
        b->data[0] = '\0';
}

void buf_set_max(struct buf *b, size_t max)
{
    b->max = max;
}

bool buf_fits(const struct buf *b, size_t n)
{
    return !b->max || (b->len <= b->max && n <= b->max - b->len);
}

void buf_grow(struct buf *b, size_t extra)
{
    if (b->len + extra + 1 <= b->cap)
        return;
    size_t ncap = b->cap ? b->cap : 64;
    while (ncap < b->len + extra + 1)
        ncap *= 2;
    if (b->cap) {
        b->data = xrealloc(b->data, ncap);
    } else {
        b->data = xmalloc(ncap);
        b->data[0] = '\0';
    }
    b->cap = ncap;
}

bool buf_add(struct buf *b, const void *p, size_t n)
{
    if (!n)
        return true;
    if (!buf_fits(b, n)) {
        b->toobig = true;
        return false;
    }
    buf_grow(b, n);
    memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return true;
}

size_t buf_add_some(struct buf *b, const void *p, size_t n)
{
    size_t k = n;
    if (b->max)
        k = b->len >= b->max ? 0 : MP_MIN(n, b->max - b->len);
    if (k < n)
        b->toobig = true;
    buf_add(b, p, k);
    return k;
}

bool buf_adds(struct buf *b, const char *s)
{
    return buf_add(b, s, strlen(s));
}

bool buf_addc(struct buf *b, char c)
{
    return buf_add(b, &c, 1);
}

bool buf_printf(struct buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n <= 0)
        return true;
    if (!buf_fits(b, (size_t)n)) {
        b->toobig = true;
        return false;
    }
    buf_grow(b, (size_t)n);
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return true;
}

/* Length of a valid UTF-8 sequence at s (max n bytes), 0 if invalid. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t len;
    unsigned min;
    if (c < 0x80)
        return 1;
    if ((c & 0xE0) == 0xC0) {
        len = 2;
        min = 0x80;
        c &= 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
        len = 3;
        min = 0x800;
        c &= 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
        len = 4;
        min = 0x10000;
        c &= 0x07;
    } else {
        return 0;
    }
    if (len > n)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        c = (c << 6) | (s[i] & 0x3F);
    }
    if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
        return 0;
    return len;
}

void buf_add_json_str(struct buf *b, const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    buf_addc(b, '"');
    size_t i = 0;
    while (i < n) {
        unsigned char c = p[i];
        if (c == '"' || c == '\\') {
            buf_addc(b, '\\');
            buf_addc(b, (char)c);
            i++;
        } else if (c == '\n') {
            buf_adds(b, "\\n");
            i++;
        } else if (c == '\r') {
            buf_adds(b, "\\r");
            i++;
        } else if (c == '\t') {
            buf_adds(b, "\\t");
            i++;
        } else if (c < 0x20 || c == 0x7F) {
            buf_printf(b, "\\u%04x", c);
            i++;
        } else {
            size_t l = utf8_seq(p + i, n - i);
            if (l == 0) {
                buf_adds(b, "\xEF\xBF\xBD");
                i++;
            } else {
                buf_add(b, p + i, l);
                i += l;
            }
        }
    }
    buf_addc(b, '"');
}

char *buf_detach(struct buf *b, size_t *len_out)
{
    char *p;
    if (len_out)
        *len_out = b->len;
    if (!b->cap)
        p = xstrdup("");
    else
        p = b->data;
    buf_empty(b);
    return p;
}

char *mp_utf8_clean(const char *s, size_t n)
{
    struct buf b = BUF_INIT;
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    buf_grow(&b, n);
    while (i < n) {
        if (p[i] == 0) {
            i++;
            continue;
        }
        size_t l = utf8_seq(p + i, n - i);
        if (l == 0) {
            buf_adds(&b, "\xEF\xBF\xBD");
            i++;
        } else {
            buf_add(&b, p + i, l);
            i += l;
        }
    }
    return buf_detach(&b, NULL);
}
