/* knowledge.c - loading data/knowledge.json (or a user file) into
 * struct mp_knowledge. */
#include "compat.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "knowledge/knowledge.h"
#include "knowledge/kn_int.h"
#include "xalloc.h"
#include "file.h"

extern const unsigned char mp_data_knowledge_json[];
extern const size_t mp_data_knowledge_json_len;

#define KN_MAX_FILE (8u << 20)

/* ------------------------------------------------------------------- free */

static void free_strv(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

static void free_pairs(struct mp_kn_pair *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(p[i].key);
        free(p[i].value);
    }
    free(p);
}

void mp_knowledge_free(struct mp_knowledge *k)
{
    if (!k)
        return;
    free(k->newest_version);
    for (size_t i = 0; i < k->nknobs; i++) {
        struct mp_kn_knob *kb = &k->knobs[i];
        free(kb->name);
        free_strv(kb->values, kb->nvalues);
        free_pairs(kb->map, kb->nmap);
        for (size_t j = 0; j < kb->neras; j++) {
            struct mp_kn_era *e = &kb->eras[j];
            free(e->affects);
            free(e->status);
            free(e->note);
            free(e->source);
            free(e->overridden_by);
            free(e->predicts);
            free(e->predict_value);
            free(e->unless);
            free(e->error);
            free_strv(e->values, e->nvalues);
        }
        free(kb->eras);
    }
    free(k->knobs);
    for (size_t i = 0; i < k->nsigs; i++) {
        struct mp_kn_sig *s = &k->sigs[i];
        free(s->id);
        free(s->literal);
        free(s->also);
        free(s->exclude);
        free(s->era);
        free(s->code);
        free(s->text);
        free(s->what);
        free(s->tally);
        pcre2_code_free(s->re);
        for (size_t j = 0; j < s->nsets; j++)
            free(s->sets[j].group);
        free_pairs(s->map, s->nmap);
        free_strv(s->ignore, s->nignore);
    }
    free(k->sigs);
    for (size_t i = 0; i < k->nbackends; i++) {
        free(k->backends[i].name);
        free(k->backends[i].flag);
        free(k->backends[i].devices);
        free(k->backends[i].note);
    }
    free(k->backends);
    for (size_t i = 0; i < k->nautolists; i++) {
        free(k->autolists[i].era);
        free_strv(k->autolists[i].list, k->autolists[i].n);
    }
    free(k->autolists);
    free_strv(k->clamp, k->nclamp);
    mp_kn_extra_free(k);
    free(k);
}

/* ----------------------------------------------------------------- parsing */

struct kctx {
    struct mp_diag *d;
    int rc;
};

#define S_(x) ((x) ? (x) : "")

static int kfail(struct kctx *c, const char *what, const char *fmt, ...) MP_PRINTF(3, 4);
static int kfail(struct kctx *c, const char *what, const char *fmt, ...)
{
    if (c->rc == 0) {
        char msg[200];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        mp_diag_set(c->d, MP_EPARSE, 0, "%s: %s", what, msg);
        c->rc = MP_EPARSE;
    }
    return MP_EPARSE;
}

/* Optional string member: NULL when absent or null; error when another type. */
static char *get_str(struct kctx *c, const cJSON *o, const char *key, const char *where)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v || cJSON_IsNull(v))
        return NULL;
    if (!cJSON_IsString(v)) {
        kfail(c, where, "'%s' must be a string", key);
        return NULL;
    }
    return xstrdup(v->valuestring);
}

static int get_ver(struct kctx *c, const cJSON *o, const char *key, const char *where, bool *has,
                   struct mp_kn_ver *ver)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    *has = false;
    if (!v || cJSON_IsNull(v))
        return 0;
    if (!cJSON_IsString(v) || mp_kn_ver_parse(v->valuestring, ver) != 0)
        return kfail(c, where, "'%s' must be a version string like \"0.17.0\" or null", key);
    *has = true;
    return 0;
}

