/* internal.h - what report.c, json.c, markdown.c and html.c share; not
 * part of report/'s interface. */
#ifndef MP_REPORT_INTERNAL_H
#define MP_REPORT_INTERNAL_H

#include "compat.h"

#include "model/report.h"
#include "strv.h"

/* What a candidate cost: engine starts, the engines' lifetime (spawn to
 * teardown), the time spent driving load; and that lifetime split (#27):
 * the engine's start-up (spawn to ready, or to the stop at its selection
 * lines, or to its failure), its requests (each load phase from its first
 * request sent to its last one ended) and the rest, moeprobe's own
 * (probing, settling, scrapes, gaps between phases, teardown). */
struct mp_rep_cost {
    size_t starts;             /* every engine started, those cut short included */
    double engine_s, workload_s;
    size_t cut;                /* of starts: cut short by an interruption, redone by a resume */
    size_t stops;           /* of the starts: stopped at their selection lines */
    double startup_s, request_s, overhead_s;
};
/* The sum of two costs. */
void mp_rep_cost_add(struct mp_rep_cost *to, const struct mp_rep_cost *k);

/* Output tok/s of an attempt's "sequential" phase, <0 when unknown. */
double mp_rep_seq_tok_s(const struct mp_attempt_result *a);
/* Best aggregate tok/s over its concurrency phases, <0 when unknown. */
double mp_rep_best_conc_tok_s(const struct mp_attempt_result *a);
/* Median per-request decode rate over its load phases (mp_phase_is_load), <0 when unknown. */
double mp_rep_median_req_rate(const struct mp_attempt_result *a);
/* Engine starts, engine lifetime and load time of a candidate. */
struct mp_rep_cost mp_rep_cand_cost(const struct mp_cand_report *c);
/* "interrupted and resumed once" / "... N times" into out (n > 0). */
const char *mp_rep_resumed_words(int n, char *out, size_t outsz);
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
/* Every sentence of "Are the numbers comparable?" (report.md and
 * report.html; report.json's comparability holds the same): the GPU's
 * (mp_rep_gpu_comparability), then the server metrics' flagged phases
 * (mp_rep_srvm_flags), appended to out. */
void mp_rep_comparability(const struct mp_report *rep, struct mp_strv *out);

/* ---- the client metrics of a phase (docs/metrics.md: `vllm bench serve`'s
 * names and semantics) ---- */

/* The percentiles the reports show: rep->percentiles (--percentiles), or
 * 50, 90, 99 when the run gave none; *p points at them (static or rep's). */
size_t mp_rep_percentiles(const struct mp_report *rep, const double **p);
/* vLLM's word for percentile p in its keys ("p99_ttft_ms"): "p50", "p99.9"
 * (str(int(p)) when whole, else str(p)), into out. */
void mp_rep_pct_word(double p, char *out, size_t n);

/* The distributions of a phase, in the order the writers show them. */
enum mp_rep_metric { MP_REP_TTFT, MP_REP_TPOT, MP_REP_ITL, MP_REP_E2EL, MP_REP_REQ_RATE, MP_REP_NMETRICS };
struct mp_rep_metric_def {
    const char *key;   /* key stem: "ttft_ms" gives mean_ttft_ms, p99_ttft_ms, ... */
    const char *label; /* "TTFT" */
    const char *unit;  /* "ms" or "tok/s" */
};
extern const struct mp_rep_metric_def mp_rep_metrics[MP_REP_NMETRICS];
/* The histogram of metric m in phase ph (borrowed). */
const struct mp_hist *mp_rep_metric_hist(const struct mp_phase_result *ph, enum mp_rep_metric m);

/* One distribution as `vllm bench serve` summarises it: mean, median, std
 * (population, numpy.std), and the report's percentiles (pct[i] at
 * mp_rep_percentiles' i-th value). n = 0: no samples, every figure unknown. */
struct mp_rep_dist {
    uint64_t n;
    double mean, median, std;
    double pct[MP_REPORT_MAX_PCT];
};
void mp_rep_dist(const struct mp_report *rep, const struct mp_hist *h, struct mp_rep_dist *d);

/* A phase's throughputs over its duration, lgstats' definitions (mp_lg_phase_rates; each < 0
 * when unknown):
 * request_throughput (OK requests/s), output_throughput (output tok/s),
 * total_token_throughput ((input + output tokens)/s); input_tokens is the
 * OK requests' summed usage.prompt_tokens (scaled up to every OK request
 * when the engine's usage gave it for only some of them; < 0: never given). */
struct mp_rep_rates {
    double req_s, out_tok_s, total_tok_s, input_tokens;
};
void mp_rep_phase_rates(const struct mp_phase_result *ph, struct mp_rep_rates *r);

/* One phase of the report's workload: every phase an attempt of the run ran - the workload's
 * own, the output check ("quality"), and the diagnosis' continuation ("extended", only in the
 * CUDA_LAUNCH_BLOCKING=1 run). */
struct mp_rep_wphase {
    char name[32];
    int level;
    int requests;         /* INT_MAX: a soak's timed phase; < 0: until enough succeeded */
    double duration_s;    /* > 0: a time limit */
    int input_tokens;     /* 0: fixed prompts (~15 tokens; the quality prompts for "quality") */
    int max_tokens;
    bool ignore_eos;
    bool diagnosis_only;  /* only the diagnosis' run has it */
};
/* The workload's phases as above, into out (at most cap). Returns the count. */
size_t mp_rep_workload_phases(const struct mp_report *rep, struct mp_rep_wphase *out, size_t cap);
/* The phases of the diagnosis' run (the first CUDA_LAUNCH_BLOCKING=1 attempt), ", "-separated
 * into out ("" when none ran). */
void mp_rep_diagnosis_phases(const struct mp_report *rep, char *out, size_t n);

/* The length of the fixed prompts as a table cell: "~15", or "~15 + chat
 * template" with --api chat (the template's tokens come on top). */
const char *mp_rep_fixed_prompt_cell(const struct mp_workload *w);

/* The input tokens of workload phase i (its own, else the workload's);
 * 0 = the fixed ~15-token prompts. */
int mp_rep_phase_input_tokens(const struct mp_workload *w, size_t i);

#endif
