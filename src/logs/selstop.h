/* selstop.h - has the engine printed every selection line its command can
 * produce? (issue #27; docs/performance.md "Stopping at the selection
 * lines").
 *
 * A candidate that only needs its selections (the same configuration as a
 * candidate tested already, `moeprobe resolve`) is stopped as soon as they
 * are all in the log, instead of at `Model loading took` or at ready. What
 * "all" means comes from data/selection-timing.json, per vLLM era: the
 * selection areas (dense NVFP4 GEMM kernel, MoE backend, attention backend)
 * the engine prints while it builds the model and those it prints after the
 * weights are loaded. A speculative drafter (the engine's config line says
 * `speculative_config=SpeculativeConfig(...)`, or, before that line, the
 * command names one) adds its own MoE selection, which vLLM prints after the
 * main model's weights ("Loading drafter model..."). Whatever the table
 * cannot vouch for (an unknown era, an area whose line never comes, a
 * drafter without a MoE line) waits for `Model loading took`, which vLLM
 * prints after all of them; the caller stops at ready at the latest.
 *
 * Pure: no I/O; the table is immutable once parsed. The built-in table is
 * parsed once, on first use, from the compiled-in data file. */
#ifndef MP_LOGS_SELSTOP_H
#define MP_LOGS_SELSTOP_H

#include "compat.h"

#include "err.h"
#include "logs/logscan.h"

/* Selection areas (bits). */
enum {
    MP_SEL_LINEAR = 1,    /* "Using X for NVFP4 GEMM" */
    MP_SEL_MOE = 2,       /* the (quantized) MoE backend selection */
    MP_SEL_ATTENTION = 4, /* the attention backend */
};

struct mp_seltiming; /* opaque: the parsed table */

/* The compiled-in table (data/selection-timing.json); never NULL (an
 * unparsable built-in aborts: the unit tests parse it). Not freed. */
const struct mp_seltiming *mp_seltiming_builtin(void);
/* Parse a table from JSON text (n bytes). Returns 0 and *out (free with
 * mp_seltiming_free), or MP_EPARSE with d (may be NULL) saying what is
 * wrong: an unknown key or area name, a bad version, a missing field. */
int mp_seltiming_parse(const char *json, size_t n, struct mp_seltiming **out, struct mp_diag *d);
void mp_seltiming_free(struct mp_seltiming *t); /* accepts NULL */

/* The areas the era of engine version v prints while building the model
 * (*construction) and after its weights (*after_weights), as MP_SEL_* bits.
 * Returns false (both 0) when v is NULL, unparsable or in no era. */
bool mp_seltiming_areas(const struct mp_seltiming *t, const char *v, unsigned *construction,
                        unsigned *after_weights);

/* One attempt's watch. Plain data; initialise with mp_selstop_init. */
struct mp_selstop {
    const struct mp_seltiming *t; /* borrowed */
    signed char drafter;          /* the engine's config line: -1 not seen, 0 none, 1 one */
    bool cmd_drafter;             /* the command names a speculative drafter */
    bool drafter_loading;         /* "Loading drafter model" was printed */
    bool drafter_selected;        /* ... and then the drafter's own MoE selection */
    bool loaded;                  /* "Model loading took" */
    bool complete;                /* every selection line is in (sticky) */
    const char *by;               /* static: what completed it, NULL before */
};

/* Start a watch for an engine started with argv[0..argc) (borrowed for
 * the call only; NULL/0: no command known). */
void mp_selstop_init(struct mp_selstop *s, const struct mp_seltiming *t, char *const *argv,
                     size_t argc);

/* One line of the engine's log (before or after lr was updated with it:
 * the areas are read from lr, the markers from the line). Returns true when
 * this line completed the selections (once; s->complete stays true). */
bool mp_selstop_line(struct mp_selstop *s, const char *line, size_t len,
                     const struct mp_logresult *lr);

/* What the watch still waits for, as words for a progress line ("the
 * drafter's MoE selection", "the dense kernel, the attention backend",
 * "the engine version", ...): into out (n bytes), "" when complete. */
void mp_selstop_waiting(const struct mp_selstop *s, const struct mp_logresult *lr, char *out,
                        size_t n);

#endif
