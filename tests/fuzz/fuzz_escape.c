/* fuzz_escape.c - the escapers of outside text (base/escape.h: Markdown,
 * terminal, HTML; base/buf.h: JSON strings) under arbitrary input.
 *
 * Byte 0 picks the length bound (0 = none) and byte 1 the flags; the rest is
 * the text (Markdown and HTML get it up to its first NUL, the terminal and
 * JSON all of it).
 * Invariants: every output is valid UTF-8 without a raw control character
 * (C0, DEL, C1) or bidi control; Markdown text has no '<' or '>', every
 * '&' starts an entity we wrote, every [ ] ` | * ~ is backslash-escaped (so
 * no "](" link or image can form), and a line-start text starts no block;
 * a code span is one span (its fence never occurs inside) with every '|'
 * escaped in a table; the terminal form leaves clean text unchanged.
 * HTML (only '\n' and '\t' of the controls kept) has no raw < > " ', every
 * '&' starts one of the five entities it writes, a cut ends in "…", and
 * text with nothing to escape comes out unchanged. JSON is one string
 * literal, valid UTF-8 without a raw C0 control or DEL, that cJSON parses
 * back to the input's bytes (up to a NUL, which cJSON's strings cannot
 * hold) when the input is valid UTF-8. */
#include "compat.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "buf.h"
#include "escape.h"

/* Is s[0..n) valid UTF-8 (no overlong form, surrogate or code point past
 * U+10FFFF)? hidden: also without a C1 or bidi control. */
static bool utf8_ok(const unsigned char *s, size_t n, bool hidden)
{
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
        if (!len || c > 0xF4 || i + len > n)
            return false;
        uint32_t v = c & (0x3F >> (len - 1));
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xC0) != 0x80)
                return false;
            v = (v << 6) | (s[i + k] & 0x3F);
        }
        static const uint32_t min[] = {0, 0, 0x80, 0x800, 0x10000};
        if (v < min[len] || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
            return false;
        if (hidden && ((v >= 0x80 && v <= 0x9F) || v == 0x61C || v == 0x200E || v == 0x200F ||
                       (v >= 0x202A && v <= 0x202E) || (v >= 0x2066 && v <= 0x2069)))
            return false;
        i += len;
    }
    return true;
}

/* Has s[0..n) a raw C0 control or DEL (keep_nl: '\n' and '\t' allowed)? */
static bool has_c0(const unsigned char *s, size_t n, bool keep_nl)
{
    for (size_t i = 0; i < n; i++)
        if ((s[i] < 0x20 && !(keep_nl && (s[i] == '\n' || s[i] == '\t'))) || s[i] == 0x7F)
            return true;
    return false;
}

/* Check out[0..n) is valid UTF-8 without raw controls or bidi controls
 * (keep_nl: '\n' and '\t' allowed). */
static void check_clean(const unsigned char *s, size_t n, bool keep_nl)
{
    if (has_c0(s, n, keep_nl) || !utf8_ok(s, n, true))
        abort();
}

/* s[i] is preceded by an odd number of backslashes */
static bool escaped(const char *s, size_t i)
{
    size_t k = 0;
    while (i > k && s[i - k - 1] == '\\')
        k++;
    return k % 2 == 1;
}

static void check_md_text(const struct buf *b, size_t inlen, unsigned flags)
{
    const char *s = b->data;
    check_clean((const unsigned char *)s, b->len, false);
    if (b->len > 6 * inlen + 8)
        abort();
    for (size_t i = 0; i < b->len; i++) {
        char c = s[i];
        if (c == '<' || c == '>')
            abort();
        if (c == '&' && strncmp(s + i, "&lt;", 4) && strncmp(s + i, "&gt;", 4) && strncmp(s + i, "&amp;", 5))
            abort();
        if (strchr("[]`|*~", c) && !escaped(s, i))
            abort();
        if (c == ']' && s[i + 1] == '(' && !escaped(s, i))
            abort();
    }
    if ((flags & MP_MD_START) && b->len && strchr(" \t#-+=", s[0]))
        abort();
}

