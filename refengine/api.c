/* api.c - see api.h. */
#include "compat.h"

#include "api.h"
#include "xalloc.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

void re_api_req_free(struct re_api_req *r)
{
    free(r->prompt);
    free(r->model);
    free(r->request_id);
    memset(r, 0, sizeof(*r));
}

static int bad(char *msg, size_t msgcap, char *type, size_t typecap, char *param,
               size_t paramcap, const char *m, const char *t, const char *p)
{
    snprintf(msg, msgcap, "%s", m);
    snprintf(type, typecap, "%s", t);
    snprintf(param, paramcap, "%s", p ? p : "");
    return 400;
}

#define BAD(m, t, p) bad(msg, msgcap, type, typecap, param, paramcap, (m), (t), (p))

static void add_text(struct buf *b, const cJSON *content)
{
    if (cJSON_IsString(content)) {
        buf_adds(b, content->valuestring);
    } else if (cJSON_IsArray(content)) {
        const cJSON *part;
        cJSON_ArrayForEach(part, content)
        {
            const cJSON *t = cJSON_GetObjectItemCaseSensitive(part, "text");
            if (cJSON_IsString(t))
                buf_adds(b, t->valuestring);
        }
    }
}

int re_api_parse(bool chat, const char *body, size_t len, struct re_api_req *out, char *msg,
                 size_t msgcap, char *type, size_t typecap, char *param, size_t paramcap)
{
    memset(out, 0, sizeof(*out));
    out->chat = chat;
    out->max_tokens = -1;
    out->greedy = true;
    int rc = 0;
    struct buf prompt = BUF_INIT;
    const char *errp = NULL;
    cJSON *j = cJSON_ParseWithLengthOpts(body, len, &errp, 0);
    if (!j) {
        char m[256], pp[32];
        size_t off = errp ? (size_t)(errp - body) : 0;
        snprintf(m, sizeof(m),
                 "1 validation error:\n  {'type': 'json_invalid', 'loc': ('body', %zu), 'msg': "
                 "'JSON decode error', 'input': {}, 'ctx': {'error': 'Expecting value'}}",
                 off);
        snprintf(pp, sizeof(pp), "body.%zu", off);
        rc = BAD(m, "Bad Request", pp);
        goto out;
    }
    if (!cJSON_IsObject(j)) {
        rc = BAD("1 validation error:\n  {'type': 'model_attributes_type', 'loc': ('body',), "
                 "'msg': 'Input should be a valid dictionary or object to extract fields from'}",
                 "Bad Request", "body");
        goto out;
    }
    const cJSON *v;
    if (chat) {
        v = cJSON_GetObjectItemCaseSensitive(j, "messages");
        if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) == 0) {
            rc = BAD("1 validation error:\n  {'type': 'missing', 'loc': ('body', 'messages'), "
                     "'msg': 'Field required'}",
                     "Bad Request", "messages");
            goto out;
        }
        const cJSON *m;
        cJSON_ArrayForEach(m, v)
        {
            const cJSON *c = cJSON_GetObjectItemCaseSensitive(m, "content");
            if (prompt.len)
                buf_addc(&prompt, '\n');
            add_text(&prompt, c);
        }
    } else {
        v = cJSON_GetObjectItemCaseSensitive(j, "prompt");
        if (cJSON_IsString(v) && v->valuestring[0]) {
            buf_adds(&prompt, v->valuestring);
        } else if (cJSON_IsArray(v) && cJSON_GetArraySize(v) > 0) {
            const cJSON *e;
            cJSON_ArrayForEach(e, v)
            {
                if (cJSON_IsString(e))
                    buf_adds(&prompt, e->valuestring);
                else if (cJSON_IsNumber(e))
                    buf_printf(&prompt, " %d", e->valueint);
            }
        } else {
            rc = BAD("Either prompt or prompt_embeds must be provided and non-empty.",
                     "BadRequestError", NULL);
            goto out;
        }
    }
    v = cJSON_GetObjectItemCaseSensitive(j, "model");
    if (cJSON_IsString(v))
        out->model = xstrdup(v->valuestring);
    v = cJSON_GetObjectItemCaseSensitive(j, "request_id");
    if (cJSON_IsString(v) && v->valuestring[0] && strlen(v->valuestring) < 128)
        out->request_id = xstrdup(v->valuestring);
    v = cJSON_GetObjectItemCaseSensitive(j, chat ? "max_completion_tokens" : "max_tokens");
    if (chat && (!v || cJSON_IsNull(v)))
        v = cJSON_GetObjectItemCaseSensitive(j, "max_tokens");
    if (v && !cJSON_IsNull(v)) {
        if (!cJSON_IsNumber(v) || v->valuedouble < 1 || v->valuedouble > 1e7 ||
            floor(v->valuedouble) != v->valuedouble) {
            rc = BAD("max_tokens must be at least 1, got invalid value.", "BadRequestError",
                     "max_tokens");
            goto out;
        }
        out->max_tokens = (long)v->valuedouble;
    }
    v = cJSON_GetObjectItemCaseSensitive(j, "min_tokens");
    if (cJSON_IsNumber(v) && v->valuedouble > 0 && v->valuedouble < 1e7)
        out->min_tokens = (unsigned)v->valuedouble;
    out->stream = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "stream"));
    out->ignore_eos = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "ignore_eos"));
    v = cJSON_GetObjectItemCaseSensitive(j, "temperature");
    if (v && !cJSON_IsNull(v)) {
        if (!cJSON_IsNumber(v) || v->valuedouble < 0) {
            rc = BAD("temperature must be non-negative, got invalid value.", "BadRequestError",
                     "temperature");
            goto out;
        }
        out->greedy = v->valuedouble == 0;
    }
    v = cJSON_GetObjectItemCaseSensitive(j, "seed");
    if (cJSON_IsNumber(v)) {
        out->has_seed = true;
        out->seed = (int64_t)v->valuedouble;
    }
    v = cJSON_GetObjectItemCaseSensitive(j, "stream_options");
    if (v && !cJSON_IsNull(v)) {
        if (!out->stream) {
            rc = BAD("Stream options can only be defined when `stream=True`.", "Bad Request",
                     "stream_options");
            goto out;
        }
        const cJSON *iu = cJSON_GetObjectItemCaseSensitive(v, "include_usage");
        out->include_usage = !iu || cJSON_IsNull(iu) || cJSON_IsTrue(iu); /* default true */
        out->continuous_usage =
            out->include_usage &&
            cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(v, "continuous_usage_stats"));
    }
