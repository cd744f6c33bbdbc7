/* bisect.h - the decisions of `moeprobe bisect`, pure (no I/O, no global
 * state): whether a probe of a build is "the same as good", which build to
 * probe next, how many clean requests a probe needs, and the confidence
 * of the answer (docs/bisect.md states the rules).
 *
 * Builds are positions 0..m-1 ordered from the good build (0) to the bad
 * one (m-1); the search assumes one change point (once bad, bad after). */
#ifndef MP_VERDICT_BISECT_H
#define MP_VERDICT_BISECT_H

#include "compat.h"

#include "model/verdict.h"
#include "verdict/stats.h"

enum mp_bisect_by {
    MP_BY_VERDICT = 0, /* the verdict class and the resolved MoE backend (default) */
    MP_BY_RESOLVED,    /* the resolved MoE backend and dense (linear) kernel */
    MP_BY_THROUGHPUT,  /* sequential tok/s more than pct % below the good build's */
};
/* "verdict", "resolved", "throughput" */
const char *mp_bisect_by_name(enum mp_bisect_by by);

struct mp_bisect_cfg {
    enum mp_bisect_by by;
    double pct; /* MP_BY_THROUGHPUT: the slowdown that counts, in percent (0, 100) */
};

/* Parse --by: "verdict", "resolved", "throughput:PCT" (0 < PCT < 100).
 * 0, or MP_EUSAGE with why (n bytes) saying what is wrong. */
int mp_bisect_parse_by(const char *s, struct mp_bisect_cfg *cfg, char *why, size_t n);

/* The verdict classes "same as good" compares under --by verdict: a
 * diagnosis refines a failure (crashed -> async-race / kernel-fault) without
 * changing its class. "serves" (stable), "fails-under-load" (async-race,
 * kernel-fault, crashed, hang, server-error), "fails-to-start"
 * (startup-failure), "wrong-output" (garbage-output, wrong-output), "not-delivered";
 * NULL for MP_V_NONE. */
const char *mp_bisect_verdict_class(enum mp_verdict v);

/* What a probe showed, as the decision needs it (borrowed strings). */
struct mp_probe_obs {
    bool usable;             /* false: moeprobe could not run it (spawn or I/O
                              * error, interrupted, evidence incomplete) */
    enum mp_verdict verdict; /* MP_V_NONE: none */
    const char *moe_backend, *linear_kernel; /* NULL: the log did not say */
    double tok_s;            /* sequential tok/s; < 0: not measured */
    unsigned long req_ok, req_failed; /* generation requests of its normal attempts */
};

enum mp_probe_outcome {
    MP_PROBE_UNKNOWN = 0, /* not probed yet */
    MP_PROBE_GOOD,
    MP_PROBE_BAD,
    MP_PROBE_SKIP,        /* could not be judged: left out of the search */
};
/* "unknown", "good", "bad", "skip" and back (unknown words: UNKNOWN). */
const char *mp_probe_outcome_name(enum mp_probe_outcome o);
enum mp_probe_outcome mp_probe_outcome_from_name(const char *s);

/* Is obs the same as good (the good build's probe)? why (n bytes) gets the
 * reason in one sentence. A probe that is not usable, or has no verdict,
 * is MP_PROBE_SKIP. */
enum mp_probe_outcome mp_bisect_judge(const struct mp_bisect_cfg *cfg,
                                      const struct mp_probe_obs *good,
                                      const struct mp_probe_obs *obs, char *why, size_t n);

/* Where the search stands, from the outcomes of positions 0..m-1. */
struct mp_bisect_step {
    bool done;            /* nothing left to probe */
    size_t next;          /* the position to probe next (when !done) */
    long last_good;       /* highest good position below first_bad (-1: none) */
    long first_bad;       /* lowest bad position (-1: none) */
    size_t left;          /* unprobed positions strictly between them */
    unsigned probes_left; /* probes still expected: ceil(log2(left + 1)) */
    bool ambiguous;       /* done, but skipped positions lie between: the first
                           * bad one is among last_good+1 .. first_bad */
    bool inconsistent;    /* a good position above first_bad: more than one
                           * change, or a race that hid in a probe */
};
/* The next step: position 0 (good) and m-1 (bad) first, then the unprobed
 * position nearest the middle of (last_good, first_bad), ties to the lower.
 * m >= 2. */
void mp_bisect_next(const enum mp_probe_outcome *outcome, size_t m, struct mp_bisect_step *st);

/* Clean requests a probe needs so that a build failing as often as the bad
 * one did would have failed in it with 95 % probability: from the bad
 * build's normal attempts (geometric estimate p̂ = failures / trials of
 * mp_stats_async_estimate; (1 - p̂)^n <= 0.05), or `probe_requests` when
 * it is > 0. 0 when the bad build failed no request (its difference needs
 * no load: start-up, resolution, or nothing measured). why (n bytes) says
 * how it was chosen. *p_bad gets p̂ (0 when none). */
unsigned long mp_bisect_required(const struct mp_stats_attempt *bad, size_t nbad,
                                 unsigned long probe_requests, double *p_bad, char *why,
                                 size_t n);

/* The confidence in "first bad = X" that rests on the last good probe
 * having served `clean` requests without a failure: the probability that a
 * build failing at rate p_bad per request would have failed among them,
 * 1 - (1 - p_bad)^clean. p_bad <= 0 (a difference that needs no load): 1.
 * why (n bytes) says so in words. */
double mp_bisect_confidence(double p_bad, unsigned long clean, char *why, size_t n);

#endif