static void check_md_code(const struct buf *b, unsigned flags)
{
    const char *s = b->data;
    check_clean((const unsigned char *)s, b->len, false);
    if (!strcmp(s, "—"))
        return;
    size_t fence = 0;
    while (fence < b->len && s[fence] == '`')
        fence++;
    if (fence == 0 || b->len < 2 * fence + 1)
        abort();
    for (size_t k = 0; k < fence; k++)
        if (s[b->len - 1 - k] != '`')
            abort();
    /* inside: no run of exactly the fence's length (it would close the span) */
    size_t run = 0;
    for (size_t i = fence; i < b->len - fence; i++) {
        run = s[i] == '`' ? run + 1 : 0;
        if (run >= fence)
            abort();
        if ((flags & MP_MD_TABLE) && s[i] == '|' && s[i - 1] != '\\')
            abort();
    }
}

/* HTML of z (zl bytes, no NUL) with bound max (0 = none) */
static void check_html(const struct buf *b, const char *z, size_t zl, size_t max)
{
    const char *s = b->data;
    check_clean((const unsigned char *)s, b->len, true);
    if (b->len > 6 * zl + 3)
        abort();
    static const char *const ents[] = {"&amp;", "&lt;", "&gt;", "&quot;", "&#39;"};
    for (size_t i = 0; i < b->len; i++) {
        if (strchr("<>\"'", s[i]))
            abort();
        if (s[i] == '&') {
            bool ok = false;
            for (size_t k = 0; k < 5 && !ok; k++)
                ok = !strncmp(s + i, ents[k], strlen(ents[k]));
            if (!ok)
                abort();
        }
    }
    bool cut = max && zl > max;
    size_t el = strlen("…");
    if (cut && (b->len < el || memcmp(s + b->len - el, "…", el)))
        abort();
    /* nothing to escape: unchanged */
    bool plain = !cut && !has_c0((const unsigned char *)z, zl, true) &&
                 utf8_ok((const unsigned char *)z, zl, true) && !strpbrk(z, "&<>\"'");
    if (plain && (b->len != zl || memcmp(s, z, zl)))
        abort();
}

/* JSON string literal of text[0..n) */
static void check_json(const struct buf *b, const char *text, size_t n)
{
    const unsigned char *s = (const unsigned char *)b->data;
    if (b->len < 2 || s[0] != '"' || s[b->len - 1] != '"' || b->len > 6 * n + 2)
        abort();
    if (has_c0(s, b->len, false) || !utf8_ok(s, b->len, false))
        abort();
    cJSON *j = cJSON_ParseWithLength(b->data, b->len);
    if (!j || !cJSON_IsString(j))
        abort();
    const char *nul = memchr(text, '\0', n);
    size_t zl = nul ? (size_t)(nul - text) : n;
    if (utf8_ok((const unsigned char *)text, zl, false) &&
        (strlen(j->valuestring) != zl || memcmp(j->valuestring, text, zl)))
        abort();
    cJSON_Delete(j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    size_t max = data[0] ? data[0] : SIZE_MAX;
    unsigned flags = data[1] & (MP_MD_START | MP_MD_TABLE);
    const char *text = (const char *)data + 2;
    size_t n = size - 2;
    char *z = malloc(n + 1);
    if (!z)
        return 0;
    memcpy(z, text, n);
    z[n] = '\0';
    size_t zl = strlen(z);

    struct buf b = BUF_INIT;
    mp_md_text(&b, z, max, flags);
    check_md_text(&b, zl, flags);
    buf_reset(&b);
    mp_md_code(&b, z, max, flags);
    check_md_code(&b, flags);
    buf_reset(&b);

    bool keep = data[1] & 0x80;
    mp_term_esc(&b, text, n, keep ? MP_TERM_KEEP_NL : 0);
    check_clean((const unsigned char *)b.data, b.len, keep);
    if (b.len < n || b.len > 6 * n)
        abort();
    if (b.len == n && memcmp(b.data, text, n) != 0)
        abort(); /* nothing escaped: unchanged */
    buf_reset(&b);

    mp_html_esc(&b, z, data[0]);
    check_html(&b, z, zl, data[0]);
    buf_reset(&b);

    buf_add_json_str(&b, text, n);
    check_json(&b, text, n);
    buf_release(&b);
    char *d = mp_term_dup(z);
    check_clean((const unsigned char *)d, strlen(d), false);
    free(d);
    free(z);
    return 0;
}
