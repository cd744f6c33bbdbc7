/* bisect.h - the report of `moeprobe bisect`: the search's state as the
 * store holds it (every decision recomputed from the stored probes by
 * verdict/bisect.h, so a resumed run and `moeprobe report` see what the
 * run saw), and its JSON (DESIGN.md's `bisect --json`, with the probes'
 * full candidate objects under "candidates"), Markdown and HTML.
 *
 * Loop-thread only; errors follow err.h. */
#ifndef MP_REPORT_BISECT_H
#define MP_REPORT_BISECT_H

#include "compat.h"

#include "buf.h"
#include "model/report.h"
#include "store/store.h"
#include "verdict/bisect.h"

struct mp_bisect_probe_view {
    const struct mp_store_probe *sp; /* borrowed from the model's store rows */
    long rank;                       /* search position: 0 = good .. m-1 = bad */
    long ci;                         /* the report candidate (-1: not in the report) */
    struct mp_probe_obs obs;
    enum mp_probe_outcome outcome;   /* UNKNOWN while open or before the good build */
    char why[480];
    const char *engine_version, *fail_class, *attention; /* borrowed from rep */
    double conc_tok_s;               /* best concurrency tok/s, < 0 none */
    double upper95;                  /* failure-rate bound of a clean probe, < 0 n/a */
    unsigned long clean;             /* requests served without failure (clean probe) */
    bool finished;
    /* the scoring pass compared this build's output with another's (logprobs or task
     * answers), and why not when it did not (borrowed from rep, may be NULL) */
    bool cor_measured;
    const char *cor_note;
};

struct mp_bisect_model {
    struct mp_store_bisect sb;       /* owned: the stored settings and probes */
    struct mp_bisect_cfg cfg;
    size_t m;                        /* builds between good and bad, both included */
    long *build_of;                  /* search position -> index in sb.builds */
    struct mp_bisect_probe_view *pv; /* one per stored probe, by step */
    size_t npv;
    enum mp_probe_outcome *out;      /* by search position (what mp_bisect_next reads) */
    struct mp_bisect_step step;
    long good_probe;                 /* pv index of the good build's probe, -1 */
    long last_good, first_bad;       /* pv indices of the answer, -1 */
    bool two_builds;                 /* no list: a side-by-side comparison */
    bool confidence_known;           /* false under --by throughput, or no answer */
    double confidence;
    char confidence_why[400];
    char *summary;
};

/* Build the model from a loaded and finalized report rep (borrowed; must
 * outlive m) and the store's bisection (taken over: *sb is zeroed). A
 * setting the store holds that this moeprobe cannot read (a bad --by, good
 * or bad not among the builds) is MP_EPARSE with why. */
int mp_bisect_model_build(const struct mp_report *rep, struct mp_store_bisect *sb,
                          struct mp_bisect_model *m, char *why, size_t n);
void mp_bisect_model_release(struct mp_bisect_model *m);

/* The whole bisect report into json / md / html (each may be NULL). */
void mp_bisect_json(const struct mp_report *rep, const struct mp_bisect_model *m,
                    struct buf *out);
void mp_bisect_markdown(const struct mp_report *rep, const struct mp_bisect_model *m,
                        struct buf *out);
void mp_bisect_html(const struct mp_report *rep, const struct mp_bisect_model *m,
                    struct buf *out);

/* Render a bisect run's store (loaded rep, finalized) into the three
 * formats: 0, -ENOENT (no bisection in this store: render it as a qualify
 * run), or MP_EDB / MP_EPARSE (message printed). */
int mp_bisect_render(struct mp_store *st, const struct mp_report *rep, struct buf *json,
                     struct buf *md, struct buf *html);

/* mp_bisect_render on the store of run_dir (opened read-only) when rep is
 * a bisect run (rep->subcommand "bisect"): 0 rendered; -ENOENT not a
 * bisect run (render it as a qualify run); <0 (message printed). */
int mp_bisect_render_dir(const char *run_dir, const struct mp_report *rep, struct buf *json,
                         struct buf *md, struct buf *html);

#endif
