/* child.c - the command line of one task's child moeprobe (internal.h):
 * the same qualify with the run's options, limited to the task's
 * candidate and written to the task's directory. local.c spawns it; it
 * uses nothing of local.c or sched.c. */
#include "compat.h"

#include "sched/internal.h"
#include "xalloc.h"

/* Full argv of task i: self qualify OPTS --only NAME --out DIR [--port P] -- CMD. */
void mp_sched_child_argv(const struct mp_sched_plan *pl, size_t i, int port, struct mp_strv *out)
{
    mp_strv_push(out, pl->self);
    mp_strv_push(out, "qualify");
    for (size_t k = 0; k < pl->child_opts.n; k++)
        mp_strv_push(out, pl->child_opts.v[k]);
    mp_strv_push(out, "--only");
    mp_strv_push(out, pl->t[i].name);
    mp_strv_push(out, "--out");
    mp_strv_push(out, pl->t[i].dir);
    if (port > 0) {
        mp_strv_push(out, "--port");
        mp_strv_push_owned(out, xasprintf("%d", port));
    }
    mp_strv_push(out, "--");
    for (size_t k = 0; k < pl->ncmd; k++)
        mp_strv_push(out, pl->cmd[k]);
}
