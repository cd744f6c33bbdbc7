/* agree.h - do the serving candidates compute the same thing? The agreement
 * rules of docs/verdicts.md "wrong-output" as pure functions over the
 * scoring pass's measurements (model/score.h). No I/O.
 *
 * Teacher-forced logprobs: every candidate scored the same passages. Per
 * position the reference value is the median over the configurations (one
 * vote per configuration: candidates that share one never outvote the
 * rest), or, with a named reference, that candidate's. A candidate is
 * compared by mean and p99 |delta logprob| of the passage's own tokens and
 * by the share of positions where its most likely token is the one most
 * configurations chose (top-1 agreement).
 *
 * The noise floor is measured: the run-to-run |delta| of candidates scored
 * twice (lower median over them) and the spread around the reference of the
 * configurations that agree on top-1 (at least MP_AG_TOP1_MIN: the lower
 * median of their distances, when two or more do); the floor is the
 * larger. The rule (mp_agree_divergent):
 *
 *     divergent  <=>  mean |delta| > MP_AG_FACTOR x floor
 *                     and top-1 agreement < MP_AG_TOP1_MIN
 *
 * Greedy continuations are compared pairwise with vLLM's
 * check_logprobs_close rule (mp_agree_logprobs_close). Two configurations
 * that disagree are a pair (nobody is blamed); with three or more a
 * candidate is divergent when the teacher-forced rule fires or its greedy
 * check fails against a strict majority of the others; when half or more
 * of the configurations would be divergent there is no consensus.
 *
 * Independence: configurations that share a kernel are one witness for it.
 * When the configurations a divergent one is measured against all share a
 * kernel (the same MoE backend under two attention backends, say) that the
 * divergent one does not use, their agreement cannot tell whether its
 * kernel or their shared one is wrong: there is no consensus either, and
 * each note names the shared kernel. */
#ifndef MP_QUALITY_AGREE_H
#define MP_QUALITY_AGREE_H

#include "compat.h"

#include <stddef.h>

#include "model/correct.h"
#include "model/score.h"

#define MP_AG_FACTOR 10.0    /* distance must exceed this many noise floors */
#define MP_AG_TOP1_MIN 0.95  /* ... and top-1 agreement fall below this rate */

/* The kernels a configuration is made of, for the independence rule: the
 * MoE backend, the dense (linear) kernel(s), the attention backend. */
#define MP_AG_NKERN 3
extern const char *const mp_ag_kern_name[MP_AG_NKERN]; /* "MoE backend", ... */

struct mp_ag_in {
    const char *name;
    const struct mp_score *s; /* NULL: not scored */
    int group;                /* same configuration = same group (one vote) */
    const char *kern[MP_AG_NKERN]; /* what it resolved to, NULL: not logged (borrowed) */
};

/* The rule on one candidate's figures. */
bool mp_agree_divergent(double mean_abs, double top1, double floor);

/* check_logprobs_close on two greedy continuations of one prompt: walk them
 * while the tokens are equal; at the first difference each chosen token
 * must be among the other's listed alternatives (then the rest is not
 * compared: the contexts differ). 1 close (or identical, or one a prefix of
 * the other), 0 not close, -1 undecided (a side listed no alternative
 * besides its own token: logprobs 0 or 1 cannot tell a near tie from a
 * wrong token).
 * *at gets the first differing step, -1 when none. */
int mp_agree_logprobs_close(const struct mp_gen_seq *a, const struct mp_gen_seq *b, long *at);

/* Fill out->c[i].ag (out->c has n zeroed entries) and out->votes,
 * noise_floor, repeat_floor, spread_floor. ref: the reference candidate's
 * index, or -1 for the consensus. */
void mp_agree_run(const struct mp_ag_in *in, size_t n, long ref, struct mp_correct *out);

#endif
