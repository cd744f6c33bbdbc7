/* correct.c - correctness across candidates, the task gate and the
 * wrong-output verdict (verdict/correct.h). */
#include "verdict/correct.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "quality/agree.h"
#include "quality/quality.h"
#include "verdict/stats.h"
#include "xalloc.h"

static bool same_str(const char *a, const char *b)
{
    return (!a && !b) || (a && b && !strcmp(a, b));
}

/* Two attempts resolved to the same configuration (one vote). An attempt
 * whose MoE backend was not logged is a configuration of its own. */
static bool same_config(const struct mp_attempt_result *a, const struct mp_attempt_result *b)
{
    const struct mp_resolved *x = &a->res, *y = &b->res;
    if (!x->moe_backend || !y->moe_backend || x->linear_kernels.n != y->linear_kernels.n)
        return false;
    for (size_t i = 0; i < x->linear_kernels.n; i++)
        if (strcmp(x->linear_kernels.v[i], y->linear_kernels.v[i]))
            return false;
    return !strcmp(x->moe_backend, y->moe_backend) && same_str(x->linear_kernel, y->linear_kernel) &&
           same_str(x->attention_backend, y->attention_backend) &&
           same_str(x->unquantized_moe_backend, y->unquantized_moe_backend) &&
           same_str(x->engine_version, y->engine_version);
}

/* The dense kernel(s) of a resolution as one comparable text (owned), NULL
 * when none was logged: the per-method list where the era prints one, else
 * the single kernel. */
static char *dense_key(const struct mp_resolved *r)
{
    if (!r->linear_kernels.n)
        return r->linear_kernel ? xstrdup(r->linear_kernel) : NULL;
    struct buf b = BUF_INIT;
    for (size_t i = 0; i < r->linear_kernels.n; i++)
        buf_printf(&b, "%s%s", i ? ", " : "", r->linear_kernels.v[i]);
    return buf_detach(&b, NULL);
}

static const struct mp_score *score_of(const struct mp_report *rep, size_t i)
{
    const struct mp_cand_report *c = &rep->c[i];
    const struct mp_attempt_result *p = mp_cand_primary(c);
    if (c->unfinished || c->verdict != MP_V_STABLE || !p || p->outcome != MP_OUT_CLEAN)
        return NULL;
    return p->score;
}

/* Fisher's exact test, one-sided: the chance, with both candidates equally
 * good, that the second gets rb or fewer of the ra + rb right answers
 * (hypergeometric lower tail). */
static double fisher_lower_p(size_t ra, size_t na, size_t rb, size_t nb)
{
    double r = (double)(ra + rb), nn = (double)(na + nb);
    double lc = lgamma(r + 1) + lgamma(nn - r + 1) - lgamma(nn + 1) + lgamma((double)nb + 1) +
                lgamma((double)na + 1);
    size_t lo = ra + rb > na ? ra + rb - na : 0;
    double p = 0;
    for (size_t x = lo; x <= rb; x++) {
        double fx = (double)x;
        p += exp(lc - lgamma(fx + 1) - lgamma(r - fx + 1) - lgamma((double)nb - fx + 1) -
                 lgamma((double)na - r + fx + 1));
    }
    return p;
}

void mp_correct_gate(const size_t *n, const size_t *right, size_t count, struct mp_accuracy *acc)
{
    long best = -1;
    for (size_t i = 0; i < count; i++) {
        if (!n[i])
            continue;
        double p = (double)right[i] / (double)n[i];
        double pb = best >= 0 ? (double)right[best] / (double)n[best] : -1;
        if (best < 0 || p > pb || (p == pb && n[i] > n[best]))
            best = (long)i;
    }
    for (size_t i = 0; i < count; i++) {
        struct mp_accuracy *a = &acc[i];
        a->best = best;
        if (!n[i]) {
            a->result = MP_ACC_NOT_RUN;
            continue;
        }
        a->n = n[i];
        a->right = right[i];
        mp_stats_wilson95(right[i], n[i], &a->low, &a->high);
        a->z = (long)i == best ? 0 : mp_stats_two_prop_z(right[best], n[best], right[i], n[i]);
        /* the z test's normal approximation flags 2/2 against 0/2 (z = 2)
         * or 10/10 against 7/10 (z = 1.9); the exact test must agree */
        a->result = a->z > MP_STATS_Z95_ONE_SIDED &&
                            fisher_lower_p(right[best], n[best], right[i], n[i]) < 0.05
                        ? MP_ACC_LOW
                        : MP_ACC_PASS;
    }
}