static char **get_strv(struct kctx *c, const cJSON *o, const char *key, const char *where,
                       size_t *n)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    *n = 0;
    if (!v || cJSON_IsNull(v))
        return NULL;
    if (!cJSON_IsArray(v)) {
        kfail(c, where, "'%s' must be an array of strings", key);
        return NULL;
    }
    size_t cnt = (size_t)cJSON_GetArraySize(v);
    char **out = xcalloc(cnt + 1, sizeof(char *));
    const cJSON *it;
    cJSON_ArrayForEach(it, v)
    {
        if (!cJSON_IsString(it)) {
            kfail(c, where, "'%s' must be an array of strings", key);
            break;
        }
        out[(*n)++] = xstrdup(it->valuestring);
    }
    return out;
}

static struct mp_kn_pair *get_map(struct kctx *c, const cJSON *o, const char *key,
                                  const char *where, size_t *n)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    *n = 0;
    if (!v || cJSON_IsNull(v))
        return NULL;
    if (!cJSON_IsObject(v)) {
        kfail(c, where, "'%s' must be an object of strings", key);
        return NULL;
    }
    size_t cnt = (size_t)cJSON_GetArraySize(v);
    struct mp_kn_pair *out = xcalloc(cnt + 1, sizeof(*out));
    const cJSON *it;
    cJSON_ArrayForEach(it, v)
    {
        if (!cJSON_IsString(it) || !it->string) {
            kfail(c, where, "'%s' values must be strings", key);
            break;
        }
        out[*n].key = xstrdup(it->string);
        out[*n].value = xstrdup(it->valuestring);
        (*n)++;
    }
    return out;
}

static bool check_keys(struct kctx *c, const cJSON *o, const char *where, const char *const *keys)
{
    const cJSON *it;
    cJSON_ArrayForEach(it, o)
    {
        bool ok = false;
        for (size_t i = 0; keys[i]; i++)
            if (it->string && !strcmp(it->string, keys[i]))
                ok = true;
        if (!ok) {
            kfail(c, where, "unknown key '%s'", it->string);
            return false;
        }
    }
    return true;
}

static bool one_of(const char *s, const char *const *set)
{
    for (size_t i = 0; set[i]; i++)
        if (s && !strcmp(s, set[i]))
            return true;
    return false;
}

static const char *const affects_set[] = {"moe", "linear", "attention", "none", NULL};
static const char *const status_set[] = {"active",  "no-moe-effect",     "deprecated",
                                         "removed", "unknown-to-engine", "not-yet-available",
                                         NULL};

static void parse_era(struct kctx *c, const cJSON *o, struct mp_kn_era *e, const char *where)
{
    static const char *const keys[] = {"from", "until", "affects", "status", "note", "source",
                                       "overridden_by", "predicts", "predict_value", "unless",
                                       "uncertain", "values", "selection_only", "error", NULL};
    if (!cJSON_IsObject(o)) {
        kfail(c, where, "eras must be objects");
        return;
    }
    check_keys(c, o, where, keys);
    get_ver(c, o, "from", where, &e->has_from, &e->from);
    get_ver(c, o, "until", where, &e->has_until, &e->until);
    e->affects = get_str(c, o, "affects", where);
    e->status = get_str(c, o, "status", where);
    e->note = get_str(c, o, "note", where);
    e->source = get_str(c, o, "source", where);
    e->overridden_by = get_str(c, o, "overridden_by", where);
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(o, "predicts");
    if (cJSON_IsTrue(p))
        e->predicts_by_map = true;
    else if (p && !cJSON_IsFalse(p))
        e->predicts = get_str(c, o, "predicts", where);
    e->predict_value = get_str(c, o, "predict_value", where);
    e->unless = get_str(c, o, "unless", where);
    e->uncertain = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "uncertain"));
    e->selection_only = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "selection_only"));
    e->values = get_strv(c, o, "values", where, &e->nvalues);
    e->error = get_str(c, o, "error", where);
    if (!one_of(e->affects, affects_set))
        kfail(c, where, "era 'affects' must be moe|linear|attention|none (got '%s')", S_(e->affects));
    if (!one_of(e->status, status_set))
        kfail(c, where, "era 'status' '%s' is not a known status", S_(e->status));
    if (!e->note)
        kfail(c, where, "era needs a 'note'");
}

