/* verdict.c - every verdict of a report (verdict.h). */
#include "verdict/verdict.h"

#include <stdlib.h>
#include <string.h>

#include "quality/quality.h"
#include "verdict/classify.h"
#include "verdict/correct.h"
#include "verdict/decide.h"
#include "verdict/diagnose.h"
#include "verdict/derive.h"
#include "verdict/recommend.h"
#include "verdict/sysxid.h"
#include "xalloc.h"

static void set(struct mp_cand_report *c, enum mp_verdict v, char *owned_why)
{
    c->verdict = v;
    if (owned_why) {
        free(c->why);
        c->why = owned_why;
    }
}

static bool is_same_config(const struct mp_cand_report *c)
{
    const struct mp_attempt_result *p = mp_cand_primary(c);
    return p && p->outcome == MP_OUT_SAME_CONFIG;
}

/* The output check: compare the primary attempts' greedy answers of the
 * finished candidates that ran clean. */
static void output_check(struct mp_report *rep)
{
    struct mp_qcand_in *in = xcalloc(rep->n + 1, sizeof(*in));
    for (size_t i = 0; i < rep->n; i++) {
        const struct mp_attempt_result *p = mp_cand_primary(&rep->c[i]);
        in[i].name = rep->c[i].cand.name;
        if (p && p->outcome == MP_OUT_CLEAN && p->nquality && !rep->c[i].unfinished) {
            in[i].texts = (const char *const *)p->quality_texts;
            in[i].ntexts = p->nquality;
        }
    }
    mp_qcheck_release(&rep->qc);
    mp_qcheck_run(mp_sanity_builtin(), in, rep->n, &rep->qc);
    free(in);
    for (size_t i = 0; i < rep->n; i++) {
        struct mp_cand_report *c = &rep->c[i];
        char *why = NULL;
        enum mp_verdict v = mp_verdict_output_check(c->verdict, c->why, &rep->qc.c[i],
                                                    rep->qc.nprompts, &why);
        set(c, v, why);
    }
}

/* The candidate a same-configuration result names, tested itself; NULL
 * when it is not in the report. */
static const struct mp_cand_report *representative(const struct mp_report *rep, size_t i)
{
    const struct mp_attempt_result *p = mp_cand_primary(&rep->c[i]);
    for (size_t j = 0; j < rep->n; j++) {
        if (j != i && p->same_as && !strcmp(rep->c[j].cand.name, p->same_as) &&
            !is_same_config(&rep->c[j]))
            return &rep->c[j];
    }
    return NULL;
}

void mp_verdict_finalize(struct mp_report *rep)
{
    for (size_t i = 0; i < rep->n; i++) { /* judged again from what was observed */
        struct mp_cand_report *c = &rep->c[i];
        for (size_t j = 0; j < c->nattempts; j++)
            mp_verdict_classify(&c->attempts[j]);
        if (c->policy.recorded && !c->unfinished)
            mp_verdict_diagnosis(c, &c->policy, &c->diag);
    }
    for (size_t i = 0; i < rep->n; i++) {
        char *why = NULL;
        enum mp_verdict v = mp_verdict_decide(&rep->c[i], &why);
        set(&rep->c[i], v, why);
        /* a hardware or driver Xid: the failure is not the kernel's (sysxid.h) */
        v = mp_verdict_sysxid(&rep->c[i], rep->c[i].verdict, rep->c[i].why, &why);
        set(&rep->c[i], v, why);
        if (rep->c[i].not_applicable) /* not started: the era has no road (cli/spec.h) */
            set(&rep->c[i], MP_V_NOT_APPLICABLE, xstrdup(rep->c[i].not_applicable));
    }
    output_check(rep);
    mp_correct_compute(rep); /* correctness: agreement and the task gate (verdict/correct.h) */
    for (size_t i = 0; i < rep->n; i++) {
        char *why = NULL;
        enum mp_verdict v = mp_verdict_correctness(rep->c[i].verdict, rep->c[i].why,
                                                   &rep->cor.c[i], rep, &why);
        set(&rep->c[i], v, why);
    }
    for (size_t i = 0; i < rep->n; i++) {
        if (!is_same_config(&rep->c[i]))
            continue;
        char *why = NULL;
        enum mp_verdict v = mp_verdict_shared(&rep->c[i], representative(rep, i), &why);
        set(&rep->c[i], v, why);
    }
    for (size_t i = 0; i < rep->n; i++) {
        char *why = NULL;
        enum mp_verdict v = mp_verdict_delivery(&rep->c[i], rep->c[i].verdict, rep->c[i].why, &why);
        set(&rep->c[i], v, why);
    }
    mp_verdict_groups(rep);
    mp_verdict_noop(rep);
    mp_verdict_recommend(rep);
}
