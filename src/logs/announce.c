#include "logs/announce.h"

#include <string.h>

/* first occurrence of needle (NUL-terminated) in s[0..n), or NULL */
static const char *find(const char *s, size_t n, const char *needle)
{
    size_t m = strlen(needle);
    if (m > n)
        return NULL;
    for (size_t i = 0; i + m <= n; i++) {
        if (s[i] == needle[0] && !memcmp(s + i, needle, m))
            return s + i;
    }
    return NULL;
}

static int starts(const char *p, const char *end, const char *lit)
{
    size_t m = strlen(lit);
    return (size_t)(end - p) >= m && !memcmp(p, lit, m);
}

static void copy_cut(char *dst, size_t cap, const char *p, size_t n)
{
    if (n >= cap)
        n = cap - 1;
    memcpy(dst, p, n);
    dst[n] = '\0';
}

/* Parse the address at p (up to end or whitespace) into *out. */
static enum mp_announce_kind parse_addr(const char *p, const char *end, struct mp_announce *out)
{
    const char *e = p;
    while (e < end && *e != ' ' && *e != '\t' && *e != '\r')
        e++;
    if (starts(p, e, "unix:")) {
        p += 5;
        if (starts(p, e, "//"))
            p += 2;
        if (p == e)
            return MP_ANNOUNCE_NONE;
        copy_cut(out->path, sizeof(out->path), p, (size_t)(e - p));
        return out->kind = MP_ANNOUNCE_UNIX;
    }
    if (starts(p, e, "http://"))
        p += 7;
    else if (starts(p, e, "https://"))
        p += 8;
    else
        return MP_ANNOUNCE_NONE;
    const char *hs, *he, *q;
    if (p < e && *p == '[') {
        hs = p + 1;
        he = memchr(hs, ']', (size_t)(e - hs));
        if (!he || he + 1 >= e || he[1] != ':')
            return MP_ANNOUNCE_NONE;
        q = he + 2;
    } else {
        hs = p;
        he = p;
        while (he < e && *he != ':' && *he != '/')
            he++;
        if (he >= e || *he != ':')
            return MP_ANNOUNCE_NONE;
        q = he + 1;
    }
    long port = 0;
    const char *d = q;
    while (d < e && *d >= '0' && *d <= '9' && port <= 65535)
        port = port * 10 + (*d++ - '0');
    if (d == q || port < 1 || port > 65535 || (d < e && *d != '/'))
        return MP_ANNOUNCE_NONE;
    copy_cut(out->host, sizeof(out->host), hs, (size_t)(he - hs));
    out->port = (int)port;
    return out->kind = MP_ANNOUNCE_TCP;
}

enum mp_announce_kind mp_announce_parse(const char *line, size_t len, struct mp_announce *out)
{
    memset(out, 0, sizeof(*out));
    const char *end = line + len;
    const char *p = find(line, len, "Starting vLLM ");
    if (p) {
        p += strlen("Starting vLLM ");
        if (starts(p, end, "API "))
            p += 4;
        if (!starts(p, end, "server"))
            return MP_ANNOUNCE_NONE;
        p += 6;
        if (starts(p, end, " ") && p + 1 < end && p[1] >= '0' && p[1] <= '9') {
            p++;
            while (p < end && *p >= '0' && *p <= '9')
                p++;
        }
        if (!starts(p, end, " on "))
            return MP_ANNOUNCE_NONE;
        return parse_addr(p + 4, end, out);
    }
    p = find(line, len, "Uvicorn running on ");
    if (p) {
        p += strlen("Uvicorn running on ");
        if (starts(p, end, "unix socket ")) {
            p += strlen("unix socket ");
            const char *e = p;
            while (e < end && *e != ' ')
                e++;
            if (e == p)
                return MP_ANNOUNCE_NONE;
            copy_cut(out->path, sizeof(out->path), p, (size_t)(e - p));
            return out->kind = MP_ANNOUNCE_UNIX;
        }
        return parse_addr(p, end, out);
    }
    return MP_ANNOUNCE_NONE;
}
