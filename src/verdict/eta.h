/* eta.h - how long the rest of a run should take, from what it measured.
 * Pure: the report model in, seconds out (no clock, no I/O).
 *
 * A short crashed attempt says little about a full one: the estimate never
 * averages attempts of different kinds. What is measured is used for what
 * it measures - start-up (spawn to ready), teardown, the time of one
 * request alone (warm-up, sequential), each concurrency level's time per
 * round of requests, the wall time of attempts that ran their whole
 * workload - and the rest of the run is built from them:
 *   - a candidate not started: one full attempt (the mean full attempt when
 *     one ran, else start-up + its phases' rounds + the output check +
 *     teardown); one predicted to be the same configuration as a tested
 *     one: a start-up;
 *   - a crashed candidate whose diagnosis is ahead: the extra normal runs
 *     the diagnosis plan (stats.h) would ask for if they failed like the
 *     ones seen, then the CUDA_LAUNCH_BLOCKING=1 run at the plan's need;
 *   - a timed phase (soak): its duration;
 *   - anything else the caller knows (minimize's remaining tests).
 * Docs: docs/verdicts.md "ETA". */
#ifndef MP_VERDICT_ETA_H
#define MP_VERDICT_ETA_H

#include "compat.h"

#include "model/report.h"

struct mp_knowledge;

/* The scoring pass a serving candidate's first attempt runs after its
 * phases (run/score.h's plan, in numbers): prompts read one at a time
 * (teacher-forced logprobs, about one output token each) and again at
 * level when repeat, greedy continuations and task problems at level. */
struct mp_eta_score {
    size_t prompts;
    bool repeat;
    size_t greedy;
    int greedy_tokens;
    size_t tasks;
    int task_tokens;                /* a problem's max_tokens: a reply takes about a third */
    int level;
};

struct mp_eta_in {
    const struct mp_report *rep;    /* the candidates and their attempts so far */
    const struct mp_workload *wl;   /* what a full attempt sends */
    size_t nquality;                /* output-check prompts after its load phases */
    const struct mp_eta_score *score; /* the scoring pass of a first attempt (NULL: none) */
    const bool *done;               /* per candidate: finished (NULL: none) */
    const bool *cheap;              /* per candidate: predicted the same configuration as
                                     * one tested (NULL: none) */
    bool diagnose;                  /* crashes get the CUDA_LAUNCH_BLOCKING=1 diagnosis */
    bool resolve_only;              /* each engine stops once resolved (resolve) */
    unsigned long diag_cap;         /* --diagnose-max-requests (0: none) */
    double diag_budget_s;           /* --diagnose-budget (<= 0: none) */
    double extra_attempts;          /* more attempts the caller expects (minimize's tests) */
    const struct mp_workload *extra_wl; /* ... of this workload (NULL: wl) */
    double extra_fail_share;        /* the share of them expected to fail early (taking
                                     * what the failed attempts so far took) */
};

struct mp_eta {
    bool known;                     /* false: nothing measured yet to estimate from */
    double remaining_s;             /* the rest of the run */
    double attempt_s;               /* one full attempt, as estimated */
    double diagnosis_s;             /* of which: the diagnoses ahead */
    size_t full_left, cheap_left;   /* candidates still to start */
    /* how remaining_s divides (#27): the engines' start-ups (to ready, or to
     * the selection lines of a same configuration), their requests, and
     * moeprobe's own time (teardown) */
    double startup_s, request_s, overhead_s;
};

/* Estimate the rest of the run after what rep holds. */
void mp_eta_estimate(const struct mp_eta_in *in, struct mp_eta *out);

/* Which candidates not started yet will be stopped as the same
 * configuration as one tested (dedupe): every knob of theirs acts only
 * through the selection (the knowledge's selection_only, at the engine
 * version logged so far) and the knowledge predicts the MoE backend a
 * tested candidate resolved. cheap[i] set for those (rep->n entries). */
void mp_eta_predict_cheap(const struct mp_knowledge *kn, const struct mp_report *rep, bool *cheap);

/* One full attempt of workload wl from rep's measurements (<0: unknown),
 * without a scoring pass. */
double mp_eta_attempt_s(const struct mp_report *rep, const struct mp_workload *wl,
                        size_t nquality);

/* Expected engine starts of minimize still to run for n differences with
 * `run` run so far: the premise checks of both ends, then ddmin's tests as
 * it runs when one of the differences is the one that matters (its test
 * of the empty set starts nothing). */
double mp_eta_ddmin_tests_left(size_t n, unsigned run);

#endif
