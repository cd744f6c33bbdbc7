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

/* The banner of a run that stopped because its server command fails
 * before any backend is chosen (rep->stop_reason; nothing otherwise). */
void mp_rep_stop_md(const struct mp_report *rep, struct buf *b);
void mp_rep_stop_html(const struct mp_report *rep, struct buf *b);

#endif
