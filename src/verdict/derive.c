/* derive.c - same-backend groups and no-op knobs (derive.h). */
#include "verdict/derive.h"

#include <stdlib.h>
#include <string.h>

#include "secret.h"
#include "verdict/inherit.h"
#include "xalloc.h"

static bool streq(const char *a, const char *b)
{
    if (!a || !b)
        return a == b;
    return strcmp(a, b) == 0;
}

static bool same_strv(const struct mp_strv *a, const struct mp_strv *b)
{
    if (a->n != b->n)
        return false;
    for (size_t i = 0; i < a->n; i++)
        if (strcmp(a->v[i], b->v[i]))
            return false;
    return true;
}

bool mp_verdict_same_resolved(const struct mp_attempt_result *a, const struct mp_attempt_result *b)
{
    return a->res.moe_backend && b->res.moe_backend && streq(a->res.moe_backend, b->res.moe_backend) &&
           streq(a->res.linear_kernel, b->res.linear_kernel) &&
           same_strv(&a->res.linear_kernels, &b->res.linear_kernels) &&
           streq(a->res.attention_backend, b->res.attention_backend);
}

static bool not_delivered(const struct mp_cand_report *c)
{
    return c->verdict == MP_V_NOT_DELIVERED;
}

void mp_verdict_groups(struct mp_report *rep)
{
    bool *used = xcalloc(rep->n + 1, sizeof(*used));
    for (size_t i = 0; i < rep->n; i++) {
        const struct mp_attempt_result *a = mp_cand_primary(&rep->c[i]);
        if (used[i] || !a || !a->res.moe_backend || not_delivered(&rep->c[i]))
            continue;
        struct mp_strv names = MP_STRV_INIT;
        mp_strv_push(&names, rep->c[i].cand.name);
        for (size_t k = i + 1; k < rep->n; k++) {
            const struct mp_attempt_result *b = mp_cand_primary(&rep->c[k]);
            if (!used[k] && b && !not_delivered(&rep->c[k]) && mp_verdict_same_resolved(a, b)) {
                used[k] = true;
                mp_strv_push(&names, rep->c[k].cand.name);
            }
        }
        if (names.n < 2) {
            mp_strv_release(&names);
            continue;
        }
        rep->groups = xreallocarray(rep->groups, rep->ngroups + 1, sizeof(*rep->groups));
        struct mp_group *g = &rep->groups[rep->ngroups++];
        g->moe_backend = a->res.moe_backend;
        g->linear_kernel = a->res.linear_kernel;
        g->attention_backend = a->res.attention_backend;
        g->candidates = names;
    }
    free(used);
}

static void add_noop(struct mp_report *rep, const struct mp_attempt_result *a, const char *cand,
                     const char *knob, const char *like, const char *warning_var)
{
    rep->noop = xreallocarray(rep->noop, rep->nnoop + 1, sizeof(*rep->noop));
    struct mp_noop *k = &rep->noop[rep->nnoop++];
    k->candidate = xstrdup(cand);
    k->knob = mp_redact_assignment(knob);
    k->resolved_like = xstrdup(like);
    k->engine_warning = warning_var
                            ? xasprintf("Unknown vLLM environment variable detected: %s", warning_var)
                            : NULL;
    k->delivery = NULL;
    k->delivery_evidence = NULL;
    for (size_t i = 0; i < a->ndlv; i++) {
        if (strcmp(a->dlv[i].knob, k->knob) != 0)
            continue;
        k->delivery = mp_dlv_status_name(a->dlv[i].status);
        if (a->dlv[i].status != MP_DLV_VERIFIED)
            k->delivery_evidence = xstrdup(a->dlv[i].evidence);
        break;
    }
}

/* The engine's unknown-variable entry for env knob NAME, or NULL. */
static const char *unknown_var(const struct mp_attempt_result *a, const char *name)
{
    const char *warn = NULL;
    for (size_t u = 0; u < a->res.unknown_env.n; u++) {
        if (!strcmp(a->res.unknown_env.v[u], name))
            warn = a->res.unknown_env.v[u];
    }
    return warn;
}

void mp_verdict_noop(struct mp_report *rep)
{
    const struct mp_cand_report *base = NULL;
    for (size_t i = 0; i < rep->n && !base; i++) {
        if (mp_candidate_nknobs(&rep->c[i].cand) == 0 && mp_cand_primary(&rep->c[i]))
            base = &rep->c[i];
    }
    const struct mp_attempt_result *ba = base ? mp_cand_primary(base) : NULL;
    if (!ba || !ba->res.moe_backend)
        return;
    for (size_t i = 0; i < rep->n; i++) {
        const struct mp_cand_report *c = &rep->c[i];
        const struct mp_attempt_result *a = mp_cand_primary(c);
        if (c == base || !a || mp_candidate_nknobs(&c->cand) == 0 ||
            !mp_verdict_same_resolved(a, ba) || not_delivered(c))
            continue;
        struct mp_knobs ks = MP_KNOBS_INIT;
        mp_candidate_knobs(&c->cand, &ks);
        for (size_t k = 0; k < ks.n; k++) {
            const char *unknown = ks.k[k].env ? unknown_var(a, ks.k[k].key) : NULL;
            /* an inherited variable that acts makes "auto" something else:
             * only the engine's own "unknown variable" proves a no-op then */
            if (mp_inherit_masks_noop(&rep->inherited, unknown != NULL))
                continue;
            add_noop(rep, a, c->cand.name, ks.k[k].text, base->cand.name, unknown);
        }
        mp_knobs_release(&ks);
    }
}
