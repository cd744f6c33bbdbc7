/* extra.c - the knowledge sections beyond knobs and signatures: NGC images
 * (which vLLM a container release ships), when vLLM began to warn about
 * unknown variables, and the known issues (knowledge/issues.h). */
#include "compat.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "knowledge/issues.h"
#include "knowledge/kn_int.h"
#include "xalloc.h"

struct xctx {
    struct mp_diag *d;
    int rc;
    char where[160];
};

static int xfail(struct xctx *c, const char *msg)
{
    if (!c->rc)
        c->rc = mp_diag_set(c->d, MP_EPARSE, 0, "%s: %s", c->where, msg);
    return MP_EPARSE;
}

static bool keys_ok(struct xctx *c, const cJSON *o, const char *const *keys)
{
    const cJSON *it;
    cJSON_ArrayForEach(it, o)
    {
        bool ok = false;
        for (size_t i = 0; keys[i] && !ok; i++)
            ok = it->string && !strcmp(it->string, keys[i]);
        if (!ok) {
            char m[160];
            snprintf(m, sizeof(m), "unknown key '%s'", it->string ? it->string : "?");
            xfail(c, m);
            return false;
        }
    }
    return true;
}

/* Optional string: NULL when absent or null. */
static char *str_of(struct xctx *c, const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v || cJSON_IsNull(v))
        return NULL;
    if (!cJSON_IsString(v)) {
        char m[80];
        snprintf(m, sizeof(m), "'%s' must be a string", key);
        xfail(c, m);
        return NULL;
    }
    return xstrdup(v->valuestring);
}

static char **strv_of(struct xctx *c, const cJSON *o, const char *key, size_t *n)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    *n = 0;
    if (!v || cJSON_IsNull(v))
        return NULL;
    if (cJSON_IsString(v)) {
        char **one = xcalloc(2, sizeof(char *));
        one[(*n)++] = xstrdup(v->valuestring);
        return one;
    }
    if (!cJSON_IsArray(v)) {
        xfail(c, "a list must be an array of strings");
        return NULL;
    }
    char **out = xcalloc((size_t)cJSON_GetArraySize(v) + 1, sizeof(char *));
    const cJSON *it;
    cJSON_ArrayForEach(it, v)
    {
        if (!cJSON_IsString(it)) {
            xfail(c, "a list must be an array of strings");
            break;
        }
        out[(*n)++] = xstrdup(it->valuestring);
    }
    return out;
}

static void free_strv(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

static bool ver_of(struct xctx *c, const cJSON *o, const char *key, struct mp_kn_ver *v)
{
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!j || cJSON_IsNull(j))
        return false;
    if (!cJSON_IsString(j) || mp_kn_ver_parse(j->valuestring, v) != 0) {
        char m[100];
        snprintf(m, sizeof(m), "'%s' must be a version like \"0.17.0\" or null", key);
        xfail(c, m);
        return false;
    }
    return true;
}

/* ------------------------------------------------------------ NGC images */

static void parse_images(struct xctx *c, const cJSON *a, struct mp_knowledge *k)
{
    static const char *const keys[] = {"tag", "vllm", "source", NULL};
    if (!cJSON_IsArray(a)) {
        snprintf(c->where, sizeof(c->where), "ngc_images");
        xfail(c, "must be an array");
        return;
    }
    k->images = xcalloc((size_t)cJSON_GetArraySize(a) + 1, sizeof(*k->images));
    const cJSON *it;
    cJSON_ArrayForEach(it, a)
    {
        snprintf(c->where, sizeof(c->where), "ngc_images[%zu]", k->nimages);
        struct mp_kn_image *im = &k->images[k->nimages++];
        if (!cJSON_IsObject(it) || !keys_ok(c, it, keys)) {
            xfail(c, "each entry is an object {tag, vllm, source}");
            return;
        }
        im->tag = str_of(c, it, "tag");
        im->vllm = str_of(c, it, "vllm");
        im->source = str_of(c, it, "source");
        struct mp_kn_ver v;
        if (!im->tag || !im->vllm || !im->source || mp_kn_ver_parse(im->vllm, &v) != 0)
            xfail(c, "needs 'tag', a 'vllm' version and a 'source'");
        if (c->rc)
            return;
    }
}

static void parse_unknown_env(struct xctx *c, const cJSON *o, struct mp_knowledge *k)
{
    static const char *const keys[] = {"from", "maybe_from", "source", "note", NULL};
    snprintf(c->where, sizeof(c->where), "unknown_env_warning");
    if (!cJSON_IsObject(o) || !keys_ok(c, o, keys)) {
        xfail(c, "must be an object {from, maybe_from, source, note}");
        return;
    }
    k->unknown_env.has_from = ver_of(c, o, "from", &k->unknown_env.from);
    k->unknown_env.has_maybe = ver_of(c, o, "maybe_from", &k->unknown_env.maybe);
    k->unknown_env.source = str_of(c, o, "source");
    if (!k->unknown_env.has_from && !c->rc)
        xfail(c, "needs 'from'");
}

/* ---------------------------------------------------------- known issues */

static pcre2_code *re_of(struct xctx *c, const cJSON *o, const char *key, char **src)
{
    *src = str_of(c, o, key);
    if (!*src)
        return NULL;
    char msg[200], m2[260];
    pcre2_code *re = mp_kn_compile(*src, msg, sizeof(msg));
    if (!re) {
        snprintf(m2, sizeof(m2), "'%s': %s", key, msg);
        xfail(c, m2);
    }
    return re;
}

