/* recommend.c - the recommendation and "what we learned" (recommend.h). */
#include "verdict/recommend.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "hist.h"
#include "verdict/correct.h"
#include "verdict/stats.h"
#include "xalloc.h"

double mp_verdict_seq_tok_s(const struct mp_attempt_result *a)
{
    for (size_t i = 0; a && i < a->nphases; i++) {
        if (!strcmp(a->phases[i].name, "sequential") && a->phases[i].ok > 0)
            return a->phases[i].tok_s;
    }
    return -1;
}

double mp_verdict_best_conc_tok_s(const struct mp_attempt_result *a)
{
    double best = -1;
    for (size_t i = 0; a && i < a->nphases; i++) {
        if (!strncmp(a->phases[i].name, "concurrency-", 12) && a->phases[i].ok > 0)
            best = MP_MAX(best, a->phases[i].tok_s);
    }
    return best;
}

/* p50 of one metric over the load phases (mp_phase_is_load: not the
 * warm-up, the output check's greedy prompts or long prefill, the same
 * phases as the attempt's latency_ms); <0 without samples. */
static double load_p50(const struct mp_attempt_result *a, bool tpot)
{
    struct mp_phase_metrics m;
    mp_attempt_metrics(a, &m);
    const struct mp_hist *h = tpot ? &m.tpot_ms : &m.ttft_ms;
    double v = h->n ? mp_hist_percentile(h, 50) : -1;
    mp_phase_metrics_release(&m);
    return v;
}

double mp_verdict_median_ttft_ms(const struct mp_attempt_result *a)
{
    return load_p50(a, false);
}

double mp_verdict_median_tpot_ms(const struct mp_attempt_result *a)
{
    return load_p50(a, true);
}

/* One measure: > 0 when x is better, < 0 when y is, 0 a tie (within 1 % of
 * the larger, or both unknown). Unknown (< 0) loses to any known value. */
static int cmp_measure(double x, double y, bool lower_is_better)
{
    bool kx = x >= 0, ky = y >= 0;
    if (!kx || !ky)
        return (int)kx - (int)ky;
    if (fabs(x - y) <= 0.01 * MP_MAX(x, y))
        return 0;
    if (lower_is_better)
        return x < y ? 1 : -1;
    return x > y ? 1 : -1;
}

int mp_verdict_rank(const struct mp_cand_report *a, const struct mp_cand_report *b,
                    enum mp_objective obj)
{
    const struct mp_attempt_result *pa = mp_cand_primary(a), *pb = mp_cand_primary(b);
    int r = 0;
    switch (obj) {
    case MP_OBJ_SEQUENTIAL:
        r = cmp_measure(mp_verdict_seq_tok_s(pa), mp_verdict_seq_tok_s(pb), false);
        if (!r)
            r = cmp_measure(mp_verdict_best_conc_tok_s(pa), mp_verdict_best_conc_tok_s(pb), false);
        break;
    case MP_OBJ_THROUGHPUT:
        r = cmp_measure(mp_verdict_best_conc_tok_s(pa), mp_verdict_best_conc_tok_s(pb), false);
        if (!r)
            r = cmp_measure(mp_verdict_seq_tok_s(pa), mp_verdict_seq_tok_s(pb), false);
        break;
    case MP_OBJ_TTFT:
        r = cmp_measure(mp_verdict_median_ttft_ms(pa), mp_verdict_median_ttft_ms(pb), true);
        break;
    case MP_OBJ_TPOT:
        r = cmp_measure(mp_verdict_median_tpot_ms(pa), mp_verdict_median_tpot_ms(pb), true);
        break;
    }
    if (r)
        return r;
    size_t ka = mp_candidate_nknobs(&a->cand), kb = mp_candidate_nknobs(&b->cand);
    return (ka < kb) - (ka > kb);
}

static bool is_same_config(const struct mp_cand_report *c)
{
    const struct mp_attempt_result *p = mp_cand_primary(c);
    return p && p->outcome == MP_OUT_SAME_CONFIG;
}

int mp_verdict_pick(const struct mp_report *rep)
{
    int best = -1;
    for (size_t i = 0; i < rep->n; i++) {
        const struct mp_cand_report *c = &rep->c[i];
        if (c->verdict != MP_V_STABLE || is_same_config(c))
            continue; /* a shared result is recommended as its representative */
        if (best < 0 || mp_verdict_rank(c, &rep->c[best], rep->objective) > 0)
            best = (int)i;
    }
    return best;
}

const char *mp_verdict_objective_label(enum mp_objective obj)
{
    static const char *const label[MP_OBJ_COUNT] = {
        [MP_OBJ_SEQUENTIAL] = "sequential tok/s",
        [MP_OBJ_THROUGHPUT] = "best concurrency tok/s",
        [MP_OBJ_TTFT] = "median TTFT",
        [MP_OBJ_TPOT] = "median TPOT",
    };
    return (unsigned)obj < MP_OBJ_COUNT ? label[obj] : "?";
}

/* "fastest of 3 stable candidates by sequential tok/s (--objective
 * sequential): 14.5 tok/s sequential, 70.2 tok/s best concurrency; MoE
 * backend X; 0 failures in ..." - the objective named in every case (the
 * only stable candidate too: "the only stable candidate (objective: ...)"),
 * then its measure first. */
