/* verdict.h - every verdict of a report and what follows from them, in
 * the order docs/verdicts.md gives (decide.h, derive.h, recommend.h). Pure:
 * no I/O (the output check is quality/'s pure judge). */
#ifndef MP_VERDICT_VERDICT_H
#define MP_VERDICT_VERDICT_H

#include "compat.h"

#include "model/report.h"

/* Decide every candidate's verdict and why (mp_verdict_decide), run the
 * output check across the candidates (rep->qc; a stable candidate whose
 * greedy answers are garbage becomes garbage-output), give same-
 * configuration results their representative's verdict, override with
 * not-delivered, then derive same_backend_groups, noop_knobs and the
 * recommendation (rep->objective). Replaces whatever an earlier call
 * derived: idempotent. The caller releases the derived lists first
 * (mp_report_derived_release). */
void mp_verdict_finalize(struct mp_report *rep);

#endif
