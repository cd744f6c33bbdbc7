/* resolved.h - what a candidate's engine resolved beyond its MoE backend
 * (#25): the `resolved` object of report.json (the MTP drafter's own MoE
 * selection, the oracle, other selection lines, the FlashInfer autotuner's
 * failed tactics, each with its server.log line), the candidate's known
 * issues (report.json `known_issues`, report.md/html, `report --format
 * issue`), and the same as sentences for report.md and report.html.
 * Read-only over the report model. */
#ifndef MP_REPORT_RESOLVED_H
#define MP_REPORT_RESOLVED_H

#include "compat.h"

#include <cjson/cJSON.h>

#include "knowledge/issues.h"
#include "model/report.h"
#include "strv.h"

/* The attempt whose failure (or, when none failed, whose resolution) the
 * candidate's known issues are matched on: its first normal attempt that
 * crashed, hung or failed to start, else its primary attempt; NULL when
 * it has none. */
const struct mp_attempt_result *mp_rep_issue_attempt(const struct mp_cand_report *c);

/* Match candidate c against the known issues of rep->kn (the built-in
 * knowledge when NULL) into *out (overwritten; mp_ki_hits_release). The
 * facts: the attempt of mp_rep_issue_attempt (crash class, the failure
 * message and the log's fatal messages, every resolved kernel, the
 * autotuner's findings), the device from the fingerprint's compute
 * capability (else the GPU the log names) and the engine version from the
 * fingerprint (else the log). Returns out->n; 0 for a candidate without
 * attempts. For `report --format issue` and the console summaries. */
size_t mp_rep_cand_known_issues(const struct mp_report *rep, const struct mp_cand_report *c,
                                struct mp_ki_hits *out);

/* report.json's candidate "resolved" object (DESIGN.md): moe_backend,
 * moe_candidates, moe_kind, linear_kernel(s), unquantized_moe_backend,
 * attention_backend, moe_backend_flag, device, drafter (null or {...}),
 * other ([{what, value, evidence}]), autotuner (null or {...}), evidence
 * ({field: "attempts/X-1/server.log:N"}), and note when the log said no
 * MoE backend. */
cJSON *mp_rep_resolved_json(const struct mp_report *rep, const struct mp_cand_report *c);
/* The candidate's known_issues array (DESIGN.md). */
cJSON *mp_rep_known_issues_json(const struct mp_report *rep, const struct mp_cand_report *c);

/* The details beyond the MoE/dense/attention line, as (label, sentence)
 * pairs appended to labels and texts: "MTP drafter", "other selections",
 * "FlashInfer autotuner", "known issue" (one per hit). Plain text. */
void mp_rep_resolved_more_text(const struct mp_report *rep, const struct mp_cand_report *c,
                               struct mp_strv *labels, struct mp_strv *texts);

#endif
