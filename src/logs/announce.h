/* announce.h - the address an engine says it listens on, read from one of
 * its log lines. Pure: no I/O, no allocation.
 *
 * Recognised lines (anywhere in the line, after any prefix):
 *   vLLM  "Starting vLLM API server 0 on http://0.0.0.0:8000"   (v0.10 - v0.17)
 *         "Starting vLLM API server on http://0.0.0.0:8000"     (older)
 *         "Starting vLLM server on http://0.0.0.0:8000"         (2026 builds)
 *   uvicorn "Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)"
 * Addresses: http[s]://HOST:PORT, http[s]://[V6]:PORT, unix:PATH (--uds);
 * also "unix socket PATH" in uvicorn's phrasing. */
#ifndef MP_ANNOUNCE_H
#define MP_ANNOUNCE_H

#include <stddef.h>

enum mp_announce_kind {
    MP_ANNOUNCE_NONE = 0, /* not an announcement (or an unreadable one) */
    MP_ANNOUNCE_TCP,      /* host and port are set */
    MP_ANNOUNCE_UNIX,     /* path is set */
};

struct mp_announce {
    enum mp_announce_kind kind;
    char host[256]; /* without brackets for IPv6 */
    int port;       /* 1..65535 */
    char path[256]; /* unix socket path (cut to fit) */
};

/* Parse line[0..len) (need not be NUL-terminated). Fills *out and returns
 * its kind; MP_ANNOUNCE_NONE leaves *out zeroed. */
enum mp_announce_kind mp_announce_parse(const char *line, size_t len, struct mp_announce *out);

#endif
