#include "verdict/sameconf.h"

#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "knowledge/knowledge.h"
#include "secret.h"
#include "xalloc.h"

static bool str_eq(const char *x, const char *y)
{
    return (!x && !y) || (x && y && !strcmp(x, y));
}

/* Equal as sets (the dense kernels are "method=Kernel", one per method). */
static bool strv_set_eq(const struct mp_strv *x, const struct mp_strv *y)
{
    for (size_t i = 0; i < x->n; i++)
        if (!mp_strv_has(y, x->v[i]))
            return false;
    for (size_t i = 0; i < y->n; i++)
        if (!mp_strv_has(x, y->v[i]))
            return false;
    return true;
}

static bool knobs_have(const struct mp_knobs *ks, const struct mp_knob *k)
{
    for (size_t i = 0; i < ks->n; i++)
        if (ks->k[i].env == k->env && !strcmp(ks->k[i].text, k->text))
            return true;
    return false;
}

/* The knob as the report may show it: secret values as ***. */
static void add_knob(struct buf *b, const struct mp_knob *k)
{
    if (k->env) {
        char *r = mp_redact_assignment(k->text);
        buf_adds(b, r);
        free(r);
    } else if (mp_is_secret_name(k->key, strlen(k->key)) && k->words.n > 1) {
        buf_printf(b, "%s ***", k->key);
    } else {
        buf_adds(b, k->text);
    }
}

/* Is the area's selection in the log of both runs? */
static bool area_logged(const char *affects, const struct mp_resolved *ra,
                        const struct mp_resolved *rb)
{
    if (!strcmp(affects, "moe"))
        return ra->moe_backend && rb->moe_backend;
    if (!strcmp(affects, "linear"))
        return (ra->linear_kernels.n || ra->linear_kernel) &&
               (rb->linear_kernels.n || rb->linear_kernel);
    if (!strcmp(affects, "attention"))
        return ra->attention_backend && rb->attention_backend;
    return false;
}

/* Why knob k (set in the candidate whose run is rk) cannot change the
 * kernels beyond the logged selections: appended to b, true; or the reason
 * it can, into b, false. */
static bool knob_harmless(const struct mp_knowledge *kn, const struct mp_knob *k,
                          const struct mp_resolved *rk, const struct mp_resolved *ra,
                          const struct mp_resolved *rb, const struct mp_kn_ver *ver,
                          const char *version, struct buf *b)
{
    add_knob(b, k);
    if (k->env && mp_strv_has(&rk->unknown_env, k->key)) {
        buf_adds(b, " (the engine reported it as an unknown variable)");
        return true;
    }
    const struct mp_kn_knob *kk = mp_kn_find_knob(kn, k->key);
    const struct mp_kn_era *era = kk ? mp_kn_knob_era(kk, ver) : NULL;
    if (!era) {
        buf_printf(b, " is not in moeprobe's knowledge for vLLM %s, so it may change the kernels "
                      "without changing a selection line",
                   version);
        return false;
    }
    if (!era->selection_only) {
        buf_printf(b, " can change kernel behaviour without changing a selection line in vLLM %s",
                   version);
        return false;
    }
    if (!area_logged(era->affects, ra, rb)) {
        buf_printf(b, " acts through the %s selection, which is not in both logs", era->affects);
        return false;
    }
    buf_printf(b, " (acts only through the %s selection in vLLM %s)", era->affects, version);
    return true;
}

static const char *or_none(const char *s)
{
    return s ? s : "none logged";
}

/* The selection named what in r, or NULL. */
static const struct mp_sel *sel_of(const struct mp_resolved *r, const char *what)
{
    for (size_t i = 0; i < r->nother; i++)
        if (!strcmp(r->other[i].what, what))
            return &r->other[i];
    return NULL;
}

/* Selections the engine logs after "Model loading took" (when a running
 * candidate is judged), so a finished run has them and a running one not
 * yet: compared only when both logs have them. */
static bool logged_late(const char *what)
{
    return !strcmp(what, "FlashInfer allreduce fusion");
}

/* How the other selection lines of ra and rb differ (a selection in one
 * log only counts), or NULL. Caller frees. */
static char *other_differ(const struct mp_resolved *ra, const struct mp_resolved *rb)
{
    for (int side = 0; side < 2; side++) {
        const struct mp_resolved *x = side ? rb : ra, *y = side ? ra : rb;
        for (size_t i = 0; i < x->nother; i++) {
            const struct mp_sel *o = sel_of(y, x->other[i].what);
            if (!o && !logged_late(x->other[i].what))
                return xasprintf("the %s selection is not in both logs", x->other[i].what);
            if (o && strcmp(o->value, x->other[i].value) != 0)
                return xasprintf("the %s selections differ (%s, %s)", x->other[i].what,
                                 side ? o->value : x->other[i].value,
                                 side ? x->other[i].value : o->value);
        }
    }
    return NULL;
}

