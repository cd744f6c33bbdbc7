/* test_verdict_rules.c - every rule of docs/verdicts.md as a table: one
 * candidate's facts -> its verdict and why (verdict/decide.h), what the
 * blocked run means and when one more normal run comes first
 * (verdict/diagnose.h), same-backend groups and no-op knobs
 * (verdict/derive.h), the recommendation under each objective with its 1 %
 * ties and the tie-break to fewer knobs (verdict/recommend.h). Each rule
 * has a row that fails when the rule is changed. One candidate's facts ->
 * verdict rows live in tests/verdict/rules.test (test_verdict_table.c). */
#include "compat.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/report.h"
#include "verdict/decide.h"
#include "verdict/derive.h"
#include "verdict/diagnose.h"
#include "verdict/recommend.h"
#include "verdict/verdict.h"
#include "xalloc.h"

static char *dupn(const char *s)
{
    return s ? xstrdup(s) : NULL;
}

#define NEAR(x, want, eps) assert_true(fabs((x) - (want)) < (eps))

/* Append candidate "NAME: KNOBS"; returns its index. */
static size_t cand(struct mp_report *rep, const char *spec)
{
    struct mp_candidate c;
    struct mp_diag d;
    assert_int_equal(mp_candidate_parse(spec, &c, &d), 0);
    size_t i = mp_report_add_candidate(rep, &c);
    mp_candidate_release(&c);
    return i;
}

/* An attempt of outcome o for candidate i (strings copied); returns it. */
static struct mp_attempt_result *att(struct mp_report *rep, size_t i, enum mp_outcome o,
                                     bool blocking, const char *moe)
{
    struct mp_attempt_result a;
    memset(&a, 0, sizeof(a));
    a.index = (int)rep->c[i].nattempts + 1;
    a.outcome = o;
    a.launch_blocking = blocking;
    a.res.moe_backend = dupn(moe);
    return mp_report_add_attempt(rep, i, &a);
}

static struct mp_phase_result *phase(struct mp_attempt_result *a, const char *name, int level,
                                     int ok, double tok_s)
{
    struct mp_phase_result *ph = &a->phases[a->nphases++];
    snprintf(ph->name, sizeof(ph->name), "%s", name);
    ph->level = level;
    ph->ok = ok;
    ph->tok_s = tok_s;
    return ph;
}

/* ---- 1. one candidate's verdict ----
 * The rules as rows (facts -> verdict and why) are data:
 * tests/verdict/rules.test, run by test_verdict_table.c. Here: which
 * attempt decides, and the wording details the rows do not pin. */

static void test_decide_primary(void **st)
{
    (void)st;
    struct mp_report rep;
    mp_report_init(&rep, "/run");
    size_t i = cand(&rep, "a:"); /* no attempt: not run */
    char *why = NULL;
    assert_int_equal(mp_verdict_decide(&rep.c[i], &why), MP_V_NONE);
    assert_string_equal(why, "not run");
    free(why);
    /* the verdict is the first normal attempt's, not the blocked run's */
    struct mp_attempt_result *b = att(&rep, i, MP_OUT_CLEAN, true, "M");
    b->req_ok = 99;
    struct mp_attempt_result *n = att(&rep, i, MP_OUT_HANG, false, "M");
    n->fail_message = xstrdup("stalled");
    att(&rep, i, MP_OUT_CLEAN, false, "M");
    assert_int_equal(mp_verdict_decide(&rep.c[i], &why), MP_V_HANG);
    free(why);
    /* kernel fault pinned where it was launched: no "launched from" */
    size_t j = cand(&rep, "b:");
    struct mp_attempt_result *a = att(&rep, j, MP_OUT_CRASH, false, "M");
    a->cuda_fault = a->engine_died = true;
    rep.c[j].diag.done = true;
    rep.c[j].diag.launch_blocking = MP_LB_CRASHED;
    rep.c[j].diag.pinned_site = xstrdup("k");
    rep.c[j].diag.launch_site = xstrdup("k");
    assert_int_equal(mp_verdict_decide(&rep.c[j], &why), MP_V_KERNEL_FAULT);
    assert_non_null(strstr(why, "pinned at k"));
    assert_null(strstr(why, "launched from"));
    free(why);
    mp_report_release(&rep);
}

/* ---- 2. output check, shared results, knob delivery ---- */

static void test_output_check(void **st)
{
    (void)st;
    struct mp_qcand_out garbage = {.status = MP_QC_GARBAGE, .why = "answer to 'capital' is degenerate"};
    struct mp_qcand_out ok = {.status = MP_QC_OK, .passed = 3};
    struct mp_qcand_out notrun = {.status = MP_QC_NOT_RUN};
    char *w = NULL;
    assert_int_equal(mp_verdict_output_check(MP_V_STABLE, "clean", &garbage, 4, &w),
                     MP_V_GARBAGE_OUTPUT);
    assert_string_equal(w, "served every request without an error, but its answer to 'capital' "
                           "is degenerate");
    free(w);
    assert_int_equal(mp_verdict_output_check(MP_V_STABLE, "clean", &ok, 4, &w), MP_V_STABLE);
    assert_string_equal(w, "clean; output check passed (3 of 4 sanity prompts)");
    free(w);
    assert_int_equal(mp_verdict_output_check(MP_V_STABLE, "clean", &notrun, 4, &w), MP_V_STABLE);
    assert_null(w);
    /* only a stable candidate is judged by its answers */
    assert_int_equal(mp_verdict_output_check(MP_V_CRASHED, "x", &garbage, 4, &w), MP_V_CRASHED);
    assert_null(w);
}