static char *why_of(const struct mp_report *rep, const struct mp_cand_report *c)
{
    const struct mp_attempt_result *p = mp_cand_primary(c);
    enum mp_objective obj = rep->objective;
    double s = mp_verdict_seq_tok_s(p), cc = mp_verdict_best_conc_tok_s(p);
    size_t nstable = 0;
    for (size_t i = 0; i < rep->n; i++)
        nstable += rep->c[i].verdict == MP_V_STABLE;
    struct buf w = BUF_INIT;
    if (nstable == 1)
        buf_printf(&w, "the only stable candidate (objective: %s, --objective %s)",
                   mp_verdict_objective_label(obj), mp_objective_name(obj));
    else
        buf_printf(&w, "fastest of %zu stable candidates by %s (--objective %s)", nstable,
                   mp_verdict_objective_label(obj), mp_objective_name(obj));
    const char *sep = ": ";
    double first = obj == MP_OBJ_TTFT ? mp_verdict_median_ttft_ms(p)
                   : obj == MP_OBJ_TPOT ? mp_verdict_median_tpot_ms(p)
                                        : -1;
    if (first >= 0) {
        buf_printf(&w, "%s%s p50 %.*f ms", sep, obj == MP_OBJ_TTFT ? "TTFT" : "TPOT",
                   obj == MP_OBJ_TTFT ? 1 : 2, first);
        sep = ", ";
    }
    if (obj == MP_OBJ_THROUGHPUT && cc >= 0) {
        buf_printf(&w, "%s%.1f tok/s best concurrency", sep, cc);
        sep = ", ";
    }
    if (s >= 0) {
        buf_printf(&w, "%s%.1f tok/s sequential", sep, s);
        sep = ", ";
    }
    if (obj != MP_OBJ_THROUGHPUT && cc >= 0)
        buf_printf(&w, "%s%.1f tok/s best concurrency", sep, cc);
    buf_printf(&w, "; MoE backend %s; 0 failures in %lu requests (95%% upper bound on the "
                   "failure rate %.3f)",
               p->res.moe_backend ? p->res.moe_backend : "(not logged)", p->req_ok,
               mp_stats_failure_upper95(p->req_ok));
    char *caveat = mp_correct_caveat(rep, (size_t)(c - rep->c));
    if (caveat)
        buf_printf(&w, "; %s", caveat);
    free(caveat);
    return buf_detach(&w, NULL);
}

/* With nothing to recommend: what the run showed. */
static void learned(struct mp_report *rep)
{
    for (size_t i = 0; i < rep->n; i++) {
        const struct mp_cand_report *c = &rep->c[i];
        if (c->verdict != MP_V_ASYNC_RACE)
            continue;
        if (c->diag.throughput_ratio > 0)
            mp_strv_push_owned(&rep->learned,
                               xasprintf("%s works only with CUDA_LAUNCH_BLOCKING=1 at %.2fx speed",
                                         c->cand.name, c->diag.throughput_ratio));
        else
            mp_strv_push_owned(&rep->learned,
                               xasprintf("%s works only with CUDA_LAUNCH_BLOCKING=1", c->cand.name));
    }
    for (size_t i = 0; i < rep->n; i++) {
        const struct mp_cand_report *c = &rep->c[i];
        if (c->verdict == MP_V_GARBAGE_OUTPUT)
            mp_strv_push_owned(&rep->learned,
                               xasprintf("%s serves without errors but its output is garbage",
                                         c->cand.name));
        if (c->verdict == MP_V_WRONG_OUTPUT && rep->cor.n == rep->n && rep->cor.c[i].cls)
            mp_strv_push_owned(&rep->learned,
                               xasprintf("%s serves fluently but its output is wrong (%s)",
                                         c->cand.name, rep->cor.c[i].cls));
    }
    for (size_t i = 0; i < rep->n; i++) {
        const struct mp_cand_report *c = &rep->c[i];
        const struct mp_knob_dlv *m = mp_attempt_find_dlv(mp_cand_primary(c), MP_DLV_MISSING);
        if (c->verdict == MP_V_NOT_DELIVERED && m)
            mp_strv_push_owned(&rep->learned,
                               xasprintf("%s was not tested: %s did not reach the engine",
                                         c->cand.name, m->knob));
    }
    if (rep->qc.note)
        mp_strv_push(&rep->learned, rep->qc.note);
    size_t nunf = mp_report_nunfinished(rep);
    if (!rep->learned.n && nunf == 0)
        mp_strv_push(&rep->learned, "no candidate ran every phase without a failure");
    else if (!rep->learned.n && nunf < rep->n)
        mp_strv_push(&rep->learned, "no finished candidate ran every phase without a failure");
    if (nunf)
        mp_strv_push_owned(&rep->learned,
                           xasprintf("%zu of %zu candidate%s unfinished: the run stopped before "
                                     "%s finished",
                                     nunf, rep->n, rep->n == 1 ? " is" : "s are",
                                     nunf == 1 ? "it" : "they"));
}

void mp_verdict_recommend(struct mp_report *rep)
{
    rep->recommended = mp_verdict_pick(rep);
    free(rep->recommendation_why);
    rep->recommendation_why = NULL;
    mp_strv_release(&rep->learned);
    if (rep->recommended >= 0)
        rep->recommendation_why = why_of(rep, &rep->c[rep->recommended]);
    else
        learned(rep);
}