void mp_correct_gate_bar(const size_t *n, const size_t *right, size_t count, long bar,
                         struct mp_accuracy *acc)
{
    for (size_t i = 0; i < count; i++) {
        if ((long)i == bar || !n[i])
            continue;
        size_t pn[2] = {n[bar], n[i]}, pr[2] = {right[bar], right[i]};
        struct mp_accuracy pa[2];
        memset(pa, 0, sizeof(pa));
        mp_correct_gate(pn, pr, 2, pa);
        acc[i] = pa[1];
        acc[i].best = pa[1].best == 0 ? bar : (long)i;
    }
    struct mp_accuracy *b = &acc[bar];
    b->result = MP_ACC_PASS;
    b->n = n[bar];
    b->right = right[bar];
    mp_stats_wilson95(right[bar], n[bar], &b->low, &b->high);
    b->best = bar;
    b->z = 0;
}

/* The task gate over the report's scored candidates; bar >= 0: each is
 * compared with that candidate instead of the best. */
static void gate(const struct mp_report *rep, const struct mp_score *const *sc, long bar,
                 struct mp_correct *out)
{
    size_t *n = xcalloc(rep->n + 1, sizeof(*n)), *right = xcalloc(rep->n + 1, sizeof(*right));
    struct mp_accuracy *acc = xcalloc(rep->n + 1, sizeof(*acc));
    for (size_t i = 0; i < rep->n; i++)
        if (sc[i] && sc[i]->task == MP_SC_OK)
            mp_score_task_counts(sc[i], &n[i], &right[i]);
    if (bar >= 0 && n[bar])
        mp_correct_gate_bar(n, right, rep->n, bar, acc);
    else
        mp_correct_gate(n, right, rep->n, acc);
    for (size_t i = 0; i < rep->n; i++) {
        struct mp_accuracy *a = &out->c[i].acc;
        *a = acc[i];
        if (sc[i])
            a->source = sc[i]->task_source ? xstrdup(sc[i]->task_source) : NULL;
        if (sc[i] && a->result == MP_ACC_NOT_RUN)
            a->note = xasprintf("task gate %s%s%s", mp_sc_status_name(sc[i]->task),
                                sc[i]->task_note ? ": " : "",
                                sc[i]->task_note ? sc[i]->task_note : "");
    }
    free(acc);
    free(n);
    free(right);
}

static const char *class_of(const struct mp_correctness *k)
{
    bool div = k->ag.result == MP_AG_DIVERGENT, low = k->acc.result == MP_ACC_LOW;
    return div && low ? "divergent+low-accuracy" : div ? "divergent" : low ? "low-accuracy" : NULL;
}

static void copy_agreement(struct mp_agreement *d, const struct mp_agreement *s)
{
    *d = *s;
    d->reference = s->reference ? xstrdup(s->reference) : NULL;
    d->greedy_first = s->greedy_first ? xstrdup(s->greedy_first) : NULL;
    d->note = s->note ? xstrdup(s->note) : NULL;
    for (size_t i = 0; i < s->nfirst; i++) {
        d->first[i].context = xstrdup(s->first[i].context);
        d->first[i].token = xstrdup(s->first[i].token);
        d->first[i].this_top1 = xstrdup(s->first[i].this_top1);
        d->first[i].ref_top1 = xstrdup(s->first[i].ref_top1);
    }
}

/* A same-configuration result takes its representative's correctness. */
static void share(const struct mp_report *rep, struct mp_correct *out)
{
    for (size_t i = 0; i < rep->n; i++) {
        const struct mp_attempt_result *p = mp_cand_primary(&rep->c[i]);
        if (!p || p->outcome != MP_OUT_SAME_CONFIG || !p->same_as)
            continue;
        for (size_t j = 0; j < rep->n; j++) {
            const struct mp_attempt_result *q = mp_cand_primary(&rep->c[j]);
            if (j == i || !q || q->outcome == MP_OUT_SAME_CONFIG ||
                strcmp(rep->c[j].cand.name, p->same_as) || !out->c[j].measured)
                continue;
            struct mp_correctness *d = &out->c[i];
            const struct mp_correctness *s = &out->c[j];
            mp_agreement_release(&d->ag);
            copy_agreement(&d->ag, &s->ag);
            free(d->acc.source);
            free(d->acc.note);
            d->acc = s->acc;
            d->acc.source = s->acc.source ? xstrdup(s->acc.source) : NULL;
            d->acc.note = s->acc.note ? xstrdup(s->acc.note) : NULL;
            d->measured = true;
            d->cls = s->cls;
            d->shared_from = (long)j;
            d->score_s = d->task_s = 0;
        }
    }
}