static void test_shared_and_delivery(void **st)
{
    (void)st;
    struct mp_report rep;
    mp_report_init(&rep, "/run");
    size_t a = cand(&rep, "auto:");
    att(&rep, a, MP_OUT_CLEAN, false, "FC")->req_ok = 10;
    size_t f = cand(&rep, "fc: --moe-backend flashinfer_cutlass");
    struct mp_attempt_result *fa = att(&rep, f, MP_OUT_SAME_CONFIG, false, "FC");
    fa->same_as = xstrdup("auto");
    fa->same_why = xstrdup("--moe-backend flashinfer_cutlass acts only through the selection");
    phase(fa, "sequential", 1, 3, 1e6); /* whatever it shows, it is not recommended itself */
    size_t g = cand(&rep, "ghost: X=1");
    att(&rep, g, MP_OUT_SAME_CONFIG, false, "FC")->same_as = xstrdup("gone");
    size_t m = cand(&rep, "miss: VLLM_X=1");
    struct mp_attempt_result *ma = att(&rep, m, MP_OUT_CLEAN, false, "FC");
    mp_attempt_add_dlv(ma, "VLLM_X=1", MP_DLV_MISSING, "not in /proc/7/environ");
    size_t r = cand(&rep, "res: VLLM_Y=1");
    mp_attempt_add_dlv(att(&rep, r, MP_OUT_RESOLVED, false, "FC"), "VLLM_Y=1", MP_DLV_MISSING, "e");
    size_t u = cand(&rep, "unv: VLLM_Z=1");
    mp_attempt_add_dlv(att(&rep, u, MP_OUT_CLEAN, false, "FC"), "VLLM_Z=1", MP_DLV_UNVERIFIED, "e");
    size_t un = cand(&rep, "unf: VLLM_W=1");
    mp_attempt_add_dlv(att(&rep, un, MP_OUT_RESOLVED, false, "FC"), "VLLM_W=1", MP_DLV_MISSING, "e");
    rep.c[un].unfinished = true;
    size_t in = cand(&rep, "intr: VLLM_V=1");
    mp_attempt_add_dlv(att(&rep, in, MP_OUT_INTERRUPTED, false, "FC"), "VLLM_V=1", MP_DLV_MISSING, "e");
    size_t sm = cand(&rep, "shmiss: VLLM_S=1");
    struct mp_attempt_result *sa = att(&rep, sm, MP_OUT_SAME_CONFIG, false, "FC");
    sa->same_as = xstrdup("gone"); /* no verdict to share: what it did is "the same" */
    mp_attempt_add_dlv(sa, "VLLM_S=1", MP_DLV_MISSING, "e");

    mp_verdict_finalize(&rep);
    assert_int_equal(rep.c[a].verdict, MP_V_STABLE);
    assert_int_equal(rep.c[f].verdict, MP_V_STABLE);
    assert_non_null(strstr(rep.c[f].why, "shared with 'auto', not tested again: --moe-backend "
                                         "flashinfer_cutlass acts only through the selection; "
                                         "'auto' was stable: every phase ran"));
    assert_int_equal(rep.c[g].verdict, MP_V_NONE);
    assert_non_null(strstr(rep.c[g].why, "the same configuration as 'gone', whose result is not "
                                         "in this report"));
    assert_int_equal(rep.c[m].verdict, MP_V_NOT_DELIVERED);
    assert_non_null(strstr(rep.c[m].why, "VLLM_X=1 did not reach the engine (not in "
                                         "/proc/7/environ): this run did not test what the "
                                         "candidate names (it ran stable: every phase"));
    assert_int_equal(rep.c[r].verdict, MP_V_NOT_DELIVERED);
    assert_non_null(strstr(rep.c[r].why, "it ran to its selections only"));
    assert_int_equal(rep.c[sm].verdict, MP_V_NOT_DELIVERED);
    assert_non_null(strstr(rep.c[sm].why, "as the same configuration as another"));
    assert_int_equal(rep.c[u].verdict, MP_V_STABLE); /* unverified is not missing */
    assert_int_equal(rep.c[in].verdict, MP_V_NONE);  /* nothing to override */
    assert_int_equal(rep.c[un].verdict, MP_V_NONE);  /* unfinished: no verdict at all */
    /* never recommended, never grouped, never a no-op knob */
    for (size_t k = 0; k < rep.ngroups; k++)
        for (size_t n = 0; n < rep.groups[k].candidates.n; n++)
            assert_true(strcmp(rep.groups[k].candidates.v[n], "miss") &&
                        strcmp(rep.groups[k].candidates.v[n], "res"));
    for (size_t k = 0; k < rep.nnoop; k++)
        assert_true(strcmp(rep.noop[k].candidate, "miss") != 0);
    /* the shared result is recommended as its representative */
    assert_int_equal(rep.recommended, (int)a);
    mp_report_derived_release(&rep);
    mp_verdict_finalize(&rep); /* idempotent */
    assert_int_equal(rep.c[m].verdict, MP_V_NOT_DELIVERED);
    assert_int_equal(rep.c[f].verdict, MP_V_STABLE);
    mp_report_release(&rep);
}

/* ---- 3. what the blocked run means ---- */

