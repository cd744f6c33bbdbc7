/* xsummary.c - what mp_kn_explain concludes from the judged knobs (xint.h):
 * the MoE backend the rules decide, the sentence that matters, whether the
 * server will start, the one-line verdict; and the JSON rendering. */
#include "compat.h"

#include <stdlib.h>
#include <string.h>

#include "knowledge/xint.h"
#include "xalloc.h"

/* The first knob that stops the server, or NULL. */
static const struct mp_kn_knob_report *stopper(const struct mp_explain *e)
{
    for (size_t i = 0; i < e->nknobs; i++)
        if (e->knobs[i].stops)
            return &e->knobs[i];
    return NULL;
}

/* --kernel-config '{"moe_backend": "x"}' with x not a choice: KernelConfig
 * refuses it (the flag itself has no argparse choices). */
static void kernel_config_stop(struct xctx *x)
{
    if (!x->explicit_invalid || !x->explicit_src || strcmp(x->explicit_src, "--moe-backend") == 0)
        return;
    for (size_t i = 0; i < x->out->nknobs; i++) {
        struct mp_kn_knob_report *r = &x->out->knobs[i];
        if (strcmp(r->name, "--kernel-config") || r->stops)
            continue;
        r->status = "rejected";
        r->stops = xasprintf("KernelConfig validation error: moe_backend '%s' is not a choice of "
                             "vLLM %s",
                             x->explicit_val, x->out->engine_version);
        r->fix = xstrdup("use a --moe-backend choice of this version (see explain for "
                         "--moe-backend)");
        return;
    }
}

static void predict(struct xctx *x)
{
    struct mp_explain *o = x->out;
    const char *unk = o->version_known ? "" : " (engine version unknown: evaluated with the "
                                              "newest knowledge)";
    if (x->explicit_val && x->moe_era && !strcmp(x->moe_era->status, "not-yet-available")) {
        o->prediction_reason = xasprintf("%s is not recognised by vLLM %s: the server refuses to "
                                         "start (unrecognized arguments)%s",
                                         x->explicit_src, o->engine_version, unk);
    } else if (x->explicit_invalid) {
        o->prediction_reason = xasprintf(
            "%s '%s' is not a choice vLLM %s has: the server refuses to start (%s)%s",
            x->explicit_src, x->explicit_val, o->engine_version,
            strcmp(x->explicit_src, "--moe-backend") ? "KernelConfig validation error"
                                                     : "argparse invalid choice, exit status 2",
            unk);
    } else if (x->explicit_active) {
        const char *to = mp_xn_map_get(x->moe_knob->map, x->moe_knob->nmap, x->explicit_val);
        if (to) {
            o->predicted_moe_backend = xstrdup(to);
            o->prediction_reason = xasprintf("explicit %s %s decides (no fallback: if %s does not "
                                             "support the deployment, startup fails)%s",
                                             x->explicit_src, x->explicit_val, to, unk);
        } else {
            o->prediction_reason = xasprintf("%s '%s' is not an NvFp4 MoE backend: startup fails "
                                             "with a ValueError%s",
                                             x->explicit_src, x->explicit_val, unk);
        }
    } else if (x->env_predict) {
        o->predicted_moe_backend = xstrdup(x->env_predict);
        o->prediction_reason = xasprintf("%s forces %s in vLLM %s (oracle environment rule)%s",
                                         x->env_predict_knob, x->env_predict, o->engine_version,
                                         unk);
    } else {
        o->prediction_reason =
            xasprintf("auto depends on the device and the checkpoint; run qualify%s", unk);
    }
}

