/* logprobs.c - see logprobs.h. */
#include "compat.h"

#include "logprobs.h"
#include "resolve.h"
#include "xalloc.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LP_FLOOR (-9999.0) /* vLLM clamps -inf to this in the completions API */

struct lp_alt {
    char text[64];
    double lp;
};

struct lp_tok {
    struct lp_alt own;
    struct lp_alt top[RE_LM_MAXK + 1];
    size_t ntop;
};

struct re_lp {
    int logprobs, prompt_logprobs; /* -1 = not asked */
    bool echo;
    struct lp_tok *t;
    size_t n, cap;
    size_t text_off;               /* text_offset of the next generated token */
    size_t sent;                   /* streaming: tokens already sent */
};

/* An integer field; -1 when absent or null (-1 itself means "all": capped). */
static int int_field(const cJSON *j, const char *name, bool *present)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, name);
    *present = cJSON_IsNumber(v);
    if (!*present)
        return -1;
    if (v->valuedouble == -1)
        return RE_LM_MAXK;
    return v->valuedouble < 0 ? -2 : v->valuedouble > 1e6 ? 1000000 : (int)v->valuedouble;
}

/* Python's repr of a dict parsed from JSON (the request body as pydantic
 * quotes it in a validation error). */
static void py_repr(struct buf *b, const cJSON *v)
{
    if (cJSON_IsObject(v) || cJSON_IsArray(v)) {
        bool obj = cJSON_IsObject(v);
        buf_addc(b, obj ? '{' : '[');
        for (const cJSON *e = v->child; e; e = e->next) {
            if (e != v->child)
                buf_adds(b, ", ");
            if (obj) {
                buf_printf(b, "'%s': ", e->string ? e->string : "");
            }
            py_repr(b, e);
        }
        buf_addc(b, obj ? '}' : ']');
    } else if (cJSON_IsString(v)) {
        buf_addc(b, '\'');
        for (const char *p = v->valuestring; *p; p++) {
            if (*p == '\'' || *p == '\\')
                buf_addc(b, '\\');
            if (*p == '\n')
                buf_adds(b, "\\n");
            else
                buf_addc(b, *p);
        }
        buf_addc(b, '\'');
    } else if (cJSON_IsNumber(v)) {
        if (v->valuedouble == floor(v->valuedouble) && fabs(v->valuedouble) < 1e15)
            buf_printf(b, "%.0f", v->valuedouble);
        else
            re_py_float(b, v->valuedouble);
    } else {
        buf_adds(b, cJSON_IsTrue(v) ? "True" : cJSON_IsFalse(v) ? "False" : "None");
    }
}

/* prompt_logprobs with stream: the request validator's refusal. */
static int refuse_stream(const cJSON *j, const struct world *w, char *msg, size_t msgcap,
                         char *type, size_t typecap, char *param, size_t paramcap)
{
    static const char why[] = "`prompt_logprobs` are not available when `stream=True`.";
    bool vve = re_ver_ge(w, 0, 13, 0); /* VLLMValidationError, PR #30134 */
    struct buf b = BUF_INIT;
    buf_printf(&b, "1 validation error:\n  {'type': 'value_error', 'loc': ('body',), 'msg': "
                   "'Value error, %s%s', 'input': ",
               why, vve ? " (parameter=prompt_logprobs)" : "");
    py_repr(&b, j);
    buf_printf(&b, ", 'ctx': {'error': %s('%s')}}", vve ? "VLLMValidationError" : "ValueError", why);
    snprintf(msg, msgcap, "%s", b.data);
    buf_release(&b);
    snprintf(type, typecap, "Bad Request");
    snprintf(param, paramcap, "%s", vve ? "prompt_logprobs" : "");
    return 400;
}

/* More logprobs than --max-logprobs: the input processor's refusal. */
static int refuse_max(bool sample, int n, long max, const struct world *w, char *msg,
                      size_t msgcap, char *type, size_t typecap, char *param, size_t paramcap)
{
    bool vve = re_ver_ge(w, 0, 15, 0); /* parameter metadata on logprobs, PR #31870 */
    const char *p = sample ? "logprobs" : "prompt_logprobs";
    snprintf(msg, msgcap, "Requested %s logprobs of %d, which is greater than max allowed: %ld",
             sample ? "sample" : "prompt", n, max);
    if (vve) {
        size_t l = strlen(msg);
        snprintf(msg + l, msgcap - l, " (parameter=%s, value=%d)", p, n);
    }
    snprintf(type, typecap, "BadRequestError");
    snprintf(param, paramcap, "%s", vve ? p : "");
    return 400;
}