static void test_diagnosable(void **st)
{
    (void)st;
    static const struct { enum mp_outcome o; bool cuda, missing, want; const char *note; } rows[] = {
        {MP_OUT_CLEAN, 0, 0, false, NULL},
        {MP_OUT_STARTUP_FAILURE, 0, 0, false, "a startup failure is not diagnosed"},
        {MP_OUT_HANG, 0, 0, false, "a hang is not diagnosed"},
        {MP_OUT_CRASH, 0, 0, false, "not a CUDA fault: not diagnosed with CUDA_LAUNCH_BLOCKING=1"},
        {MP_OUT_CRASH, 1, 1, false, "not diagnosed: VLLM_X=1 did not reach the engine"},
        {MP_OUT_CRASH, 1, 0, true, NULL},
    };
    for (size_t k = 0; k < MP_ARRAY_SIZE(rows); k++) {
        struct mp_attempt_result a;
        memset(&a, 0, sizeof(a));
        a.outcome = rows[k].o;
        a.cuda_fault = rows[k].cuda;
        if (rows[k].missing)
            mp_attempt_add_dlv(&a, "VLLM_X=1", MP_DLV_MISSING, "e");
        char *note = (char *)"unset";
        assert_int_equal(mp_verdict_diagnosable(&a, &note), rows[k].want);
        if (rows[k].note ? !note || !strstr(note, rows[k].note) : note != NULL)
            fail_msg("row %zu: note '%s', want '%s'", k, note, rows[k].note);
        free(note);
        mp_attempt_result_release(&a);
    }
    char *note = NULL;
    assert_false(mp_verdict_diagnosable(NULL, &note));
    assert_null(note);
}

static void test_evidence_and_measure(void **st)
{
    (void)st;
    struct mp_report rep;
    mp_report_init(&rep, "/run");
    size_t i = cand(&rep, "a:");
    struct mp_attempt_result *a = att(&rep, i, MP_OUT_CRASH, false, "M");
    a->ok_before_failure = 2;
    a->req_ok = 7; /* served after the failure? not evidence: k = ok_before_failure */
    a->ready_s = 10;
    phase(a, "sequential", 1, 3, 50)->wall_s = 3;
    phase(a, "concurrency-4", 4, 8, 80)->wall_s = 2;
    att(&rep, i, MP_OUT_CLEAN, true, "M")->req_ok = 40; /* blocked: not normal evidence */
    struct mp_attempt_result *c = att(&rep, i, MP_OUT_CLEAN, false, "M");
    c->req_ok = 10;
    c->ready_s = 20;
    att(&rep, i, MP_OUT_STARTUP_FAILURE, false, "M")->ready_s = 99;
    struct mp_stats_attempt obs[8];
    assert_int_equal(mp_verdict_diag_evidence(&rep.c[i], obs), 2);
    assert_int_equal(obs[0].served, 2);
    assert_true(obs[0].failed);
    assert_int_equal(obs[1].served, 10);
    assert_false(obs[1].failed);
    struct mp_diag_meas dm;
    mp_verdict_diag_meas(&rep.c[i], 4, &dm);
    NEAR(dm.start_s, 15, 1e-9); /* the startup failure is not a start-up */
    NEAR(dm.top_s, 0.25, 1e-9); /* concurrency-4: 2 s / 8 requests */
    assert_false(dm.projected);
    mp_report_release(&rep);
}

/* The thin-evidence rerun: one failure is a weak estimate; a cheap normal
 * run that is expected to fail sharpens it and saves blocked time. */
static void test_thin_evidence_rerun(void **st)
{
    (void)st;
    struct mp_stats_attempt one[] = {{2, true}};
    struct mp_diag_cost_in in = {.obs = one, .nobs = 1, .start_s = 1, .req_s = 0.05,
                                 .concurrency = 4, .budget_s = 3600, .cap = 2000};
    struct mp_diag_plan plan;
    assert_int_equal(mp_stats_diag_plan(&in, &plan), 0);
    assert_true(plan.sharpen);
    assert_true(mp_verdict_rerun_first(&plan, 0));
    assert_true(mp_verdict_rerun_first(&plan, MP_VERDICT_MAX_RERUNS - 1));
    assert_false(mp_verdict_rerun_first(&plan, MP_VERDICT_MAX_RERUNS)); /* at most three */
    assert_int_equal(MP_VERDICT_MAX_RERUNS, 3);
    /* a ten-minute start is not repeated to save a few fast requests */
    in.start_s = 600;
    assert_int_equal(mp_stats_diag_plan(&in, &plan), 0);
    assert_false(plan.sharpen);
    assert_false(mp_verdict_rerun_first(&plan, 0));
}

/* The diagnosis derived from the attempts under the candidate's policy:
 * the notes each policy writes, and a full diagnosis equal to what its
 * parts give (estimate, reasoning, the last blocked run). */