/* How the selections beyond the MoE backend, the dense kernels and the
 * attention backend differ: the MoE line's oracle, the MTP drafter's own
 * MoE selection (it is logged before "Model loading took", so a running
 * candidate has it when judged), the other selection lines; or NULL. */
static char *more_differ(const struct mp_resolved *ra, const struct mp_resolved *rb)
{
    if (!str_eq(ra->moe_kind, rb->moe_kind))
        return xasprintf("the MoE oracles differ (%s, %s)", or_none(ra->moe_kind), or_none(rb->moe_kind));
    bool da = ra->drafter.loaded_line > 0 || ra->drafter.moe_backend;
    bool db = rb->drafter.loaded_line > 0 || rb->drafter.moe_backend;
    if (da != db)
        return xstrdup("one run loads an MTP drafter, the other does not");
    if (!str_eq(ra->drafter.moe_backend, rb->drafter.moe_backend) ||
        !str_eq(ra->drafter.moe_kind, rb->drafter.moe_kind))
        return xasprintf("the MTP drafter's MoE selections differ (%s, %s)",
                         or_none(ra->drafter.moe_backend), or_none(rb->drafter.moe_backend));
    return other_differ(ra, rb);
}

static void set_not(struct mp_sameconf *out, char *why)
{
    out->same = false;
    out->why = why;
}

void mp_sameconf_judge(const struct mp_knowledge *kn, const struct mp_candidate *a,
                       const struct mp_resolved *ra, const struct mp_candidate *b,
                       const struct mp_resolved *rb, struct mp_sameconf *out)
{
    memset(out, 0, sizeof(*out));
    struct mp_kn_ver ver;
    if (!ra->engine_version || !rb->engine_version ||
        mp_kn_ver_parse(ra->engine_version, &ver) < 0) {
        set_not(out, xstrdup("the engine version is not known"));
        return;
    }
    if (strcmp(ra->engine_version, rb->engine_version) != 0) {
        set_not(out, xasprintf("the engine versions differ (%s, %s)", ra->engine_version,
                               rb->engine_version));
        return;
    }
    if (!ra->moe_backend || !rb->moe_backend) {
        set_not(out, xstrdup("the MoE backend is not in both logs"));
        return;
    }
    if (strcmp(ra->moe_backend, rb->moe_backend) != 0) {
        set_not(out, xasprintf("the MoE backends differ (%s, %s)", ra->moe_backend, rb->moe_backend));
        return;
    }
    if (!str_eq(ra->unquantized_moe_backend, rb->unquantized_moe_backend)) {
        set_not(out, xstrdup("the unquantized MoE backends differ"));
        return;
    }
    if (!strv_set_eq(&ra->linear_kernels, &rb->linear_kernels) ||
        !str_eq(ra->linear_kernel, rb->linear_kernel)) {
        set_not(out, xstrdup("the dense kernels differ"));
        return;
    }
    if (!str_eq(ra->attention_backend, rb->attention_backend)) {
        set_not(out, xstrdup("the attention backends differ"));
        return;
    }
    char *more = more_differ(ra, rb);
    if (more) {
        set_not(out, more);
        return;
    }

    struct mp_knobs ka = MP_KNOBS_INIT, kb = MP_KNOBS_INIT;
    mp_candidate_knobs(a, &ka);
    mp_candidate_knobs(b, &kb);
    struct buf diff = BUF_INIT;
    bool same = true;
    size_t ndiff = 0;
    for (int side = 0; side < 2 && same; side++) {
        const struct mp_knobs *mine = side ? &kb : &ka, *other = side ? &ka : &kb;
        const struct mp_resolved *rk = side ? rb : ra;
        for (size_t i = 0; i < mine->n && same; i++) {
            if (knobs_have(other, &mine->k[i]))
                continue;
            struct buf one = BUF_INIT;
            same = knob_harmless(kn, &mine->k[i], rk, ra, rb, &ver, ra->engine_version, &one);
            if (!same) {
                buf_release(&diff);
                diff = one;
                break;
            }
            buf_adds(&diff, ndiff++ ? "; " : "");
            buf_add(&diff, one.data, one.len);
            buf_release(&one);
        }
    }
    mp_knobs_release(&ka);
    mp_knobs_release(&kb);
    char *d = buf_detach(&diff, NULL);
    if (!same) {
        set_not(out, d);
        return;
    }
    out->same = true;
    const char *dm = ra->drafter.moe_backend;
    out->why = xasprintf("the same resolved configuration as '%s' (MoE %s%s%s%s%s) with %s%s", a->name,
                         ra->moe_backend, ra->attention_backend ? ", attention " : "",
                         ra->attention_backend ? ra->attention_backend : "",
                         dm ? ", MTP drafter MoE " : "", dm ? dm : "",
                         ndiff ? "knobs that differ only by: " : "the same knobs", ndiff ? d : "");
    free(d);
}

void mp_sameconf_release(struct mp_sameconf *s)
{
    free(s->why);
    s->why = NULL;
}
