/* srvm.h - the engine's own view of each load phase (struct
 * mp_server_metrics, from its /metrics) in the reports: the per-phase
 * `server_metrics` object of report.json, the sentences that flag a
 * phase which measured the KV cache or the scheduler instead of the
 * kernel, and the "Server's view" table beside the client's latency
 * (report.md here; report.html in html_charts.c, from the same rows).
 * Internal to report/. */
#ifndef MP_REPORT_SRVM_H
#define MP_REPORT_SRVM_H

#include "compat.h"

#include <cjson/cJSON.h>

#include "buf.h"
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

/* The cells of a phase's row in the server's-view tables, in this order:
 * the engine's TTFT mean, p50, p99, the client's TTFT p50, the engine's
 * ITL mean, the client's ITL mean (ms), the engine's generation tokens,
 * the client's output tokens, preemptions, most requests waiting, highest
 * KV-cache usage (%). */
enum mp_srvm_col {
    MP_SRVM_TTFT_MEAN, MP_SRVM_TTFT_P50, MP_SRVM_TTFT_P99, MP_SRVM_CLIENT_TTFT_P50,
    MP_SRVM_ITL_MEAN, MP_SRVM_CLIENT_ITL_MEAN, MP_SRVM_GEN_TOKENS, MP_SRVM_CLIENT_TOKENS,
    MP_SRVM_PREEMPTIONS, MP_SRVM_WAITING_MAX, MP_SRVM_KV_MAX, MP_SRVM_NCOLS
};

/* What a phase's server row says, decided here for every format: each
 * cell a number formatted by moeprobe ("—" when unknown: no observation,
 * or a series the engine does not export); flag NULL, or "preempted",
 * "queued", "preempted, queued" (static). No text from outside. */
struct mp_srvm_row {
    char cell[MP_SRVM_NCOLS][24];
    const char *flag;
};

/* Fill r from phase ph. Returns false (r untouched) when the phase has no
 * server row: not scraped, or its /metrics unreadable (mp_rep_srvm_unreadable
 * says so once). */
bool mp_rep_srvm_row(const struct mp_phase_result *ph, struct mp_srvm_row *r);

/* Plain sentences (the caller escapes them), appended to out: one per
 * reason for which attempt a's engine's /metrics could not be read, naming
 * its phases: "CAND: the engine's /metrics could not be read in phases A,
 * B (REASON)". Nothing when every scraped phase was read. */
void mp_rep_srvm_unreadable(const char *cand, const struct mp_attempt_result *a,
                            struct mp_strv *out);

/* report.md's "## Server's view" (after "Latency and throughput"): a row per
 * candidate and read phase of the attempt whose numbers it shows, then the
 * unreadable sentences; nothing at all when no phase's /metrics was read.
 * Everything from the store escaped (escape.h). */
void mp_rep_srvm_markdown(const struct mp_report *rep, struct buf *out);

#endif