static void test_derived_diagnosis(void **st)
{
    (void)st;
    static const struct {
        enum mp_outcome o;
        bool cuda, diagnose, skipped, notes;
        const char *note; /* NULL: none */
    } rows[] = {
        {MP_OUT_CRASH, 1, 0, 1, 1, "diagnosis skipped (--no-diagnose)"},
        {MP_OUT_CRASH, 1, 0, 0, 0, NULL},                       /* soak, resolve */
        {MP_OUT_CRASH, 0, 1, 0, 1, "not a CUDA fault"},
        {MP_OUT_CRASH, 0, 1, 0, 0, "not a CUDA fault"},         /* bisect too */
        {MP_OUT_HANG, 0, 1, 0, 1, "a hang is not diagnosed"},
        {MP_OUT_HANG, 0, 1, 0, 0, NULL},                        /* bisect: no notes */
        {MP_OUT_SAME_CONFIG, 0, 1, 0, 1, "not tested again: the same configuration as 'auto'"},
        {MP_OUT_CLEAN, 0, 1, 0, 1, NULL},
    };
    for (size_t k = 0; k < MP_ARRAY_SIZE(rows); k++) {
        struct mp_report rep;
        mp_report_init(&rep, "/run");
        size_t i = cand(&rep, "x:");
        struct mp_attempt_result *a = att(&rep, i, rows[k].o, false, "M");
        a->cuda_fault = a->engine_died = rows[k].cuda;
        a->same_as = rows[k].o == MP_OUT_SAME_CONFIG ? xstrdup("auto") : NULL;
        struct mp_diag_policy pol = {.recorded = true, .diagnose = rows[k].diagnose,
                                     .skipped = rows[k].skipped, .notes = rows[k].notes,
                                     .concurrency = 4};
        rep.c[i].diag.note = xstrdup("stale"); /* replaced, never kept */
        mp_verdict_diagnosis(&rep.c[i], &pol, &rep.c[i].diag);
        const char *note = rep.c[i].diag.note;
        if (rows[k].note ? !note || !strstr(note, rows[k].note) : note != NULL)
            fail_msg("row %zu: note '%s', want '%s'", k, note, rows[k].note);
        assert_false(rep.c[i].diag.done);
        mp_report_release(&rep);
    }
    /* diagnosed: two normal crashes, then a blocked run clean for the required count */
    struct mp_report rep;
    mp_report_init(&rep, "/run");
    size_t i = cand(&rep, "x:");
    for (int n = 0; n < 2; n++) {
        struct mp_attempt_result *a = att(&rep, i, MP_OUT_CRASH, false, "M");
        a->cuda_fault = a->engine_died = true;
        a->ok_before_failure = 3;
        a->req_ok = 3;
        a->req_failed = 1;
    }
    struct mp_stats_attempt obs[3];
    size_t n = mp_verdict_diag_evidence(&rep.c[i], obs);
    struct mp_stats_async est;
    mp_stats_async_estimate(obs, n, &est);
    struct mp_attempt_result *b = att(&rep, i, MP_OUT_CLEAN, true, "M");
    b->req_ok = est.required_n + 1;
    struct mp_diag_policy pol = {.recorded = true, .diagnose = true, .notes = true, .concurrency = 4};
    mp_verdict_diagnosis(&rep.c[i], &pol, &rep.c[i].diag);
    const struct mp_diagnosis *dg = &rep.c[i].diag;
    assert_true(dg->done);
    assert_int_equal(dg->requests_required, est.required_n);
    assert_non_null(strstr(dg->reasoning, est.why));
    assert_int_equal(dg->launch_blocking, MP_LB_CLEAN);
    assert_int_equal(dg->requests_clean, est.required_n + 1);
    char *why = NULL;
    assert_int_equal(mp_verdict_decide(&rep.c[i], &why), MP_V_ASYNC_RACE);
    free(why);
    mp_report_release(&rep);
}

static void test_read_blocked(void **st)
{
    (void)st;
    static const struct {
        const char *what; enum mp_outcome o; unsigned long ok;
        bool capped, over, missing, sites;
        const char *lb; double conf; const char *note, *pinned;
        enum mp_verdict verdict; /* of the candidate then (normal run: CUDA fault) */
    } rows[] = {
        {"clean, exactly required", MP_OUT_CLEAN, 47, 0, 0, 0, 0, "clean", 0.95, NULL, NULL,
         MP_V_ASYNC_RACE},
        {"clean, one short", MP_OUT_CLEAN, 46, 0, 0, 0, 0, "clean", 0, "the blocked run served 46 "
         "requests clean, 1 short of the 47 required; 1 more clean requests, about 2 s more at the "
         "blocked run's rate would decide it", NULL, MP_V_CRASHED},
        {"clean, capped", MP_OUT_CLEAN, 40, 1, 0, 0, 0, "clean", 0,
         "required (capped by --diagnose-max-requests)", NULL, MP_V_CRASHED},
        {"clean, over budget", MP_OUT_CLEAN, 40, 0, 1, 0, 0, "clean", 0,
         "required (stopped at --diagnose-budget)", NULL, MP_V_CRASHED},
        {"crashed, sites", MP_OUT_CRASH, 3, 0, 0, 0, 1, "crashed", 0.95, NULL, "site0",
         MP_V_KERNEL_FAULT},
        {"crashed, no sites", MP_OUT_CRASH, 3, 0, 0, 0, 0, "crashed", 0.95, NULL, "bad",
         MP_V_KERNEL_FAULT},
        {"hang", MP_OUT_HANG, 3, 0, 0, 0, 0, NULL, 0,
         "the CUDA_LAUNCH_BLOCKING=1 run ended as hang: bad, so the diagnosis is inconclusive",
         NULL, MP_V_CRASHED},
        {"launch blocking missing", MP_OUT_CLEAN, 900, 0, 0, 1, 0, NULL, 0,
         "the blocked run is no evidence: CUDA_LAUNCH_BLOCKING=1 did not reach the engine (e)",
         NULL, MP_V_CRASHED},
    };
    for (size_t k = 0; k < MP_ARRAY_SIZE(rows); k++) {
        struct mp_report rep;
        mp_report_init(&rep, "/run");
        size_t i = cand(&rep, "a:");
        struct mp_attempt_result *n = att(&rep, i, MP_OUT_CRASH, false, "M");
        n->cuda_fault = n->engine_died = true;
        struct mp_attempt_result *b = att(&rep, i, rows[k].o, true, "M");
        b->req_ok = rows[k].ok;
        b->workload_s = (double)rows[k].ok * 2;
        b->fail_message = rows[k].o == MP_OUT_CLEAN ? NULL : xstrdup("bad");
        b->launch_site = xstrdup("launcher");
        if (rows[k].sites)
            mp_strv_push(&b->sites, "site0");
        if (rows[k].missing)
            mp_attempt_add_dlv(b, "CUDA_LAUNCH_BLOCKING=1", MP_DLV_MISSING, "e");
        struct mp_diagnosis *dg = &rep.c[i].diag;
        dg->done = true;
        dg->requests_required = 47;
        dg->note = xstrdup("stale");
        mp_verdict_read_blocked(b, 47, rows[k].capped, rows[k].over, dg);
        assert_int_equal(dg->requests_clean, rows[k].ok);
        assert_int_equal(dg->launch_blocking, mp_lb_from_name(rows[k].lb));
        assert_true(dg->confidence == rows[k].conf);
        if (rows[k].note ? !dg->note || !strstr(dg->note, rows[k].note) : dg->note != NULL)
            fail_msg("%s: note '%s', want '%s'", rows[k].what, dg->note, rows[k].note);
        if (rows[k].pinned) {
            assert_string_equal(dg->pinned_site, rows[k].pinned);
            assert_string_equal(dg->launch_site, "launcher");
        }
        char *why = NULL;
        enum mp_verdict v = mp_verdict_decide(&rep.c[i], &why);
        if (v != rows[k].verdict)
            fail_msg("%s: verdict %s, want %s (%s)", rows[k].what, mp_verdict_name(v),
                     mp_verdict_name(rows[k].verdict), why);
        free(why);
        mp_report_release(&rep);
    }
}

