/* explain.c - what a set of knobs does for one vLLM version (mp_kn_explain). */
#include "compat.h"

#include <stdlib.h>
#include <string.h>

#include "knowledge/knowledge.h"
#include "secret.h"
#include "vec.h"
#include "xalloc.h"

struct flagkv {
    const char *name; /* points into the caller's words or into own */
    size_t namelen;
    const char *value; /* NULL: boolean flag */
};

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

static char *norm_value(const char *v)
{
    char *s = xstrdup(v);
    for (char *p = s; *p; p++) {
        if (*p == '-')
            *p = '_';
        else if (*p >= 'A' && *p <= 'Z')
            *p = (char)(*p - 'A' + 'a');
    }
    return s;
}

static const char *map_get(const struct mp_kn_pair *m, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(m[i].key, key))
            return m[i].value;
    return NULL;
}

/* The values the knob takes in this era: the era's own list (a flag's
 * argparse choices grow by version), else the knob's. */
static void era_values(const struct mp_kn_knob *kb, const struct mp_kn_era *era, char ***v,
                       size_t *n)
{
    *v = era && era->nvalues ? era->values : kb->values;
    *n = era && era->nvalues ? era->nvalues : kb->nvalues;
}

static bool in_values(const struct mp_kn_knob *kb, const struct mp_kn_era *era, const char *v)
{
    char **vals;
    size_t n;
    era_values(kb, era, &vals, &n);
    for (size_t i = 0; i < n; i++)
        if (!strcmp(vals[i], v))
            return true;
    return false;
}

