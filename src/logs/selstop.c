/* selstop.c - has the engine printed every selection line? (selstop.h) */
#include "logs/selstop.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "knowledge/knowledge.h"
#include "xalloc.h"

extern const unsigned char mp_data_selection_timing_json[];
extern const size_t mp_data_selection_timing_json_len;

#define MAX_ERAS 16
#define MAX_FLAGS 16

struct sel_era {
    bool has_from, has_until;
    struct mp_kn_ver from, until; /* from <= v < until */
    unsigned construction, after_weights;
};

struct mp_seltiming {
    cJSON *root; /* owns the strings below */
    const char *loaded;
    const char *config_literal, *config_none, *loading, *sel_literal, *sel_also;
    const char *flags[MAX_FLAGS];
    size_t nflags;
    struct sel_era eras[MAX_ERAS];
    size_t neras;
};

/* ---------- the table ---------- */

static int bad(struct mp_diag *d, const char *what)
{
    return mp_diag_set(d, MP_EPARSE, 0, "selection timing: %s", what);
}

/* Only these keys in o (names NULL-terminated). */
static bool keys_ok(const cJSON *o, const char *const *names)
{
    const cJSON *it;
    cJSON_ArrayForEach(it, o)
    {
        bool known = false;
        for (size_t i = 0; names[i] && !known; i++)
            known = !strcmp(it->string, names[i]);
        if (!known)
            return false;
    }
    return true;
}

static const char *str(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) && v->valuestring[0] ? v->valuestring : NULL;
}

static int areas(const cJSON *arr, unsigned *out)
{
    *out = 0;
    if (!cJSON_IsArray(arr))
        return -1;
    const cJSON *it;
    cJSON_ArrayForEach(it, arr)
    {
        const char *a = cJSON_IsString(it) ? it->valuestring : "";
        if (!strcmp(a, "linear"))
            *out |= MP_SEL_LINEAR;
        else if (!strcmp(a, "moe"))
            *out |= MP_SEL_MOE;
        else if (!strcmp(a, "attention"))
            *out |= MP_SEL_ATTENTION;
        else
            return -1;
    }
    return 0;
}

/* A version bound: null (unbounded) or "0.19.1". */
static int bound(const cJSON *v, bool *has, struct mp_kn_ver *out)
{
    *has = false;
    if (!v || cJSON_IsNull(v))
        return 0;
    if (!cJSON_IsString(v) || mp_kn_ver_parse(v->valuestring, out) < 0)
        return -1;
    *has = true;
    return 0;
}

static int parse_era(const cJSON *e, struct sel_era *out, struct mp_diag *d)
{
    static const char *const names[] = {"era", "from", "until", "construction", "after_weights",
                                        "evidence", NULL};
    if (!cJSON_IsObject(e) || !keys_ok(e, names))
        return bad(d, "an era has an unknown key");
    if (bound(cJSON_GetObjectItemCaseSensitive(e, "from"), &out->has_from, &out->from) < 0 ||
        bound(cJSON_GetObjectItemCaseSensitive(e, "until"), &out->has_until, &out->until) < 0)
        return bad(d, "an era's from/until is not a version or null");
    if (areas(cJSON_GetObjectItemCaseSensitive(e, "construction"), &out->construction) < 0 ||
        areas(cJSON_GetObjectItemCaseSensitive(e, "after_weights"), &out->after_weights) < 0)
        return bad(d, "an era's construction/after_weights is not a list of linear, moe, attention");
    if (!out->construction && !out->after_weights)
        return bad(d, "an era names no selection area");
    return 0;
}

static int parse_drafter(const cJSON *o, struct mp_seltiming *t, struct mp_diag *d)
{
    static const char *const names[] = {"config_literal", "config_none", "command_flags",
                                        "loading_literal", "selection_literal", "selection_also",
                                        "source", NULL};
    if (!cJSON_IsObject(o) || !keys_ok(o, names))
        return bad(d, "'drafter' is not an object of the known keys");
    t->config_literal = str(o, "config_literal");
    t->config_none = str(o, "config_none");
    t->loading = str(o, "loading_literal");
    t->sel_literal = str(o, "selection_literal");
    t->sel_also = str(o, "selection_also");
    if (!t->config_literal || !t->config_none || !t->loading || !t->sel_literal)
        return bad(d, "'drafter' lacks a literal");
    const cJSON *f;
    cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(o, "command_flags"))
    {
        if (!cJSON_IsString(f) || strncmp(f->valuestring, "--", 2) || t->nflags == MAX_FLAGS)
            return bad(d, "a drafter command flag is not '--name' (or too many)");
        t->flags[t->nflags++] = f->valuestring;
    }
    return 0;
}