static void test_throughput_ratio(void **st)
{
    (void)st;
    struct mp_report rep;
    mp_report_init(&rep, "/run");
    size_t i = cand(&rep, "a:");
    struct mp_attempt_result *n = att(&rep, i, MP_OUT_CRASH, false, "M");
    phase(n, "warmup", 1, 1, 0)->req_tok_s_p50 = 50;
    phase(n, "sequential", 1, 3, 0)->req_tok_s_p50 = 100;
    phase(n, "concurrency-8", 8, 8, 0)->req_tok_s_p50 = 10; /* contention: not compared */
    struct mp_attempt_result *b = att(&rep, i, MP_OUT_CLEAN, true, "M");
    phase(b, "warmup", 1, 1, 0)->req_tok_s_p50 = 40;
    NEAR(mp_verdict_throughput_ratio(&rep.c[i]), 0.8, 1e-9); /* warm-up: 40 / 50 */
    phase(b, "sequential", 1, 3, 0)->req_tok_s_p50 = 58;
    NEAR(mp_verdict_throughput_ratio(&rep.c[i]), 0.58, 1e-9); /* sequential first */
    i = cand(&rep, "b:");
    att(&rep, i, MP_OUT_CRASH, false, "M");
    assert_true(mp_verdict_throughput_ratio(&rep.c[i]) < 0); /* never blocked: unknown */
    mp_report_release(&rep);
}

/* ---- 4. groups and no-op knobs ---- */

static struct mp_attempt_result *resolved(struct mp_report *rep, const char *spec, const char *moe,
                                          const char *attn)
{
    size_t i = cand(rep, spec);
    struct mp_attempt_result *a = att(rep, i, MP_OUT_CLEAN, false, moe);
    a->res.attention_backend = dupn(attn);
    a->res.linear_kernel = xstrdup("CutlassNvFp4");
    mp_strv_push(&a->res.linear_kernels, "nvfp4=CutlassNvFp4");
    a->req_ok = 10;
    return a;
}

static const struct mp_noop *noop_of(const struct mp_report *rep, const char *c, const char *knob)
{
    for (size_t k = 0; k < rep->nnoop; k++)
        if (!strcmp(rep->noop[k].candidate, c) && !strcmp(rep->noop[k].knob, knob))
            return &rep->noop[k];
    return NULL;
}

static void test_groups_and_noop(void **st)
{
    (void)st;
    struct mp_report rep;
    mp_report_init(&rep, "/run");
    resolved(&rep, "auto:", "FC", "FLASHINFER");
    struct mp_attempt_result *e = resolved(&rep, "env: VLLM_SCALED_MM_BACKEND=marlin", "FC", "FLASHINFER");
    mp_strv_push(&e->res.unknown_env, "VLLM_SCALED_MM_BACKEND");
    mp_attempt_add_dlv(e, "VLLM_SCALED_MM_BACKEND=marlin", MP_DLV_VERIFIED, "seen");
    struct mp_attempt_result *fl =
        resolved(&rep, "flag: --moe-backend flashinfer_cutlass --max-num-seqs 8", "FC", "FLASHINFER");
    mp_attempt_add_dlv(fl, "--max-num-seqs 8", MP_DLV_UNVERIFIED, "given with its default");
    resolved(&rep, "mar: --moe-backend marlin", "MARLIN", "FLASHINFER");
    resolved(&rep, "mar2: VLLM_M=1", "MARLIN", "FLASHINFER");
    resolved(&rep, "att: --attention-backend TRITON_ATTN", "FC", "TRITON_ATTN");
    resolved(&rep, "nolog: --x 1", NULL, "FLASHINFER");
    mp_attempt_add_dlv(resolved(&rep, "miss: VLLM_Q=1", "FC", "FLASHINFER"), "VLLM_Q=1",
                       MP_DLV_MISSING, "e");
    mp_verdict_finalize(&rep);

    /* same destination, different road: {auto, env, flag} and {mar, mar2} */
    assert_int_equal(rep.ngroups, 2);
    assert_string_equal(rep.groups[0].moe_backend, "FC");
    assert_int_equal(rep.groups[0].candidates.n, 3);
    assert_string_equal(rep.groups[0].candidates.v[0], "auto");
    assert_string_equal(rep.groups[0].candidates.v[1], "env");
    assert_string_equal(rep.groups[0].candidates.v[2], "flag");
    assert_int_equal(rep.groups[1].candidates.n, 2);
    assert_string_equal(rep.groups[1].candidates.v[1], "mar2");

    /* no-op knobs: env words with the engine's warning, flag groups one by one */
    assert_int_equal(rep.nnoop, 3);
    const struct mp_noop *n = noop_of(&rep, "env", "VLLM_SCALED_MM_BACKEND=marlin");
    assert_non_null(n);
    assert_string_equal(n->resolved_like, "auto");
    assert_string_equal(n->engine_warning, "Unknown vLLM environment variable detected: "
                                           "VLLM_SCALED_MM_BACKEND");
    assert_string_equal(n->delivery, "verified");
    assert_null(n->delivery_evidence);
    n = noop_of(&rep, "flag", "--moe-backend flashinfer_cutlass");
    assert_non_null(n);
    assert_null(n->engine_warning);
    assert_null(n->delivery); /* not checked */
    n = noop_of(&rep, "flag", "--max-num-seqs 8");
    assert_non_null(n);
    assert_string_equal(n->delivery, "unverified");
    assert_string_equal(n->delivery_evidence, "given with its default");
    mp_report_release(&rep);

    /* a not-delivered candidate heads no group either */
    mp_report_init(&rep, "/run");
    mp_attempt_add_dlv(resolved(&rep, "miss: VLLM_Q=1", "FC", "FLASHINFER"), "VLLM_Q=1",
                       MP_DLV_MISSING, "e");
    resolved(&rep, "a: VLLM_A=1", "FC", "FLASHINFER");
    resolved(&rep, "b: VLLM_B=1", "FC", "FLASHINFER");
    mp_verdict_finalize(&rep);
    assert_int_equal(rep.ngroups, 1);
    assert_int_equal(rep.groups[0].candidates.n, 2);
    assert_string_equal(rep.groups[0].candidates.v[0], "a");
    mp_report_release(&rep);

    /* the knob-less candidate's backend not logged: no no-op claims */
    mp_report_init(&rep, "/run");
    resolved(&rep, "auto:", NULL, "FLASHINFER");
    resolved(&rep, "env: VLLM_A=1", NULL, "FLASHINFER");
    mp_verdict_finalize(&rep);
    assert_int_equal(rep.nnoop, 0);
    assert_int_equal(rep.ngroups, 0);
    mp_report_release(&rep);
}

