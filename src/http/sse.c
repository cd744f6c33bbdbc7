/* sse.c - incremental SSE parser and vLLM stream chunk interpreter (see sse.h). */
#include "compat.h"

#include "http/sse.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "http/jsoncheck.h"
#include "xalloc.h"

void mp_sse_init(struct mp_sse *p, size_t max_event)
{
    char *line = p->line, *data = p->data;
    size_t lcap = p->line_cap, dcap = p->data_cap;
    memset(p, 0, sizeof(*p));
    /* keep buffers already allocated by an earlier use */
    p->line = line;
    p->line_cap = lcap;
    p->data = data;
    p->data_cap = dcap;
    p->max_event = max_event;
}

void mp_sse_free(struct mp_sse *p)
{
    free(p->line);
    free(p->data);
    p->line = p->data = NULL;
    p->line_cap = p->data_cap = 0;
    mp_sse_init(p, p->max_event);
}

static size_t max_ev(const struct mp_sse *p)
{
    return p->max_event ? p->max_event : MP_SSE_DEFAULT_MAX_EVENT;
}

/* a line may hold max_event bytes of value plus its field name */
static size_t max_line(const struct mp_sse *p)
{
    return max_ev(p) + 16;
}

/* Ensure room for need bytes (+1 for a NUL) in *b; need <= max_event is checked by callers. */
static void reserve(char **b, size_t *cap, size_t need)
{
    if (need + 1 <= *cap)
        return;
    size_t n = *cap ? *cap : 256;
    while (n < need + 1)
        n *= 2;
    *b = xrealloc(*b, n);
    *cap = n;
}

static void line_append(struct mp_sse *p, const char *s, size_t n)
{
    if (p->skip_line || n == 0)
        return;
    if (p->line_len + n > max_line(p)) {
        p->skip_line = true;
        p->skip_event = true;
        p->line_len = 0;
        return;
    }
    reserve(&p->line, &p->line_cap, p->line_len + n);
    memcpy(p->line + p->line_len, s, n);
    p->line_len += n;
}

static void copy_field(char *dst, const char *v, size_t n)
{
    if (n > MP_SSE_FIELD_MAX)
        n = MP_SSE_FIELD_MAX;
    memcpy(dst, v, n);
    dst[n] = '\0';
}

static int dispatch(struct mp_sse *p, mp_sse_cb cb, void *ud, bool *limited)
{
    int rc = 0;
    if (p->skip_event) {
        p->oversize++;
        *limited = true;
    } else if (p->has_data) {
        reserve(&p->data, &p->data_cap, p->data_len);
        p->data[p->data_len] = '\0';
        struct mp_sse_event ev = { p->data, p->data_len, p->event, p->id };
        p->events++;
        rc = cb ? cb(ud, &ev) : 0;
    }
    p->data_len = 0;
    p->has_data = false;
    p->skip_event = false;
    p->event[0] = '\0'; /* the id persists across events, like the spec's last event ID */
    return rc;
}

static int process_line(struct mp_sse *p, const char *s, size_t n, mp_sse_cb cb, void *ud,
                        bool *limited)
{
    if (n == 0)
        return dispatch(p, cb, ud, limited);
    if (s[0] == ':')
        return 0;
    const char *colon = memchr(s, ':', n);
    size_t flen = colon ? (size_t)(colon - s) : n;
    const char *v = colon ? colon + 1 : s + n;
    size_t vlen = colon ? n - flen - 1 : 0;
    if (vlen > 0 && v[0] == ' ') {
        v++;
        vlen--;
    }
    if (flen == 4 && memcmp(s, "data", 4) == 0) {
        if (p->skip_event)
            return 0;
        size_t need = p->data_len + (p->has_data ? 1 : 0) + vlen;
        if (need > max_ev(p)) {
            p->skip_event = true;
            p->data_len = 0;
            return 0;
        }
        reserve(&p->data, &p->data_cap, need);
        if (p->has_data)
            p->data[p->data_len++] = '\n';
        memcpy(p->data + p->data_len, v, vlen);
        p->data_len += vlen;
        p->has_data = true;
    } else if (flen == 5 && memcmp(s, "event", 5) == 0) {
        copy_field(p->event, v, vlen);
    } else if (flen == 2 && memcmp(s, "id", 2) == 0) {
        if (!memchr(v, '\0', vlen))
            copy_field(p->id, v, vlen);
    }
    /* retry: and unknown fields are ignored */
    return 0;
}