static int parse_root(struct mp_seltiming *t, struct mp_diag *d)
{
    static const char *const names[] = {"format", "about", "loaded", "drafter", "eras", NULL};
    const cJSON *r = t->root;
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(r, "format");
    if (!cJSON_IsObject(r) || !keys_ok(r, names) || !cJSON_IsNumber(fmt) || fmt->valueint != 1)
        return bad(d, "not a format 1 table of the known keys");
    t->loaded = str(cJSON_GetObjectItemCaseSensitive(r, "loaded"), "literal");
    if (!t->loaded)
        return bad(d, "'loaded' has no literal");
    int rc = parse_drafter(cJSON_GetObjectItemCaseSensitive(r, "drafter"), t, d);
    if (rc < 0)
        return rc;
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(r, "eras"))
    {
        if (t->neras == MAX_ERAS)
            return bad(d, "too many eras");
        rc = parse_era(e, &t->eras[t->neras], d);
        if (rc < 0)
            return rc;
        t->neras++;
    }
    return t->neras ? 0 : bad(d, "no era");
}

int mp_seltiming_parse(const char *json, size_t n, struct mp_seltiming **out, struct mp_diag *d)
{
    *out = NULL;
    struct mp_seltiming *t = xcalloc(1, sizeof(*t));
    t->root = cJSON_ParseWithLength(json, n);
    int rc = t->root ? parse_root(t, d) : bad(d, "not JSON");
    if (rc < 0) {
        mp_seltiming_free(t);
        return rc;
    }
    *out = t;
    return 0;
}

void mp_seltiming_free(struct mp_seltiming *t)
{
    if (!t)
        return;
    cJSON_Delete(t->root);
    free(t);
}

const struct mp_seltiming *mp_seltiming_builtin(void)
{
    static struct mp_seltiming *builtin;
    if (!builtin) {
        struct mp_diag d = MP_DIAG_INIT;
        if (mp_seltiming_parse((const char *)mp_data_selection_timing_json,
                               mp_data_selection_timing_json_len, &builtin, &d) < 0) {
            fprintf(stderr, "data/selection-timing.json: %s\n", d.msg);
            abort();
        }
    }
    return builtin;
}

bool mp_seltiming_areas(const struct mp_seltiming *t, const char *v, unsigned *construction,
                        unsigned *after_weights)
{
    *construction = *after_weights = 0;
    struct mp_kn_ver ver;
    if (!v || mp_kn_ver_parse(v, &ver) < 0)
        return false;
    for (size_t i = 0; i < t->neras; i++) {
        const struct sel_era *e = &t->eras[i];
        if ((e->has_from && mp_kn_ver_cmp(&ver, &e->from) < 0) ||
            (e->has_until && mp_kn_ver_cmp(&ver, &e->until) >= 0))
            continue;
        *construction = e->construction;
        *after_weights = e->after_weights;
        return true;
    }
    return false;
}

/* ---------- the watch ---------- */

static bool has(const char *line, size_t len, const char *lit)
{
    return lit && memmem(line, len, lit, strlen(lit)) != NULL;
}

void mp_selstop_init(struct mp_selstop *s, const struct mp_seltiming *t, char *const *argv,
                     size_t argc)
{
    memset(s, 0, sizeof(*s));
    s->t = t;
    s->drafter = -1;
    for (size_t i = 0; i < argc && argv && argv[i]; i++) {
        for (size_t f = 0; f < t->nflags && !s->cmd_drafter; f++) {
            size_t fl = strlen(t->flags[f]);
            /* "--speculative-config" as its own word or "--speculative-config=..." */
            s->cmd_drafter = !strncmp(argv[i], t->flags[f], fl) &&
                             (argv[i][fl] == '\0' || argv[i][fl] == '=');
        }
        /* a shell command in one word: "bash -c 'vllm serve ... --speculative-config ...'" */
        for (size_t f = 0; f < t->nflags && !s->cmd_drafter; f++) {
            const char *p = strstr(argv[i], t->flags[f]);
            size_t fl = strlen(t->flags[f]);
            s->cmd_drafter = p && p > argv[i] && p[-1] == ' ' &&
                             (p[fl] == ' ' || p[fl] == '=');
        }
    }
}