/* ---- 5. the recommendation ---- */

struct rc {
    const char *spec;
    double seq, conc;        /* <0: no such phase */
    double ttft, tpot;       /* load-phase samples (ms); <0: none */
    enum mp_verdict verdict;
};

/* Build a report of stable (or other) candidates with these numbers. */
static void build(struct mp_report *rep, const struct rc *c, size_t n, enum mp_objective obj)
{
    mp_report_init(rep, "/run");
    rep->objective = obj;
    for (size_t i = 0; i < n; i++) {
        size_t k = cand(rep, c[i].spec);
        struct mp_attempt_result *a = att(rep, k, MP_OUT_CLEAN, false, "M");
        a->req_ok = 10;
        /* the warm-up is not a load phase: its huge latencies never count */
        struct mp_phase_result *w = phase(a, "warmup", 1, 1, 1);
        mp_hist_add(&w->m.ttft_ms, 1e6);
        mp_hist_add(&w->m.tpot_ms, 1e6);
        struct mp_phase_result *s = c[i].seq >= 0 ? phase(a, "sequential", 1, 3, c[i].seq) : NULL;
        struct mp_phase_result *p = c[i].conc >= 0 ? phase(a, "concurrency-4", 4, 8, c[i].conc) : NULL;
        struct mp_phase_result *q = phase(a, "quality", 1, 4, 1);
        mp_hist_add(&q->m.ttft_ms, 0.001); /* nor the output check's prompts */
        mp_hist_add(&q->m.tpot_ms, 0.001);
        struct mp_phase_result *lp = phase(a, "prefill-8192", 1, 3, 1);
        for (int r = 0; r < 20; r++) { /* nor long prefill: outnumbering the load samples */
            mp_hist_add(&lp->m.ttft_ms, 5e4);
            mp_hist_add(&lp->m.tpot_ms, 5e4);
        }
        for (int r = 0; r < 3 && c[i].ttft >= 0; r++) {
            /* two load phases: median over both */
            mp_hist_add(&(s ? s : p)->m.ttft_ms, c[i].ttft);
            mp_hist_add(&(p ? p : s)->m.ttft_ms, c[i].ttft);
        }
        for (int r = 0; r < 3 && c[i].tpot >= 0; r++)
            mp_hist_add(&(p ? p : s)->m.tpot_ms, c[i].tpot);
        rep->c[k].verdict = c[i].verdict ? c[i].verdict : MP_V_STABLE;
    }
}

static const char *pick(const struct rc *c, size_t n, enum mp_objective obj)
{
    struct mp_report rep;
    build(&rep, c, n, obj);
    int i = mp_verdict_pick(&rep);
    static char name[32];
    snprintf(name, sizeof(name), "%s", i >= 0 ? rep.c[i].cand.name : "(none)");
    mp_report_release(&rep);
    return name;
}

#define PICK(obj, want, ...)                                                              \
    do {                                                                                  \
        const struct rc c_[] = {__VA_ARGS__};                                             \
        assert_string_equal(pick(c_, MP_ARRAY_SIZE(c_), obj), want);                      \
    } while (0)

