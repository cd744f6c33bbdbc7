/* explain.c - what a set of knobs does for one vLLM version (mp_kn_explain).
 * The knobs are judged one by one (explain_env, explain_flag), then the
 * prediction, the closing sentence and the one-line verdict are drawn
 * (xsummary.c). */
#include "compat.h"

#include <stdlib.h>
#include <string.h>

#include "knowledge/knowledge.h"
#include "knowledge/xint.h"
#include "secret.h"
#include "vec.h"
#include "xalloc.h"

static void parse_flags(char **flags, size_t nflags, struct flagkv **out, size_t *n)
{
    *out = xcalloc(nflags + 1, sizeof(**out));
    *n = 0;
    for (size_t i = 0; i < nflags; i++) {
        const char *w = flags[i];
        if (strncmp(w, "--", 2) != 0 || w[2] == 0)
            continue;
        struct flagkv *f = &(*out)[(*n)++];
        const char *eq = strchr(w, '=');
        f->name = w;
        if (eq) {
            f->namelen = (size_t)(eq - w);
            f->value = eq + 1;
        } else {
            f->namelen = strlen(w);
            if (i + 1 < nflags && strncmp(flags[i + 1], "--", 2) != 0)
                f->value = flags[++i];
        }
    }
}

/* "--moe_backend" -> "--moe-backend" */
static char *norm_flag(const char *name, size_t n)
{
    char *s = xstrndup(name, n);
    for (char *p = s + 2; *p; p++)
        if (*p == '_')
            *p = '-';
    return s;
}

/* moe_backend out of --kernel-config '{"moe_backend": "x"}' */
static char *kernel_config_moe(const char *json)
{
    const char *p = json ? strstr(json, "moe_backend") : NULL;
    if (!p)
        return NULL;
    p += strlen("moe_backend");
    while (*p && (*p == '"' || *p == '\'' || *p == ' ' || *p == ':' || *p == '='))
        p++;
    size_t n = 0;
    while (p[n] && (p[n] == '_' || p[n] == '-' || (p[n] >= 'a' && p[n] <= 'z') ||
                    (p[n] >= 'A' && p[n] <= 'Z') || (p[n] >= '0' && p[n] <= '9')))
        n++;
    return n ? xstrndup(p, n) : NULL;
}

static void add_report(struct xctx *x, struct mp_kn_knob_report r)
{
    mp_grow(x->out->knobs, x->cap, x->out->nknobs + 1);
    x->out->knobs[x->out->nknobs++] = r;
}

char *mp_xn_era_note(const struct mp_kn_era *era)
{
    const char *u = era->uncertain ? "uncertain (not verified in vLLM's source; best estimate): "
                                   : "";
    if (era->source)
        return xasprintf("%s%s [%s]", u, era->note, era->source);
    return xasprintf("%s%s", u, era->note);
}

/* The explicit MoE choice: --moe-backend (argparse normalises the value
 * first) or --kernel-config's moe_backend (KernelConfig normalises it). */
static void find_explicit(struct xctx *x)
{
    x->moe_knob = mp_kn_find_knob(x->k, "--moe-backend");
    x->moe_era = x->moe_knob ? mp_kn_knob_era(x->moe_knob, &x->v) : NULL;
    for (size_t i = 0; i < x->nfl && !x->explicit_val; i++) {
        char *name = norm_flag(x->fl[i].name, x->fl[i].namelen);
        char *raw = NULL;
        if (!strcmp(name, "--moe-backend") && x->fl[i].value) {
            raw = xstrdup(x->fl[i].value);
            x->explicit_src = "--moe-backend";
        } else if (!strcmp(name, "--kernel-config")) {
            raw = kernel_config_moe(x->fl[i].value);
            x->explicit_src = raw ? "--kernel-config moe_backend" : NULL;
        }
        if (raw) {
            x->explicit_val = mp_xn_norm_value(raw);
            x->explicit_invalid =
                x->moe_knob && !mp_xn_in_values(x->moe_knob, x->moe_era, x->explicit_val);
            free(raw);
        }
        free(name);
    }
    if (x->explicit_val && !x->explicit_invalid && !strcmp(x->explicit_val, "auto")) {
        free(x->explicit_val);
        x->explicit_val = NULL;
    }
    x->explicit_active = x->explicit_val && !x->explicit_invalid && x->moe_era &&
                         !strcmp(x->moe_era->status, "active");
}

/* A VLLM_* (or other) variable the knowledge does not list. */
static void unknown_env(struct xctx *x, const char *name, struct mp_kn_knob_report *r)
{
    if (strncmp(name, "VLLM_", 5) != 0) {
        r->affects = "unknown";
        r->status = "active";
        r->note = xstrdup("not a vLLM variable; read by CUDA, PyTorch or another library, if at all");
        return;
    }
    r->affects = "none";
    r->status = "unknown-to-engine";
    r->note = mp_xn_unknown_env_note(x, name);
    if (!x->sum_unknown)
        x->sum_unknown = name;
}

