/* scoreopt.h - the scoring pass a command runs (run/score.h), from its
 * options: --agreement N passages (16) and min(N, 4) greedy continuations,
 * --accuracy N built-in problems (64)
 * or --accuracy-file FILE, at the workload's top concurrency; --reference
 * NAME is recorded with the run (mp_store_set_reference). */
#ifndef MP_CLI_SCOREOPT_H
#define MP_CLI_SCOREOPT_H

#include "compat.h"

#include "cli/opts.h"
#include "quality/task.h"
#include "run/score.h"

struct mp_cli_score {
    struct mp_score_plan plan;
    struct mp_task_set tasks;
    bool on;                 /* something to run (else the plan is not used) */
};

/* Build it: 0, or -1 with the message printed (an unreadable or malformed
 * --accuracy-file, a --reference naming no candidate). */
int mp_cli_score_init(struct mp_cli_score *s, const struct mp_opts *o);
void mp_cli_score_release(struct mp_cli_score *s);
/* The plan for a run context (NULL when there is nothing to score). */
const struct mp_score_plan *mp_cli_score_plan(const struct mp_cli_score *s);

#endif
