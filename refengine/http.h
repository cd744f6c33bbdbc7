/* http.h - incremental HTTP/1.1 request parsing for refengine (pure).
 *
 * re_http_parse() looks at the bytes received so far on a connection and
 * says whether a whole request (head + Content-Length body) is there.
 * Pointers in struct re_http_req point into the caller's buffer. */
#ifndef RE_HTTP_H
#define RE_HTTP_H

#include "compat.h"

#define RE_HTTP_MAX_HEAD (64 * 1024)

struct re_http_req {
    char method[16];
    char path[1024];  /* without the query string */
    int minor;        /* HTTP/1.<minor> */
    bool keep_alive;
    bool has_body;
    size_t content_length;
    char content_type[128];
    char request_id[128]; /* X-Request-Id, "" if absent */
    const char *body;
    size_t body_len;
};

/* Returns the number of bytes the request occupies (> 0) when complete,
 * 0 when more bytes are needed, or a negative HTTP status to answer with
 * before closing: -400 malformed, -413 body over max_body, -431 head too
 * large, -501 unsupported transfer encoding, -505 bad version. */
long re_http_parse(const char *buf, size_t len, size_t max_body, struct re_http_req *out);

/* Reason phrase for a status ("OK", "Not Found", ...). */
const char *re_http_reason(int status);

#endif