struct re_lp *re_lp_new(const char *body, size_t len, bool chat, bool stream,
                        const struct world *w, long max_logprobs, int *status, char *msg,
                        size_t msgcap, char *type, size_t typecap, char *param, size_t paramcap)
{
    *status = 0;
    cJSON *j = cJSON_ParseWithLength(body, len);
    if (!cJSON_IsObject(j)) {
        cJSON_Delete(j);
        return NULL;
    }
    bool has_lp, has_plp, has_top;
    int lp = chat ? -1 : int_field(j, "logprobs", &has_lp);
    int plp = int_field(j, "prompt_logprobs", &has_plp);
    if (chat && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "logprobs"))) {
        lp = int_field(j, "top_logprobs", &has_top);
        lp = lp < 0 ? 0 : lp;
    }
    bool echo = !chat && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "echo"));
    struct re_lp *r = NULL;
    if (plp >= 1 && stream)
        *status = refuse_stream(j, w, msg, msgcap, type, typecap, param, paramcap);
    else if (lp > max_logprobs)
        *status = refuse_max(true, lp, max_logprobs, w, msg, msgcap, type, typecap, param, paramcap);
    else if (plp > max_logprobs)
        *status = refuse_max(false, plp, max_logprobs, w, msg, msgcap, type, typecap, param,
                             paramcap);
    else if ((lp >= 0 || plp >= 0 || echo) && !chat) {
        r = xcalloc(1, sizeof(*r));
        r->logprobs = lp < 0 ? -1 : MP_MIN(lp, RE_LM_MAXK);
        r->prompt_logprobs = plp < 0 ? -1 : MP_MIN(plp, RE_LM_MAXK);
        r->echo = echo;
    }
    cJSON_Delete(j);
    return r;
}

void re_lp_free(struct re_lp *lp)
{
    if (lp) {
        free(lp->t);
        free(lp);
    }
}

bool re_lp_echo(const struct re_lp *lp)
{
    return lp && lp->echo;
}

static void alt_set(struct lp_alt *a, const char *t, size_t n, double lp)
{
    n = MP_MIN(n, sizeof(a->text) - 1);
    memcpy(a->text, t, n);
    a->text[n] = 0;
    a->lp = lp < LP_FLOOR ? LP_FLOOR : lp;
}

/* One step as the completions API lists it: the token, then the top K with
 * the token merged where it is among them (a map keyed by text). */
static void fill_tok(struct lp_tok *t, const struct re_lm_step *st, int k)
{
    memset(t, 0, sizeof(*t));
    alt_set(&t->own, st->own.tok, st->own.len, st->own.lp);
    t->top[t->ntop++] = t->own;
    for (size_t i = 0; i < st->ntop && (int)i < k; i++) {
        bool dup = false;
        for (size_t q = 0; q < t->ntop; q++)
            dup = dup || (strlen(t->top[q].text) == st->top[i].len &&
                          !memcmp(t->top[q].text, st->top[i].tok, st->top[i].len));
        if (!dup)
            alt_set(&t->top[t->ntop++], st->top[i].tok, st->top[i].len, st->top[i].lp);
    }
}

void re_lp_token(struct re_lp *lp, const struct re_gen *g)
{
    if (!lp || lp->logprobs < 0)
        return;
    if (lp->n == lp->cap) {
        lp->cap = lp->cap ? 2 * lp->cap : 32;
        lp->t = xreallocarray(lp->t, lp->cap, sizeof(*lp->t));
    }
    struct re_lm_step st;
    re_gen_last_step(g, (size_t)lp->logprobs, &st);
    fill_tok(&lp->t[lp->n++], &st, lp->logprobs);
}

void re_py_float(struct buf *b, double v)
{
    char s[40];
    for (int p = 1; p <= 17; p++) {
        snprintf(s, sizeof(s), "%.*g", p, v);
        if (strtod(s, NULL) == v)
            break;
    }
    buf_adds(b, s);
    if (!strpbrk(s, ".eni"))
        buf_adds(b, ".0");
}

/* A value as vLLM sends it: a float32 widened to a Python float. */
static void lp_num(struct buf *b, double v)
{
    re_py_float(b, (double)(float)v);
}

struct lists {
    struct buf off, lps, toks, tops;
    size_t n;
};

