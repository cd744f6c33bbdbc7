/* report.h - the renderings of the report model (model/report.h): JSON,
 * Markdown, HTML, the terminal summary. mp_report_finalize() has verdict/
 * compute verdicts, same_backend_groups, noop_knobs and the recommendation;
 * the renderers only print what the model holds. Loop-thread only. */
#ifndef MP_REPORT_H
#define MP_REPORT_H

#include "compat.h"

#include "buf.h"
#include "inspect/inspect.h"
#include "model/report.h"
#include "report/fingerprint.h"

/* Record what `inspect` found in the model directory; it goes into the
 * fingerprint ("checkpoint" in report.json) and the Markdown/HTML reports.
 * Copies what it needs; may be called again to replace it. */
void mp_report_set_checkpoint(struct mp_report *rep, const struct mp_inspect *in);

/* Engine version and model of the fingerprint from the engines' own logs
 * (first candidate that logged them); fields already set are kept. */
void mp_report_fill_fingerprint(struct mp_report *rep);
/* Compute verdicts, groups, noop knobs, recommendation (verdict/verdict.h)
 * and fill the fingerprint from the logs. Idempotent. */
void mp_report_finalize(struct mp_report *rep);

void mp_report_json(const struct mp_report *rep, struct buf *out);
void mp_report_markdown(const struct mp_report *rep, struct buf *out);
/* Self-contained HTML report (no network; everything from logs escaped). */
void mp_report_html(const struct mp_report *rep, struct buf *out);
/* `report --format csv` (docs/metrics.md "CSV"): a header row, then one row
 * per candidate and phase of the numbers report.json shows (a candidate
 * that ran no phase: one row with empty phase cells). RFC 4180 with CRLF;
 * outside text escaped (escape.h) and guarded against spreadsheet formulas
 * (a leading ' before = + - @). */
void mp_report_csv(const struct mp_report *rep, struct buf *out);
/* Short human summary (for stderr at the end of a run). */
void mp_report_summary(const struct mp_report *rep, struct buf *out);
/* The exact command that continues an incomplete run: "moeprobe qualify
 * --resume DIR" for the run's subcommand, DIR made absolute (realpath, so
 * it reads the same wherever the report is rendered) and shell-quoted;
 * caller frees. NULL when the run's command cannot be resumed (soak,
 * minimize: start it again). */
char *mp_report_resume_command(const struct mp_report *rep);


#endif