static void parse_knob(struct kctx *c, const cJSON *o, struct mp_kn_knob *kb)
{
    static const char *const keys[] = {"name", "kind", "values", "map", "eras",
                                       "never_upstream", "default", "normalize", "parse", NULL};
    char where[160];
    const cJSON *nm = cJSON_GetObjectItemCaseSensitive(o, "name");
    snprintf(where, sizeof(where), "knob '%s'", cJSON_IsString(nm) ? nm->valuestring : "?");
    if (!cJSON_IsObject(o) || !cJSON_IsString(nm)) {
        kfail(c, "knobs", "each knob needs a string 'name'");
        return;
    }
    check_keys(c, o, where, keys);
    kb->name = xstrdup(nm->valuestring);
    char *kind = get_str(c, o, "kind", where);
    if (!kind || (strcmp(kind, "env") && strcmp(kind, "flag")))
        kfail(c, where, "'kind' must be \"env\" or \"flag\"%s", "");
    kb->is_flag = kind && !strcmp(kind, "flag");
    free(kind);
    kb->never_upstream = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "never_upstream"));
    kb->normalize = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "normalize"));
    char *parse = get_str(c, o, "parse", where);
    if (parse && strcmp(parse, "int") && strcmp(parse, "string"))
        kfail(c, where, "'parse' must be \"int\" or \"string\" (got '%s')", parse);
    kb->parse_int = parse && !strcmp(parse, "int");
    free(parse);
    kb->values = get_strv(c, o, "values", where, &kb->nvalues);
    kb->map = get_map(c, o, "map", where, &kb->nmap);
    const cJSON *eras = cJSON_GetObjectItemCaseSensitive(o, "eras");
    if (!cJSON_IsArray(eras) || cJSON_GetArraySize(eras) == 0) {
        kfail(c, where, "'eras' must be a non-empty array%s", "");
        return;
    }
    kb->eras = xcalloc((size_t)cJSON_GetArraySize(eras), sizeof(*kb->eras));
    const cJSON *it;
    cJSON_ArrayForEach(it, eras)
        parse_era(c, it, &kb->eras[kb->neras++], where);
}

static const char *const field_names[MP_KN_NFIELDS] = {
    "engine_version",    "model",         "quantization",     "moe_backend", "moe_candidates",
    "linear_kernel",     "attention_backend", "moe_backend_flag", "unknown_env",
    "linear_kernels",    "unquantized_moe_backend", "unquantized_moe_candidates",
    "moe_kind",          "other",         "device",
};

/* A signature's 'set': field -> regex group (or "=VALUE"). */
static void parse_sig_sets(struct kctx *c, const cJSON *o, const char *where, struct mp_kn_sig *s)
{
    const cJSON *set = cJSON_GetObjectItemCaseSensitive(o, "set");
    if (set) {
        if (!cJSON_IsObject(set)) {
            kfail(c, where, "'set' must be an object field -> group%s", "");
        } else {
            const cJSON *it;
            cJSON_ArrayForEach(it, set)
            {
                int f = -1;
                for (int i = 0; i < MP_KN_NFIELDS; i++)
                    if (!strcmp(it->string, field_names[i]))
                        f = i;
                if (f < 0 || !cJSON_IsString(it)) {
                    kfail(c, where, "'set' names an unknown field '%s'", it->string);
                    break;
                }
                if (s->nsets == MP_ARRAY_SIZE(s->sets)) {
                    kfail(c, where, "'set' has too many fields%s", "");
                    break;
                }
                s->sets[s->nsets].field = f;
                s->sets[s->nsets].group = xstrdup(it->valuestring);
                s->nsets++;
            }
        }
    }
}

