/* decide.c - one candidate's verdict from its facts (decide.h). */
#include "verdict/decide.h"

#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

static const char *or_empty(const char *s)
{
    return s ? s : "";
}

/* A failure after ready: server-error, crashed, kernel-fault or async-race. */
static enum mp_verdict decide_crash(const struct mp_cand_report *c,
                                    const struct mp_attempt_result *p, char **why)
{
    const char *msg = or_empty(p->fail_message);
    const char *cls = p->fail_class ? p->fail_class : "failed";
    const struct mp_diagnosis *dg = &c->diag;
    if (!p->cuda_fault && !p->engine_died) {
        /* up and answering, but wrongly: nothing for launch blocking to decide */
        *why = xasprintf("the engine stayed up but answered wrongly%s%s: %s%s%s",
                         p->fail_phase ? " in phase " : "", or_empty(p->fail_phase), msg,
                         p->fail_class ? "; class " : "", or_empty(p->fail_class));
        return MP_V_SERVER_ERROR;
    }
    if (!p->cuda_fault) {
        *why = xasprintf("%s: %s; not a CUDA fault: not diagnosed with CUDA_LAUNCH_BLOCKING=1",
                         cls, msg);
        return MP_V_CRASHED;
    }
    if (dg->done && dg->launch_blocking == MP_LB_CRASHED) {
        bool other_launch = dg->launch_site &&
                            (!dg->pinned_site || strcmp(dg->launch_site, dg->pinned_site));
        *why = xasprintf("failed with CUDA_LAUNCH_BLOCKING=1 too; the fault is pinned at %s%s%s",
                         dg->pinned_site ? dg->pinned_site : "an unknown site",
                         other_launch ? ", launched from " : "",
                         other_launch ? dg->launch_site : "");
        return MP_V_KERNEL_FAULT;
    }
    if (dg->done && dg->launch_blocking == MP_LB_CLEAN &&
        dg->requests_clean >= dg->requests_required) {
        if (dg->throughput_ratio > 0)
            *why = xasprintf("crashed normally (%s) but ran %lu requests clean with "
                             "CUDA_LAUNCH_BLOCKING=1 (%lu required) at %.2fx speed",
                             p->fail_class ? p->fail_class : "failure", dg->requests_clean,
                             dg->requests_required, dg->throughput_ratio);
        else
            *why = xasprintf("crashed normally but ran %lu requests clean with "
                             "CUDA_LAUNCH_BLOCKING=1 (%lu required)",
                             dg->requests_clean, dg->requests_required);
        return MP_V_ASYNC_RACE;
    }
    if (dg->note)
        *why = xasprintf("%s: %s; %s", cls, msg, dg->note);
    else
        *why = xasprintf("%s: %s", cls, msg);
    return MP_V_CRASHED;
}