static const unsigned char bom[3] = { 0xEF, 0xBB, 0xBF };

int mp_sse_feed(struct mp_sse *p, const char *buf, size_t len, mp_sse_cb cb, void *ud)
{
    bool limited = false;
    size_t i = 0;
    p->bytes += len;
    while (p->bom_state < 3 && i < len) {
        if ((unsigned char)buf[i] == bom[p->bom_state]) {
            p->bom_state++;
            i++;
            continue;
        }
        line_append(p, (const char *)bom, p->bom_state); /* a BOM prefix that was data */
        p->bom_state = 3;
    }
    if (p->cr_pending && i < len) {
        if (buf[i] == '\n')
            i++;
        p->cr_pending = false;
    }
    while (i < len) {
        const char *s = buf + i;
        size_t rem = len - i, k = 0;
        /* find the line end; memchr for '\n' first keeps the common case fast */
        const char *nl = memchr(s, '\n', rem);
        size_t lim = nl ? (size_t)(nl - s) : rem;
        const char *cr = memchr(s, '\r', lim);
        k = cr ? (size_t)(cr - s) : lim;
        if (k == rem) {
            line_append(p, s, rem);
            break;
        }
        int rc = 0;
        if (p->line_len > 0 || p->skip_line) {
            line_append(p, s, k);
            if (!p->skip_line)
                rc = process_line(p, p->line, p->line_len, cb, ud, &limited);
        } else if (k > max_line(p)) {
            p->skip_event = true; /* same rule as a line that overflows the line buffer */
        } else {
            rc = process_line(p, s, k, cb, ud, &limited);
        }
        p->line_len = 0;
        p->skip_line = false;
        i += k + 1;
        if (s[k] == '\r') {
            if (i < len) {
                if (buf[i] == '\n')
                    i++;
            } else {
                p->cr_pending = true;
            }
        }
        if (rc != 0)
            return rc;
    }
    return limited ? MP_ELIMIT : 0;
}

int mp_sse_finish(struct mp_sse *p, mp_sse_cb cb, void *ud)
{
    (void)cb;
    (void)ud;
    bool limited = p->skip_event || p->skip_line;
    if (limited)
        p->oversize++;
    /* the stream ended inside an event: data lines not yet dispatched, or a
     * field line cut before its end (a partial comment is no event) */
    uint64_t cut = 0;
    if (!limited && (p->has_data || (p->line_len > 0 && p->line[0] != ':')))
        cut = MP_MAX((uint64_t)1, (uint64_t)(p->data_len + p->line_len)); /* "data:" alone too */
    uint64_t bytes = p->bytes, events = p->events, oversize = p->oversize;
    mp_sse_init(p, p->max_event);
    p->bytes = bytes;
    p->events = events;
    p->oversize = oversize;
    p->unterminated = cut;
    return limited ? MP_ELIMIT : 0;
}

/* ---- chunk interpreter ---- */

static const char *jstr(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static long jlong(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > 1e15)
        return -1;
    return (long)v->valuedouble;
}

static void fill_error(const cJSON *root, struct mp_sse_chunk *out)
{
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(root, "error");
    const cJSON *src = cJSON_IsObject(e) ? e : root;
    const char *m = jstr(src, "message");
    if (!m && cJSON_IsString(e))
        m = e->valuestring;
    const char *t = jstr(src, "type");
    out->err_message = m ? m : "";
    out->err_type = t ? t : "";
    out->err_code = jlong(src, "code");
}

static int malformed(struct mp_sse_chunk *out, size_t pos, const char *why)
{
    out->kind = MP_SSE_CHUNK_MALFORMED;
    out->err_pos = pos;
    out->err_why = why;
    return MP_EPARSE;
}

