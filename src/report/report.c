/* report.c - the report model's derivation, driven for the renderers: the
 * verdicts and what follows from them are verdict/'s (verdict/verdict.h);
 * this adds what only the report layer knows (the fingerprint from the
 * engines' logs, the checkpoint, the objective the run was started with). */
#include "report/report.h"

#include <errno.h>
#include <stdlib.h>

#include "verdict/recommend.h"
#include "verdict/verdict.h"
#include "xalloc.h"

void mp_report_set_checkpoint(struct mp_report *rep, const struct mp_inspect *in)
{
    struct buf b = BUF_INIT;
    mp_inspect_to_json(in, &b);
    mp_report_set_checkpoint_json(rep, b.data);
    buf_release(&b);
}

void mp_report_fill_fingerprint(struct mp_report *rep)
{
    for (size_t i = 0; i < rep->n; i++) {
        const struct mp_attempt_result *p = mp_cand_primary(&rep->c[i]);
        if (!p)
            continue;
        if (!rep->fp.engine_version && p->res.engine_version) {
            rep->fp.engine_version = xstrdup(p->res.engine_version);
            free(rep->fp.engine);
            rep->fp.engine = xstrdup("vllm");
        }
        if (!rep->fp.model && p->res.model)
            rep->fp.model = xstrdup(p->res.model);
    }
}

void mp_report_finalize(struct mp_report *rep)
{
    mp_report_derived_release(rep);
    mp_verdict_finalize(rep);
    mp_report_fill_fingerprint(rep);
}

