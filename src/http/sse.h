/* sse.h - incremental Server-Sent Events parser and vLLM OpenAI stream chunk interpreter.
 *
 * Part 1: the framing parser (pure, no I/O, no allocation per byte).
 *
 *   struct mp_sse p;  mp_sse_init(&p, 0);          (or zero-initialise: same as max_event 0)
 *   mp_sse_feed(&p, buf, len, cb, ud);             any chunk boundary, repeatedly
 *   mp_sse_finish(&p, cb, ud);                     at end of stream
 *   mp_sse_free(&p);
 *
 * Follows the WHATWG "event stream" interpretation: lines end in "\n", "\r\n" or "\r" (a CR at
 * the end of one chunk and an LF at the start of the next count as one ending); a leading UTF-8
 * BOM is skipped; ":" lines are comments; "data:" values are joined with "\n"; "event:" and
 * "id:" are kept (bounded, truncated); "retry:" and unknown fields are ignored; a blank line
 * dispatches the event if at least one data line was seen. Bytes are passed through untouched
 * (invalid UTF-8 included; NUL bytes are kept, so use data_len, not strlen).
 * At the end of the stream an event still being assembled (data lines without the blank line
 * that dispatches them, or a line cut before its end) is discarded, never dispatched, as the
 * spec says: the stream was cut inside that event. mp_sse_finish() counts it in p->unterminated
 * (its bytes), so the caller can say "stream cut" rather than judge half an event as JSON.
 *
 * Bounds: an event whose data would exceed max_event bytes (or with a line longer than
 * max_event + 16) is dropped whole;
 * the parser skips to the next blank line, counts it in p->oversize and the feed/finish call
 * that completes it returns MP_ELIMIT after processing the rest of the input. The parser stays
 * usable. Memory held: at most about 2 * max_event bytes.
 *
 * The event passed to the callback is a view into the parser's buffers, valid only during the
 * callback. data is NUL-terminated at data[data_len] for convenience. */
#ifndef MP_SSE_H
#define MP_SSE_H

#include "compat.h"

#define MP_SSE_DEFAULT_MAX_EVENT ((size_t)1 << 20) /* 1 MiB */
#define MP_SSE_FIELD_MAX 128                       /* event: / id: kept up to this many bytes */

struct mp_sse_event {
    const char *data;  /* joined data lines, NUL-terminated view */
    size_t data_len;
    const char *event; /* "event:" value or "" */
    const char *id;    /* last "id:" value or "" */
};

/* Return 0 to continue; any other value stops the feed, which returns that value (the rest of
 * that input is dropped; reset with mp_sse_init before reusing the parser). */
typedef int (*mp_sse_cb)(void *ud, const struct mp_sse_event *ev);

struct mp_sse {
    size_t max_event;   /* 0 = MP_SSE_DEFAULT_MAX_EVENT */
    char *line;         /* partial line carried across feeds (owned) */
    size_t line_len, line_cap;
    char *data;         /* data buffer of the event being assembled (owned) */
    size_t data_len, data_cap;
    char event[MP_SSE_FIELD_MAX + 1];
    char id[MP_SSE_FIELD_MAX + 1];
    bool has_data;      /* a data: line was seen for the pending event */
    bool skip_line;     /* current line overflowed: ignore until its end */
    bool skip_event;    /* current event overflowed: drop at dispatch */
    bool cr_pending;    /* last byte fed was CR: a following LF belongs to it */
    uint8_t bom_state;  /* 0..2 bytes of a BOM matched; 3 = past the start */
    /* statistics (read-only for callers) */
    uint64_t bytes, events, oversize;
    uint64_t unterminated; /* set by mp_sse_finish: bytes of the event the stream ended inside
                            * (discarded), 0 when it ended between events */
};

/* Initialise (also resets). max_event 0 = default. Does not allocate. */
void mp_sse_init(struct mp_sse *p, size_t max_event);
/* Release buffers; p can be re-initialised. Accepts a zeroed parser. */
void mp_sse_free(struct mp_sse *p);
/* Feed len bytes. Returns 0, MP_ELIMIT (an oversize event was dropped; parsing went on), or the
 * callback's non-zero value. */
int mp_sse_feed(struct mp_sse *p, const char *buf, size_t len, mp_sse_cb cb, void *ud);
/* End of stream: an event the stream ended inside (p->unterminated, above) is discarded; an
 * oversize one still pending is MP_ELIMIT. Calls cb for nothing. Returns 0 or MP_ELIMIT. The
 * parser is reset to the start-of-stream state afterwards (the statistics are kept). */
int mp_sse_finish(struct mp_sse *p, mp_sse_cb cb, void *ud);

/* Part 2: interpreting one data payload of vLLM's OpenAI-compatible stream (see
 * docs/metrics.md and vllm-api.md §1-§4). Every field is optional; unknown fields are ignored. */
enum mp_sse_chunk_kind {
    MP_SSE_CHUNK_DONE = 1,   /* "[DONE]" */
    MP_SSE_CHUNK_DATA,       /* a completion/chat chunk (content, finish, or usage chunk) */
    MP_SSE_CHUNK_ERROR,      /* in-band error event: {"error": {...}} or {"object": "error", ...} */
    MP_SSE_CHUNK_MALFORMED,  /* not JSON by RFC 8259 (http/jsoncheck.h: raw control bytes and
                              * invalid UTF-8 in strings included), or not an object */
};

struct mp_sse_chunk {
    enum mp_sse_chunk_kind kind;
    /* DATA: */
    bool has_choice;          /* choices[] non-empty (vllm bench serve counts this as a token event) */
    bool role_only;           /* chat role announcement: delta has "role" and empty/no content */
    const char *text;         /* choices[0].text or .delta.content, NULL if absent/null */
    size_t text_len;
    const char *reasoning;    /* .delta.reasoning_content or .delta.reasoning, NULL if absent */
    size_t reasoning_len;
    const char *finish_reason; /* NULL while null/absent */
    bool has_usage;           /* a usage object with completion_tokens */
    long completion_tokens, prompt_tokens; /* -1 when absent */
    /* ERROR: */
    const char *err_message;  /* "" if none */
    const char *err_type;     /* "" if none */
    long err_code;            /* -1 if none */
    /* MALFORMED: byte offset (0-based) into the payload where parsing failed, and why (static
     * text: "a raw control byte inside a string ...", "invalid UTF-8 inside a string", "the text
     * ends inside a string", "not a JSON object", ...) */
    size_t err_pos;
    const char *err_why;
    void *priv_;              /* cJSON tree that the strings point into */
};

/* Interpret one event's data (need not be NUL-terminated). Fills *out (strings are views valid
 * until mp_sse_chunk_release). Returns 0, or MP_EPARSE with out->kind MALFORMED and err_pos set.
 * Always call mp_sse_chunk_release afterwards. */
int mp_sse_chunk_parse(const char *data, size_t len, struct mp_sse_chunk *out);
void mp_sse_chunk_release(struct mp_sse_chunk *c);

/* Extract a human message from an HTTP error body (vLLM nested {"error":{"message":...}}, flat
 * {"object":"error","message":...}, {"error":"Unauthorized"}, FastAPI {"detail":...}); falls back
 * to the first bytes of the body with control characters replaced. Writes a NUL-terminated string
 * into out (outsz > 0). */
void mp_sse_error_body_message(const char *body, size_t len, char *out, size_t outsz);

#endif