int mp_sse_chunk_parse(const char *data, size_t len, struct mp_sse_chunk *out)
{
    memset(out, 0, sizeof(*out));
    out->completion_tokens = out->prompt_tokens = -1;
    out->err_message = out->err_type = "";
    out->err_code = -1;
    /* trim ASCII whitespace for the [DONE] check */
    size_t a = 0, b = len;
    while (a < b && (data[a] == ' ' || data[a] == '\t'))
        a++;
    while (b > a && (data[b - 1] == ' ' || data[b - 1] == '\t'))
        b--;
    if (b - a == 6 && memcmp(data + a, "[DONE]", 6) == 0) {
        out->kind = MP_SSE_CHUNK_DONE;
        return 0;
    }
    /* judged by RFC 8259 (http/jsoncheck.h), not by what cJSON happens to take */
    struct mp_json_err je = {0, NULL, 0};
    size_t lone = 0;
    if (mp_json_check(data, len, NULL, &lone, &je) < 0)
        return malformed(out, je.pos, je.why);
    char *fixed = NULL; /* lone surrogate escapes (valid JSON) as \ufffd, which cJSON reads */
    if (lone) {
        fixed = xmalloc(len + 1);
        memcpy(fixed, data, len);
        mp_json_check(data, len, fixed, NULL, NULL);
    }
    cJSON *root = cJSON_ParseWithLength(fixed ? fixed : data, len);
    free(fixed);
    if (!cJSON_IsObject(root)) {
        bool parsed = root != NULL;
        cJSON_Delete(root);
        return malformed(out, 0, parsed ? "not a JSON object" : "JSON that cJSON cannot read");
    }
    out->priv_ = root;
    const char *obj = jstr(root, "object");
    if (cJSON_GetObjectItemCaseSensitive(root, "error") || (obj && strcmp(obj, "error") == 0)) {
        out->kind = MP_SSE_CHUNK_ERROR;
        fill_error(root, out);
        return 0;
    }
    out->kind = MP_SSE_CHUNK_DATA;
    const cJSON *choices = cJSON_GetObjectItemCaseSensitive(root, "choices");
    const cJSON *c0 = cJSON_IsArray(choices) ? cJSON_GetArrayItem(choices, 0) : NULL;
    if (cJSON_IsObject(c0)) {
        out->has_choice = true;
        const char *t = jstr(c0, "text");
        const cJSON *delta = cJSON_GetObjectItemCaseSensitive(c0, "delta");
        if (cJSON_IsObject(delta)) {
            if (!t)
                t = jstr(delta, "content");
            const char *r = jstr(delta, "reasoning_content");
            if (!r)
                r = jstr(delta, "reasoning");
            if (r) {
                out->reasoning = r;
                out->reasoning_len = strlen(r);
            }
            if (cJSON_GetObjectItemCaseSensitive(delta, "role") && (!t || !*t) && (!r || !*r))
                out->role_only = true;
        }
        if (t) {
            out->text = t;
            out->text_len = strlen(t);
        }
        out->finish_reason = jstr(c0, "finish_reason");
        if (out->finish_reason && out->role_only)
            out->role_only = false;
    }
    const cJSON *usage = cJSON_GetObjectItemCaseSensitive(root, "usage");
    if (cJSON_IsObject(usage)) {
        out->completion_tokens = jlong(usage, "completion_tokens");
        out->prompt_tokens = jlong(usage, "prompt_tokens");
        out->has_usage = out->completion_tokens >= 0;
    }
    return 0;
}

void mp_sse_chunk_release(struct mp_sse_chunk *c)
{
    cJSON_Delete(c->priv_);
    c->priv_ = NULL;
}

static void copy_clean(char *out, size_t outsz, const char *s, size_t n)
{
    size_t j = 0;
    for (size_t i = 0; i < n && j + 1 < outsz; i++) {
        unsigned char ch = (unsigned char)s[i];
        out[j++] = (ch < 0x20 || ch == 0x7f) ? ' ' : (char)ch;
    }
    out[j] = '\0';
}

void mp_sse_error_body_message(const char *body, size_t len, char *out, size_t outsz)
{
    if (outsz == 0)
        return;
    out[0] = '\0';
    if (!body || len == 0)
        return;
    cJSON *root = cJSON_ParseWithLength(body, len);
    const char *m = NULL;
    char *printed = NULL;
    if (cJSON_IsObject(root)) {
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(root, "error");
        if (cJSON_IsObject(e))
            m = jstr(e, "message");
        else if (cJSON_IsString(e))
            m = e->valuestring;
        if (!m)
            m = jstr(root, "message");
        if (!m) {
            const cJSON *d = cJSON_GetObjectItemCaseSensitive(root, "detail");
            if (cJSON_IsString(d))
                m = d->valuestring;
            else if (d)
                m = printed = cJSON_PrintUnformatted(d);
        }
    }
    if (m)
        copy_clean(out, outsz, m, strlen(m));
    else
        copy_clean(out, outsz, body, len);
    free(printed);
    cJSON_Delete(root);
}
