/* lpparse.c - request bodies of the scoring pass and the parsers of the
 * engine's logprobs (quality/score.h). vLLM's shapes
 * (vllm/entrypoints/openai/completion/protocol.py, CompletionResponseChoice):
 *   "prompt_logprobs": [null, {"<id>": {"logprob": -2.1, "rank": 4,
 *                       "decoded_token": " the"}, ...}, ...]
 *   "logprobs": {"text_offset": [...], "token_logprobs": [...],
 *                "tokens": [...], "top_logprobs": [{" the": -0.1, ...}, ...]}
 * A logprob may be null (pydantic writes -inf as null): read as -9999, the
 * floor vLLM clamps to in the completions API. */
#include "quality/score.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "xalloc.h"

#define LP_FLOOR (-9999.0)

/* ---- request bodies ---- */

static void body_head(struct buf *b, const char *model, const char *prompt)
{
    buf_adds(b, "{");
    if (model && *model) {
        buf_adds(b, "\"model\":");
        buf_add_json_str(b, model, strlen(model));
        buf_adds(b, ",");
    }
    buf_adds(b, "\"prompt\":");
    buf_add_json_str(b, prompt, strlen(prompt));
}

char *mp_score_plp_body(const char *model, const char *passage, int k)
{
    struct buf b = BUF_INIT;
    body_head(&b, model, passage);
    buf_printf(&b, ",\"max_tokens\":1,\"temperature\":0,\"prompt_logprobs\":%d,\"stream\":false}",
               k);
    return buf_detach(&b, NULL);
}

char *mp_score_greedy_body(const char *model, const char *prompt, int max_tokens, int k)
{
    struct buf b = BUF_INIT;
    body_head(&b, model, prompt);
    buf_printf(&b, ",\"max_tokens\":%d,\"temperature\":0,\"logprobs\":%d,\"stream\":false}",
               max_tokens, k);
    return buf_detach(&b, NULL);
}

char *mp_score_text_body(const char *model, const char *prompt, int max_tokens,
                         const char *const *stop)
{
    struct buf b = BUF_INIT;
    body_head(&b, model, prompt);
    buf_printf(&b, ",\"max_tokens\":%d,\"temperature\":0", max_tokens);
    if (stop && stop[0]) {
        buf_adds(&b, ",\"stop\":[");
        for (size_t i = 0; stop[i]; i++) {
            if (i)
                buf_addc(&b, ',');
            buf_add_json_str(&b, stop[i], strlen(stop[i]));
        }
        buf_addc(&b, ']');
    }
    buf_adds(&b, ",\"stream\":false}");
    return buf_detach(&b, NULL);
}

/* ---- parsing ---- */

static int perr(char *err, size_t errn, const char *what)
{
    snprintf(err, errn, "%s", what);
    return MP_EPARSE;
}

/* The body's choices[0], or NULL with err set. */
static const cJSON *first_choice(const cJSON *j, char *err, size_t errn)
{
    if (!cJSON_IsObject(j)) {
        perr(err, errn, "the response is not a JSON object");
        return NULL;
    }
    const cJSON *ch = cJSON_GetObjectItemCaseSensitive(j, "choices");
    const cJSON *c0 = cJSON_IsArray(ch) ? cJSON_GetArrayItem(ch, 0) : NULL;
    if (!cJSON_IsObject(c0)) {
        perr(err, errn, "the response has no choices[0] object");
        return NULL;
    }
    return c0;
}

static cJSON *parse_body(const char *body, size_t len, char *err, size_t errn)
{
    const char *end = NULL;
    cJSON *j = body ? cJSON_ParseWithLengthOpts(body, len, &end, 0) : NULL;
    if (!j)
        snprintf(err, errn, "malformed JSON at byte %zu of %zu",
                 end && body && end >= body ? (size_t)(end - body) : (size_t)0, len);
    return j;
}

/* A logprob value: a number, or null (-inf); false for anything else. */
static bool lp_value(const cJSON *v, double *out)
{
    if (cJSON_IsNumber(v)) {
        *out = v->valuedouble < LP_FLOOR ? LP_FLOOR : v->valuedouble;
        return *out <= 1e-6; /* a logprob is never positive */
    }
    if (cJSON_IsNull(v)) {
        *out = LP_FLOOR;
        return true;
    }
    return false;
}