/* A known variable in its era: status, note, override, value checks, rule. */
static void known_env(struct xctx *x, const struct mp_kn_knob *kb, const struct mp_kn_era *era,
                      const char *name, const char *value, bool secret,
                      struct mp_kn_knob_report *r)
{
    r->affects = era->affects;
    r->status = era->status;
    r->uncertain = era->uncertain;
    char *note = mp_xn_era_note(era);
    if (era->overridden_by && x->explicit_active && !strcmp(era->overridden_by, "--moe-backend")) {
        r->status = "overridden";
        char *n2 = xasprintf("overridden: %s %s is evaluated before any environment variable. %s",
                             x->explicit_src, x->explicit_val, note);
        free(note);
        note = n2;
        if (!x->sum_overridden)
            x->sum_overridden = name;
    }
    r->note = note;
    if (!secret)
        mp_xn_env_value(x, kb, era, name, value, r);
    if (!strcmp(r->status, "unknown-to-engine") && !x->sum_unknown)
        x->sum_unknown = name;
    if (!strcmp(r->status, "removed") && !x->sum_removed)
        x->sum_removed = name;
    if (!strcmp(r->affects, "moe") && strcmp(r->status, "removed") &&
        strcmp(r->status, "not-yet-available"))
        x->any_moe = true;
    if (era->predicts && strcmp(r->status, "overridden") && strcmp(r->status, "rejected") &&
        (!era->predict_value || !strcmp(era->predict_value, value)) &&
        !(era->unless && mp_xn_env_has(x->env, x->nenv, era->unless)) && !x->env_predict) {
        x->env_predict = era->predicts;
        x->env_predict_knob = xstrdup(r->knob);
    }
}

static void explain_env(struct xctx *x, size_t i)
{
    const char *eq = strchr(x->env[i], '=');
    if (!eq || eq == x->env[i])
        return;
    struct mp_kn_knob_report r = {0};
    char *name = xstrndup(x->env[i], (size_t)(eq - x->env[i]));
    bool secret = mp_is_secret_name(name, strlen(name));
    r.name = name;
    r.knob = secret ? xasprintf("%s=***", name) : xstrdup(x->env[i]);
    r.kind = "env";
    const struct mp_kn_knob *kb = mp_kn_find_knob(x->k, name);
    const struct mp_kn_era *era = kb && !kb->is_flag ? mp_kn_knob_era(kb, &x->v) : NULL;
    if (!era)
        unknown_env(x, name, &r);
    else
        known_env(x, kb, era, name, eq + 1, secret, &r);
    add_report(x, r);
}

static void explain_flag(struct xctx *x, size_t i)
{
    const struct flagkv *f = &x->fl[i];
    struct mp_kn_knob_report r = {0};
    char *name = norm_flag(f->name, f->namelen);
    bool secret = mp_is_secret_name(name, strlen(name));
    r.name = name;
    r.kind = "flag";
    r.knob = f->value ? xasprintf("%s %s", name, secret ? "***" : f->value) : xstrdup(name);
    const struct mp_kn_knob *kb = mp_kn_find_knob(x->k, name);
    const struct mp_kn_era *era = kb && kb->is_flag ? mp_kn_knob_era(kb, &x->v) : NULL;
    if (!era) {
        r.affects = "unknown";
        r.status = "active";
        r.note = xstrdup("not in moeprobe's knowledge: not known to select a MoE kernel");
        add_report(x, r);
        return;
    }
    r.affects = era->affects;
    r.status = era->status;
    r.uncertain = era->uncertain;
    r.note = mp_xn_era_note(era);
    if (!strcmp(r.status, "not-yet-available")) {
        mp_xn_flag_missing(x, kb, name, &r);
        if (!x->sum_nya) {
            x->sum_nya = name;
            x->sum_nya_note = xstrdup(era->note);
        }
    } else if (f->value && !secret && (kb->nvalues || kb->nmap || kb->normalize)) {
        mp_xn_flag_value(x, kb, era, name, f->value, &r);
    }
    if (!strcmp(r.affects, "moe") && !strcmp(r.status, "active"))
        x->any_moe = true;
    add_report(x, r);
}

int mp_kn_explain(const struct mp_knowledge *k, const char *engine_version, char **env,
                  size_t nenv, char **flags, size_t nflags, struct mp_explain *out)
{
    memset(out, 0, sizeof(*out));
    struct xctx x = {.k = k, .out = out, .env = env, .nenv = nenv};
    if (engine_version) {
        if (mp_kn_ver_parse(engine_version, &x.v) != 0)
            return MP_EPARSE;
        out->engine_version =
            xstrdup(engine_version[0] == 'v' ? engine_version + 1 : engine_version);
        out->version_known = true;
    } else {
        mp_kn_ver_parse(k->newest_version, &x.v);
        out->engine_version = xstrdup(k->newest_version);
    }
    parse_flags(flags, nflags, &x.fl, &x.nfl);
    find_explicit(&x);
    for (size_t i = 0; i < nenv; i++)
        explain_env(&x, i);
    for (size_t i = 0; i < x.nfl; i++)
        explain_flag(&x, i);
    mp_xn_conclude(&x);
    free(x.sum_nya_note);
    free(x.env_predict_knob);
    free(x.explicit_val);
    free(x.fl);
    return 0;
}

void mp_kn_explain_release(struct mp_explain *e)
{
    if (!e)
        return;
    for (size_t i = 0; i < e->nknobs; i++) {
        free(e->knobs[i].knob);
        free(e->knobs[i].name);
        free(e->knobs[i].note);
        free(e->knobs[i].stops);
        free(e->knobs[i].fix);
    }
    free(e->knobs);
    free(e->engine_version);
    free(e->predicted_moe_backend);
    free(e->prediction_reason);
    free(e->summary);
    free(e->verdict);
    memset(e, 0, sizeof(*e));
}
