/* correct.h - correctness across candidates (report.json
 * candidates[].correctness): the agreement of teacher-forced logprobs and
 * greedy continuations (computed by quality/agree.h), the task gate
 * (verdict/correct.h) and the class that makes a candidate wrong-output.
 * Plain data held by the report model; strings owned. */
#ifndef MP_MODEL_CORRECT_H
#define MP_MODEL_CORRECT_H

#include "compat.h"

#include <stddef.h>

#define MP_AG_FIRST 3 /* first disagreements kept per candidate */

/* One position where a candidate's most likely token differs from the
 * reference's. */
struct mp_disagreement {
    size_t passage, pos;     /* 0-based passage, 0-based scored position */
    char *context;           /* the passage's tokens just before it */
    char *token;             /* the passage's own token there */
    char *this_top1, *ref_top1;
    double this_lp, ref_lp;  /* logprob of the passage's token: this / the reference */
};

enum mp_ag_result {
    MP_AG_NOT_MEASURED = 0,
    MP_AG_AGREES,
    MP_AG_DIVERGENT,
    MP_AG_DISAGREE_PAIR,   /* two configurations that disagree: moeprobe cannot say which */
    MP_AG_NO_CONSENSUS,    /* three or more, and no majority agrees */
};
/* "not-measured", "agrees", "divergent", "disagree-pair", "no-consensus". */
const char *mp_ag_result_name(enum mp_ag_result r);

struct mp_agreement {
    enum mp_ag_result result;
    char *reference;         /* "consensus", or the candidate compared with */
    size_t others;           /* other configurations compared with */
    size_t positions;        /* teacher-forced positions compared (0: greedy only) */
    double mean_abs, p99_abs;/* |delta logprob| of the passage tokens, nats */
    double top1;             /* share of positions whose most likely token agrees */
    double noise_floor;      /* the run's measured floor (nats) */
    double repeat_abs;       /* this candidate scored twice: mean |delta|, <0 = not */
    double repeat_top1;      /* ... the share of positions whose most likely token is the
                              * same both times, <0 = not */
    bool self_div;           /* its two scorings (sequential, then at the top concurrency)
                              * differ by the divergence rule: what it computes depends on
                              * the load, so one of them is wrong whoever agrees with it */
    bool lp_div;             /* the teacher-forced rule fired */
    struct mp_disagreement first[MP_AG_FIRST];
    size_t nfirst;
    size_t greedy_compared;  /* greedy continuations compared (prompt x other) */
    size_t greedy_failed;    /* ... failing check_logprobs_close */
    size_t greedy_undecided; /* ... differing where no top-K was given */
    size_t greedy_others;    /* other configurations compared with */
    size_t greedy_others_failed; /* ... against which some continuation failed */
    bool greedy_div;         /* the greedy rule fired */
    char *greedy_first;      /* the first failing comparison, described */
    bool greedy_only;        /* no prompt logprobs: the greedy comparison alone */
    char *note;              /* why not measured, or what was missing */
};

enum mp_acc_result { MP_ACC_NOT_RUN = 0, MP_ACC_PASS, MP_ACC_LOW };
/* "not-run", "pass", "low-accuracy". */
const char *mp_acc_result_name(enum mp_acc_result r);

struct mp_accuracy {
    enum mp_acc_result result;
    size_t n, right;
    double low, high;        /* Wilson 95 % interval */
    long best;               /* candidate index of the best accuracy, -1 none */
    double z;                /* two-proportion statistic against the best (0: is the best) */
    char *source;            /* "built-in" or the file */
    char *note;              /* not-run: why */
};

struct mp_correctness {
    bool measured;           /* the scoring pass ran for this candidate (or its representative) */
    long shared_from;        /* same_as: the candidate whose result this is, -1 own */
    struct mp_agreement ag;
    struct mp_accuracy acc;
    const char *cls;         /* NULL | "divergent" | "low-accuracy" | "divergent+low-accuracy" */
    double score_s, task_s;  /* what the passes cost (wall seconds) */
};

struct mp_correct {
    struct mp_correctness *c; /* per candidate (report index) */
    size_t n;
    size_t votes;             /* configurations with teacher-forced scores */
    double noise_floor;       /* the floor used (nats), <0 = none measured */
    double repeat_floor;      /* run-to-run part of it, <0 = none */
    double spread_floor;      /* spread among the configurations, <0 = none */
    char *reference;          /* --reference NAME or NULL (consensus) */
    char *note;               /* a sentence for the report, or NULL */
};

void mp_agreement_release(struct mp_agreement *a);
void mp_correct_release(struct mp_correct *c);

#endif