/* A signature's 'regex', compiled; every group 'set' names must exist. */
static void parse_sig_regex(struct kctx *c, const cJSON *o, const char *where, struct mp_kn_sig *s)
{
    char *re = get_str(c, o, "regex", where);
    if (re) {
        char *x = mp_kn_expand_regex(re);
        int err;
        PCRE2_SIZE off;
        s->re = pcre2_compile((PCRE2_SPTR)x, PCRE2_ZERO_TERMINATED, 0, &err, &off, NULL);
        if (!s->re) {
            PCRE2_UCHAR msg[120];
            pcre2_get_error_message(err, msg, sizeof(msg));
            char m2[200];
            snprintf(m2, sizeof(m2), "regex does not compile at offset %zu: %s", (size_t)off,
                     (const char *)msg);
            kfail(c, where, "%s", m2);
        } else {
            pcre2_jit_compile(s->re, PCRE2_JIT_COMPLETE); /* falls back to the interpreter */
            pcre2_pattern_info(s->re, PCRE2_INFO_CAPTURECOUNT, &s->re_ncap);
            for (size_t i = 0; i < s->nsets; i++) {
                const char *g = s->sets[i].group;
                if (g[0] != '=' && pcre2_substring_number_from_name(s->re, (PCRE2_SPTR)g) < 0)
                    kfail(c, where, "'set' uses group '%s' that the regex does not define", g);
            }
        }
        free(x);
        free(re);
    } else {
        for (size_t i = 0; i < s->nsets; i++)
            if (s->sets[i].group[0] != '=')
                kfail(c, where, "'set' needs a regex for group '%s'", s->sets[i].group);
    }
}

static void parse_sig(struct kctx *c, const cJSON *o, struct mp_kn_sig *s)
{
    static const char *const keys[] = {"id",       "literal", "also",     "exclude", "era",
                                       "regex",    "event",   "class",    "severity", "code",
                                       "text",     "set",     "map",      "ignore",  "priority",
                                       "anchor",   "min_level", "weak",  "what",    "tally",
                                       NULL};
    static const char *const events[] = {"info",  "warning",  "resolved", "fatal",
                                         "ready", "traceback", "frame",   "drafter",
                                         "autotune-begin", "autotune-end", NULL};
    char where[160];
    const cJSON *idj = cJSON_GetObjectItemCaseSensitive(o, "id");
    snprintf(where, sizeof(where), "signature '%s'", cJSON_IsString(idj) ? idj->valuestring : "?");
    s->cls = -1;
    s->severity = -1;
    if (!cJSON_IsObject(o) || !cJSON_IsString(idj)) {
        kfail(c, "signatures", "each signature needs a string 'id'");
        return;
    }
    check_keys(c, o, where, keys);
    s->id = xstrdup(idj->valuestring);
    s->literal = get_str(c, o, "literal", where);
    if (!s->literal || strlen(s->literal) < 2) {
        kfail(c, where, "'literal' (at least 2 bytes) is required%s", "");
        return;
    }
    s->literal_len = strlen(s->literal);
    s->also = get_str(c, o, "also", where);
    s->exclude = get_str(c, o, "exclude", where);
    s->era = get_str(c, o, "era", where);
    s->code = get_str(c, o, "code", where);
    s->text = get_str(c, o, "text", where);
    s->what = get_str(c, o, "what", where);
    s->tally = get_str(c, o, "tally", where);
    char *ev = get_str(c, o, "event", where);
    s->event = -1;
    for (int i = 0; events[i]; i++)
        if (ev && !strcmp(ev, events[i]))
            s->event = i;
    if (s->event < 0)
        kfail(c, where, "'event' must be info|warning|resolved|fatal|ready|traceback|frame|drafter|"
                        "autotune-begin|autotune-end (got '%s')",
              ev);
    free(ev);
    char *cls = get_str(c, o, "class", where);
    if (cls) {
        s->cls = mp_kn_class_from_name(cls);
        if (s->cls < 0)
            kfail(c, where, "unknown crash class '%s'", cls);
    }
    free(cls);
    if (s->event == MP_KN_EV_FATAL && s->cls < 0)
        kfail(c, where, "a fatal signature needs a 'class'%s", "");
    char *sev = get_str(c, o, "severity", where);
    if (sev) {
        s->severity = !strcmp(sev, "info") ? 0 : !strcmp(sev, "warning") ? 1
                    : !strcmp(sev, "error") ? 2 : -2;
        if (s->severity == -2)
            kfail(c, where, "'severity' must be info|warning|error (got '%s')", sev);
        if (!s->code || !s->text)
            kfail(c, where, "a finding needs 'code' and 'text'%s", "");
    }
    free(sev);
    const cJSON *pr = cJSON_GetObjectItemCaseSensitive(o, "priority");
    s->priority = cJSON_IsNumber(pr) ? pr->valueint : 1;
    char *anchor = get_str(c, o, "anchor", where);
    if (anchor && strcmp(anchor, "message") && strcmp(anchor, "line"))
        kfail(c, where, "'anchor' must be message|line (got '%s')", anchor);
    s->anchor_message = anchor && !strcmp(anchor, "message");
    free(anchor);
    char *ml = get_str(c, o, "min_level", where);
    if (ml && strcmp(ml, "error"))
        kfail(c, where, "'min_level' must be \"error\" (got '%s')", ml);
    s->min_level_error = ml != NULL;
    free(ml);
    s->weak = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "weak"));
    s->map = get_map(c, o, "map", where, &s->nmap);
    s->ignore = get_strv(c, o, "ignore", where, &s->nignore);
    parse_sig_sets(c, o, where, s);
    for (size_t i = 0; i < s->nsets; i++)
        if (s->sets[i].field == MP_KN_F_OTHER && !s->what)
            kfail(c, where, "'set' of 'other' needs 'what' (what was selected)%s", "");
    parse_sig_regex(c, o, where, s);
}

