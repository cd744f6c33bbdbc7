/* test_diag_cost.c - the diagnosis' cost rule (#27): what it measures
 * (verdict/diagnose.h mp_verdict_diag_meas: the engine's times, net of
 * moeprobe's own) and what it decides (verdict/stats.h mp_stats_diag_plan:
 * one more normal run only when its expected saving of blocked requests is
 * larger than what it costs), as a table at the real DGX Spark's numbers
 * and at the same numbers scaled down 100x - which must decide alike. */
#include "compat.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "hist.h"
#include "model/report.h"
#include "model/workload.h"
#include "verdict/diagnose.h"
#include "verdict/stats.h"

#define NEAR(x, want, eps)                                                                         \
    do {                                                                                           \
        if (fabs((x) - (want)) > (eps))                                                            \
            fail_msg("%s = %g, want %g", #x, (double)(x), (double)(want));                         \
    } while (0)

struct row {
    const char *what;
    struct mp_stats_attempt obs[3]; /* normal attempts: served before the failure, failed */
    size_t nobs;
    double start_s, req1_s, req_s;  /* start-up, a request alone, a request at the top level */
    unsigned long lead, cap;
    bool sharpen;                   /* the decision */
    unsigned long need;             /* blocked requests asked for */
};

/* The seed's crash: the 3rd request (warm-up included) dies, so 2 served.
 * A DGX Spark: start-up ~600 s; 64 tokens at ~14.8 tok/s alone ~4.3 s;
 * 100 blocked requests at concurrency 8 ~100 s, i.e. ~1 s a request at the
 * top level (issue #27); warm-up 1 + sequential 10 requests alone. */
static const struct row rows[] = {
    {"Spark, the seed's crash: one normal and one blocked run", {{2, true}}, 1,
     600, 4.3, 1.0, 11, 2000, false, 176},
    {"the same scaled down 100x decides alike", {{2, true}}, 1,
     6, 0.043, 0.01, 11, 2000, false, 176},
    {"scaled, a request's time inflated 5x by fixed costs would buy a start", {{2, true}}, 1,
     6, 0.051, 0.051, 0, 2000, true, 176},
    {"Spark after a second failure: still no third start", {{2, true}, {2, true}}, 2,
     600, 4.3, 1.0, 11, 2000, false, 47},
    {"a cheap start (5 s) with slow requests: the numbers say buy", {{2, true}}, 1,
     5, 4.3, 1.0, 11, 2000, true, 176},
    {"Spark, a rare race: the rerun's failure saves hours of blocked requests", {{200, true}}, 1,
     600, 4.3, 1.0, 11, 0, true, 11740},
    {"... the same under the default cap of 2000: nothing to save, no rerun", {{200, true}}, 1,
     600, 4.3, 1.0, 11, 2000, false, 2000},
    /* qualify's default 256 tokens: ~17.3 s alone, ~4 s a request at the top level; 129 fewer
     * blocked requests save ~17 min against a ten-minute start (docs/performance.md 6) */
    {"Spark, 256-token requests: the rerun saves more than its start costs", {{2, true}}, 1,
     600, 17.3, 4.0, 11, 2000, true, 176},
    {"the same scaled down 100x decides alike", {{2, true}}, 1,
     6, 0.173, 0.04, 11, 2000, true, 176},
};

static void test_rule_table(void **st)
{
    (void)st;
    for (size_t k = 0; k < MP_ARRAY_SIZE(rows); k++) {
        const struct row *r = &rows[k];
        struct mp_diag_cost_in in = {.obs = r->obs, .nobs = r->nobs, .start_s = r->start_s,
                                     .req_s = r->req_s, .req1_s = r->req1_s, .lead = r->lead,
                                     .concurrency = 8, .cap = r->cap};
        struct mp_diag_plan p;
        assert_int_equal(mp_stats_diag_plan(&in, &p), 0);
        if (p.sharpen != r->sharpen || p.need != r->need)
            fail_msg("row %zu (%s): sharpen %d need %lu (cost %.4g s, saves %.4g s), want %d %lu",
                     k, r->what, p.sharpen, p.need, p.sharpen_cost_s, p.sharpen_saves_s, r->sharpen,
                     r->need);
        /* the arithmetic is stated */
        assert_non_null(strstr(p.why, "start-up"));
        assert_non_null(strstr(p.why, p.sharpen ? "worth it" : "not worth it"));
    }
}

/* The numbers themselves, at Spark scale: what the blocked run costs and
 * what a rerun would cost and save. */
static void test_rule_arithmetic(void **st)
{
    (void)st;
    struct mp_stats_attempt one[] = {{2, true}};
    struct mp_diag_cost_in in = {.obs = one, .nobs = 1, .start_s = 600, .req1_s = 4.3,
                                 .req_s = 1.0, .lead = 11, .concurrency = 8, .cap = 2000,
                                 .budget_s = 3600};
    struct mp_diag_plan p;
    assert_int_equal(mp_stats_diag_plan(&in, &p), 0);
    /* 176 blocked: 11 alone at 4.3 s, 165 at 1 s, all x 2 */
    NEAR(p.blocked_s, 600 + (11 * 4.3 + 165 * 1.0) * 2, 1e-6);
    /* the rerun: start-up + 1/p̂ = 3 requests, all alone */
    NEAR(p.sharpen_cost_s, 600 + 3 * 4.3, 1e-6);
    /* its failure (f = 2, T = 6) would ask for 47: 129 fewer at 1 s x 2 */
    assert_int_equal(p.sharpen_need, 47);
    NEAR(p.sharpen_saves_s, (176 - 47) * 2.0, 1e-6);
    assert_non_null(strstr(p.why, "about 17 min = start-up 600 s + (11 x 4.3 s alone + 165 x 1 s "
                                  "at concurrency 8) x 2 assumed blocked"));
    assert_non_null(strstr(p.why, "one more normal run would cost about 10 min"));
    /* the budget pays for the lead at 8.6 s and the rest at 2 s */
    assert_int_equal(p.affordable, 11 + (unsigned long)((3000 - 11 * 8.6) / 2));
    /* without the split (lead 0, req1 unknown) the old arithmetic stands */
    in.lead = 0;
    in.req1_s = 0;
    assert_int_equal(mp_stats_diag_plan(&in, &p), 0);
    NEAR(p.blocked_s, 600 + 176 * 2.0, 1e-6);
    NEAR(p.sharpen_cost_s, 600 + 3 * 1.0, 1e-6);
}

/* The blocked run serves MP_DIAG_BLOCKED_SEQ requests alone after its
 * warm-up (its own lead), a normal run its whole sequential phase: the
 * blocked run's cost and its saving use the first, a rerun's cost the second. */
static void test_blocked_lead(void **st)
{
    (void)st;
    struct mp_stats_attempt one[] = {{2, true}};
    struct mp_diag_cost_in in = {.obs = one, .nobs = 1, .start_s = 600, .req1_s = 4.3,
                                 .req_s = 1.0, .lead = 11, .blocked_lead = 4, .concurrency = 8,
                                 .cap = 2000};
    struct mp_diag_plan p;
    assert_int_equal(mp_stats_diag_plan(&in, &p), 0);
    NEAR(p.blocked_s, 600 + (4 * 4.3 + 172 * 1.0) * 2, 1e-6);
    assert_non_null(strstr(p.why, "(4 x 4.3 s alone + 172 x 1 s at concurrency 8)"));
    NEAR(p.sharpen_saves_s, (176 - 47) * 2.0, 1e-6);
    assert_false(p.sharpen);
    /* a rare race: the rerun serves ~200 requests, the first 11 alone */
    struct mp_stats_attempt rare[] = {{200, true}};
    in.obs = rare;
    in.cap = 0;
    assert_int_equal(mp_stats_diag_plan(&in, &p), 0);
    NEAR(p.sharpen_cost_s, 600 + 11 * 4.3 + (201 - 11) * 1.0, 1e-6);
    double saves = p.sharpen_saves_s;
    /* its saving is of blocked requests beyond the lead either way */
    in.blocked_lead = 0; /* not recorded: the normal lead stands for it */
    assert_int_equal(mp_stats_diag_plan(&in, &p), 0);
    NEAR(p.sharpen_saves_s, saves, 1e-6);
    NEAR(p.blocked_s, 600 + (11 * 4.3 + (p.need - 11) * 1.0) * 2, 1e-6);
}

/* The blocked run's workload from qualify's default one: the warm-up, 3 of
 * the 10 sequential requests, only the top level, extended to the need. */
static void test_blocked_workload(void **st)
{
    (void)st;
    struct mp_workload wl, b;
    mp_workload_default(&wl);
    assert_int_equal(mp_workload_add_conc(&wl, "4:16"), 0);
    assert_int_equal(mp_workload_add_conc(&wl, "8:32"), 0);
    assert_int_equal(mp_verdict_workload_lead(&wl), 11);
    mp_verdict_blocked_workload(&wl, 176, 3600, &b);
    assert_int_equal(b.nphases, 3);
    assert_string_equal(b.phases[0].name, "warmup");
    assert_int_equal(b.phases[0].requests, 1);
    assert_string_equal(b.phases[1].name, "sequential");
    assert_int_equal(b.phases[1].requests, MP_DIAG_BLOCKED_SEQ);
    assert_int_equal(b.phases[2].level, 8);
    assert_int_equal(b.phases[2].requests, 32);
    assert_int_equal(b.min_total_ok, 176);
    NEAR(b.extend_budget_s, 3600, 0);
    assert_int_equal(b.max_tokens, wl.max_tokens);
    assert_int_equal(mp_verdict_workload_lead(&b), 1 + MP_DIAG_BLOCKED_SEQ);
    /* a shorter sequential phase is kept as it is; no budget stays none */
    wl.phases[1].requests = 2;
    mp_verdict_blocked_workload(&wl, 5, 0, &b);
    assert_int_equal(b.phases[1].requests, 2);
    NEAR(b.extend_budget_s, 0, 0);
}

/* ---- what the rule measures ---- */

static struct mp_attempt_result *att(struct mp_report *rep, size_t i, enum mp_outcome o,
                                     bool blocking, double ready_s)
{
    struct mp_attempt_result a;
    memset(&a, 0, sizeof(a));
    a.index = (int)rep->c[i].nattempts + 1;
    a.outcome = o;
    a.launch_blocking = blocking;
    a.ready_s = ready_s;
    return mp_report_add_attempt(rep, i, &a);
}

/* A phase of `ok` requests whose E2E latencies are e2e_ms each. */
static struct mp_phase_result *phase(struct mp_attempt_result *a, const char *name, int level,
                                     int ok, int failed, double wall_s, double e2e_ms)
{
    struct mp_phase_result *ph = &a->phases[a->nphases++];
    snprintf(ph->name, sizeof(ph->name), "%s", name);
    ph->level = level;
    ph->ok = ok;
    ph->failed = failed;
    ph->wall_s = wall_s;
    for (int i = 0; i < ok; i++)
        mp_hist_add(&ph->m.e2e_ms, e2e_ms);
    return ph;
}

static void test_measure(void **st)
{
    (void)st;
    struct mp_report rep;
    mp_report_init(&rep, "/run");
    struct mp_candidate c;
    struct mp_diag d;
    assert_int_equal(mp_candidate_parse("auto:", &c, &d), 0);
    size_t i = mp_report_add_candidate(&rep, &c);
    mp_candidate_release(&c);
    /* the seed's crash: warm-up's 2 requests served (43 ms each, the
     * engine's time), the phase cut by the failure holds the wait for it
     * (3 s of wall time for 2 requests: not a request's time) */
    struct mp_attempt_result *a = att(&rep, i, MP_OUT_CRASH, false, 6);
    phase(a, "warmup", 1, 2, 1, 3.0, 43);
    struct mp_diag_meas m;
    mp_verdict_diag_meas(&rep.c[i], 8, &m);
    NEAR(m.start_s, 6, 1e-9);
    NEAR(m.req1_s, 0.043, 0.002); /* the histogram's bucket resolution */
    assert_true(m.projected);
    NEAR(m.top_s, m.req1_s * (1 + 0.1 * 7) / 8, 1e-12);
    /* a second normal attempt that served the top level cleanly: measured */
    struct mp_attempt_result *b = att(&rep, i, MP_OUT_CLEAN, false, 8);
    phase(b, "sequential", 1, 10, 0, 0.5, 43);
    phase(b, "concurrency-8", 8, 32, 0, 0.4, 90);
    /* a top-level phase cut by a failure is not a measure (a moved with
     * the array when b was added) */
    a = &rep.c[i].attempts[0];
    phase(a, "concurrency-8", 8, 5, 1, 9.0, 90);
    /* neither a blocked run nor a stop at the selections is a start-up here */
    att(&rep, i, MP_OUT_CLEAN, true, 50);
    att(&rep, i, MP_OUT_SAME_CONFIG, false, 0.4);
    mp_verdict_diag_meas(&rep.c[i], 8, &m);
    NEAR(m.start_s, 7, 1e-9);
    assert_false(m.projected);
    NEAR(m.top_s, 0.4 / 32, 1e-12);
    /* concurrency 1 (no load phases above it): a request alone */
    mp_verdict_diag_meas(&rep.c[i], 1, &m);
    assert_false(m.projected);
    NEAR(m.top_s, 0.5 / 10, 1e-12); /* the level-1 phase that served cleanly */
    mp_report_release(&rep);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rule_table),
        cmocka_unit_test(test_rule_arithmetic),
        cmocka_unit_test(test_blocked_lead),
        cmocka_unit_test(test_blocked_workload),
        cmocka_unit_test(test_measure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
