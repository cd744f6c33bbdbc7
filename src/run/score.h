/* score.h - the scoring pass: while the engine is still up, after the load
 * phases and the output check, each serving candidate's primary attempt
 * (docs/quality.md "Correctness"):
 *   1. scores the reference passages one at a time with prompt_logprobs K
 *      (POST /v1/completions, max_tokens 1, temperature 0, non-streaming),
 *      then all of them again at the top concurrency (the run-to-run noise);
 *   2. asks for the greedy continuations with logprobs K (all at once);
 *   3. asks the task problems, greedy, at the top concurrency.
 * The results go to the attempt (r->score) and the evidence store as soon as
 * the pass ends; each request is a line of requests.jsonl (phase "score" or
 * "task"). A request the engine refuses (a 4xx: prompt_logprobs not
 * supported, more logprobs than --max-logprobs allows, a prompt too long)
 * is not a failure of the candidate: that part is marked refused with the
 * engine's words, the rest goes on (logprobs refused with "max allowed: N"
 * are asked again with N). Any other failure (5xx, a cut connection, the
 * engine dying, no answer within --stall-timeout) ends the attempt like a
 * failure of the workload. */
#ifndef MP_RUN_SCORE_H
#define MP_RUN_SCORE_H

#include "compat.h"

#include "model/attempt.h"
#include "quality/task.h"

struct mp_score_plan {
    const char *const *passages;  /* NULL / 0: no teacher-forced scoring */
    size_t npassages;
    int k;                        /* top-K (MP_SCORE_K) */
    bool repeat;                  /* score the passages twice */
    const char *const *greedy;    /* greedy prompts, NULL / 0: none */
    size_t ngreedy;
    int greedy_tokens;
    const struct mp_task_set *tasks; /* NULL: no task gate */
    int level;                    /* concurrency of the repeat and the task gate (>= 1) */
};

/* How many requests the plan sends (for the plan line and the ETA). */
size_t mp_score_plan_requests(const struct mp_score_plan *p);

struct att;
/* Run the pass on attempt a (its engine ready, its workload clean).
 * Returns the attempt's outcome: MP_OUT_CLEAN, or what a failure made it. */
enum mp_outcome mp_att_run_score(struct att *a);

#endif