/* A token text: the string, or "id:KEY" when the engine did not decode it. */
static char *token_text(const cJSON *decoded, const char *key)
{
    if (cJSON_IsString(decoded))
        return xstrdup(decoded->valuestring);
    return xasprintf("id:%.40s", key ? key : "?");
}

/* One prompt position: {"<id>": {"logprob", "rank", "decoded_token"}, ...}. */
static bool plp_position(const cJSON *pos, struct mp_lp_pos *out)
{
    const cJSON *e = pos->child, *best = NULL;
    double best_lp = 0;
    bool ranked = false;
    if (!e)
        return false;
    for (; e; e = e->next) {
        double lp;
        if (!cJSON_IsObject(e) || !lp_value(cJSON_GetObjectItemCaseSensitive(e, "logprob"), &lp))
            return false;
        const cJSON *rank = cJSON_GetObjectItemCaseSensitive(e, "rank");
        bool r1 = cJSON_IsNumber(rank) && rank->valuedouble == 1;
        if (r1 && !ranked) {
            ranked = true;
            best = e;
            best_lp = lp;
        } else if (!ranked && (!best || lp > best_lp)) {
            best = e;
            best_lp = lp;
        }
    }
    const cJSON *own = pos->child;
    lp_value(cJSON_GetObjectItemCaseSensitive(own, "logprob"), &out->lp);
    out->token = token_text(cJSON_GetObjectItemCaseSensitive(own, "decoded_token"), own->string);
    out->top1 = token_text(cJSON_GetObjectItemCaseSensitive(best, "decoded_token"), best->string);
    out->top1_lp = best_lp;
    return true;
}

int mp_score_parse_plp(const char *body, size_t len, struct mp_lp_seq *out, char *err,
                       size_t errn)
{
    memset(out, 0, sizeof(*out));
    cJSON *j = parse_body(body, len, err, errn);
    if (!j)
        return MP_EPARSE;
    int rc = 0;
    const cJSON *c0 = first_choice(j, err, errn);
    const cJSON *pl = c0 ? cJSON_GetObjectItemCaseSensitive(c0, "prompt_logprobs") : NULL;
    if (!c0) {
        rc = MP_EPARSE;
    } else if (!pl || cJSON_IsNull(pl)) {
        rc = MP_SCORE_ABSENT;
        perr(err, errn, "the response has no prompt_logprobs");
    } else if (!cJSON_IsArray(pl)) {
        rc = perr(err, errn, "prompt_logprobs is not a list");
    } else {
        size_t cap = (size_t)cJSON_GetArraySize(pl);
        out->p = xcalloc(cap + 1, sizeof(*out->p));
        size_t i = 0;
        for (const cJSON *pos = pl->child; pos && rc == 0; pos = pos->next, i++) {
            if (cJSON_IsNull(pos))
                continue; /* the first token has no context */
            if (!cJSON_IsObject(pos) || !plp_position(pos, &out->p[out->n])) {
                snprintf(err, errn, "prompt_logprobs[%zu] is not a map of token logprobs", i);
                rc = MP_EPARSE;
                break;
            }
            out->n++;
        }
        if (rc == 0 && out->n == 0)
            rc = perr(err, errn, "prompt_logprobs has no position");
    }
    if (rc != 0)
        mp_lp_seq_release(out);
    cJSON_Delete(j);
    return rc;
}

/* One step's alternatives {" the": -0.1, ...} into t (null: none). */
static bool gen_alts(const cJSON *top, struct mp_gen_tok *t)
{
    if (!top || cJSON_IsNull(top))
        return true;
    if (!cJSON_IsObject(top))
        return false;
    size_t n = (size_t)cJSON_GetArraySize(top);
    t->top = n ? xcalloc(n, sizeof(*t->top)) : NULL;
    for (const cJSON *e = top->child; e; e = e->next) {
        double lp;
        if (!lp_value(e, &lp))
            return false;
        t->top[t->ntop].token = xstrdup(e->string ? e->string : "");
        t->top[t->ntop++].lp = lp;
    }
    return true;
}

