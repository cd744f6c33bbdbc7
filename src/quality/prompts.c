/* prompts.c - the sanity prompt set: parsing data/sanity-prompts.json. */
#include "quality/quality.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

extern const unsigned char mp_data_sanity_prompts_json[];
extern const size_t mp_data_sanity_prompts_json_len;

#define SANITY_MAX_PROMPTS 64

static const char *jstr_field(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) && v->valuestring[0] ? v->valuestring : NULL;
}

void mp_sanity_release(struct mp_sanity_set *s)
{
    for (size_t i = 0; i < s->n; i++) {
        struct mp_sanity_prompt *p = &s->p[i];
        free(p->id);
        free(p->kind);
        free(p->prompt);
        for (size_t k = 0; k < p->nexpect; k++)
            free(p->expect[k]);
        free(p->expect);
    }
    free(s->p);
    free(s->prompts);
    memset(s, 0, sizeof(*s));
}

int mp_sanity_parse(const char *json, size_t len, struct mp_sanity_set *out, struct mp_diag *d)
{
    memset(out, 0, sizeof(*out));
    int rc = 0;
    cJSON *root = cJSON_ParseWithLength(json, len);
    if (!root) {
        const char *e = cJSON_GetErrorPtr();
        size_t line = 1;
        for (const char *q = json; e && q < e && q < json + len; q++)
            line += *q == '\n';
        return mp_diag_set(d, MP_EPARSE, line, "malformed JSON");
    }
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(root, "max_tokens");
    out->max_tokens = 32;
    if (mt) {
        if (!cJSON_IsNumber(mt) || mt->valuedouble < 1 || mt->valuedouble > 4096) {
            rc = mp_diag_set(d, MP_EPARSE, 0, "max_tokens must be a number from 1 to 4096");
            goto out;
        }
        out->max_tokens = (int)mt->valuedouble;
    }
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(root, "prompts");
    int n = cJSON_GetArraySize(arr);
    if (!cJSON_IsArray(arr) || n < 1 || n > SANITY_MAX_PROMPTS) {
        rc = mp_diag_set(d, MP_EPARSE, 0, "\"prompts\" must be an array of 1 to %d objects",
                         SANITY_MAX_PROMPTS);
        goto out;
    }
    out->p = xcalloc((size_t)n, sizeof(*out->p));
    out->prompts = xcalloc((size_t)n + 1, sizeof(*out->prompts));
    const cJSON *it;
    cJSON_ArrayForEach(it, arr)
    {
        size_t i = out->n;
        const char *id = jstr_field(it, "id"), *pr = jstr_field(it, "prompt");
        const cJSON *ex = cJSON_GetObjectItemCaseSensitive(it, "expect");
        if (!cJSON_IsObject(it) || !id || !pr || !cJSON_IsArray(ex) || cJSON_GetArraySize(ex) < 1) {
            rc = mp_diag_set(d, MP_EPARSE, 0,
                             "prompts[%zu]: needs \"id\", \"prompt\" and a non-empty \"expect\" array",
                             i);
            goto out;
        }
        for (size_t k = 0; k < i; k++) {
            if (!strcmp(out->p[k].id, id)) {
                rc = mp_diag_set(d, MP_EPARSE, 0, "prompts[%zu]: duplicate id \"%s\"", i, id);
                goto out;
            }
        }
        struct mp_sanity_prompt *p = &out->p[i];
        out->n++;
        p->id = xstrdup(id);
        p->prompt = xstrdup(pr);
        p->kind = xstrdup(jstr_field(it, "kind") ? jstr_field(it, "kind") : "fact");
        p->expect = xcalloc((size_t)cJSON_GetArraySize(ex), sizeof(*p->expect));
        const cJSON *e;
        cJSON_ArrayForEach(e, ex)
        {
            if (!cJSON_IsString(e) || !e->valuestring[0]) {
                rc = mp_diag_set(d, MP_EPARSE, 0, "prompts[%zu] (%s): expect holds a non-string "
                                 "or empty answer", i, id);
                goto out;
            }
            p->expect[p->nexpect++] = xstrdup(e->valuestring);
        }
        out->prompts[i] = p->prompt;
    }
out:
    cJSON_Delete(root);
    if (rc)
        mp_sanity_release(out);
    return rc;
}

static struct mp_sanity_set builtin;
static bool builtin_loaded;

const struct mp_sanity_set *mp_sanity_builtin(void)
{
    if (!builtin_loaded) {
        struct mp_diag d = MP_DIAG_INIT;
        if (mp_sanity_parse((const char *)mp_data_sanity_prompts_json,
                            mp_data_sanity_prompts_json_len, &builtin, &d) != 0) {
            char msg[600];
            mp_diag_format(&d, msg, sizeof(msg));
            fprintf(stderr, "moeprobe: internal error: data/sanity-prompts.json: %s\n", msg);
            abort();
        }
        builtin_loaded = true;
    }
    return &builtin;
}

const char *const *mp_quality_prompts(size_t *n)
{
    const struct mp_sanity_set *s = mp_sanity_builtin();
    *n = s->n;
    return s->prompts;
}
