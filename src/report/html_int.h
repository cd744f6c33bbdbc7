/* html_int.h - what the files of the HTML report share (html.c: the page
 * and its summary sections; html_prim.c: the primitives under them all;
 * html_cand.c: a candidate's section;
 * html_charts.c: throughput, workload, latency and the launch-blocking
 * comparison; html_evidence.c: log excerpts and the request timeline).
 * Not part of report/'s interface. Every function appends to b; every text
 * from outside moeprobe goes through mp_html_esc. */
#ifndef MP_REPORT_HTML_INT_H
#define MP_REPORT_HTML_INT_H

#include "compat.h"

#include "buf.h"
#include "model/report.h"

/* ---- html_prim.c: below every section file ---- */

/* Escaped text, at most 4000 bytes. */
void mp_html_text(struct buf *b, const char *s);
/* The escaped words of v, separated by ", ". */
void mp_html_list(struct buf *b, const struct mp_strv *v);
/* A verdict badge (class v-WORD). */
void mp_html_badge(struct buf *b, const char *verdict);
/* The in-page id of a candidate ("c-NAME", other bytes as '_'). */
void mp_html_anchor(struct buf *b, const char *name);
/* dir relative to the run directory when it lies inside it. */
const char *mp_html_rel(const struct mp_report *rep, const char *dir);

/* The percentiles the latency table shows. */

/* Candidate i's section (html_cand.c). */
void mp_html_cand_section(const struct mp_report *rep, size_t i, struct buf *b);

/* html_charts.c */
/* Aggregate output tok/s per candidate and phase, and against concurrency. */
void mp_html_throughput(const struct mp_report *rep, struct buf *b);
/* The workload every attempt sent (nothing when the store does not say). */
void mp_html_workload(const struct mp_report *rep, struct buf *b);
/* Per-phase latency of attempt a at the report's percentiles (--percentiles),
 * from its phase histograms. */
void mp_html_latency_table(struct buf *b, const struct mp_report *rep,
                           const struct mp_attempt_result *a);
/* The engine's own view of a's phases (report/srvm.h: the same rows as
 * report.md's "Server's view"), a flagged phase's row in class bad; then
 * why a phase's /metrics could not be read, once per reason. Nothing when
 * no phase was scraped. */
void mp_html_srvm_table(struct buf *b, const struct mp_attempt_result *a, const char *cand);
/* TTFT and ITL distributions of a's load phases. */
void mp_html_distributions(struct buf *b, const struct mp_cand_report *c,
                           const struct mp_attempt_result *a);
/* Normal vs CUDA_LAUNCH_BLOCKING=1: the two rates the diagnosis' ratio is
 * computed from (nothing without a blocked attempt). */
void mp_html_blocking_chart(struct buf *b, const struct mp_cand_report *c);

/* html_evidence.c */
/* server.log excerpt of attempt a from the store: the cited lines
 * highlighted, with their context. */
void mp_html_excerpt(struct buf *b, const struct mp_report *rep, const struct mp_attempt_result *a);
/* The request timeline of attempt a from the store, with its failure (a
 * hang: the last token and the silent time up to the stall). */
void mp_html_timeline(struct buf *b, const struct mp_report *rep, const struct mp_attempt_result *a);

#endif