/* The areas lr shows. The MoE area is the quantized MoE's own line: a
 * moe_backend set by an Unquantized MoE line (a drafter, or unquantized
 * shared experts) is not it. */
static unsigned seen(const struct mp_logresult *lr)
{
    unsigned a = 0;
    if (lr->n_linear_kernels || lr->linear_kernel)
        a |= MP_SEL_LINEAR;
    if (lr->moe_backend &&
        !(lr->unquantized_moe_backend && lr->moe_backend_line == lr->unquantized_moe_backend_line))
        a |= MP_SEL_MOE;
    if (lr->attention_backend)
        a |= MP_SEL_ATTENTION;
    return a;
}

static bool drafter_pending(const struct mp_selstop *s)
{
    bool expected = s->drafter == 1 || (s->drafter == -1 && s->cmd_drafter);
    return expected && !s->drafter_selected;
}

static void markers(struct mp_selstop *s, const char *line, size_t len)
{
    const struct mp_seltiming *t = s->t;
    const char *cfg = t->config_literal;
    const char *p = s->drafter == -1 ? memmem(line, len, cfg, strlen(cfg)) : NULL;
    if (p) {
        size_t off = (size_t)(p - line) + strlen(cfg), nl = strlen(t->config_none);
        bool none = len - off >= nl && !memcmp(line + off, t->config_none, nl) &&
                    (len - off == nl || line[off + nl] == ',' || line[off + nl] == ' ');
        s->drafter = none ? 0 : 1;
    }
    if (!s->drafter_loading && has(line, len, t->loading))
        s->drafter_loading = true;
    else if (s->drafter_loading && !s->drafter_selected && has(line, len, t->sel_literal) &&
             (!t->sel_also || has(line, len, t->sel_also)))
        s->drafter_selected = true;
    if (!s->loaded && has(line, len, t->loaded))
        s->loaded = true;
}

bool mp_selstop_line(struct mp_selstop *s, const char *line, size_t len,
                     const struct mp_logresult *lr)
{
    if (s->complete)
        return false;
    markers(s, line, len);
    if (s->loaded) {
        s->by = "the engine's 'Model loading took' line";
        s->complete = true;
        return true;
    }
    unsigned cons, late;
    if (!mp_seltiming_areas(s->t, lr->engine_version, &cons, &late))
        return false;
    if ((seen(lr) & (cons | late)) != (cons | late) || drafter_pending(s))
        return false;
    s->by = s->drafter_selected ? "the drafter's own MoE selection line"
                                : "its selection lines (dense kernel, MoE and attention backends)";
    s->complete = true;
    return true;
}

void mp_selstop_waiting(const struct mp_selstop *s, const struct mp_logresult *lr, char *out,
                        size_t n)
{
    out[0] = '\0';
    if (s->complete)
        return;
    unsigned cons, late;
    if (!mp_seltiming_areas(s->t, lr->engine_version, &cons, &late)) {
        snprintf(out, n, "the engine version (then its era's selection lines)");
        return;
    }
    static const struct {
        unsigned bit;
        const char *what;
    } names[] = {{MP_SEL_LINEAR, "the dense kernel"},
                 {MP_SEL_MOE, "the MoE backend"},
                 {MP_SEL_ATTENTION, "the attention backend"}};
    size_t o = 0;
    unsigned missing = (cons | late) & ~seen(lr);
    for (size_t i = 0; i < MP_ARRAY_SIZE(names) && o < n; i++)
        if (missing & names[i].bit)
            o += (size_t)snprintf(out + o, n - o, "%s%s", o ? ", " : "", names[i].what);
    if (drafter_pending(s) && o < n)
        snprintf(out + o, n - o, "%sthe drafter's MoE selection", o ? ", " : "");
}
