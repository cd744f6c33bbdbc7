/* inherit.c - the inherited environment's meaning (verdict/inherit.h). */
#include "verdict/inherit.h"

#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "knowledge/knowledge.h"
#include "xalloc.h"

static bool era_acts(const struct mp_kn_era *e)
{
    static const char *const areas[] = {"moe", "linear", "attention"};
    static const char *const idle[] = {"removed", "not-yet-available", "unknown-to-engine"};
    bool area = false;
    for (size_t i = 0; i < MP_ARRAY_SIZE(areas); i++)
        area |= e->affects && !strcmp(e->affects, areas[i]);
    for (size_t i = 0; area && i < MP_ARRAY_SIZE(idle); i++)
        if (e->status && !strcmp(e->status, idle[i]))
            return false;
    return area;
}

/* The engine's version is not known (versioned false), or the knowledge
 * has no era of knob for it: when knob acts on a selection in some of its
 * eras and not in others, v may act - says so instead of guessing an era,
 * and returns true. False when every era agrees (the caller judges). */
static bool some_versions(const struct mp_kn_knob *knob, bool versioned, struct mp_inh_var *v)
{
    const struct mp_kn_era *a = NULL;
    size_t nact = 0;
    for (size_t i = 0; i < knob->neras; i++)
        if (era_acts(&knob->eras[i])) { /* the MoE backend's era first */
            nact++;
            if (!a || (strcmp(a->affects, "moe") && !strcmp(knob->eras[i].affects, "moe")))
                a = &knob->eras[i];
        }
    if (!a || (nact == knob->neras && !versioned))
        return false;
    v->acts = MP_INH_UNKNOWN;
    v->affects = xstrdup(a->affects);
    v->note = xasprintf("%s: it acts on the %s selection in some vLLM versions only",
                        versioned ? "moeprobe's knowledge has no era of it for this vLLM version"
                                  : "the engine's vLLM version is not known",
                        a->affects);
    return true;
}

static void judge_one(const struct mp_knowledge *kn, const struct mp_kn_ver *ver,
                      struct mp_inh_var *v)
{
    free(v->affects);
    free(v->note);
    v->affects = v->note = NULL;
    const struct mp_kn_knob *knob = mp_kn_find_knob(kn, v->name);
    if (!knob) {
        /* paths, devices and credentials the engine needs select no kernel */
        bool maybe = (!strncmp(v->name, "VLLM_", 5) || !strncmp(v->name, "FLASHINFER_", 11)) &&
                     !mp_inherit_keep(v->name);
        v->acts = maybe ? MP_INH_UNKNOWN : MP_INH_NO;
        if (maybe)
            v->note = xstrdup("not in moeprobe's knowledge: it may change a kernel selection");
        return;
    }
    const struct mp_kn_era *e = ver ? mp_kn_knob_era(knob, ver) : NULL;
    if (!e && some_versions(knob, ver != NULL, v))
        return;
    if (!e && knob->neras)
        e = &knob->eras[knob->neras - 1]; /* it acts in no version, or in every one */
    v->acts = e && era_acts(e) ? MP_INH_YES : MP_INH_NO;
    if (v->acts == MP_INH_YES)
        v->affects = xstrdup(e->affects);
    if (e && e->note)
        v->note = xstrdup(e->note);
}

void mp_inherit_judge(const struct mp_knowledge *kn, const char *engine_version,
                      struct mp_inherited *in)
{
    struct mp_kn_ver ver;
    bool known = engine_version && mp_kn_ver_parse(engine_version, &ver) == 0;
    for (size_t i = 0; i < in->n; i++)
        judge_one(kn, known ? &ver : NULL, &in->v[i]);
}

static bool sets_name(const struct mp_candidate *c, const char *name)
{
    size_t nl = strlen(name);
    for (size_t i = 0; i < c->env.n; i++)
        if (!strncmp(c->env.v[i], name, nl) && c->env.v[i][nl] == '=')
            return true;
    return false;
}

void mp_inherit_effective(const struct mp_inherited *in, const struct mp_candidate *c,
                          struct mp_candidate *out)
{
    mp_candidate_copy(out, c);
    for (size_t i = 0; in && i < in->n; i++) {
        if (in->v[i].passed && !sets_name(c, in->v[i].name))
            mp_strv_push_owned(&out->env, xasprintf("%s=%s", in->v[i].name, in->v[i].value));
    }
}

bool mp_inherit_masks_noop(const struct mp_inherited *in, bool engine_unknown)
{
    return !engine_unknown && mp_inherited_nacting(in) > 0;
}

char *mp_inherit_acting_list(const struct mp_inherited *in)
{
    struct buf b = BUF_INIT;
    for (size_t i = 0; i < in->n; i++) {
        if (in->v[i].passed && in->v[i].acts != MP_INH_NO)
            buf_printf(&b, "%s%s=%s", b.len ? ", " : "", in->v[i].name, in->v[i].value);
    }
    return b.len ? buf_detach(&b, NULL) : NULL;
}

static const struct mp_inh_var *find_passed(const struct mp_inherited *in, const char *name)
{
    for (size_t i = 0; i < in->n; i++)
        if (in->v[i].passed && !strcmp(in->v[i].name, name))
            return &in->v[i];
    return NULL;
}

char *mp_inherit_mismatch(const struct mp_inherited *was, const struct mp_inherited *now)
{
    for (size_t i = 0; i < was->n; i++) {
        const struct mp_inh_var *w = &was->v[i];
        const struct mp_inh_var *n = w->passed ? find_passed(now, w->name) : NULL;
        if (w->passed && !n)
            return xasprintf("the run's candidates inherited %s=%s, which is not set now",
                             w->name, w->value);
        if (n && strcmp(n->value, w->value) != 0)
            return xasprintf("the run's candidates inherited %s=%s, now it is %s=%s", w->name,
                             w->value, n->name, n->value);
    }
    for (size_t i = 0; i < now->n; i++) {
        if (now->v[i].passed && !find_passed(was, now->v[i].name))
            return xasprintf("%s=%s is set now, and the run's candidates did not inherit it",
                             now->v[i].name, now->v[i].value);
    }
    return NULL;
}
