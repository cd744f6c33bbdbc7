/* http.c - see http.h. */
#include "compat.h"

#include "http.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

const char *re_http_reason(int status)
{
    switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 413: return "Request Entity Too Large";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Unknown";
    }
}

static const char *find_head_end(const char *buf, size_t len)
{
    for (size_t i = 0; i + 3 < len; i++)
        if (buf[i] == '\r' && buf[i + 1] == '\n' && buf[i + 2] == '\r' && buf[i + 3] == '\n')
            return buf + i + 4;
    return NULL;
}

static void copy_field(char *dst, size_t cap, const char *p, size_t n)
{
    if (n >= cap)
        n = cap - 1;
    memcpy(dst, p, n);
    dst[n] = 0;
}

long re_http_parse(const char *buf, size_t len, size_t max_body, struct re_http_req *out)
{
    memset(out, 0, sizeof(*out));
    const char *end = find_head_end(buf, len);
    if (!end)
        return len > RE_HTTP_MAX_HEAD ? -431 : 0;
    size_t head_len = (size_t)(end - buf);
    if (head_len > RE_HTTP_MAX_HEAD)
        return -431;

    /* request line: METHOD SP TARGET SP HTTP/1.x CRLF */
    const char *p = buf;
    const char *eol = memchr(p, '\r', head_len);
    const char *sp1 = memchr(p, ' ', (size_t)(eol - p));
    if (!sp1 || sp1 == p || (size_t)(sp1 - p) >= sizeof(out->method))
        return -400;
    for (const char *q = p; q < sp1; q++)
        if (!isupper((unsigned char)*q))
            return -400;
    copy_field(out->method, sizeof(out->method), p, (size_t)(sp1 - p));
    const char *target = sp1 + 1;
    const char *sp2 = memchr(target, ' ', (size_t)(eol - target));
    if (!sp2 || sp2 == target || *target != '/')
        return -400;
    const char *qm = memchr(target, '?', (size_t)(sp2 - target));
    const char *pend = qm ? qm : sp2;
    if ((size_t)(pend - target) >= sizeof(out->path))
        return -431;
    copy_field(out->path, sizeof(out->path), target, (size_t)(pend - target));
    const char *ver = sp2 + 1;
    if (eol - ver != 8 || memcmp(ver, "HTTP/1.", 7) != 0 || (ver[7] != '0' && ver[7] != '1'))
        return -505;
    out->minor = ver[7] - '0';
    out->keep_alive = out->minor == 1;

    bool chunked = false;
    p = eol + 2;
    while (p < end - 2) {
        const char *le = memchr(p, '\r', (size_t)(end - p));
        if (!le || le[1] != '\n')
            return -400;
        const char *colon = memchr(p, ':', (size_t)(le - p));
        if (!colon || colon == p)
            return -400;
        size_t kn = (size_t)(colon - p);
        const char *v = colon + 1;
        while (v < le && (*v == ' ' || *v == '\t'))
            v++;
        const char *ve = le;
        while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
            ve--;
        size_t vn = (size_t)(ve - v);
        if (kn == 14 && !strncasecmp(p, "Content-Length", 14)) {
            if (vn == 0 || vn > 18)
                return -400;
            size_t cl = 0;
            for (size_t i = 0; i < vn; i++) {
                if (!isdigit((unsigned char)v[i]))
                    return -400;
                cl = cl * 10 + (size_t)(v[i] - '0');
            }
            if (out->has_body && cl != out->content_length)
                return -400;
            out->has_body = true;
            out->content_length = cl;
        } else if (kn == 17 && !strncasecmp(p, "Transfer-Encoding", 17)) {
            if (!(vn == 8 && !strncasecmp(v, "identity", 8)))
                chunked = true;
        } else if (kn == 10 && !strncasecmp(p, "Connection", 10)) {
            if (vn >= 5 && !strncasecmp(v, "close", 5))
                out->keep_alive = false;
            else if (vn >= 10 && !strncasecmp(v, "keep-alive", 10))
                out->keep_alive = true;
        } else if (kn == 12 && !strncasecmp(p, "Content-Type", 12)) {
            copy_field(out->content_type, sizeof(out->content_type), v, vn);
        } else if (kn == 12 && !strncasecmp(p, "X-Request-Id", 12)) {
            copy_field(out->request_id, sizeof(out->request_id), v, vn);
        }
        p = le + 2;
    }
    if (chunked)
        return -501;
    if (out->content_length > max_body)
        return -413;
    if (len - head_len < out->content_length)
        return 0;
    out->body = end;
    out->body_len = out->content_length;
    return (long)(head_len + out->content_length);
}
