/* api.h - OpenAI-compatible request parsing and response shapes of vLLM
 * (pure). Shapes follow reference/vllm-api.md §1-§4 for the emulated
 * version: see struct re_api_shape. */
#ifndef RE_API_H
#define RE_API_H

#include "compat.h"
#include "buf.h"

#define RE_API_MAX_BODY (4u << 20) /* larger bodies get 413 */

struct re_api_req {
    bool chat;
    char *prompt;      /* owned: completion prompt or chat messages joined */
    size_t prompt_len;
    char *model;       /* owned or NULL */
    char *request_id;  /* owned or NULL (body field "request_id") */
    long max_tokens;   /* -1 = default */
    unsigned min_tokens;
    bool stream, include_usage, continuous_usage, ignore_eos;
    bool greedy;       /* temperature absent or 0 */
    bool has_seed;
    int64_t seed;
};

/* Parse a request body. Returns 0, or an HTTP status (400) with vLLM's
 * message, error type and param written to msg/type/param. */
int re_api_parse(bool chat, const char *body, size_t len, struct re_api_req *out, char *msg,
                 size_t msgcap, char *type, size_t typecap, char *param, size_t paramcap);
void re_api_req_free(struct re_api_req *r);

/* Which fields the emulated version puts on the wire. */
struct re_api_shape {
    bool nested_errors; /* v0.10.1+: {"error":{...}} */
    bool token_fields;  /* v0.10.2+: token_ids / prompt_token_ids */
    bool usage_key;     /* completion chunks carry "usage":null (< v0.20) */
    bool fingerprint;   /* v0.20+: system_fingerprint on terminal/usage chunks */
    bool dead_json;     /* v0.20+: engine-dead 500 has a JSON body */
    const char *version;
};

struct re_api_ctx {
    const struct re_api_shape *shape;
    bool chat;
    const char *id;   /* "cmpl-..." / "chatcmpl-..." */
    long created;
    const char *model;
    unsigned prompt_tokens;
    /* completions: the choice's "logprobs" / "prompt_logprobs" JSON values
     * (refengine/logprobs.h), NULL = null */
    const char *logprobs_json, *prompt_logprobs_json;
};

/* Each appends one JSON object (no "data: " framing). */
void re_api_chat_role_chunk(struct buf *b, const struct re_api_ctx *c, bool continuous);
/* A content chunk; finish = NULL for a middle chunk. completion_tokens is
 * the running count (used with continuous usage). last_no_usage: this is the
 * terminal chunk and no usage chunk follows (fingerprint goes here). */
void re_api_chunk(struct buf *b, const struct re_api_ctx *c, const char *text, size_t n,
                  const char *finish, bool continuous, unsigned completion_tokens,
                  bool last_no_usage);
void re_api_usage_chunk(struct buf *b, const struct re_api_ctx *c, unsigned completion_tokens);
void re_api_response(struct buf *b, const struct re_api_ctx *c, const char *text, size_t n,
                     const char *finish, unsigned completion_tokens);
/* Error body as JSONResponse (compact) */
void re_api_error(struct buf *b, const struct re_api_shape *s, int code, const char *type,
                  const char *msg, const char *param);
/* In-stream error event payload (json.dumps spacing) */
void re_api_stream_error(struct buf *b, const struct re_api_shape *s, const char *msg);

#endif