out:
    cJSON_Delete(j);
    if (rc == 0) {
        out->prompt_len = prompt.len;
        out->prompt = buf_detach(&prompt, NULL);
    } else {
        buf_release(&prompt);
        re_api_req_free(out);
    }
    return rc;
}

static void head(struct buf *b, const struct re_api_ctx *c, const char *object)
{
    buf_adds(b, "{\"id\":");
    buf_add_json_str(b, c->id, strlen(c->id));
    buf_printf(b, ",\"object\":\"%s\",\"created\":%ld,\"model\":", object, c->created);
    buf_add_json_str(b, c->model, strlen(c->model));
}

static void usage_obj(struct buf *b, unsigned p, unsigned n)
{
    buf_printf(b, "{\"prompt_tokens\":%u,\"total_tokens\":%u,\"completion_tokens\":%u}", p, p + n,
               n);
}

void re_api_chat_role_chunk(struct buf *b, const struct re_api_ctx *c, bool continuous)
{
    head(b, c, "chat.completion.chunk");
    buf_adds(b, ",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},"
                "\"logprobs\":null,\"finish_reason\":null}]");
    if (continuous) {
        buf_adds(b, ",\"usage\":");
        usage_obj(b, c->prompt_tokens, 0);
    }
    if (c->shape->token_fields)
        buf_adds(b, ",\"prompt_token_ids\":null");
    buf_addc(b, '}');
}

void re_api_chunk(struct buf *b, const struct re_api_ctx *c, const char *text, size_t n,
                  const char *finish, bool continuous, unsigned completion_tokens,
                  bool last_no_usage)
{
    const struct re_api_shape *s = c->shape;
    if (c->chat) {
        head(b, c, "chat.completion.chunk");
        buf_adds(b, ",\"choices\":[{\"index\":0,\"delta\":{\"content\":");
        buf_add_json_str(b, text, n);
        buf_adds(b, "},\"logprobs\":null,\"finish_reason\":");
        if (finish)
            buf_printf(b, "\"%s\",\"stop_reason\":null", finish);
        else
            buf_adds(b, "null");
        if (s->token_fields)
            buf_adds(b, ",\"token_ids\":null");
        buf_adds(b, "}]");
        if (continuous) {
            buf_adds(b, ",\"usage\":");
            usage_obj(b, c->prompt_tokens, completion_tokens);
        }
    } else {
        head(b, c, "text_completion");
        buf_adds(b, ",\"choices\":[{\"index\":0,\"text\":");
        buf_add_json_str(b, text, n);
        buf_printf(b, ",\"logprobs\":%s,\"finish_reason\":",
                   c->logprobs_json ? c->logprobs_json : "null");
        if (finish)
            buf_printf(b, "\"%s\"", finish);
        else
            buf_adds(b, "null");
        buf_adds(b, ",\"stop_reason\":null");
        if (s->token_fields)
            buf_adds(b, ",\"prompt_token_ids\":null,\"token_ids\":null");
        buf_adds(b, "}]");
        if (continuous) {
            buf_adds(b, ",\"usage\":");
            usage_obj(b, c->prompt_tokens, completion_tokens);
        } else if (s->usage_key) {
            buf_adds(b, ",\"usage\":null");
        }
    }
    if (finish && last_no_usage && s->fingerprint)
        buf_printf(b, ",\"system_fingerprint\":\"vllm-%s\"", s->version);
    buf_addc(b, '}');
}