static void test_recommend_sequential(void **st)
{
    (void)st;
    enum mp_objective S = MP_OBJ_SEQUENTIAL;
    /* sequential tok/s decides */
    PICK(S, "b", {"a:", 90, 500, -1, -1, 0}, {"b: X=1", 100, 100, -1, -1, 0});
    /* the 1 % tie: 99 against 100 is exactly 1 % of the larger -> concurrency decides */
    PICK(S, "a", {"a:", 99, 200, -1, -1, 0}, {"b:", 100, 100, -1, -1, 0});
    /* just above 1 %: sequential decides */
    PICK(S, "b", {"a:", 98.9, 200, -1, -1, 0}, {"b:", 100, 100, -1, -1, 0});
    /* a tie on both: fewer knobs win, whichever comes first */
    PICK(S, "few", {"many: A=1 --moe-backend marlin", 100, 100, -1, -1, 0},
         {"few: --moe-backend marlin", 100.5, 100.5, -1, -1, 0});
    PICK(S, "few", {"few: --moe-backend marlin", 100, 100, -1, -1, 0},
         {"many: A=1 --moe-backend marlin", 100.5, 100.5, -1, -1, 0});
    /* a flag group is one knob: "--moe-backend marlin" (1) beats A=1 B=2 (2) */
    PICK(S, "flag", {"env: A=1 B=2", 100, 100, -1, -1, 0},
         {"flag: --moe-backend marlin", 100, 100, -1, -1, 0});
    /* a full tie: the earlier candidate */
    PICK(S, "a", {"a: X=1", 100, 100, -1, -1, 0}, {"b: Y=1", 100, 100, -1, -1, 0});
    /* within 1 % but the concurrency gap is real: not decided by knobs */
    PICK(S, "many", {"many: A=1 B=2", 100, 150, -1, -1, 0}, {"few:", 100, 100, -1, -1, 0});
    /* no sequential phase (--seq 0): concurrency decides */
    PICK(S, "b", {"a:", -1, 100, -1, -1, 0}, {"b: X=1", -1, 200, -1, -1, 0});
    /* a measured value beats an unknown one */
    PICK(S, "b", {"a:", -1, 900, -1, -1, 0}, {"b: X=1", 1, 1, -1, -1, 0});
    /* only stable candidates */
    PICK(S, "b", {"a:", 900, 900, -1, -1, MP_V_GARBAGE_OUTPUT}, {"b:", 1, 1, -1, -1, 0},
         {"c:", 900, 900, -1, -1, MP_V_NOT_DELIVERED}, {"d:", 900, 900, -1, -1, MP_V_ASYNC_RACE});
    PICK(S, "(none)", {"a:", 900, 900, -1, -1, MP_V_CRASHED});
}

static void test_recommend_objectives(void **st)
{
    (void)st;
    const struct rc two[] = {{"seqfast:", 1000, 60, 30, 20, 0}, {"concfast: X=1", 100, 400, 10, 5, 0}};
    assert_string_equal(pick(two, 2, MP_OBJ_SEQUENTIAL), "seqfast");
    assert_string_equal(pick(two, 2, MP_OBJ_THROUGHPUT), "concfast");
    assert_string_equal(pick(two, 2, MP_OBJ_TTFT), "concfast");
    assert_string_equal(pick(two, 2, MP_OBJ_TPOT), "concfast");
    enum mp_objective T = MP_OBJ_THROUGHPUT;
    /* throughput: concurrency within 1 % -> sequential decides, then knobs */
    PICK(T, "b", {"a:", 100, 404, -1, -1, 0}, {"b: X=1", 200, 400, -1, -1, 0}); /* 4 <= 4.04 */
    PICK(T, "a", {"a:", 100, 405, -1, -1, 0}, {"b: X=1", 200, 400, -1, -1, 0}); /* 5 > 4.05 */
    PICK(T, "a", {"a:", 100, 400, -1, -1, 0}, {"b: X=1", 100, 400, -1, -1, 0});
    /* ttft / tpot: the lower median wins, ties go to fewer knobs (histogram
     * buckets are about 1.5 % wide: equal latencies stand for a 1 % tie) */
    PICK(MP_OBJ_TTFT, "b", {"a:", 900, 900, 20, -1, 0}, {"b: X=1", 1, 1, 10, -1, 0});
    PICK(MP_OBJ_TTFT, "a", {"a: X=1", 1, 1, 100, -1, 0}, {"b: X=1 Y=2", 900, 900, 100, -1, 0});
    PICK(MP_OBJ_TPOT, "b", {"a:", 900, 900, -1, 8, 0}, {"b: X=1", 1, 1, -1, 4, 0});
    PICK(MP_OBJ_TPOT, "a", {"a:", 1, 1, -1, 4, 0}, {"b: X=1", 900, 900, -1, 4, 0});
    /* a candidate without latency samples loses to one with */
    PICK(MP_OBJ_TTFT, "b", {"a:", 900, 900, -1, -1, 0}, {"b: X=1", 1, 1, 500, -1, 0});
    /* the median is over the load phases only (not warm-up, quality or prefill-N) */
    struct mp_report rep;
    build(&rep, two, 2, MP_OBJ_TTFT);
    NEAR(mp_verdict_median_ttft_ms(mp_cand_primary(&rep.c[0])), 30, 0.4);
    NEAR(mp_verdict_median_tpot_ms(mp_cand_primary(&rep.c[1])), 5, 0.1);
    mp_report_release(&rep);
}

