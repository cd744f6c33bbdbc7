/* Unit tests: the ETA estimator (verdict/eta.h, #29 item 6): a short
 * crashed attempt does not pull the estimate of a full one down, a crash
 * ahead of its diagnosis adds the diagnosis, a predicted same
 * configuration costs a start-up, a soak's timed phase is known before
 * anything was measured, minimize's tests left. */
#include "compat.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verdict/eta.h"
#include "xalloc.h"

/* The demo's workload: warm-up, 5 sequential, 4:8, 8:16 (4 check prompts). */
static void workload(struct mp_workload *wl)
{
    mp_workload_default(wl);
    wl->phases[1].requests = 5;
    wl->max_tokens = 32;
    mp_workload_add_conc(wl, "4:8");
    mp_workload_add_conc(wl, "8:16");
}

static struct mp_phase_result *phase(struct mp_attempt_result *a, const char *name, int level,
                                     int ok, int failed, double wall_s, double e2e_s)
{
    struct mp_phase_result *p = &a->phases[a->nphases++];
    memset(p, 0, sizeof(*p));
    snprintf(p->name, sizeof(p->name), "%s", name);
    p->level = level;
    p->ok = ok;
    p->failed = failed;
    p->wall_s = wall_s;
    for (int i = 0; i < ok; i++)
        mp_hist_add(&p->m.e2e_ms, e2e_s * 1000);
    return p;
}

static void add_cand(struct mp_report *rep, const char *name, const char *knobs)
{
    struct mp_candidate c;
    mp_candidate_from_knobs(name, knobs, &c, NULL);
    mp_report_add_candidate(rep, &c);
    mp_candidate_release(&c);
}

/* auto crashed on its 3rd request after 0.8 s: 2 requests of 0.15 s. */
static void crashed_auto(struct mp_report *rep)
{
    struct mp_attempt_result a;
    memset(&a, 0, sizeof(a));
    a.index = 1;
    a.outcome = MP_OUT_CRASH;
    a.cuda_fault = true;
    a.engine_died = true;
    a.ok_before_failure = 2;
    a.req_ok = 2;
    a.req_failed = 1;
    a.ready_s = 0.2;
    a.teardown_s = 0.05;
    a.wall_s = 0.8;
    a.fail_class = xstrdup("illegal-address");
    a.res.moe_backend = xstrdup("FLASHINFER_CUTLASS");
    a.res.engine_version = xstrdup("0.17.0");
    phase(&a, "warmup", 1, 1, 0, 0.15, 0.15);
    phase(&a, "sequential", 1, 1, 1, 0.2, 0.15);
    mp_report_add_attempt(rep, 0, &a);
}

/* The case: the old estimate was candidates left x the mean
 * attempt, and a 0.8 s crash made it 4 x 0.8 = 3 s for a run of 15 s. A
 * full attempt is built from what the crash measured instead: start-up,
 * teardown, 6 requests alone, 2 rounds at 4 and at 8 (contention assumed),
 * 4 check prompts. */
static void test_crash_does_not_shrink_full(void **state)
{
    (void)state;
    struct mp_workload wl;
    workload(&wl);
    struct mp_report rep;
    mp_report_init(&rep, "/tmp/x");
    add_cand(&rep, "auto", "");
    add_cand(&rep, "cutlass", "--moe-backend cutlass");
    add_cand(&rep, "marlin", "--moe-backend marlin");
    crashed_auto(&rep);
    double full = mp_eta_attempt_s(&rep, &wl, 4);
    double want = 0.2 + 0.05 + 6 * 0.15 + 2 * 0.15 * 1.3 + 2 * 0.15 * 1.7 + 4 * 0.15;
    assert_true(fabs(full - want) < 1e-9);
    struct mp_eta e;
    struct mp_eta_in in = {.rep = &rep, .wl = &wl, .nquality = 4};
    mp_eta_estimate(&in, &e);
    assert_true(e.known);
    assert_int_equal(e.full_left, 2);
    assert_true(fabs(e.remaining_s - 2 * want) < 1e-9); /* no diagnosis asked for */
    /* how it divides (#27): two start-ups, two teardowns, the rest requests */
    assert_true(fabs(e.startup_s - 2 * 0.2) < 1e-9);
    assert_true(fabs(e.overhead_s - 2 * 0.05) < 1e-9);
    assert_true(fabs(e.request_s - 2 * (want - 0.25)) < 1e-9);
    /* with the diagnosis: more normal runs and the blocked run come on top */
    in.diagnose = true;
    mp_eta_estimate(&in, &e);
    assert_true(e.diagnosis_s > 0.2 + 0.05);
    assert_true(fabs(e.remaining_s - (2 * want + e.diagnosis_s)) < 1e-9);
    assert_true(fabs(e.startup_s + e.request_s + e.overhead_s - e.remaining_s) < 1e-9);
    assert_true(e.startup_s >= 3 * 0.2 - 1e-9); /* the blocked run's start-up too */
    /* a candidate predicted to be the same configuration costs a start-up */
    bool cheap[3] = {false, false, true};
    in.cheap = cheap;
    in.diagnose = false;
    mp_eta_estimate(&in, &e);
    assert_int_equal(e.cheap_left, 1);
    assert_true(fabs(e.remaining_s - (want + 0.2)) < 1e-9);
    assert_true(fabs(e.startup_s - 2 * 0.2) < 1e-9); /* the same configuration's is start-up */
    /* ... as long as the selection lines took to come, once an attempt logged them (#27) */
    rep.c[0].attempts[0].selected_s = 0.05;
    mp_eta_estimate(&in, &e);
    assert_true(fabs(e.remaining_s - (want + 0.05 + 0.05)) < 1e-9);
    mp_report_release(&rep);
}

