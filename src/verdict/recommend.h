/* recommend.h - the recommendation and "what we learned"
 * (docs/verdicts.md "Recommendation"). Pure: no I/O; reads the model (the
 * verdicts must be final: verdict.h), writes the report's recommendation
 * fields.
 *
 * The recommendation is the fastest `stable` candidate that was tested
 * itself (a shared same-configuration result is recommended as its
 * representative). "Fastest" is the report's objective (rep->objective):
 *   sequential  sequential aggregate tok/s, then best concurrency tok/s
 *   throughput  best concurrency aggregate tok/s, then sequential tok/s
 *   ttft        lowest median TTFT over the load phases
 *   tpot        lowest median TPOT over the load phases
 * Values within 1 % of the larger one tie on that measure (|a - b| <=
 * 0.01 max(a, b)); a known value beats an unknown one, two unknown ones
 * tie; after the last measure, fewer knobs win, then the earlier
 * candidate. */
#ifndef MP_VERDICT_RECOMMEND_H
#define MP_VERDICT_RECOMMEND_H

#include "compat.h"

#include "model/report.h"
#include "strv.h"

/* Output tok/s of a's "sequential" phase (if it served any request); <0
 * when unknown (a NULL, no such phase). */
double mp_verdict_seq_tok_s(const struct mp_attempt_result *a);
/* Best aggregate tok/s over a's "concurrency-N" phases that served; <0
 * when unknown. */
double mp_verdict_best_conc_tok_s(const struct mp_attempt_result *a);
/* Median (p50, mp_hist_percentile) TTFT / TPOT in ms over a's load phases:
 * every phase but "warmup" and "quality", their histograms merged; <0 when
 * they hold no sample. */
double mp_verdict_median_ttft_ms(const struct mp_attempt_result *a);
double mp_verdict_median_tpot_ms(const struct mp_attempt_result *a);

/* What objective obj ranks by, in words ("sequential tok/s", "best
 * concurrency tok/s", "median TTFT", "median TPOT"); "?" out of range. */
const char *mp_verdict_objective_label(enum mp_objective obj);

/* Compare two candidates by their first normal attempts under objective
 * obj: > 0 when a ranks before b, < 0 when after, 0 when they tie on every
 * measure and in the number of knobs. */
int mp_verdict_rank(const struct mp_cand_report *a, const struct mp_cand_report *b,
                    enum mp_objective obj);

/* The index of the candidate to recommend under rep->objective, or -1 when
 * no candidate is stable (the earlier one wins a full tie). */
int mp_verdict_pick(const struct mp_report *rep);

/* Set rep->recommended and rep->recommendation_why (the objective it was
 * ranked by, named as label and option in every case, what the pick
 * measured, its MoE backend and the 95 % bound on its failure rate), or with none
 * the sentences of rep->learned (async races, garbage output, untested
 * candidates, the output check's note, unfinished candidates). Replaces
 * what was there. */
void mp_verdict_recommend(struct mp_report *rep);


#endif