void re_api_usage_chunk(struct buf *b, const struct re_api_ctx *c, unsigned completion_tokens)
{
    head(b, c, c->chat ? "chat.completion.chunk" : "text_completion");
    buf_adds(b, ",\"choices\":[],\"usage\":");
    usage_obj(b, c->prompt_tokens, completion_tokens);
    if (c->shape->fingerprint)
        buf_printf(b, ",\"system_fingerprint\":\"vllm-%s\"", c->shape->version);
    buf_addc(b, '}');
}

void re_api_response(struct buf *b, const struct re_api_ctx *c, const char *text, size_t n,
                     const char *finish, unsigned completion_tokens)
{
    const struct re_api_shape *s = c->shape;
    head(b, c, c->chat ? "chat.completion" : "text_completion");
    if (c->chat) {
        buf_adds(b, ",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":");
        buf_add_json_str(b, text, n);
        buf_adds(b, ",\"refusal\":null,\"annotations\":null,\"audio\":null,\"function_call\":null,"
                    "\"tool_calls\":[],\"reasoning_content\":null},\"logprobs\":null");
        buf_printf(b, ",\"finish_reason\":\"%s\",\"stop_reason\":null", finish);
        if (s->token_fields)
            buf_adds(b, ",\"token_ids\":null");
        buf_adds(b, "}],\"service_tier\":null,\"system_fingerprint\":null,\"usage\":");
    } else {
        buf_adds(b, ",\"choices\":[{\"index\":0,\"text\":");
        buf_add_json_str(b, text, n);
        buf_printf(b, ",\"logprobs\":%s,\"finish_reason\":\"%s\",\"stop_reason\":null",
                   c->logprobs_json ? c->logprobs_json : "null", finish);
        if (s->token_fields)
            buf_adds(b, ",\"token_ids\":null");
        buf_printf(b, ",\"prompt_logprobs\":%s",
                   c->prompt_logprobs_json ? c->prompt_logprobs_json : "null");
        if (s->token_fields)
            buf_adds(b, ",\"prompt_token_ids\":null");
        buf_adds(b, "}],\"service_tier\":null,\"system_fingerprint\":null,\"usage\":");
    }
    unsigned p = c->prompt_tokens;
    buf_printf(b,
               "{\"prompt_tokens\":%u,\"total_tokens\":%u,\"completion_tokens\":%u,"
               "\"prompt_tokens_details\":null}",
               p, p + completion_tokens, completion_tokens);
    if (c->chat)
        buf_adds(b, ",\"prompt_logprobs\":null,\"prompt_token_ids\":null");
    buf_adds(b, ",\"kv_transfer_params\":null}");
}

void re_api_error(struct buf *b, const struct re_api_shape *s, int code, const char *type,
                  const char *msg, const char *param)
{
    buf_adds(b, s->nested_errors ? "{\"error\":{\"message\":" : "{\"object\":\"error\",\"message\":");
    buf_add_json_str(b, msg, strlen(msg));
    buf_adds(b, ",\"type\":");
    buf_add_json_str(b, type, strlen(type));
    buf_adds(b, ",\"param\":");
    if (param && *param)
        buf_add_json_str(b, param, strlen(param));
    else
        buf_adds(b, "null");
    buf_printf(b, ",\"code\":%d}%s", code, s->nested_errors ? "}" : "");
}

void re_api_stream_error(struct buf *b, const struct re_api_shape *s, const char *msg)
{
    /* v0.10.1-0.1x passed str(e): default type/status BadRequestError/400;
     * newer map the exception: InternalServerError/500 */
    bool newer = s->dead_json;
    buf_adds(b, s->nested_errors ? "{\"error\": {\"message\": " : "{\"object\": \"error\", \"message\": ");
    buf_add_json_str(b, msg, strlen(msg));
    buf_printf(b, ", \"type\": \"%s\", \"param\": null, \"code\": %d}%s",
               newer ? "InternalServerError" : "BadRequestError", newer ? 500 : 400,
               s->nested_errors ? "}" : "");
}