static void lists_add(struct lists *L, const struct lp_tok *t, size_t offset)
{
    const char *sep = L->n++ ? "," : "";
    buf_printf(&L->off, "%s%zu", sep, offset);
    buf_adds(&L->toks, sep);
    buf_add_json_str(&L->toks, t->own.text, strlen(t->own.text));
    buf_adds(&L->lps, sep);
    buf_adds(&L->tops, sep);
    if (!t->ntop) { /* the prompt's first token: nothing before it */
        buf_adds(&L->lps, "null");
        buf_adds(&L->tops, "null");
        return;
    }
    lp_num(&L->lps, t->own.lp);
    buf_addc(&L->tops, '{');
    for (size_t i = 0; i < t->ntop; i++) {
        if (i)
            buf_addc(&L->tops, ',');
        buf_add_json_str(&L->tops, t->top[i].text, strlen(t->top[i].text));
        buf_addc(&L->tops, ':');
        lp_num(&L->tops, t->top[i].lp);
    }
    buf_addc(&L->tops, '}');
}

/* echo: the prompt's tokens as logprobs entries (the first without). */
static size_t echo_prompt(struct lists *L, const struct re_lp *lp, const struct re_gen *g,
                          const char *prompt, size_t len)
{
    uint64_t ctx = re_lm_ctx0(&g->lm);
    size_t off = 0;
    for (size_t at = 0; at < len;) {
        size_t n = re_lm_token_len(prompt + at, len - at);
        struct lp_tok t;
        memset(&t, 0, sizeof(t));
        if (at == 0) {
            alt_set(&t.own, prompt, n, 0);
        } else {
            struct re_lm_step st;
            re_lm_eval(&g->lm, ctx, prompt + at, n, false, (size_t)lp->logprobs, &st);
            fill_tok(&t, &st, lp->logprobs);
        }
        lists_add(L, &t, off);
        off += n;
        ctx = re_lm_push(ctx, prompt + at, n);
        at += n;
    }
    return off;
}

void re_lp_logprobs_json(struct buf *b, struct re_lp *lp, const struct re_gen *g,
                         const char *prompt, size_t len, size_t since)
{
    if (!lp || lp->logprobs < 0) {
        buf_adds(b, "null");
        return;
    }
    struct lists L = {BUF_INIT, BUF_INIT, BUF_INIT, BUF_INIT, 0};
    if (lp->echo && since == 0)
        lp->text_off = echo_prompt(&L, lp, g, prompt, len);
    for (size_t i = since; i < lp->n; i++) {
        lists_add(&L, &lp->t[i], lp->text_off);
        lp->text_off += strlen(lp->t[i].own.text);
    }
    buf_printf(b, "{\"text_offset\":[%s],\"token_logprobs\":[%s],\"tokens\":[%s],"
                  "\"top_logprobs\":[%s]}",
               L.off.data ? L.off.data : "", L.lps.data ? L.lps.data : "",
               L.toks.data ? L.toks.data : "", L.tops.data ? L.tops.data : "");
    buf_release(&L.off);
    buf_release(&L.lps);
    buf_release(&L.toks);
    buf_release(&L.tops);
}

void re_lp_delta_json(struct buf *b, struct re_lp *lp, const struct re_gen *g, const char *prompt,
                      size_t len)
{
    size_t since = lp ? lp->sent : 0;
    re_lp_logprobs_json(b, lp, g, prompt, len, since);
    if (lp)
        lp->sent = lp->n;
}

static void logprob_entry(struct buf *b, const struct re_lm_alt *a, bool first)
{
    buf_printf(b, "%s\"%u\":{\"logprob\":", first ? "" : ",", a->id);
    lp_num(b, a->lp < LP_FLOOR ? LP_FLOOR : a->lp);
    buf_printf(b, ",\"rank\":%u,\"decoded_token\":", a->rank);
    buf_add_json_str(b, a->tok, a->len);
    buf_addc(b, '}');
}

void re_lp_prompt_json(struct buf *b, const struct re_lp *lp, const struct re_gen *g,
                       const char *prompt, size_t len)
{
    if (!lp || lp->prompt_logprobs < 0) {
        buf_adds(b, "null");
        return;
    }
    uint64_t ctx = re_lm_ctx0(&g->lm);
    buf_addc(b, '[');
    for (size_t at = 0; at < len;) {
        size_t n = re_lm_token_len(prompt + at, len - at);
        if (at == 0) {
            buf_adds(b, "null");
        } else {
            struct re_lm_step st;
            re_lm_eval(&g->lm, ctx, prompt + at, n, false, (size_t)lp->prompt_logprobs, &st);
            buf_adds(b, ",{");
            logprob_entry(b, &st.own, true);
            for (size_t i = 0; i < st.ntop; i++)
                if (st.top[i].id != st.own.id)
                    logprob_entry(b, &st.top[i], false);
            buf_addc(b, '}');
        }
        ctx = re_lm_push(ctx, prompt + at, n);
        at += n;
    }
    buf_addc(b, ']');
}