static void test_recommend_why(void **st)
{
    (void)st;
    static const struct { enum mp_objective obj; size_t n; const char *want; } rows[] = {
        {MP_OBJ_SEQUENTIAL, 2, "fastest of 2 stable candidates by sequential tok/s (--objective "
                               "sequential): 1000.0 tok/s sequential, 60.0 tok/s best concurrency; "
                               "MoE backend M; 0 failures in 10 requests (95% upper bound on the "
                               "failure rate 0.259)"},
        {MP_OBJ_SEQUENTIAL, 1, "the only stable candidate (objective: sequential tok/s, --objective "
                               "sequential): 1000.0 tok/s sequential"},
        {MP_OBJ_THROUGHPUT, 2, "fastest of 2 stable candidates by best concurrency tok/s "
                               "(--objective throughput): 400.0 tok/s best concurrency, 100.0 tok/s "
                               "sequential; MoE backend M"},
        {MP_OBJ_THROUGHPUT, 1, "the only stable candidate (objective: best concurrency tok/s, "
                               "--objective throughput): 60.0 tok/s best concurrency, 1000.0 tok/s "
                               "sequential; "},
        {MP_OBJ_TTFT, 2, "fastest of 2 stable candidates by median TTFT (--objective ttft): TTFT "
                         "p50 10.0 ms, 100.0 tok/s sequential, 400.0 tok/s best concurrency; "},
        {MP_OBJ_TTFT, 1, "the only stable candidate (objective: median TTFT, --objective ttft): "
                         "TTFT p50 30.0 ms"},
        {MP_OBJ_TPOT, 2, "fastest of 2 stable candidates by median TPOT (--objective tpot): TPOT "
                         "p50 5.00 ms, "},
        {MP_OBJ_TPOT, 1, "the only stable candidate (objective: median TPOT, --objective tpot): "
                         "TPOT p50 20.00 ms"},
    };
    const struct rc two[] = {{"seqfast:", 1000, 60, 30, 20, 0}, {"concfast: X=1", 100, 400, 10, 5, 0}};
    for (size_t k = 0; k < MP_ARRAY_SIZE(rows); k++) {
        struct mp_report rep;
        build(&rep, two, rows[k].n, rows[k].obj);
        mp_verdict_recommend(&rep);
        assert_true(rep.recommended >= 0);
        /* the sentence opens with the objective, whatever it is */
        if (strncmp(rep.recommendation_why, rows[k].want, strlen(rows[k].want)) != 0)
            fail_msg("'%s' does not start with '%s'", rep.recommendation_why, rows[k].want);
        assert_int_equal(rep.learned.n, 0);
        mp_report_release(&rep);
    }
}

static void test_learned(void **st)
{
    (void)st;
    struct mp_report rep;
    const struct rc none[] = {{"race:", 1, 1, -1, -1, MP_V_ASYNC_RACE},
                              {"junk:", 1, 1, -1, -1, MP_V_GARBAGE_OUTPUT},
                              {"nd: VLLM_X=1", 1, 1, -1, -1, MP_V_NOT_DELIVERED}};
    build(&rep, none, 3, MP_OBJ_SEQUENTIAL);
    rep.c[0].diag.throughput_ratio = 0.58;
    mp_attempt_add_dlv(&rep.c[2].attempts[0], "VLLM_X=1", MP_DLV_MISSING, "e");
    mp_verdict_recommend(&rep);
    assert_int_equal(rep.recommended, -1);
    assert_null(rep.recommendation_why);
    assert_int_equal(rep.learned.n, 3);
    assert_string_equal(rep.learned.v[0], "race works only with CUDA_LAUNCH_BLOCKING=1 at 0.58x speed");
    assert_string_equal(rep.learned.v[1], "junk serves without errors but its output is garbage");
    assert_string_equal(rep.learned.v[2], "nd was not tested: VLLM_X=1 did not reach the engine");
    mp_report_release(&rep);
    const struct rc crashed[] = {{"a:", 1, 1, -1, -1, MP_V_CRASHED}, {"b:", 1, 1, -1, -1, MP_V_NONE}};
    build(&rep, crashed, 2, MP_OBJ_SEQUENTIAL);
    rep.c[1].verdict = MP_V_NONE;
    mp_verdict_recommend(&rep);
    assert_int_equal(rep.learned.n, 1);
    assert_string_equal(rep.learned.v[0], "no candidate ran every phase without a failure");
    rep.c[1].unfinished = true;
    mp_verdict_recommend(&rep);
    assert_int_equal(rep.learned.n, 2);
    assert_string_equal(rep.learned.v[0], "no finished candidate ran every phase without a failure");
    assert_string_equal(rep.learned.v[1], "1 of 2 candidates are unfinished: the run stopped "
                                          "before it finished");
    mp_report_release(&rep);
}

static void test_objective_words(void **st)
{
    (void)st;
    enum mp_objective ob = MP_OBJ_TPOT;
    for (int o = 0; o < MP_OBJ_COUNT; o++) {
        assert_int_equal(mp_objective_from_name(mp_objective_name((enum mp_objective)o), &ob), 0);
        assert_int_equal(ob, o);
    }
    assert_int_equal(mp_objective_from_name("fastest", &ob), -1);
    assert_int_equal(mp_objective_from_name(NULL, &ob), -1);
    assert_int_equal(ob, MP_OBJ_TPOT);
    assert_string_equal(mp_objective_name(MP_OBJ_SEQUENTIAL), "sequential");
    assert_string_equal(mp_verdict_objective_label(MP_OBJ_SEQUENTIAL), "sequential tok/s");
    assert_string_equal(mp_verdict_objective_label(MP_OBJ_THROUGHPUT), "best concurrency tok/s");
    assert_string_equal(mp_verdict_objective_label(MP_OBJ_TTFT), "median TTFT");
    assert_string_equal(mp_verdict_objective_label(MP_OBJ_TPOT), "median TPOT");
    assert_string_equal(mp_verdict_objective_label(MP_OBJ_COUNT), "?");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decide_primary),
        cmocka_unit_test(test_output_check),
        cmocka_unit_test(test_shared_and_delivery),
        cmocka_unit_test(test_diagnosable),
        cmocka_unit_test(test_evidence_and_measure),
        cmocka_unit_test(test_thin_evidence_rerun),
        cmocka_unit_test(test_derived_diagnosis),
        cmocka_unit_test(test_read_blocked),
        cmocka_unit_test(test_throughput_ratio),
        cmocka_unit_test(test_groups_and_noop),
        cmocka_unit_test(test_recommend_sequential),
        cmocka_unit_test(test_recommend_objectives),
        cmocka_unit_test(test_recommend_why),
        cmocka_unit_test(test_learned),
        cmocka_unit_test(test_objective_words),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