static char *values_list(const struct mp_kn_knob *kb, const struct mp_kn_era *era)
{
    char **vals;
    size_t n;
    era_values(kb, era, &vals, &n);
    struct buf b = BUF_INIT;
    for (size_t i = 0; i < n; i++)
        buf_printf(&b, "%s'%s'", i ? ", " : "", vals[i]);
    return buf_detach(&b, NULL);
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

static void add_report(struct mp_explain *e, size_t *cap, struct mp_kn_knob_report r)
{
    mp_grow(e->knobs, *cap, e->nknobs + 1);
    e->knobs[e->nknobs++] = r;
}

static char *era_note(const struct mp_kn_era *era)
{
    const char *u = era->uncertain ? "uncertain (not verified in vLLM's source; best estimate): "
                                   : "";
    if (era->source)
        return xasprintf("%s%s [%s]", u, era->note, era->source);
    return xasprintf("%s%s", u, era->note);
}

static bool env_has(char **env, size_t nenv, const char *assign)
{
    for (size_t i = 0; i < nenv; i++)
        if (!strcmp(env[i], assign))
            return true;
    return false;
}

int mp_kn_explain(const struct mp_knowledge *k, const char *engine_version, char **env,
                  size_t nenv, char **flags, size_t nflags, struct mp_explain *out)
{
    memset(out, 0, sizeof(*out));
    struct mp_kn_ver v;
    if (engine_version) {
        if (mp_kn_ver_parse(engine_version, &v) != 0)
            return MP_EPARSE;
        out->engine_version = xstrdup(engine_version[0] == 'v' ? engine_version + 1 : engine_version);
        out->version_known = true;
    } else {
        mp_kn_ver_parse(k->newest_version, &v);
        out->engine_version = xstrdup(k->newest_version);
    }
    size_t cap = 0;
    struct flagkv *fl;
    size_t nfl;
    parse_flags(flags, nflags, &fl, &nfl);

    /* the explicit MoE choice, if any */
    char *explicit_val = NULL;
    const char *explicit_src = NULL;
    bool explicit_invalid = false; /* argparse (or KernelConfig validation) rejects it */
    const struct mp_kn_knob *moe_knob = mp_kn_find_knob(k, "--moe-backend");
    const struct mp_kn_era *moe_era = moe_knob ? mp_kn_knob_era(moe_knob, &v) : NULL;
    for (size_t i = 0; i < nfl; i++) {
        char *name = norm_flag(fl[i].name, fl[i].namelen);
        if (!strcmp(name, "--moe-backend") && fl[i].value && !explicit_val) {
            /* argparse choices: exact, case- and hyphen-sensitive */
            explicit_val = xstrdup(fl[i].value);
            explicit_src = "--moe-backend";
            explicit_invalid = moe_knob && !in_values(moe_knob, moe_era, explicit_val);
        } else if (!strcmp(name, "--kernel-config") && !explicit_val) {
            char *x = kernel_config_moe(fl[i].value);
            if (x) {
                /* KernelConfig's validator lower-cases and turns '-' into '_' */
                explicit_val = norm_value(x);
                explicit_src = "--kernel-config moe_backend";
                explicit_invalid = moe_knob && !in_values(moe_knob, moe_era, explicit_val);
                free(x);
            }
        }
        free(name);
    }
    if (explicit_val && !explicit_invalid && !strcmp(explicit_val, "auto")) {
        free(explicit_val);
        explicit_val = NULL;
    }
    bool explicit_active =
        explicit_val && !explicit_invalid && moe_era && !strcmp(moe_era->status, "active");

    const char *env_predict = NULL;
    char *env_predict_knob = NULL;
    const char *summary_unknown = NULL, *summary_removed = NULL, *summary_overridden = NULL;
    const char *summary_nya = NULL;
    char *summary_nya_note = NULL;
    bool any_moe = false;

    for (size_t i = 0; i < nenv; i++) {
        const char *eq = strchr(env[i], '=');
        if (!eq || eq == env[i])
            continue;
        struct mp_kn_knob_report r = {0};
        char *name = xstrndup(env[i], (size_t)(eq - env[i]));
        const char *value = eq + 1;
        bool secret = mp_is_secret_name(name, strlen(name));
        r.name = name;
        r.knob = secret ? xasprintf("%s=***", name) : xstrdup(env[i]);
        r.kind = "env";
        const struct mp_kn_knob *kb = mp_kn_find_knob(k, name);
        const struct mp_kn_era *era = kb && !kb->is_flag ? mp_kn_knob_era(kb, &v) : NULL;
        if (!era) {
            if (!strncmp(name, "VLLM_", 5)) {
                r.affects = "none";
                r.status = "unknown-to-engine";
                r.note = xasprintf("not a variable of any vLLM release moeprobe knows (knowledge up to "
                                   "v%s): vLLM ignores it (newer versions warn 'Unknown vLLM "
                                   "environment variable detected')",
                                   k->newest_version);
                if (!summary_unknown)
                    summary_unknown = name;
            } else {
                r.affects = "unknown";
                r.status = "active";
                r.note = xstrdup("not a vLLM variable; read by CUDA, PyTorch or another library, "
                                 "if at all");
            }
        } else {
            r.affects = era->affects;
            r.status = era->status;
            r.uncertain = era->uncertain;
            char *note = era_note(era);
            if (era->overridden_by && explicit_active && !strcmp(era->overridden_by, "--moe-backend")) {
                r.status = "overridden";
                char *n2 = xasprintf("overridden: %s %s is evaluated before any environment "
                                     "variable. %s",
                                     explicit_src, explicit_val, note);
                free(note);
                note = n2;
                if (!summary_overridden)
                    summary_overridden = name;
            }
            if (kb->nvalues && !in_values(kb, era, value) && !secret) {
                char *n2 = xasprintf("%s (value '%s' is not one this knob takes)", note, value);
                free(note);
                note = n2;
            }
            r.note = note;
            if (!strcmp(r.status, "unknown-to-engine") && !summary_unknown)
                summary_unknown = name;
            if (!strcmp(r.status, "removed") && !summary_removed)
                summary_removed = name;
            if (!strcmp(r.affects, "moe") && strcmp(r.status, "removed") &&
                strcmp(r.status, "not-yet-available"))
                any_moe = true;
            if (era->predicts && strcmp(r.status, "overridden") &&
                (!era->predict_value || !strcmp(era->predict_value, value)) &&
                !(era->unless && env_has(env, nenv, era->unless)) && !env_predict) {
                env_predict = era->predicts;
                env_predict_knob = xstrdup(r.knob);
            }
        }
        add_report(out, &cap, r);
    }

    for (size_t i = 0; i < nfl; i++) {
        struct mp_kn_knob_report r = {0};
        char *name = norm_flag(fl[i].name, fl[i].namelen);
        bool secret = mp_is_secret_name(name, strlen(name));
        r.name = name;
        r.kind = "flag";
        if (fl[i].value)
            r.knob = xasprintf("%s %s", name, secret ? "***" : fl[i].value);
        else
            r.knob = xstrdup(name);
        const struct mp_kn_knob *kb = mp_kn_find_knob(k, name);
        const struct mp_kn_era *era = kb && kb->is_flag ? mp_kn_knob_era(kb, &v) : NULL;
        if (!era) {
            r.affects = "unknown";
            r.status = "active";
            r.note = xstrdup("not in moeprobe's knowledge: not known to select a MoE kernel");
        } else {
            r.affects = era->affects;
            r.status = era->status;
            r.uncertain = era->uncertain;
            char *note = era_note(era);
            bool available = strcmp(r.status, "not-yet-available") != 0;
            if (kb->nvalues && fl[i].value && available) {
                /* a flag's value is an argparse choice: exact spelling */
                const char *val = fl[i].value;
                const char *to = map_get(kb->map, kb->nmap, val);
                char *n2;
                if (!in_values(kb, era, val)) {
                    char *choices = values_list(kb, era);
                    char *nv = norm_value(val);
                    bool respelt = strcmp(nv, val) && in_values(kb, era, nv);
                    n2 = xasprintf("'%s' is not one of the choices of %s in vLLM %s: argparse "
                                   "stops the server before it starts (\"argument %s: invalid "
                                   "choice\", exit status 2)%s%s%s; choices: %s. %s",
                                   val, name, out->engine_version, name,
                                   respelt ? ": the flag is case- and hyphen-sensitive (write '" : "",
                                   respelt ? nv : "", respelt ? "')" : "", choices, note);
                    free(nv);
                    free(choices);
                } else if (!to && strcmp(val, "auto") && kb->nmap)
                    n2 = xasprintf("'%s' is not a value vLLM accepts for NvFp4 MoE: startup fails "
                                   "with a ValueError (moe_backend='%s' is not supported for "
                                   "NvFP4 MoE). %s",
                                   val, val, note);
                else if (to)
                    n2 = xasprintf("selects %s. %s", to, note);
                else
                    n2 = xstrdup(note);
                free(note);
                note = n2;
            }
            r.note = note;
            if (!strcmp(r.status, "not-yet-available") && !summary_nya) {
                summary_nya = name;
                summary_nya_note = xstrdup(era->note);
            }
            if (!strcmp(r.affects, "moe") && !strcmp(r.status, "active"))
                any_moe = true;
        }
        add_report(out, &cap, r);
    }

    /* prediction */
    const char *unknown_version = out->version_known ? "" : " (engine version unknown: evaluated "
                                                             "with the newest knowledge)";
    if (explicit_val && moe_era && !strcmp(moe_era->status, "not-yet-available")) {
        out->prediction_reason = xasprintf("%s is not recognised by vLLM %s: the server refuses to "
                                           "start (unrecognized arguments)%s",
                                           explicit_src, out->engine_version, unknown_version);
    } else if (explicit_invalid) {
        out->prediction_reason = xasprintf(
            "%s '%s' is not a choice vLLM %s has: the server refuses to start (%s)%s", explicit_src,
            explicit_val, out->engine_version,
            strcmp(explicit_src, "--moe-backend") ? "KernelConfig validation error"
                                                  : "argparse invalid choice, exit status 2",
            unknown_version);
    } else if (explicit_active) {
        const char *to = map_get(moe_knob->map, moe_knob->nmap, explicit_val);
        if (to) {
            out->predicted_moe_backend = xstrdup(to);
            out->prediction_reason = xasprintf(
                "explicit %s %s decides (no fallback: if %s does not support the deployment, "
                "startup fails)%s",
                explicit_src, explicit_val, to, unknown_version);
        } else {
            out->prediction_reason = xasprintf("%s '%s' is not an NvFp4 MoE backend: startup "
                                               "fails with a ValueError%s",
                                               explicit_src, explicit_val, unknown_version);
        }
    } else if (env_predict) {
        out->predicted_moe_backend = xstrdup(env_predict);
        out->prediction_reason = xasprintf("%s forces %s in vLLM %s (oracle environment rule)%s",
                                           env_predict_knob, env_predict, out->engine_version,
                                           unknown_version);
    } else {
        out->prediction_reason = xasprintf("auto depends on the device and the checkpoint; run "
                                           "qualify%s",
                                           unknown_version);
    }

    /* the sentence that matters */
    if (explicit_invalid) {
        out->summary = xasprintf("The server will not start: %s.", out->prediction_reason);
    } else if (summary_unknown) {
        out->summary = xasprintf("%s is not a vLLM variable in any upstream release; if setting it "
                                 "changed your server's behaviour, your build is a fork or "
                                 "something else changed — run moeprobe minimize to find out.",
                                 summary_unknown);
    } else if (summary_nya) {
        out->summary = xasprintf("%s does not exist in vLLM %s: %s.", summary_nya,
                                 out->engine_version, summary_nya_note);
    } else if (summary_overridden) {
        out->summary = xasprintf("%s is overridden by %s %s: only the flag decides the MoE backend "
                                 "(%s).",
                                 summary_overridden, explicit_src, explicit_val,
                                 out->predicted_moe_backend ? out->predicted_moe_backend : "?");
    } else if (summary_removed) {
        out->summary = xasprintf("%s is gone in vLLM %s: setting it has no effect.", summary_removed,
                                 out->engine_version);
    } else if (out->predicted_moe_backend) {
        out->summary = xasprintf("The MoE backend will be %s: %s.", out->predicted_moe_backend,
                                 out->prediction_reason);
    } else if (!any_moe && out->nknobs) {
        out->summary = xstrdup("None of these knobs selects the MoE backend: auto decides, by "
                               "device and checkpoint — run moeprobe qualify to see which backend "
                               "each choice resolves to.");
    } else {
        out->summary = xasprintf("The MoE backend is not decided by these knobs alone: %s.",
                                 out->prediction_reason);
    }
    free(summary_nya_note);
    free(env_predict_knob);
    free(explicit_val);
    free(fl);
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
    }
    free(e->knobs);
    free(e->engine_version);
    free(e->predicted_moe_backend);
    free(e->prediction_reason);
    free(e->summary);
    memset(e, 0, sizeof(*e));
}