static long find_ref(const struct mp_report *rep, const char *name)
{
    for (size_t i = 0; name && i < rep->n; i++)
        if (!strcmp(rep->c[i].cand.name, name)) {
            const struct mp_attempt_result *p = mp_cand_primary(&rep->c[i]);
            if (p && p->outcome == MP_OUT_SAME_CONFIG && p->same_as)
                return find_ref(rep, p->same_as);
            return (long)i;
        }
    return -1;
}

void mp_correct_compute(struct mp_report *rep)
{
    char *refname = rep->cor.reference;
    rep->cor.reference = NULL;
    mp_correct_release(&rep->cor);
    rep->cor.reference = refname;
    rep->cor.n = rep->n;
    rep->cor.c = xcalloc(rep->n + 1, sizeof(*rep->cor.c));
    const struct mp_score **sc = xcalloc(rep->n + 1, sizeof(*sc));
    struct mp_ag_in *in = xcalloc(rep->n + 1, sizeof(*in));
    char **dense = xcalloc(rep->n + 1, sizeof(*dense));
    for (size_t i = 0; i < rep->n; i++) {
        sc[i] = score_of(rep, i);
        in[i].name = rep->c[i].cand.name;
        in[i].s = sc[i];
        in[i].group = (int)i;
        const struct mp_attempt_result *p = mp_cand_primary(&rep->c[i]);
        if (p) {
            dense[i] = dense_key(&p->res);
            in[i].kern[0] = p->res.moe_backend;
            in[i].kern[1] = dense[i];
            in[i].kern[2] = p->res.attention_backend;
        }
        for (size_t j = 0; j < i && sc[i]; j++)
            if (sc[j] && same_config(mp_cand_primary(&rep->c[i]), mp_cand_primary(&rep->c[j]))) {
                in[i].group = in[j].group;
                break;
            }
        rep->cor.c[i].measured = sc[i] != NULL;
        rep->cor.c[i].shared_from = -1;
        rep->cor.c[i].score_s = sc[i] ? sc[i]->score_s : 0;
        rep->cor.c[i].task_s = sc[i] ? sc[i]->task_s : 0;
    }
    long ref = find_ref(rep, refname);
    if (refname && (ref < 0 || !sc[ref]))
        rep->cor.note = xasprintf("the --reference candidate '%s' was not scored: the candidates "
                                  "are compared with their consensus instead",
                                  refname);
    mp_agree_run(in, rep->n, ref >= 0 && sc[ref] ? ref : -1, &rep->cor);
    /* a bisection compares every build with the good one, the reference:
     * the best of the builds is no bar (the good build would fail against
     * a luckier one) */
    bool bisect = rep->subcommand && !strcmp(rep->subcommand, "bisect");
    gate(rep, sc, bisect && ref >= 0 && sc[ref] ? ref : -1, &rep->cor);
    for (size_t i = 0; i < rep->n; i++)
        if (rep->cor.c[i].measured)
            rep->cor.c[i].cls = class_of(&rep->cor.c[i]);
    share(rep, &rep->cor);
    for (size_t i = 0; i < rep->n; i++)
        free(dense[i]);
    free(dense);
    free(in);
    free(sc);
}

static const char *or_empty(const char *s)
{
    return s ? s : "";
}

/* "' blue' where the others chose ' green' (passage 3, token 12)" */
static void first_disagreement(struct buf *b, const struct mp_agreement *ag)
{
    if (!ag->nfirst)
        return;
    const struct mp_disagreement *d = &ag->first[0];
    char *a = mp_quality_quote(d->this_top1, 40), *r = mp_quality_quote(d->ref_top1, 40);
    buf_printf(b, "; first at passage %zu token %zu: %s where %s %s", d->passage + 1, d->pos + 1,
               a, strcmp(or_empty(ag->reference), "consensus") ? "the reference chose" : "the others chose",
               r);
    free(a);
    free(r);
}