static void parse_backend(struct kctx *c, const cJSON *o, struct mp_kn_backend *b)
{
    static const char *const keys[] = {"name", "flag", "auto", "devices", "note", NULL};
    if (!cJSON_IsObject(o)) {
        kfail(c, "backends", "each backend must be an object");
        return;
    }
    check_keys(c, o, "backends", keys);
    b->name = get_str(c, o, "name", "backends");
    b->flag = get_str(c, o, "flag", "backends");
    b->devices = get_str(c, o, "devices", "backends");
    b->note = get_str(c, o, "note", "backends");
    b->automatic = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "auto"));
    if (!b->name)
        kfail(c, "backends", "each backend needs a 'name'");
}

static void parse_autolist(struct kctx *c, const cJSON *o, struct mp_kn_autolist *a)
{
    static const char *const keys[] = {"era", "from", "until", "list", NULL};
    if (!cJSON_IsObject(o)) {
        kfail(c, "auto_lists", "each entry must be an object");
        return;
    }
    check_keys(c, o, "auto_lists", keys);
    a->era = get_str(c, o, "era", "auto_lists");
    get_ver(c, o, "from", "auto_lists", &a->has_from, &a->from);
    get_ver(c, o, "until", "auto_lists", &a->has_until, &a->until);
    a->list = get_strv(c, o, "list", "auto_lists", &a->n);
    if (!a->era || a->n == 0)
        kfail(c, "auto_lists", "each entry needs 'era' and a non-empty 'list'");
}

/* The keys a knowledge file may have at the top level. */
static const char *const top_keys[] = {"format", "extends", "newest_version", "sources_note",
                                       "backends", "clamp_backends", "auto_lists", "knobs",
                                       "signatures", "ngc_images", "unknown_env_warning",
                                       "known_issues", NULL};

#define PARSE_ARRAY(c, root, key, arr, n, fn)                                                 \
    do {                                                                                      \
        const cJSON *a_ = cJSON_GetObjectItemCaseSensitive(root, key);                        \
        if (a_ && !cJSON_IsArray(a_)) {                                                       \
            kfail(c, key, "must be an array");                                          \
        } else if (a_) {                                                                      \
            arr = xcalloc((size_t)cJSON_GetArraySize(a_) + 1, sizeof(*(arr)));               \
            const cJSON *it_;                                                                 \
            cJSON_ArrayForEach(it_, a_)                                                       \
            {                                                                                 \
                fn(c, it_, &(arr)[(n)++]);                                                    \
                if ((c)->rc)                                                                  \
                    break;                                                                    \
            }                                                                                 \
        }                                                                                     \
    } while (0)

