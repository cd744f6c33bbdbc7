/* overview.h - the first screen every report format shares: what the
 * candidates inherited from the environment (model/inherit.h), in
 * report.json's fingerprint, report.md and report.html. Not part of
 * report/'s interface (report.h). Text from outside is escaped for the
 * format. */
#ifndef MP_REPORT_OVERVIEW_H
#define MP_REPORT_OVERVIEW_H

#include "compat.h"

#include <cjson/cJSON.h>

#include "buf.h"
#include "model/report.h"

/* fingerprint.inherited_env ({"NAME": "VALUE"} of the variables the
 * candidates inherited), fingerprint.inherited_env_detail (every one with
 * passed, acts_on_selection true|false|null, affects, note) and
 * fingerprint.clean_env, into fp. */
void mp_rep_inherited_json(const struct mp_report *rep, cJSON *fp);
/* One paragraph (nothing when no variable is recorded): the variables every
 * candidate ran with, which act on a selection, and what --clean-env
 * removed or would remove. */
void mp_rep_inherited_md(const struct mp_report *rep, struct buf *b);
void mp_rep_inherited_html(const struct mp_report *rep, struct buf *b);
/* The sentence under "knobs that changed nothing" when an inherited
 * variable acts ("none is claimed: ..."), or NULL (caller frees). */
char *mp_rep_inherited_noop_note(const struct mp_report *rep);

/* The report's title, by the run's command: "moeprobe qualify report",
 * "moeprobe diagnose report", "moeprobe soak report", "moeprobe resolve
 * report: which road leads where" (static). */
const char *mp_rep_title(const struct mp_report *rep);

/* ---- the candidates at a glance (report.md, report.html, the summary) ---- */

/* The one-line reason of c's verdict (caller frees): the verdict's own
 * sentence up to its first "; " (when that leaves a sentence), cut at 200
 * bytes; "same configuration as 'X' (not tested again)" for a shared
 * result; "unfinished" / "not run" when it has no verdict. */
char *mp_rep_reason_line(const struct mp_report *rep, const struct mp_cand_report *c);
/* The log line that reason rests on, relative to the run directory
 * ("attempts/auto-1/server.log:812"; caller frees), or NULL. */
char *mp_rep_evidence_ref(const struct mp_report *rep, const struct mp_cand_report *c);
/* What the first screen shows for c's sequential (seq) or best concurrency
 * speed: the tok/s of a phase that ran through (every request served),
 * "n=K before crash" when the attempt failed before (K requests served:
 * one request's rate is no speed), else "—". Shared results show their
 * representative's, with " (shared)". */
void mp_rep_speed_cell(const struct mp_report *rep, const struct mp_cand_report *c, bool seq,
                       char *out, size_t n);

/* One next step: what to do, and the exact command. */
struct mp_next_step {
    char *what, *cmd;
};
/* The next steps after this run (caller frees with mp_rep_next_steps_free):
 * the serve command of the recommendation (the server command with its
 * knobs and the inherited variables that act, {port} as 8000), the soak
 * that bounds its failure rate over hours, a bug report for each failing
 * candidate (`report --format issue`), and a new run with the command fixed
 * when it stopped early. */
size_t mp_rep_next_steps(const struct mp_report *rep, struct mp_next_step **out);
void mp_rep_next_steps_free(struct mp_next_step *s, size_t n);
void mp_rep_next_steps_md(const struct mp_report *rep, struct buf *b);
void mp_rep_next_steps_html(const struct mp_report *rep, struct buf *b);

/* The banner of a run that stopped because its server command fails
 * before any backend is chosen (rep->stop_reason; nothing otherwise). */
void mp_rep_stop_md(const struct mp_report *rep, struct buf *b);
void mp_rep_stop_html(const struct mp_report *rep, struct buf *b);

#endif
