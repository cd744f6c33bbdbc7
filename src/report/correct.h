/* correct.h - the correctness sections of the reports (docs/quality.md
 * "Correctness"): report.json candidates[].correctness and the top-level
 * "correctness" summary, report.md's and report.html's agreement table,
 * each divergent candidate's first disagreements with the tokens side by
 * side, and the task gate's accuracy with its interval. Everything from the
 * engine is escaped for the format it lands in. Private to src/report/. */
#ifndef MP_REPORT_CORRECT_H
#define MP_REPORT_CORRECT_H

#include "compat.h"

#include <cjson/cJSON.h>

#include "buf.h"
#include "model/report.h"

/* Candidate i's "correctness" (null when it was not measured). */
cJSON *mp_rep_correct_json(const struct mp_report *rep, size_t i);
/* The run's summary: floors, votes, the rule's numbers (null when no
 * candidate was measured). */
cJSON *mp_rep_correct_summary_json(const struct mp_report *rep);
/* "## Correctness" (nothing when no candidate was measured). */
void mp_rep_correct_md(const struct mp_report *rep, struct buf *out);
/* <h2>Correctness</h2> (nothing when no candidate was measured). */
void mp_rep_correct_html(const struct mp_report *rep, struct buf *out);

#endif