static int build(const cJSON *root, struct mp_knowledge **out, struct mp_diag *d)
{
    struct kctx c = {d, 0};
    struct mp_knowledge *k = xcalloc(1, sizeof(*k));
    *out = NULL;
    if (!cJSON_IsObject(root)) {
        kfail(&c, "knowledge", "the top level must be an object");
        goto out;
    }
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(root, "format");
    if (!cJSON_IsNumber(fmt) || fmt->valueint != 1) {
        kfail(&c, "knowledge", "'format' must be 1");
        goto out;
    }
    if (!check_keys(&c, root, "knowledge", top_keys))
        goto out;
    k->newest_version = get_str(&c, root, "newest_version", "knowledge");
    struct mp_kn_ver tmp;
    if (!k->newest_version || mp_kn_ver_parse(k->newest_version, &tmp) != 0)
        kfail(&c, "knowledge", "'newest_version' must be a version string");
    k->clamp = get_strv(&c, root, "clamp_backends", "knowledge", &k->nclamp);
    if (c.rc)
        goto out;
    PARSE_ARRAY(&c, root, "knobs", k->knobs, k->nknobs, parse_knob);
    PARSE_ARRAY(&c, root, "signatures", k->sigs, k->nsigs, parse_sig);
    PARSE_ARRAY(&c, root, "backends", k->backends, k->nbackends, parse_backend);
    PARSE_ARRAY(&c, root, "auto_lists", k->autolists, k->nautolists, parse_autolist);
    if (!c.rc)
        c.rc = mp_kn_extra_parse(root, k, d);
out:
    if (c.rc) {
        mp_knowledge_free(k);
        return c.rc;
    }
    *out = k;
    return 0;
}

/* Merge array `key` of ext into base: entries whose `idkey` matches replace,
 * others are appended. */
static void merge_array(cJSON *base, const cJSON *ext, const char *key, const char *idkey)
{
    const cJSON *ea = cJSON_GetObjectItemCaseSensitive(ext, key);
    if (!cJSON_IsArray(ea))
        return;
    cJSON *ba = cJSON_GetObjectItemCaseSensitive(base, key);
    if (!cJSON_IsArray(ba)) {
        cJSON_DeleteItemFromObjectCaseSensitive(base, key);
        cJSON_AddItemToObject(base, key, cJSON_Duplicate(ea, 1));
        return;
    }
    const cJSON *it;
    cJSON_ArrayForEach(it, ea)
    {
        const cJSON *id = idkey ? cJSON_GetObjectItemCaseSensitive(it, idkey) : NULL;
        int idx = 0, found = -1;
        cJSON *bt;
        cJSON_ArrayForEach(bt, ba)
        {
            const cJSON *bid = idkey ? cJSON_GetObjectItemCaseSensitive(bt, idkey) : NULL;
            if (cJSON_IsString(id) && cJSON_IsString(bid) && !strcmp(id->valuestring, bid->valuestring))
                found = idx;
            idx++;
        }
        if (found >= 0)
            cJSON_ReplaceItemInArray(ba, found, cJSON_Duplicate(it, 1));
        else
            cJSON_AddItemToArray(ba, cJSON_Duplicate(it, 1));
    }
}

