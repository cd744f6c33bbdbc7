/* jsoncheck.c - RFC 8259 validation of an engine's JSON (jsoncheck.h). Pure:
 * no I/O, no allocation; recursion bounded by MP_JSON_MAX_DEPTH. */
#include "http/jsoncheck.h"

#include <string.h>

#include "err.h"

struct jc {
    const unsigned char *s;
    size_t n, i;
    char *fix;
    size_t lone;
    int depth;
    struct mp_json_err *e;
};

static int fail(struct jc *c, size_t pos, const char *why)
{
    if (c->e) {
        c->e->pos = pos;
        c->e->why = why;
        c->e->byte = pos < c->n ? c->s[pos] : 0;
    }
    return MP_EPARSE;
}

static bool more(const struct jc *c)
{
    return c->i < c->n;
}

static void ws(struct jc *c)
{
    while (more(c) && (c->s[c->i] == ' ' || c->s[c->i] == '\t' || c->s[c->i] == '\n' ||
                       c->s[c->i] == '\r'))
        c->i++;
}

/* Length of the well-formed UTF-8 sequence at p (RFC 3629: no overlongs, no
 * encoded surrogates, nothing above U+10FFFF), or 0. */
static size_t utf8_len(const unsigned char *p, size_t left)
{
    unsigned char b = p[0];
    size_t len;
    unsigned char lo = 0x80, hi = 0xBF; /* the second byte's range */
    if (b < 0x80)
        return 1;
    if (b >= 0xC2 && b <= 0xDF)
        len = 2;
    else if (b >= 0xE0 && b <= 0xEF) {
        len = 3;
        lo = b == 0xE0 ? 0xA0 : 0x80;
        hi = b == 0xED ? 0x9F : 0xBF;
    } else if (b >= 0xF0 && b <= 0xF4) {
        len = 4;
        lo = b == 0xF0 ? 0x90 : 0x80;
        hi = b == 0xF4 ? 0x8F : 0xBF;
    } else {
        return 0;
    }
    if (left < len || p[1] < lo || p[1] > hi)
        return 0;
    for (size_t k = 2; k < len; k++)
        if (p[k] < 0x80 || p[k] > 0xBF)
            return 0;
    return len;
}

static int hexval(unsigned char h)
{
    if (h >= '0' && h <= '9')
        return h - '0';
    if (h >= 'a' && h <= 'f')
        return h - 'a' + 10;
    if (h >= 'A' && h <= 'F')
        return h - 'A' + 10;
    return -1;
}

/* Four hex digits at s[at..]: their value, or -1. */
static long hex4(const struct jc *c, size_t at)
{
    if (at + 4 > c->n)
        return -1;
    long v = 0;
    for (size_t k = 0; k < 4; k++) {
        int h = hexval(c->s[at + k]);
        if (h < 0)
            return -1;
        v = v * 16 + h;
    }
    return v;
}

/* At c->i just past "\u": the escape's 4 digits, and the low half when
 * this is a high surrogate followed by one; a lone surrogate is counted
 * (and rewritten in fix). */
static int u_escape(struct jc *c)
{
    size_t start = c->i - 2; /* the backslash */
    long v = hex4(c, c->i);
    if (v < 0)
        return fail(c, c->i, c->i + 4 > c->n ? "the text ends inside a \\u escape"
                                              : "a \\u escape without 4 hex digits");
    c->i += 4;
    if (v >= 0xD800 && v <= 0xDBFF && c->i + 6 <= c->n && c->s[c->i] == '\\' &&
        c->s[c->i + 1] == 'u') {
        long lo = hex4(c, c->i + 2);
        if (lo >= 0xDC00 && lo <= 0xDFFF) {
            c->i += 6; /* a surrogate pair */
            return 0;
        }
    }
    if (v >= 0xD800 && v <= 0xDFFF) {
        c->lone++;
        if (c->fix)
            memcpy(c->fix + start, "\\ufffd", 6);
    }
    return 0;
}

static int string(struct jc *c)
{
    c->i++; /* the opening quote */
    for (;;) {
        if (!more(c))
            return fail(c, c->n, "the text ends inside a string");
        unsigned char b = c->s[c->i];
        if (b == '"') {
            c->i++;
            return 0;
        }
        if (b < 0x20)
            return fail(c, c->i, "a raw control byte inside a string (RFC 8259: it must be escaped)");
        if (b == '\\') {
            c->i++;
            if (!more(c))
                return fail(c, c->n, "the text ends inside an escape");
            unsigned char x = c->s[c->i++];
            if (x == 'u') {
                if (u_escape(c) < 0)
                    return MP_EPARSE;
            } else if (!strchr("\"\\/bfnrt", x) || x == '\0') {
                return fail(c, c->i - 1, "an invalid escape");
            }
            continue;
        }
        size_t k = utf8_len(c->s + c->i, c->n - c->i);
        if (!k)
            return fail(c, c->i, "invalid UTF-8 inside a string");
        c->i += k;
    }
}

