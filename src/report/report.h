/* report.h - the report model of a qualify run and its renderings.
 *
 * The model holds, per candidate, every attempt (normal and
 * launch-blocking) and the diagnosis, and derives from them the verdict,
 * the numbers and the evidence of DESIGN.md's report. mp_report_finalize()
 * computes verdicts, same_backend_groups, noop_knobs and the
 * recommendation; the renderers only print what the model holds.
 * Loop-thread only. */
#ifndef MP_REPORT_H
#define MP_REPORT_H

#include "compat.h"

#include "buf.h"
#include "cli/spec.h"
#include "inspect/inspect.h"
#include "quality/quality.h"
#include "run/attempt.h"

struct mp_fingerprint {
    char *gpu, *compute_capability, *driver, *cuda, *engine, *engine_version, *model, *host_arch;
};

struct mp_diagnosis {
    bool done;
    const char *launch_blocking;   /* "clean" | "crashed" | NULL (not run) */
    unsigned long requests_clean;  /* OK requests in the blocked run(s) */
    unsigned long requests_required;
    double confidence;             /* 0.95 when the requirement was met */
    double throughput_ratio;       /* blocked / normal per-request tok/s; <0 unknown */
    char *pinned_site;
    char *launch_site;             /* innermost frame outside the launch machinery */
    char *reasoning;               /* how n was chosen */
    char *note;                    /* why the result is crashed/inconclusive, or NULL */
};

struct mp_cand_report {
    struct mp_candidate cand;
    struct mp_attempt_result *attempts; /* normal and blocked, in run order */
    size_t nattempts;
    struct mp_diagnosis diag;
    /* derived by finalize */
    const char *verdict;            /* DESIGN's verdict word, NULL if not run */
    char *why;                      /* one sentence */
    bool not_run;
};

/* Candidates that reached the same resolved backends by different roads. */
struct mp_group {
    const char *moe_backend, *linear_kernel, *attention_backend; /* borrowed from attempts */
    struct mp_strv candidates;
};

/* A knob whose candidate resolved exactly like the knob-less candidate. */
struct mp_noop {
    char *candidate, *knob, *resolved_like;
    char *engine_warning; /* the engine's "unknown variable" line, or NULL */
};

struct mp_report {
    char *moeprobe_version;
    char *run_dir;
    char *started, *finished;       /* ISO 8601 */
    struct mp_fingerprint fp;
    struct mp_cand_report *c;
    size_t n;
    /* derived */
    int recommended;                /* index or -1 */
    char *recommendation_why;
    struct mp_strv learned;         /* sentences for the "what we learned" part */
    struct mp_group *groups;
    size_t ngroups;
    struct mp_noop *noop;
    size_t nnoop;
    /* `qualify --model-dir`: what the checkpoint says (mp_report_set_checkpoint) */
    char *checkpoint_json;          /* mp_inspect_to_json output, or NULL */
    char *checkpoint_summary;       /* one line, or NULL */
    struct mp_strv checkpoint_notes;
    /* the output check across candidates (index = candidate index) */
    struct mp_qcheck qc;
    bool interrupted;
};

void mp_report_init(struct mp_report *rep, const char *run_dir);
void mp_report_release(struct mp_report *rep);
/* Append a candidate (copied); returns its index. */
size_t mp_report_add_candidate(struct mp_report *rep, const struct mp_candidate *c);
/* Append an attempt to candidate i; takes ownership of *owned_a's contents
 * (zeroes it). Returns a pointer valid until the next add. */
struct mp_attempt_result *mp_report_add_attempt(struct mp_report *rep, size_t i,
                                                struct mp_attempt_result *owned_a);
/* Fill the fingerprint's host/GPU fields (nvidia-smi when present). */
void mp_fingerprint_detect(struct mp_fingerprint *fp);

/* Record what `inspect` found in the model directory; it goes into the
 * fingerprint ("checkpoint" in report.json) and the Markdown/HTML reports.
 * Copies what it needs; may be called again to replace it. */
void mp_report_set_checkpoint(struct mp_report *rep, const struct mp_inspect *in);
/* The same from mp_inspect_to_json's output (NULL clears); summary and
 * notes are derived from it. */
void mp_report_set_checkpoint_json(struct mp_report *rep, const char *json);

/* Engine version and model of the fingerprint from the engines' own logs
 * (first candidate that logged them); fields already set are kept. */
void mp_report_fill_fingerprint(struct mp_report *rep);
/* Compute verdicts, groups, noop knobs, recommendation. Idempotent. */
void mp_report_finalize(struct mp_report *rep);

void mp_report_json(const struct mp_report *rep, struct buf *out);
void mp_report_markdown(const struct mp_report *rep, struct buf *out);
/* Self-contained HTML report (no network; everything from logs escaped). */
void mp_report_html(const struct mp_report *rep, struct buf *out);
/* Short human summary (for stderr at the end of a run). */
void mp_report_summary(const struct mp_report *rep, struct buf *out);

/* Write data to dir/name atomically (tmp + rename). 0 or -errno. */
int mp_write_file_atomic(const char *dir, const char *name, const char *data, size_t len);

/* The first normal (non-blocking) attempt of a candidate, or NULL. */
const struct mp_attempt_result *mp_cand_primary(const struct mp_cand_report *c);

#endif
