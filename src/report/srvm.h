/* srvm.h - the engine's own view of each load phase (struct
 * mp_server_metrics, from its /metrics) in the reports: the per-phase
 * `server_metrics` object of report.json and the sentences that flag a
 * phase which measured the KV cache or the scheduler instead of the
 * kernel. Internal to report/. */
#ifndef MP_REPORT_SRVM_H
#define MP_REPORT_SRVM_H

#include "compat.h"

#include <cjson/cJSON.h>

#include "model/report.h"
#include "model/srvmetrics.h"
#include "strv.h"

/* Add "server_metrics" to a phase object: the object (docs/metrics.md), or
 * null with "server_metrics_reason" beside it when the phase was not
 * scraped or /metrics could not be read. */
void mp_rep_srvm_json(cJSON *phase, const struct mp_server_metrics *m);

/* Plain sentences (the caller escapes them for its format), appended to
 * out: per candidate's first attempt, each phase where the engine
 * preempted requests or kept requests waiting, and a candidate whose
 * engine's /metrics could not be read at all. */
void mp_rep_srvm_flags(const struct mp_report *rep, struct mp_strv *out);

#endif
