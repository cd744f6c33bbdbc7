/* compare.h - `moeprobe report --compare RUN...`: runs of the same GPU and
 * model side by side (Markdown or JSON), opening with what changed from the
 * first run to the last - an engine upgrade, the recommendation, each
 * candidate's verdict, backend and speed - with the regressions (a
 * candidate that qualified and no longer does, or is 10 % slower) first and
 * marked. Pure: finalized reports in, text out. */
#ifndef MP_REPORT_COMPARE_H
#define MP_REPORT_COMPARE_H

#include "compat.h"

#include "buf.h"
#include "model/report.h"

/* One difference between two runs. */
struct mp_change {
    char *candidate;   /* NULL: the run as a whole (engine, recommendation) */
    char *what;        /* "verdict", "MoE backend", "sequential tok/s", "engine", ... */
    char *from, *to;   /* as shown ("stable", "14.5"); "-" when absent */
    bool regression;   /* worse: it qualified and does not, or 10 % slower */
    bool improvement;  /* better: the reverse */
};

/* The differences from run a to run b, regressions first (caller frees
 * with mp_changes_free). */
size_t mp_compare_changes(const struct mp_report *a, const struct mp_report *b,
                          struct mp_change **out);
void mp_changes_free(struct mp_change *c, size_t n);

/* The comparison of runs[0..n) (dirs[i] is run i's directory) as
 * Markdown or JSON into out. */
void mp_compare_markdown(const struct mp_report *runs, char *const *dirs, int n, struct buf *out);
void mp_compare_json(const struct mp_report *runs, char *const *dirs, int n, struct buf *out);

#endif
