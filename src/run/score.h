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
 * "task"). Event-driven: a row of the attempt's passes (run/att_internal.h). A request the engine refuses (a 4xx: prompt_logprobs not
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

/* The pass's progress, part of the attempt (att_internal.h): plain data, no
 * memory of its own (what it learns goes to r->score). */
enum mp_sc_stage { MP_SC_PASSAGES, MP_SC_REPEAT, MP_SC_GREEDY, MP_SC_TASK, MP_SC_DONE };
struct mp_score_state {
    enum mp_sc_stage stage;
    size_t n, sent, done;  /* the stage's requests */
    int level;             /* ... in flight at most */
    int k;                 /* greedy: the logprobs asked */
    int retry_k;           /* greedy: the engine allows only this many (-1: none, -2: asked) */
    int plp_k;             /* passages: the prompt logprobs asked */
    int plp_retry_k;       /* passages: the engine allows only this many (-1: none, -2: asked) */
    bool stop;             /* start no more of this stage */
    int64_t t0, t_task;    /* when the pass and its task gate began */
};

/* The attempt's pass after the load phases (a row of phases.c's
 * mp_att_passes[]; run/attempt.c's state machine drives it in CHECKING):
 * wanted when the attempt has a plan; begin sends the first requests;
 * result takes each answer (an MP_LG_POST result) and sends the next;
 * complete when every stage is done, or a failure or hang ended it. The
 * score is written to the store as the last stage ends. */
struct att;
struct mp_lg_result;
bool mp_score_wanted(const struct att *a);
void mp_score_begin(struct att *a);
void mp_score_result(struct att *a, struct mp_lg_result *res);
bool mp_score_complete(const struct att *a);

#endif