int mp_knowledge_load_mem(const char *text, size_t len, struct mp_knowledge **out,
                          struct mp_diag *d)
{
    *out = NULL;
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    if (!root) {
        size_t line = 1;
        if (end && end >= text && end <= text + len)
            for (const char *p = text; p < end; p++)
                line += *p == '\n';
        return mp_diag_set(d, MP_EPARSE, line, "invalid JSON");
    }
    int rc;
    const cJSON *ext = cJSON_GetObjectItemCaseSensitive(root, "extends");
    if (ext) {
        if (!cJSON_IsString(ext) || strcmp(ext->valuestring, "builtin")) {
            cJSON_Delete(root);
            return mp_diag_set(d, MP_EPARSE, 0, "knowledge: 'extends' must be \"builtin\"");
        }
        cJSON *base = cJSON_ParseWithLength((const char *)mp_data_knowledge_json,
                                            mp_data_knowledge_json_len);
        if (!base) {
            cJSON_Delete(root);
            return mp_diag_set(d, MP_EPARSE, 0, "built-in knowledge is not valid JSON");
        }
        merge_array(base, root, "knobs", "name");
        merge_array(base, root, "signatures", "id");
        merge_array(base, root, "backends", "name");
        merge_array(base, root, "auto_lists", "era");
        merge_array(base, root, "ngc_images", "tag");
        merge_array(base, root, "known_issues", "id");
        const char *scal[] = {"newest_version", "clamp_backends", "unknown_env_warning"};
        for (size_t i = 0; i < MP_ARRAY_SIZE(scal); i++) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, scal[i]);
            if (v) {
                cJSON_DeleteItemFromObjectCaseSensitive(base, scal[i]);
                cJSON_AddItemToObject(base, scal[i], cJSON_Duplicate(v, 1));
            }
        }
        /* unknown top-level keys of the extension are still errors */
        struct kctx c = {d, 0};
        if (!check_keys(&c, root, "knowledge", top_keys)) {
            cJSON_Delete(base);
            cJSON_Delete(root);
            return c.rc;
        }
        rc = build(base, out, d);
        cJSON_Delete(base);
    } else {
        rc = build(root, out, d);
    }
    cJSON_Delete(root);
    return rc;
}

int mp_knowledge_load(const char *path, struct mp_knowledge **out, struct mp_diag *d)
{
    *out = NULL;
    struct buf b = BUF_INIT;
    int rc = mp_read_file(path, KN_MAX_FILE, &b, d);
    if (rc == 0)
        rc = mp_knowledge_load_mem(b.data, b.len, out, d);
    buf_release(&b);
    return rc;
}

const struct mp_knowledge *mp_knowledge_builtin(void)
{
    static struct mp_knowledge *builtin;
    if (!builtin) {
        struct mp_diag d = MP_DIAG_INIT;
        if (mp_knowledge_load_mem((const char *)mp_data_knowledge_json, mp_data_knowledge_json_len,
                                  &builtin, &d) != 0) {
            char msg[600];
            mp_diag_format(&d, msg, sizeof(msg));
            fprintf(stderr, "moeprobe: internal error: built-in knowledge: %s\n", msg);
            abort();
        }
    }
    return builtin;
}

/* ----------------------------------------------------------------- lookups */

static bool flag_eq(const char *a, const char *b)
{
    for (; *a && *b; a++, b++) {
        char x = *a == '_' ? '-' : *a, y = *b == '_' ? '-' : *b;
        if (x != y)
            return false;
    }
    return *a == *b;
}

const struct mp_kn_knob *mp_kn_find_knob(const struct mp_knowledge *k, const char *name)
{
    for (size_t i = 0; i < k->nknobs; i++) {
        const struct mp_kn_knob *kb = &k->knobs[i];
        if (kb->is_flag ? flag_eq(kb->name, name) : !strcmp(kb->name, name))
            return kb;
    }
    return NULL;
}

const struct mp_kn_backend *mp_kn_find_backend(const struct mp_knowledge *k, const char *name)
{
    for (size_t i = 0; i < k->nbackends; i++)
        if (!strcmp(k->backends[i].name, name))
            return &k->backends[i];
    return NULL;
}

const struct mp_kn_era *mp_kn_knob_era(const struct mp_kn_knob *knob, const struct mp_kn_ver *v)
{
    for (size_t i = 0; i < knob->neras; i++) {
        const struct mp_kn_era *e = &knob->eras[i];
        if (e->has_from && mp_kn_ver_cmp(v, &e->from) < 0)
            continue;
        if (e->has_until && mp_kn_ver_cmp(v, &e->until) >= 0)
            continue;
        return e;
    }
    return NULL;
}