/* What diverged, in words. */
static void say_divergent(struct buf *b, const struct mp_agreement *ag)
{
    bool cons = ag->reference && !strcmp(ag->reference, "consensus");
    if (ag->lp_div) {
        if (cons)
            buf_printf(b, "its logprobs diverge from the consensus of %zu other%s: ", ag->others,
                       ag->others == 1 ? "" : "s");
        else
            buf_printf(b, "its logprobs diverge from '%s': ", or_empty(ag->reference));
        buf_printf(b, "mean |Δ| %.3g nats", ag->mean_abs);
        if (ag->noise_floor > 0)
            buf_printf(b, " (%.0f× the noise floor of %.3g)", ag->mean_abs / ag->noise_floor,
                       ag->noise_floor);
        else
            buf_adds(b, " (the noise floor measured 0)");
        buf_printf(b, ", top-1 agreement %.1f %% over %zu positions", 100 * ag->top1,
                   ag->positions);
        first_disagreement(b, ag);
    }
    if (ag->greedy_div) {
        buf_printf(b, "%sits greedy continuations fail check_logprobs_close (%zu of %zu "
                      "comparisons; %s)",
                   ag->lp_div ? "; " : "", ag->greedy_failed, ag->greedy_compared,
                   or_empty(ag->greedy_first));
    }
    if (ag->self_div) {
        buf_printf(b, "%sits logprobs change with the load: scored again at the top concurrency, "
                      "mean |Δ| %.3g nats from its own sequential scoring",
                   ag->lp_div || ag->greedy_div ? "; " : "", ag->repeat_abs);
        if (ag->noise_floor > 0)
            buf_printf(b, " (%.0f× the noise floor of %.3g)", ag->repeat_abs / ag->noise_floor,
                       ag->noise_floor);
        buf_printf(b, ", the same top-1 at %.1f %% of positions", 100 * ag->repeat_top1);
    }
}

static void say_accuracy(struct buf *b, const struct mp_accuracy *a, const struct mp_report *rep)
{
    buf_printf(b, "%zu/%zu task answers right (95 %% %.2f-%.2f)", a->right, a->n, a->low, a->high);
    if (a->result == MP_ACC_LOW && a->best >= 0 && (size_t)a->best < rep->n) {
        const struct mp_accuracy *bb = &rep->cor.c[a->best].acc;
        buf_printf(b, ", significantly below '%s' with %zu/%zu (two-proportion z = %.2f > 1.64)",
                   rep->c[a->best].cand.name, bb->right, bb->n, a->z);
    }
}

/* What was checked, for a candidate that keeps its verdict. */
static void say_checked(struct buf *b, const struct mp_correctness *k, const struct mp_report *rep)
{
    const struct mp_agreement *ag = &k->ag;
    switch (ag->result) {
    case MP_AG_AGREES:
        if (ag->greedy_only)
            buf_printf(b, "greedy continuations agree with %zu other%s (no prompt logprobs)",
                       ag->others, ag->others == 1 ? "" : "s");
        else if (ag->positions == 0)
            buf_printf(b, "the reference of the logprob comparison");
        else
            buf_printf(b, "agrees with %zu other%s: top-1 %.1f %%, mean |Δ| %.3g nats", ag->others,
                       ag->others == 1 ? "" : "s", 100 * ag->top1, ag->mean_abs);
        break;
    case MP_AG_DISAGREE_PAIR:
        buf_printf(b, "disagrees with '%s' (two configurations: moeprobe cannot tell which one "
                      "is wrong; ", or_empty(ag->reference));
        say_divergent(b, ag);
        buf_adds(b, ")");
        break;
    case MP_AG_NO_CONSENSUS:
        if (ag->note)
            buf_adds(b, ag->note);
        else
            buf_printf(b, "no majority of the configurations agrees: the logprobs cannot tell "
                          "who is wrong");
        break;
    default:
        buf_printf(b, "logprobs not compared: %s", ag->note ? ag->note : "nothing to compare");
        break;
    }
    if (k->acc.result != MP_ACC_NOT_RUN) {
        buf_adds(b, "; ");
        say_accuracy(b, &k->acc, rep);
    }
}

enum mp_verdict mp_verdict_correctness(enum mp_verdict v, const char *why,
                                       const struct mp_correctness *k, const struct mp_report *rep,
                                       char **why_out)
{
    *why_out = NULL;
    if (v != MP_V_STABLE || !k || !k->measured)
        return v;
    struct buf b = BUF_INIT;
    if (!k->cls) {
        buf_printf(&b, "%s; ", or_empty(why));
        say_checked(&b, k, rep);
        *why_out = buf_detach(&b, NULL);
        return v;
    }
    buf_adds(&b, "served every request and passed the output check, but ");
    if (k->ag.result == MP_AG_DIVERGENT)
        say_divergent(&b, &k->ag);
    if (k->acc.result == MP_ACC_LOW) {
        buf_adds(&b, k->ag.result == MP_AG_DIVERGENT ? "; and it gets only " : "it gets only ");
        say_accuracy(&b, &k->acc, rep);
    }
    *why_out = buf_detach(&b, NULL);
    return MP_V_WRONG_OUTPUT;
}