int mp_score_parse_gen(const char *body, size_t len, struct mp_gen_seq *out, int *k_out,
                       char *err, size_t errn)
{
    memset(out, 0, sizeof(*out));
    *k_out = 0;
    cJSON *j = parse_body(body, len, err, errn);
    if (!j)
        return MP_EPARSE;
    int rc = 0;
    const cJSON *c0 = first_choice(j, err, errn);
    const cJSON *lo = c0 ? cJSON_GetObjectItemCaseSensitive(c0, "logprobs") : NULL;
    const cJSON *toks = cJSON_GetObjectItemCaseSensitive(lo, "tokens");
    const cJSON *lps = cJSON_GetObjectItemCaseSensitive(lo, "token_logprobs");
    const cJSON *tops = cJSON_GetObjectItemCaseSensitive(lo, "top_logprobs");
    if (!c0) {
        rc = MP_EPARSE;
    } else if (!lo || cJSON_IsNull(lo)) {
        rc = MP_SCORE_ABSENT;
        perr(err, errn, "the response has no logprobs");
    } else if (!cJSON_IsArray(toks) || !cJSON_IsArray(lps) ||
               cJSON_GetArraySize(toks) != cJSON_GetArraySize(lps) ||
               (tops && !cJSON_IsNull(tops) &&
                (!cJSON_IsArray(tops) || cJSON_GetArraySize(tops) != cJSON_GetArraySize(toks)))) {
        rc = perr(err, errn, "logprobs' tokens, token_logprobs and top_logprobs do not match");
    } else {
        size_t n = (size_t)cJSON_GetArraySize(toks);
        out->t = xcalloc(n + 1, sizeof(*out->t));
        const cJSON *tk = toks->child, *lp = lps->child;
        const cJSON *tp = cJSON_IsArray(tops) ? tops->child : NULL;
        for (size_t i = 0; i < n && rc == 0; i++) {
            struct mp_gen_tok *t = &out->t[out->n++];
            if (!cJSON_IsString(tk) || !lp_value(lp, &t->lp) || !gen_alts(tp, t)) {
                snprintf(err, errn, "logprobs step %zu is malformed", i);
                rc = MP_EPARSE;
                break;
            }
            t->token = xstrdup(tk->valuestring);
            if ((int)t->ntop > *k_out)
                *k_out = (int)t->ntop;
            tk = tk->next;
            lp = lp->next;
            tp = tp ? tp->next : NULL;
        }
    }
    if (rc != 0) {
        mp_gen_seq_release(out);
        *k_out = 0;
    }
    cJSON_Delete(j);
    return rc;
}

int mp_score_parse_text(const char *body, size_t len, char **text, int *completion_tokens,
                        char *err, size_t errn)
{
    *text = NULL;
    *completion_tokens = -1;
    cJSON *j = parse_body(body, len, err, errn);
    if (!j)
        return MP_EPARSE;
    int rc = 0;
    const cJSON *c0 = first_choice(j, err, errn);
    const cJSON *t = c0 ? cJSON_GetObjectItemCaseSensitive(c0, "text") : NULL;
    if (!c0)
        rc = MP_EPARSE;
    else if (!cJSON_IsString(t))
        rc = perr(err, errn, "choices[0].text is not a string");
    else
        *text = xstrdup(t->valuestring);
    const cJSON *u = cJSON_GetObjectItemCaseSensitive(j, "usage");
    const cJSON *ct = cJSON_GetObjectItemCaseSensitive(u, "completion_tokens");
    if (rc == 0 && cJSON_IsNumber(ct) && ct->valuedouble >= 0 && ct->valuedouble < 1e9)
        *completion_tokens = (int)ct->valuedouble;
    cJSON_Delete(j);
    return rc;
}

int mp_score_max_allowed(const char *msg)
{
    const char *p = msg ? strstr(msg, "max allowed: ") : NULL;
    if (!p)
        return -1;
    p += strlen("max allowed: ");
    long v = 0;
    bool any = false;
    while (*p >= '0' && *p <= '9' && v < 1000000) {
        v = v * 10 + (*p++ - '0');
        any = true;
    }
    return any ? (int)v : -1;
}