enum mp_verdict mp_verdict_decide(const struct mp_cand_report *c, char **why)
{
    const struct mp_attempt_result *p = mp_cand_primary(c);
    if (mp_attempt_evidence_incomplete(p)) {
        /* a cut log proves nothing: no verdict (the run stopped there, so
         * the candidate is also unfinished; this says why) */
        *why = xasprintf("evidence incomplete, no verdict: %s (%lu requests ok, %lu failed "
                         "before it)",
                         or_empty(p->fail_message), p->req_ok, p->req_failed);
        return MP_V_NONE;
    }
    if (c->unfinished) {
        /* whatever its attempts show so far, it has no verdict yet */
        *why = xasprintf("unfinished: the run stopped before this candidate finished (%zu "
                         "attempt%s recorded)",
                         c->nattempts, c->nattempts == 1 ? "" : "s");
        return MP_V_NONE;
    }
    if (!p) {
        *why = xstrdup("not run");
        return MP_V_NONE;
    }
    const char *msg = or_empty(p->fail_message);
    switch (p->outcome) {
    case MP_OUT_SAME_CONFIG:
        /* the representative's verdict, once it is known (mp_verdict_shared) */
        *why = xasprintf("the same configuration as '%s'", p->same_as ? p->same_as : "?");
        return MP_V_NONE;
    case MP_OUT_RESOLVED:
        *why = xstrdup("resolved only (moeprobe resolve): its kernel selections were read from "
                       "the log and the engine was stopped; no load was driven");
        return MP_V_NONE;
    case MP_OUT_CLEAN:
        *why = xasprintf("every phase ran with zero failures (%lu requests)", p->req_ok);
        return MP_V_STABLE;
    case MP_OUT_STARTUP_FAILURE:
    case MP_OUT_ERROR:
        *why = xasprintf("never became ready: %s", msg);
        return MP_V_STARTUP_FAILURE;
    case MP_OUT_HANG:
        *why = xasprintf("%s (after %lu requests)", msg, p->ok_before_failure);
        return MP_V_HANG;
    case MP_OUT_CRASH:
        return decide_crash(c, p, why);
    case MP_OUT_INTERRUPTED:
        break;
    }
    *why = xstrdup("interrupted before it finished");
    return MP_V_NONE;
}

enum mp_verdict mp_verdict_output_check(enum mp_verdict v, const char *why,
                                        const struct mp_qcand_out *q, size_t nprompts,
                                        char **why_out)
{
    *why_out = NULL;
    if (v != MP_V_STABLE || !q || q->status == MP_QC_NOT_RUN)
        return v;
    if (q->status == MP_QC_GARBAGE) {
        *why_out = xasprintf("served every request without an error, but its %s", or_empty(q->why));
        return MP_V_GARBAGE_OUTPUT;
    }
    *why_out = xasprintf("%s; output check passed (%zu of %zu sanity prompts)", or_empty(why),
                         q->passed, nprompts);
    return v;
}

enum mp_verdict mp_verdict_shared(const struct mp_cand_report *c, const struct mp_cand_report *r,
                                  char **why)
{
    const struct mp_attempt_result *p = mp_cand_primary(c);
    const char *same_as = p && p->same_as ? p->same_as : "?";
    const char *same_why = p ? p->same_why : NULL;
    if (!r || r->verdict == MP_V_NONE) {
        *why = xasprintf("the same configuration as '%s', whose result is not in this report (%s)",
                         same_as, or_empty(same_why));
        return MP_V_NONE;
    }
    *why = xasprintf("shared with '%s', not tested again: %s; '%s' was %s: %s", r->cand.name,
                     same_why ? same_why : "the same configuration", r->cand.name,
                     mp_verdict_name(r->verdict), or_empty(r->why));
    return r->verdict;
}

enum mp_verdict mp_verdict_delivery(const struct mp_cand_report *c, enum mp_verdict v,
                                    const char *why, char **why_out)
{
    /* A knob that did not reach the engine: the run tested something else
     * than the candidate names, whatever it measured (also when it was
     * stopped as the same configuration as another candidate, or once
     * resolved by `moeprobe resolve`: the road it shows is not the
     * candidate's). */
    const struct mp_attempt_result *p = mp_cand_primary(c);
    const struct mp_knob_dlv *miss = mp_attempt_find_dlv(p, MP_DLV_MISSING);
    *why_out = NULL;
    if (!miss || c->unfinished ||
        (v == MP_V_NONE && p->outcome != MP_OUT_SAME_CONFIG && p->outcome != MP_OUT_RESOLVED))
        return v;
    *why_out = xasprintf("%s did not reach the engine (%s): this run did not test what the "
                         "candidate names (it ran %s: %s)",
                         miss->knob, miss->evidence,
                         v != MP_V_NONE                  ? mp_verdict_name(v)
                         : p->outcome == MP_OUT_RESOLVED ? "to its selections only"
                                                         : "as the same configuration as another",
                         or_empty(why));
    return MP_V_NOT_DELIVERED;
}