static void jstr(struct buf *b, const char *s)
{
    if (s)
        buf_add_json_str(b, s, strlen(s));
    else
        buf_adds(b, "null");
}

void mp_kn_explain_to_json(const struct mp_explain *e, struct buf *b)
{
    buf_adds(b, "{\"engine_version\": ");
    jstr(b, e->engine_version);
    buf_printf(b, ", \"version_known\": %s,\n  \"knobs\": [", e->version_known ? "true" : "false");
    for (size_t i = 0; i < e->nknobs; i++) {
        const struct mp_kn_knob_report *r = &e->knobs[i];
        buf_adds(b, i ? ",\n    {\"knob\": " : "\n    {\"knob\": ");
        jstr(b, r->knob);
        buf_adds(b, ", \"kind\": ");
        jstr(b, r->kind);
        buf_adds(b, ", \"affects\": ");
        jstr(b, r->affects);
        buf_adds(b, ", \"status\": ");
        jstr(b, r->status);
        buf_adds(b, ", \"note\": ");
        jstr(b, r->note);
        buf_printf(b, ", \"uncertain\": %s}", r->uncertain ? "true" : "false");
    }
    buf_adds(b, e->nknobs ? "\n  ],\n  \"predicted_moe_backend\": " : "],\n  \"predicted_moe_backend\": ");
    jstr(b, e->predicted_moe_backend);
    buf_adds(b, ", \"prediction_reason\": ");
    jstr(b, e->prediction_reason);
    buf_adds(b, ",\n  \"summary\": ");
    jstr(b, e->summary);
    buf_adds(b, "}\n");
}
