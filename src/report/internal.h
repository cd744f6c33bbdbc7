/* internal.h - what report.c, json.c, markdown.c and html.c share; not
 * part of report/'s interface. */
#ifndef MP_REPORT_INTERNAL_H
#define MP_REPORT_INTERNAL_H

#include "compat.h"

#include "model/report.h"
#include "strv.h"

/* What a candidate cost: engine starts, the engines' lifetime (spawn to
 * teardown), the time spent driving load. */
struct mp_rep_cost {
    size_t starts;
    double engine_s, workload_s;
};

/* Output tok/s of an attempt's "sequential" phase, <0 when unknown. */
double mp_rep_seq_tok_s(const struct mp_attempt_result *a);
/* Best aggregate tok/s over its concurrency phases, <0 when unknown. */
double mp_rep_best_conc_tok_s(const struct mp_attempt_result *a);
/* Median per-request decode rate over its phases, <0 when unknown. */
double mp_rep_median_req_rate(const struct mp_attempt_result *a);
/* Engine starts, engine lifetime and load time of a candidate. */
struct mp_rep_cost mp_rep_cand_cost(const struct mp_cand_report *c);
/* Seconds between two ISO 8601 times, <0 when unknown. */
double mp_rep_iso_span(const char *a, const char *b);
/* The candidate was stopped as the same configuration as another. */
bool mp_rep_is_same_config(const struct mp_cand_report *c);
/* The attempt whose numbers a candidate shows (its own, or its
 * representative's for a shared result). */
const struct mp_attempt_result *mp_rep_numbers_attempt(const struct mp_report *rep,
                                                       const struct mp_cand_report *c);
/* Sentences on why the candidates' numbers are not comparable (GPU clocks,
 * throttling, no telemetry), appended to out. */
void mp_rep_gpu_comparability(const struct mp_report *rep, struct mp_strv *out);

#endif