static long index_of(const struct mp_report *rep, const char *name)
{
    for (size_t i = 0; name && i < rep->n; i++)
        if (!strcmp(rep->c[i].cand.name, name))
            return (long)i;
    return -1;
}

char *mp_correct_caveat(const struct mp_report *rep, size_t i)
{
    if (rep->cor.n != rep->n || i >= rep->n || !rep->cor.c[i].measured)
        return NULL;
    const struct mp_correctness *k = &rep->cor.c[i];
    const struct mp_agreement *ag = &k->ag;
    struct buf b = BUF_INIT;
    if (ag->result == MP_AG_DISAGREE_PAIR) {
        long o = index_of(rep, ag->reference);
        if (o >= 0 && rep->c[o].verdict == MP_V_WRONG_OUTPUT)
            return NULL; /* the task gate told which one */
        buf_printf(&b, "correctness not established: its logprobs disagree with '%s' and the "
                       "task gate did not tell which one is wrong",
                   or_empty(ag->reference));
    } else if (ag->result == MP_AG_NO_CONSENSUS && ag->note) {
        buf_printf(&b, "correctness not established: %s", ag->note);
    } else if (ag->result == MP_AG_NO_CONSENSUS) {
        buf_printf(&b, "correctness not established: no majority of the %zu configurations "
                       "agrees on the logprobs",
                   rep->cor.votes);
    } else if (ag->result == MP_AG_NOT_MEASURED) {
        buf_printf(&b, "correctness not established: %s", ag->note ? ag->note : "not compared");
    } else if (ag->result == MP_AG_AGREES && ag->greedy_only) {
        /* weak evidence: a wrong kernel can change its text only at near
         * ties (the H200's one-block-off scales passed all 12 checks) */
        buf_printf(&b, "correctness not established: only its greedy continuations were "
                       "compared (%s), which a wrong kernel can pass",
                   ag->note ? ag->note : "no prompt logprobs");
    } else {
        return NULL;
    }
    if (k->acc.result != MP_ACC_NOT_RUN)
        buf_printf(&b, " (%zu/%zu task answers right)", k->acc.right, k->acc.n);
    return buf_detach(&b, NULL);
}

char *mp_correct_against(const struct mp_score *ref, const char *ref_name,
                         const struct mp_score *test, const char *test_name, bool *compared)
{
    if (compared)
        *compared = false;
    if (!ref || !test)
        return NULL;
    struct mp_ag_in in[2] = {{.name = ref_name, .s = ref, .group = 0},
                             {.name = test_name, .s = test, .group = 1}};
    struct mp_correct c;
    memset(&c, 0, sizeof(c));
    c.n = 2;
    c.c = xcalloc(2, sizeof(*c.c));
    mp_agree_run(in, 2, 0, &c);
    size_t n[2] = {0, 0}, right[2] = {0, 0};
    if (ref->task == MP_SC_OK && test->task == MP_SC_OK) {
        mp_score_task_counts(ref, &n[0], &right[0]);
        mp_score_task_counts(test, &n[1], &right[1]);
    }
    struct mp_accuracy acc[2];
    memset(acc, 0, sizeof(acc));
    mp_correct_gate(n, right, 2, acc);
    if (compared)
        *compared = c.c[1].ag.result != MP_AG_NOT_MEASURED || (n[0] && n[1]);
    struct buf b = BUF_INIT;
    if (c.c[1].ag.result == MP_AG_DIVERGENT)
        say_divergent(&b, &c.c[1].ag);
    if (acc[1].result == MP_ACC_LOW && acc[1].best == 0)
        buf_printf(&b, "%s%zu/%zu task answers right against %zu/%zu for the --to set (z = %.2f)",
                   b.len ? "; " : "", acc[1].right, acc[1].n, acc[0].right, acc[0].n, acc[1].z);
    mp_correct_release(&c);
    return b.len ? buf_detach(&b, NULL) : (buf_release(&b), NULL);
}
