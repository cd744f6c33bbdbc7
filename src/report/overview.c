/* overview.c - the first screen's shared parts (overview.h). */
#include "report/overview.h"

#include <stdlib.h>
#include <string.h>

#include "escape.h"
#include "verdict/inherit.h"
#include "xalloc.h"

static cJSON *str_or_null(const char *s)
{
    return s ? cJSON_CreateString(s) : cJSON_CreateNull();
}

void mp_rep_inherited_json(const struct mp_report *rep, cJSON *fp)
{
    const struct mp_inherited *in = &rep->inherited;
    cJSON *env = cJSON_AddObjectToObject(fp, "inherited_env");
    cJSON *det = cJSON_AddArrayToObject(fp, "inherited_env_detail");
    for (size_t i = 0; i < in->n; i++) {
        const struct mp_inh_var *v = &in->v[i];
        if (v->passed)
            cJSON_AddItemToObject(env, v->name, cJSON_CreateString(v->value));
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToObject(o, "name", cJSON_CreateString(v->name));
        cJSON_AddItemToObject(o, "value", cJSON_CreateString(v->value));
        cJSON_AddBoolToObject(o, "passed", v->passed);
        cJSON_AddItemToObject(o, "acts_on_selection",
                              v->acts == MP_INH_UNKNOWN ? cJSON_CreateNull()
                                                        : cJSON_CreateBool(v->acts == MP_INH_YES));
        cJSON_AddItemToObject(o, "affects", str_or_null(v->affects));
        cJSON_AddItemToObject(o, "note", str_or_null(v->note));
        cJSON_AddItemToArray(det, o);
    }
    cJSON_AddBoolToObject(fp, "clean_env", in->clean_env);
}

/* What a variable does, in a few words. */
static const char *acts_words(const struct mp_inh_var *v)
{
    if (v->acts == MP_INH_UNKNOWN)
        return "unknown to moeprobe: may change a kernel selection";
    if (v->acts != MP_INH_YES)
        return "no selection";
    if (v->affects && !strcmp(v->affects, "moe"))
        return "acts on the MoE backend selection";
    if (v->affects && !strcmp(v->affects, "linear"))
        return "acts on the dense kernel selection";
    if (v->affects && !strcmp(v->affects, "attention"))
        return "acts on the attention backend selection";
    return "acts on a kernel selection";
}

/* The variables with passed == want, as "`A=1` (what it does), ..." in the
 * format of md (else HTML). Returns how many. */
static size_t list_vars(const struct mp_inherited *in, bool want, bool md, struct buf *b)
{
    size_t n = 0;
    for (size_t i = 0; i < in->n; i++) {
        const struct mp_inh_var *v = &in->v[i];
        if (v->passed != want)
            continue;
        char *kv = xasprintf("%s=%s", v->name, v->value);
        buf_adds(b, n++ ? ", " : "");
        if (md) {
            mp_md_code(b, kv, 400, 0);
        } else {
            buf_adds(b, v->acts != MP_INH_NO && want ? "<code class=bad>" : "<code>");
            mp_html_esc(b, kv, 400);
            buf_adds(b, "</code>");
        }
        if (want) {
            buf_adds(b, " (");
            buf_adds(b, md && v->acts != MP_INH_NO ? "**" : "");
            buf_adds(b, acts_words(v));
            buf_adds(b, md && v->acts != MP_INH_NO ? "**" : "");
            buf_adds(b, ")");
        }
        free(kv);
    }
    return n;
}

static size_t count(const struct mp_inherited *in, bool passed)
{
    size_t n = 0;
    for (size_t i = 0; i < in->n; i++)
        n += in->v[i].passed == passed;
    return n;
}

static void inherited_text(const struct mp_report *rep, bool md, struct buf *b)
{
    const struct mp_inherited *in = &rep->inherited;
    size_t npass = count(in, true), nrem = count(in, false), nact = mp_inherited_nacting(in);
    if (npass) {
        buf_adds(b, md ? "**Inherited environment**: every candidate, auto included, ran with "
                       : "<b>Inherited environment</b>: every candidate, auto included, ran with ");
        list_vars(in, true, md, b);
        buf_adds(b, ". ");
    }
    if (nrem) {
        buf_adds(b, md ? "`--clean-env` removed " : "<code>--clean-env</code> removed ");
        list_vars(in, false, md, b);
        buf_adds(b, " from the engines' environment. ");
    }
    if (nact)
        buf_printf(b, "%s act%s on what the engine selects, so \"auto\" is not the engine's "
                      "default here and no knob is called a no-op unless the engine said it does "
                      "not know it; %s starts the engines without %s.",
                   nact == 1 ? "One of them may" : "Some of them may", nact == 1 ? "s" : "",
                   md ? "`--clean-env`" : "<code>--clean-env</code>", nact == 1 ? "it" : "them");
    else if (npass && !in->clean_env)
        buf_adds(b, "None of them acts on a kernel selection (per moeprobe's knowledge).");
}

void mp_rep_inherited_md(const struct mp_report *rep, struct buf *b)
{
    if (!rep->inherited.n)
        return;
    inherited_text(rep, true, b);
    buf_adds(b, "\n\n");
}

void mp_rep_inherited_html(const struct mp_report *rep, struct buf *b)
{
    if (!rep->inherited.n)
        return;
    buf_adds(b, mp_inherited_nacting(&rep->inherited) ? "<p class=\"fp inh bad\">"
                                                        : "<p class=\"fp inh\">");
    inherited_text(rep, false, b);
    buf_adds(b, "</p>\n");
}

char *mp_rep_inherited_noop_note(const struct mp_report *rep)
{
    char *acting = mp_inherit_acting_list(&rep->inherited);
    if (!acting)
        return NULL;
    char *s = xasprintf("No knob is listed as changing nothing unless the engine said it does not "
                        "know it: the inherited %s changes what every candidate, auto included, "
                        "resolves to (run with --clean-env to compare against the engine's "
                        "default).",
                        acting);
    free(acting);
    return s;
}

void mp_rep_stop_md(const struct mp_report *rep, struct buf *b)
{
    if (!rep->stop_reason)
        return;
    buf_adds(b, "> **The run stopped early.** ");
    mp_md_text(b, rep->stop_reason, 4000, 0);
    buf_adds(b, ". The candidates after it were not started: no backend can be judged while the "
                "command fails; a new run with the fixed command tests them.\n\n");
}

void mp_rep_stop_html(const struct mp_report *rep, struct buf *b)
{
    if (!rep->stop_reason)
        return;
    buf_adds(b, "<div class=banner role=alert><b>The run stopped early.</b> ");
    mp_html_esc(b, rep->stop_reason, 4000);
    buf_adds(b, ". The candidates after it were not started: no backend can be judged while the "
                "command fails; a new run with the fixed command tests them.</div>\n");
}