/* The scoring pass (qualify's and minimize's correctness check) runs after
 * the phases of a serving candidate's first attempt: until one ran, a full
 * attempt is built with it from the crash's measurements - 16 passages
 * one at a time (~1 token each) and again at 8, 8 greedy continuations of
 * 32 tokens at 8, 64 problems of max 96 tokens (replies ~32) at 8. On the
 * demo world it was about 2 s of a 5 s attempt; left out, the ETA after
 * the first attempt was 33 % short (q_eta_qualify). */
static void test_scoring_pass(void **state)
{
    (void)state;
    struct mp_workload wl;
    workload(&wl);
    struct mp_report rep;
    mp_report_init(&rep, "/tmp/x");
    add_cand(&rep, "auto", "");
    add_cand(&rep, "cutlass", "--moe-backend cutlass");
    crashed_auto(&rep);
    struct mp_eta plain, scored;
    struct mp_eta_in in = {.rep = &rep, .wl = &wl, .nquality = 4};
    mp_eta_estimate(&in, &plain);
    struct mp_eta_score sc = {16, true, 8, 32, 64, 96, 8};
    in.score = &sc;
    mp_eta_estimate(&in, &scored);
    double r8 = 0.15 * 1.7, tok = 1.0 / 32;
    double want = 16 * 0.15 * tok + 2 * r8 * tok + 1 * r8 * 32 * tok + 8 * r8 * 32 * tok;
    assert_true(fabs(scored.attempt_s - plain.attempt_s - want) < 1e-9);
    assert_true(fabs(scored.remaining_s - plain.remaining_s - want) < 1e-9);
    mp_report_release(&rep);
}

/* Once a full attempt ran, its wall time is the estimate of the next. */
static void test_full_measured(void **state)
{
    (void)state;
    struct mp_workload wl;
    workload(&wl);
    struct mp_report rep;
    mp_report_init(&rep, "/tmp/x");
    add_cand(&rep, "a", "");
    add_cand(&rep, "b", "X=1");
    struct mp_attempt_result a;
    memset(&a, 0, sizeof(a));
    a.index = 1;
    a.outcome = MP_OUT_CLEAN;
    a.ready_s = 0.2;
    a.wall_s = 3.0;
    phase(&a, "warmup", 1, 1, 0, 0.15, 0.15);
    mp_report_add_attempt(&rep, 0, &a);
    struct mp_eta e;
    struct mp_eta_in in = {.rep = &rep, .wl = &wl, .nquality = 4};
    mp_eta_estimate(&in, &e);
    assert_true(fabs(e.remaining_s - 3.0) < 1e-9);
    mp_report_release(&rep);
}

/* A soak's timed phase is most of its attempt: known before any start. */
static void test_soak_known_before_start(void **state)
{
    (void)state;
    struct mp_workload wl;
    mp_workload_default(&wl);
    wl.nphases = 2;
    snprintf(wl.phases[1].name, sizeof(wl.phases[1].name), "soak");
    wl.phases[1].level = 8;
    wl.phases[1].requests = 1 << 30;
    wl.phases[1].duration_s = 600;
    struct mp_report rep;
    mp_report_init(&rep, "/tmp/x");
    add_cand(&rep, "soak", "");
    struct mp_eta e;
    struct mp_eta_in in = {.rep = &rep, .wl = &wl};
    mp_eta_estimate(&in, &e);
    assert_true(e.known);
    assert_true(e.remaining_s >= 600 && e.remaining_s < 601);
    mp_report_release(&rep);
}

static void test_minimize_tests_left(void **state)
{
    (void)state;
    assert_true(fabs(mp_eta_ddmin_tests_left(1, 0) - 2) < 1e-9); /* the two ends */
    assert_true(mp_eta_ddmin_tests_left(3, 1) > 2 && mp_eta_ddmin_tests_left(3, 1) < 4);
    assert_true(mp_eta_ddmin_tests_left(8, 0) > mp_eta_ddmin_tests_left(3, 0));
    assert_true(mp_eta_ddmin_tests_left(3, 100) == 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crash_does_not_shrink_full),
        cmocka_unit_test(test_scoring_pass),
        cmocka_unit_test(test_full_measured),
        cmocka_unit_test(test_soak_known_before_start),
        cmocka_unit_test(test_minimize_tests_left),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
