/* md_int.h - what the files of report.md share (markdown.c: the page, its
 * order and its own sections; md_cand.c: the candidates table and each
 * candidate's details; md_measure.c: output check, workload, latency;
 * md_prim.c: the primitives below them all). Not part of report/'s
 * interface. Every function appends to out (or b); every text from outside
 * moeprobe goes through mp_rmd_cell or escape.h's mp_md_code. */
#ifndef MP_REPORT_MD_INT_H
#define MP_REPORT_MD_INT_H

#include "compat.h"

#include "buf.h"
#include "model/report.h"
#include "strv.h"

/* ---- md_prim.c ---- */

/* Outside text in Markdown (escape.h mp_md_text): table cells, list items,
 * headings, cut at max bytes. */
void mp_rmd_cell(struct buf *b, const char *s, size_t max);
/* mp_rmd_cell of each word of v, separated by ", ". */
void mp_rmd_list(struct buf *b, const struct mp_strv *v, size_t max);
/* A tok/s figure with one decimal, "—" when unknown (< 0). */
void mp_rmd_num(struct buf *b, double v);
/* A latency or rate in a table: 3 significant figures or so. */
void mp_rmd_fig(struct buf *b, double v);
/* dir relative to the run directory when it lies inside it (borrowed from
 * dir). */
const char *mp_rmd_rel_dir(const struct mp_report *rep, const char *dir);

/* ---- md_cand.c ---- */

/* "## Candidates": a row per candidate (knobs, resolved MoE backend,
 * verdict, speeds, failures, the evidence line). */
void mp_rmd_cand_table(const struct mp_report *rep, struct buf *out);
/* "## Details": a section per candidate. */
void mp_rmd_details(const struct mp_report *rep, struct buf *out);

/* ---- md_measure.c ---- */

/* "## Output check" (nothing when it did not run). */
void mp_rmd_output_check(const struct mp_report *rep, struct buf *out);
/* "## Workload": what every attempt sent (report.json "workload"). */
void mp_rmd_workload(const struct mp_report *rep, struct buf *out);
/* "## Latency and throughput": per candidate and phase, the client metrics
 * at the report's percentiles (docs/metrics.md); nothing when no candidate
 * ran a phase. */
void mp_rmd_latency(const struct mp_report *rep, struct buf *out);

#endif
