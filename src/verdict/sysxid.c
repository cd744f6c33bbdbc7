/* sysxid.c - a hardware or driver Xid in the verdict (verdict/sysxid.h). */
#include "verdict/sysxid.h"

#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

static bool system_cause(const char *cause)
{
    return cause && (!strcmp(cause, "hardware") || !strcmp(cause, "driver"));
}

const struct mp_xid_record *mp_verdict_system_xid(const struct mp_cand_report *c,
                                                  const struct mp_attempt_result **in)
{
    for (size_t j = 0; j < c->nattempts; j++) {
        const struct mp_gpu_fault *g = &c->attempts[j].fault;
        for (size_t i = 0; i < g->nx; i++)
            if (system_cause(g->x[i].cause)) {
                if (in)
                    *in = &c->attempts[j];
                return &g->x[i];
            }
    }
    return NULL;
}

enum mp_verdict mp_verdict_sysxid(const struct mp_cand_report *c, enum mp_verdict v,
                                  const char *why, char **why_out)
{
    *why_out = NULL;
    const struct mp_attempt_result *a = NULL;
    const struct mp_xid_record *x = mp_verdict_system_xid(c, &a);
    if (!x || v == MP_V_NONE)
        return v;
    char *said = xasprintf("the GPU driver reported Xid %d (%s: %s) during %s", x->xid, x->cause,
                           x->detail ? x->detail : "no detail", a && a->dir ? a->dir : "a run");
    switch (v) {
    case MP_V_ASYNC_RACE:
    case MP_V_KERNEL_FAULT:
        *why_out = xasprintf("%s: a %s failure, so this failure is not evidence about the kernel "
                             "and its diagnosis is void (it read as %s: %s)",
                             said, x->cause, mp_verdict_name(v), why ? why : "");
        v = MP_V_CRASHED;
        break;
    case MP_V_STABLE:
        *why_out = xasprintf("%s; note: %s, which no failure of this run followed", why ? why : "",
                             said);
        break;
    default:
        *why_out = xasprintf("%s: a %s failure, not evidence about the kernel; %s", said,
                             x->cause, why ? why : "");
        break;
    }
    free(said);
    return v;
}
