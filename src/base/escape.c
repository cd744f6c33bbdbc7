/* escape.c - Markdown and terminal escaping of outside text (escape.h). */
#include "escape.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

static const char hexd[] = "0123456789abcdef";

/* Decode one UTF-8 character at s (n >= 1 bytes left): its length and *cp,
 * or 0 when s[0] starts no valid character (overlong, surrogate, beyond
 * U+10FFFF, cut short). */
static size_t utf8_dec(const unsigned char *s, size_t n, uint32_t *cp)
{
    unsigned c = s[0];
    size_t len;
    uint32_t v, min;
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2, v = c & 0x1F, min = 0x80;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3, v = c & 0x0F, min = 0x800;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4, v = c & 0x07, min = 0x10000;
    } else {
        return 0;
    }
    if (n < len)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        v = (v << 6) | (s[i] & 0x3F);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
        return 0;
    *cp = v;
    return len;
}

/* Code points a reader must see, not have applied: C1 controls and the
 * bidi controls that reorder text. */
static bool hidden_cp(uint32_t cp)
{
    return (cp >= 0x80 && cp <= 0x9F) || cp == 0x61C || cp == 0x200E || cp == 0x200F ||
           (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

static void add_x(struct buf *b, unsigned char c)
{
    char t[4] = {'\\', 'x', hexd[c >> 4], hexd[c & 15]};
    buf_add(b, t, 4);
}

static void add_u(struct buf *b, uint32_t cp)
{
    buf_printf(b, "\\u%04x", (unsigned)cp);
}

static bool is_alnum(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* The end of the text to use: at most max bytes of s (n bytes), not inside
 * a character. *cut tells whether anything was left out. */
static size_t cut_end(const unsigned char *s, size_t n, size_t max, bool *cut)
{
    *cut = n > max;
    if (!*cut)
        return n;
    size_t e = max;
    while (e > 0 && e < n && (s[e] & 0xC0) == 0x80)
        e--;
    return e;
}

/* One character of outside text that no format may carry raw: appended in
 * its escaped form. Returns false (nothing appended) for any other. */
static bool add_control(struct buf *b, uint32_t cp, size_t len)
{
    if (len == 1 && (cp < 0x20 || cp == 0x7F)) {
        add_x(b, (unsigned char)cp);
        return true;
    }
    if (hidden_cp(cp)) {
        add_u(b, cp);
        return true;
    }
    return false;
}

void mp_md_text(struct buf *b, const char *s, size_t max, unsigned flags)
{
    if (!s) {
        buf_adds(b, "—");
        return;
    }
    const unsigned char *p = (const unsigned char *)s;
    size_t n = strlen(s);
    bool cut;
    size_t end = cut_end(p, n, max, &cut);
    size_t i = 0, list_dot = SIZE_MAX;
    if (flags & MP_MD_START) {
        /* no indented code block, heading, quote, list or rule at the start */
        while (i < end && strchr(" \t\n\r\v\f", p[i]))
            i++;
        if (i < end && strchr("#-+=", p[i])) { /* '>' becomes &gt; anyway */
            buf_addc(b, '\\');
        } else if (i < end && p[i] >= '0' && p[i] <= '9') {
            size_t k = i;
            while (k < end && p[k] >= '0' && p[k] <= '9')
                k++;
            if (k < end && (p[k] == '.' || p[k] == ')'))
                list_dot = k;
        }
    }
    while (i < end) {
        uint32_t cp;
        size_t l = utf8_dec(p + i, end - i, &cp);
        if (l == 0) {
            buf_adds(b, "\xEF\xBF\xBD"); /* U+FFFD */
            i++;
            continue;
        }
        unsigned char c = p[i];
        if (l == 1 && (c == '\n' || c == '\r' || c == '\t' || c == '\v' || c == '\f')) {
            buf_addc(b, ' ');
        } else if (add_control(b, cp, l)) {
            /* shown escaped */
        } else if (l == 1 && strchr("\\`*[]|~", c)) {
            buf_addc(b, '\\');
            buf_addc(b, (char)c);
        } else if (c == '_' && (i == 0 || !is_alnum(p[i - 1]) || i + 1 >= end || !is_alnum(p[i + 1]))) {
            buf_adds(b, "\\_");
        } else if (c == '<') {
            buf_adds(b, "&lt;");
        } else if (c == '>') {
            buf_adds(b, "&gt;");
        } else if (c == '&') {
            buf_adds(b, "&amp;");
        } else if (i == list_dot) {
            buf_addc(b, '\\');
            buf_addc(b, (char)c);
        } else {
            buf_add(b, p + i, l);
        }
        i += l;
    }
    if (cut)
        buf_adds(b, "…");
}

void mp_md_code(struct buf *b, const char *s, size_t max, unsigned flags)
{
    if (!s) {
        buf_adds(b, "—");
        return;
    }
    const unsigned char *p = (const unsigned char *)s;
    size_t n = strlen(s);
    bool cut;
    size_t end = cut_end(p, n, max, &cut);
    struct buf c = BUF_INIT;
    for (size_t i = 0; i < end;) {
        uint32_t cp;
        size_t l = utf8_dec(p + i, end - i, &cp);
        if (l == 0) {
            buf_adds(&c, "\xEF\xBF\xBD");
            i++;
            continue;
        }
        if (l == 1 && (p[i] == '\n' || p[i] == '\r' || p[i] == '\t' || p[i] == '\v' || p[i] == '\f'))
            buf_addc(&c, ' ');
        else if (add_control(&c, cp, l))
            ;
        else if (p[i] == '|' && (flags & MP_MD_TABLE))
            buf_adds(&c, "\\|");
        else
            buf_add(&c, p + i, l);
        i += l;
    }
    if (cut)
        buf_adds(&c, "…");
    size_t run = 0, longest = 0;
    for (size_t i = 0; i < c.len; i++) {
        run = c.data[i] == '`' ? run + 1 : 0;
        if (run > longest)
            longest = run;
    }
    bool pad = c.len == 0 || c.data[0] == '`' || c.data[0] == ' ' || c.data[c.len - 1] == '`' ||
               c.data[c.len - 1] == ' ';
    for (size_t k = 0; k <= longest; k++)
        buf_addc(b, '`');
    if (pad)
        buf_addc(b, ' ');
    buf_add(b, c.data, c.len);
    if (pad && c.len)
        buf_addc(b, ' ');
    for (size_t k = 0; k <= longest; k++)
        buf_addc(b, '`');
    buf_release(&c);
}

void mp_term_esc(struct buf *b, const char *s, size_t n, unsigned flags)
{
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t l = utf8_dec(p + i, n - i, &cp);
        if (l == 0) {
            add_x(b, p[i]);
            i++;
            continue;
        }
        if (l == 1 && (p[i] == '\n' || p[i] == '\t') && (flags & MP_TERM_KEEP_NL))
            buf_addc(b, (char)p[i]);
        else if (!add_control(b, cp, l))
            buf_add(b, p + i, l);
        i += l;
    }
}

size_t mp_esc_hidden_at(struct buf *b, const char *p, size_t n)
{
    uint32_t cp;
    size_t l = n ? utf8_dec((const unsigned char *)p, n, &cp) : 0;
    if (l == 1 && cp == 0x7F) {
        add_x(b, 0x7F);
        return 1;
    }
    if (l > 1 && hidden_cp(cp)) {
        add_u(b, cp);
        return l;
    }
    return 0;
}

void mp_html_esc(struct buf *b, const char *s, size_t max)
{
    if (!s) {
        buf_adds(b, "—");
        return;
    }
    size_t n = strlen(s);
    bool cut = max && n > max;
    if (cut) {
        n = max;
        while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
            n--;
    }
    char *clean = mp_utf8_clean(s, n);
    size_t left = strlen(clean);
    for (const char *p = clean; *p; p++, left--) {
        unsigned char c = (unsigned char)*p;
        /* DEL, C1 and bidi controls (a right-to-left override reorders
         * what the reader sees even as an entity): shown as text */
        size_t h = mp_esc_hidden_at(b, p, left);
        if (h) {
            p += h - 1;
            left -= h - 1;
            continue;
        }
        switch (c) {
        case '&':
            buf_adds(b, "&amp;");
            break;
        case '<':
            buf_adds(b, "&lt;");
            break;
        case '>':
            buf_adds(b, "&gt;");
            break;
        case '"':
            buf_adds(b, "&quot;");
            break;
        case '\'':
            buf_adds(b, "&#39;");
            break;
        default:
            if (c >= 0x20 || c == '\n' || c == '\t')
                buf_addc(b, (char)c);
            else if (c == '\r')
                break;
            else
                buf_adds(b, "\xEF\xBF\xBD"); /* visible, not executable */
        }
    }
    free(clean);
    if (cut)
        buf_adds(b, "…");
}

static mp_term_mask_fn term_mask_fn;
static const void *term_mask_ud;

void mp_term_set_mask(mp_term_mask_fn fn, const void *ud)
{
    term_mask_fn = fn;
    term_mask_ud = ud;
}

char *mp_term_mask(const char *s, size_t n, size_t *outlen)
{
    if (term_mask_fn)
        return term_mask_fn(term_mask_ud, s, n, outlen);
    char *c = xmalloc(n + 1);
    memcpy(c, s, n);
    c[n] = '\0';
    if (outlen)
        *outlen = n;
    return c;
}

char *mp_term_dup(const char *s)
{
    if (!s)
        return NULL;
    size_t n = 0;
    char *m = mp_term_mask(s, strlen(s), &n);
    struct buf b = BUF_INIT;
    buf_grow(&b, n);
    mp_term_esc(&b, m, n, 0);
    free(m);
    return buf_detach(&b, NULL);
}

int mp_term_write(FILE *f, const char *s, size_t n)
{
    struct buf b = BUF_INIT;
    size_t mn = 0;
    char *m = mp_term_mask(s, n, &mn);
    mp_term_esc(&b, m, mn, MP_TERM_KEEP_NL);
    free(m);
    int rc = fwrite(b.data, 1, b.len, f) == b.len ? 0 : -1;
    buf_release(&b);
    return rc;
}
