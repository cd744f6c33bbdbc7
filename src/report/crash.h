/* crash.h - the report's words for what a GPU fault named beyond the
 * traceback (#24): the kernel a core dump named, next to the verdict and
 * in the details, the Xids the driver reported, and why a source could not
 * be read; in report.json the candidate's crash.kernel and crash.xid and
 * each attempt's gpu_fault. Read-only over the report model. */
#ifndef MP_REPORT_CRASH_H
#define MP_REPORT_CRASH_H

#include "compat.h"

#include <cjson/cJSON.h>

#include "buf.h"
#include "model/report.h"

/* Add "kernel" (null or {name, family, exception, surfaced_only, evidence,
 * ...}) and "xid" ([{xid, source, pid, detail, cause, evidence, attempt}])
 * to a candidate's crash object. */
void mp_rep_crash_json(cJSON *crash, const struct mp_report *rep, const struct mp_cand_report *c);
/* An attempt's gpu_fault object, or JSON null when it learned nothing. */
cJSON *mp_rep_attempt_fault_json(const struct mp_report *rep, const struct mp_attempt_result *a);

/* The words that follow a verdict, plain text (owned; NULL when there are
 * none): "in `X` (CUTLASS grouped GEMM)" for a fault the blocked run
 * pinned, "surfaced in `X` (...)" for one seen only in normal mode. */
char *mp_rep_kernel_note(const struct mp_cand_report *c);
/* The same as Markdown for a table cell or a heading (escaped), with a
 * leading space; nothing when there is no kernel. */
void mp_rep_kernel_note_md(struct buf *out, const struct mp_cand_report *c, unsigned md_flags);
/* The details' lines ("- ...\n") on the kernel, the Xids, the kernel log,
 * the core dumps and a hang's evidence; nothing when none applies. */
void mp_rep_crash_details_md(struct buf *out, const struct mp_report *rep,
                             const struct mp_cand_report *c);
/* The same sentences as plain text, one per entry of out (for HTML). */
void mp_rep_crash_details_text(struct mp_strv *out, const struct mp_report *rep,
                               const struct mp_cand_report *c);

/* HTML (report/html_crash.c): the note after a verdict badge, escaped, in
 * a span of class note; and the details as a list (nothing when none). */
void mp_html_kernel_note(struct buf *b, const struct mp_cand_report *c);
void mp_html_crash_details(const struct mp_report *rep, const struct mp_cand_report *c,
                           struct buf *b);

#endif