static bool digit(const struct jc *c)
{
    return more(c) && c->s[c->i] >= '0' && c->s[c->i] <= '9';
}

static int digits(struct jc *c, const char *what)
{
    if (!digit(c))
        return fail(c, c->i, more(c) ? what : "the text ends inside a number");
    while (digit(c))
        c->i++;
    return 0;
}

static int number(struct jc *c)
{
    if (c->s[c->i] == '-')
        c->i++;
    if (more(c) && c->s[c->i] == '0')
        c->i++; /* no leading zeros: "01" stops here and fails as data after the value */
    else if (digits(c, "a number without digits") < 0)
        return MP_EPARSE;
    if (more(c) && c->s[c->i] == '.') {
        c->i++;
        if (digits(c, "a fraction without digits") < 0)
            return MP_EPARSE;
    }
    if (more(c) && (c->s[c->i] == 'e' || c->s[c->i] == 'E')) {
        c->i++;
        if (more(c) && (c->s[c->i] == '+' || c->s[c->i] == '-'))
            c->i++;
        if (digits(c, "an exponent without digits") < 0)
            return MP_EPARSE;
    }
    return 0;
}

static int literal(struct jc *c, const char *word)
{
    size_t l = strlen(word);
    if (c->n - c->i < l || memcmp(c->s + c->i, word, l) != 0)
        return fail(c, c->i, c->n - c->i < l && !memcmp(c->s + c->i, word, c->n - c->i)
                                 ? "the text ends inside a literal"
                                 : "an unexpected word where a value should be");
    c->i += l;
    return 0;
}

static int value(struct jc *c);

/* An object or an array at c->i: members until the closing bracket. */
static int container(struct jc *c, bool object)
{
    unsigned char close = object ? '}' : ']';
    if (++c->depth > MP_JSON_MAX_DEPTH)
        return fail(c, c->i, "nesting deeper than 512 levels");
    c->i++;
    ws(c);
    if (more(c) && c->s[c->i] == close) {
        c->i++;
        c->depth--;
        return 0;
    }
    for (;;) {
        if (object) {
            ws(c);
            if (!more(c) || c->s[c->i] != '"')
                return fail(c, c->i, more(c) ? "expected a string key" : "the text ends inside an object");
            if (string(c) < 0)
                return MP_EPARSE;
            ws(c);
            if (!more(c) || c->s[c->i] != ':')
                return fail(c, c->i, more(c) ? "expected ':' after a key" : "the text ends inside an object");
            c->i++;
        }
        if (value(c) < 0)
            return MP_EPARSE;
        ws(c);
        if (more(c) && c->s[c->i] == ',') {
            c->i++;
            continue;
        }
        if (more(c) && c->s[c->i] == close) {
            c->i++;
            c->depth--;
            return 0;
        }
        if (!more(c))
            return fail(c, c->n, object ? "the text ends inside an object" : "the text ends inside an array");
        return fail(c, c->i, object ? "expected ',' or '}'" : "expected ',' or ']'");
    }
}

static int value(struct jc *c)
{
    ws(c);
    if (!more(c))
        return fail(c, c->n, "the text ends where a value should be");
    unsigned char b = c->s[c->i];
    switch (b) {
    case '{':
        return container(c, true);
    case '[':
        return container(c, false);
    case '"':
        return string(c);
    case 't':
        return literal(c, "true");
    case 'f':
        return literal(c, "false");
    case 'n':
        return literal(c, "null");
    default:
        if (b == '-' || (b >= '0' && b <= '9'))
            return number(c);
        if (b >= 0x80 && !utf8_len(c->s + c->i, c->n - c->i))
            return fail(c, c->i, "invalid UTF-8");
        return fail(c, c->i, "an unexpected character where a value should be");
    }
}

int mp_json_check(const char *s, size_t n, char *fix, size_t *lone, struct mp_json_err *e)
{
    struct jc c = {(const unsigned char *)s, n, 0, fix, 0, 0, e};
    int rc = value(&c);
    if (rc == 0) {
        ws(&c);
        if (more(&c))
            rc = fail(&c, c.i, "data after the JSON value");
    }
    if (lone)
        *lone = c.lone;
    return rc;
}