static void parse_issue_match(struct xctx *c, const cJSON *m, struct mp_kn_issue *is)
{
    static const char *const keys[] = {"class", "message", "unless", "kernel", "finding",
                                       "device", "engine", NULL};
    if (!cJSON_IsObject(m) || !keys_ok(c, m, keys)) {
        xfail(c, "'match' must be an object");
        return;
    }
    is->classes = strv_of(c, m, "class", &is->nclasses);
    for (size_t i = 0; i < is->nclasses; i++)
        if (mp_kn_class_from_name(is->classes[i]) < 0 && strcmp(is->classes[i], "none"))
            xfail(c, "'class' names an unknown crash class");
    is->message = re_of(c, m, "message", &is->message_src);
    is->unless = re_of(c, m, "unless", &is->unless_src);
    is->kernel = re_of(c, m, "kernel", &is->kernel_src);
    is->findings = strv_of(c, m, "finding", &is->nfindings);
    is->devices = strv_of(c, m, "device", &is->ndevices);
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(m, "engine");
    if (e && !cJSON_IsNull(e)) {
        static const char *const ek[] = {"from", "until", NULL};
        if (!cJSON_IsObject(e) || !keys_ok(c, e, ek)) {
            xfail(c, "'engine' must be an object {from, until}");
            return;
        }
        is->has_from = ver_of(c, e, "from", &is->from);
        is->has_until = ver_of(c, e, "until", &is->until);
    }
    if (!is->nclasses && !is->message && !is->kernel && !is->nfindings)
        xfail(c, "'match' needs a signature: class, message, kernel or finding");
}

static void parse_issue(struct xctx *c, const cJSON *o, struct mp_kn_issue *is)
{
    static const char *const keys[] = {"id", "title", "source", "fixed_in", "workaround",
                                       "note", "match", NULL};
    if (!cJSON_IsObject(o) || !keys_ok(c, o, keys)) {
        xfail(c, "each known issue is an object");
        return;
    }
    is->id = str_of(c, o, "id");
    if (is->id)
        snprintf(c->where, sizeof(c->where), "known issue '%s'", is->id);
    is->title = str_of(c, o, "title");
    is->source = str_of(c, o, "source");
    is->fixed_in = str_of(c, o, "fixed_in");
    is->workaround = str_of(c, o, "workaround");
    is->note = str_of(c, o, "note");
    if (!is->id || !is->title || !is->source) {
        xfail(c, "needs 'id', 'title' and 'source'");
        return;
    }
    if (strncmp(is->source, "https://", 8) != 0)
        xfail(c, "'source' must be a public https:// URL");
    parse_issue_match(c, cJSON_GetObjectItemCaseSensitive(o, "match"), is);
}

static void parse_issues(struct xctx *c, const cJSON *a, struct mp_knowledge *k)
{
    if (!cJSON_IsArray(a)) {
        snprintf(c->where, sizeof(c->where), "known_issues");
        xfail(c, "must be an array");
        return;
    }
    k->issues = xcalloc((size_t)cJSON_GetArraySize(a) + 1, sizeof(*k->issues));
    const cJSON *it;
    cJSON_ArrayForEach(it, a)
    {
        snprintf(c->where, sizeof(c->where), "known_issues[%zu]", k->nissues);
        parse_issue(c, it, &k->issues[k->nissues++]);
        if (c->rc)
            return;
        for (size_t i = 0; i + 1 < k->nissues; i++)
            if (!strcmp(k->issues[i].id, k->issues[k->nissues - 1].id))
                xfail(c, "duplicate id");
    }
}

int mp_kn_extra_parse(const cJSON *root, struct mp_knowledge *k, struct mp_diag *d)
{
    struct xctx c = {d, 0, ""};
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(root, "ngc_images");
    if (a)
        parse_images(&c, a, k);
    const cJSON *u = cJSON_GetObjectItemCaseSensitive(root, "unknown_env_warning");
    if (u && !c.rc)
        parse_unknown_env(&c, u, k);
    const cJSON *ki = cJSON_GetObjectItemCaseSensitive(root, "known_issues");
    if (ki && !c.rc)
        parse_issues(&c, ki, k);
    return c.rc;
}

void mp_kn_extra_free(struct mp_knowledge *k)
{
    for (size_t i = 0; i < k->nimages; i++) {
        free(k->images[i].tag);
        free(k->images[i].vllm);
        free(k->images[i].source);
    }
    free(k->images);
    free(k->unknown_env.source);
    for (size_t i = 0; i < k->nissues; i++) {
        struct mp_kn_issue *is = &k->issues[i];
        free(is->id);
        free(is->title);
        free(is->source);
        free(is->fixed_in);
        free(is->workaround);
        free(is->note);
        free_strv(is->classes, is->nclasses);
        pcre2_code_free(is->message);
        pcre2_code_free(is->unless);
        pcre2_code_free(is->kernel);
        free(is->message_src);
        free(is->unless_src);
        free(is->kernel_src);
        free_strv(is->findings, is->nfindings);
        free_strv(is->devices, is->ndevices);
    }
    free(k->issues);
}