static void summarize(struct xctx *x, const struct mp_kn_knob_report *stop)
{
    struct mp_explain *o = x->out;
    if (stop) {
        o->summary = xasprintf("The server will not start: %s. Fix: %s.", stop->stops,
                               stop->fix ? stop->fix : "remove the knob");
    } else if (x->sum_unknown) {
        o->summary = xasprintf("%s is not a vLLM variable in any upstream release; if setting it "
                               "changed your server's behaviour, your build is a fork or "
                               "something else changed — run moeprobe minimize to find out.",
                               x->sum_unknown);
    } else if (x->sum_overridden) {
        o->summary = xasprintf("%s is overridden by %s %s: only the flag decides the MoE backend "
                               "(%s).",
                               x->sum_overridden, x->explicit_src, x->explicit_val,
                               o->predicted_moe_backend ? o->predicted_moe_backend : "?");
    } else if (x->sum_removed) {
        o->summary = xasprintf("%s is gone in vLLM %s: setting it has no effect.", x->sum_removed,
                               o->engine_version);
    } else if (o->predicted_moe_backend) {
        o->summary = xasprintf("The MoE backend will be %s: %s.", o->predicted_moe_backend,
                               o->prediction_reason);
    } else if (!x->any_moe && o->nknobs) {
        o->summary = xstrdup("None of these knobs selects the MoE backend: auto decides, by "
                             "device and checkpoint — run moeprobe qualify to see which backend "
                             "each choice resolves to.");
    } else {
        o->summary = xasprintf("The MoE backend is not decided by these knobs alone: %s.",
                               o->prediction_reason);
    }
}

/* One line, the verdict first and the fix in it. */
static void verdict(struct xctx *x, const struct mp_kn_knob_report *stop)
{
    struct mp_explain *o = x->out;
    const char *unk = o->version_known ? "" : " (vLLM version unknown: pass --engine-version)";
    if (stop)
        o->verdict = xasprintf("will not start: %s — fix: %s%s", stop->stops,
                               stop->fix ? stop->fix : "remove the knob", unk);
    else if (o->predicted_moe_backend && x->explicit_active)
        o->verdict = xasprintf("MoE backend %s, chosen by %s %s (no fallback)%s",
                               o->predicted_moe_backend, x->explicit_src, x->explicit_val, unk);
    else if (o->predicted_moe_backend)
        o->verdict = xasprintf("MoE backend %s, forced by %s (vLLM %s oracle rule)%s",
                               o->predicted_moe_backend, x->env_predict_knob, o->engine_version,
                               unk);
    else
        o->verdict = xasprintf("MoE backend not decided by these knobs: auto picks by device and "
                               "checkpoint (run moeprobe qualify)%s",
                               unk);
}

void mp_xn_conclude(struct xctx *x)
{
    kernel_config_stop(x);
    predict(x);
    const struct mp_kn_knob_report *stop = stopper(x->out);
    x->out->will_not_start = stop != NULL;
    summarize(x, stop);
    verdict(x, stop);
}

static void jstr(struct buf *b, const char *s)
{
    if (s)
        buf_add_json_str(b, s, strlen(s));
    else
        buf_adds(b, "null");
}

static void knob_json(struct buf *b, const struct mp_kn_knob_report *r)
{
    buf_adds(b, "{\"knob\": ");
    jstr(b, r->knob);
    buf_adds(b, ", \"kind\": ");
    jstr(b, r->kind);
    buf_adds(b, ", \"affects\": ");
    jstr(b, r->affects);
    buf_adds(b, ", \"status\": ");
    jstr(b, r->status);
    buf_adds(b, ", \"note\": ");
    jstr(b, r->note);
    buf_printf(b, ", \"uncertain\": %s, \"stops\": ", r->uncertain ? "true" : "false");
    jstr(b, r->stops);
    buf_adds(b, ", \"fix\": ");
    jstr(b, r->fix);
    buf_addc(b, '}');
}

void mp_kn_explain_to_json(const struct mp_explain *e, struct buf *b)
{
    buf_adds(b, "{\"engine_version\": ");
    jstr(b, e->engine_version);
    buf_printf(b, ", \"version_known\": %s,\n  \"verdict\": ", e->version_known ? "true" : "false");
    jstr(b, e->verdict);
    buf_printf(b, ", \"will_not_start\": %s,\n  \"knobs\": [", e->will_not_start ? "true" : "false");
    for (size_t i = 0; i < e->nknobs; i++) {
        buf_adds(b, i ? ",\n    " : "\n    ");
        knob_json(b, &e->knobs[i]);
    }
    buf_adds(b, e->nknobs ? "\n  ],\n  \"predicted_moe_backend\": " : "],\n  \"predicted_moe_backend\": ");
    jstr(b, e->predicted_moe_backend);
    buf_adds(b, ", \"prediction_reason\": ");
    jstr(b, e->prediction_reason);
    buf_adds(b, ",\n  \"summary\": ");
    jstr(b, e->summary);
    buf_adds(b, "}\n");
}
