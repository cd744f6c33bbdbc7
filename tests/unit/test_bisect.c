/* test_bisect.c - the pure decisions of `moeprobe bisect` (verdict/bisect.h)
 * as tables: "same as good" under each --by, the next build to probe (bad
 * first, then good, then the middle; skips, ambiguity, a second change), the
 * required clean requests and the confidence. */
#include "compat.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "err.h"
#include "verdict/bisect.h"

static struct mp_probe_obs obs(enum mp_verdict v, const char *moe, const char *lin, double tok_s)
{
    return (struct mp_probe_obs){.usable = true, .verdict = v, .moe_backend = moe,
                                 .linear_kernel = lin, .tok_s = tok_s, .req_ok = 59};
}

static void test_judge(void **state)
{
    (void)state;
    struct mp_bisect_cfg verdict = {0}, resolved = {.by = MP_BY_RESOLVED},
                         slow = {.by = MP_BY_THROUGHPUT, .pct = 20},
                         slow50 = {.by = MP_BY_THROUGHPUT, .pct = 50};
    struct mp_probe_obs g = obs(MP_V_STABLE, "MARLIN", "CutlassNvFp4", 100);
    struct {
        const struct mp_bisect_cfg *cfg;
        struct mp_probe_obs o;
        enum mp_probe_outcome want;
        const char *why_has;
    } rows[] = {
        {&verdict, obs(MP_V_STABLE, "MARLIN", "CutlassNvFp4", 50), MP_PROBE_GOOD, "as the good"},
        {&verdict, obs(MP_V_ASYNC_RACE, "MARLIN", NULL, 100), MP_PROBE_BAD, "fails-under-load"},
        {&verdict, obs(MP_V_STABLE, "VLLM_CUTLASS", NULL, 100), MP_PROBE_BAD, "MoE backend"},
        {&verdict, obs(MP_V_STARTUP_FAILURE, NULL, NULL, -1), MP_PROBE_BAD, "fails-to-start"},
        {&verdict, obs(MP_V_NONE, "MARLIN", NULL, 100), MP_PROBE_SKIP, "no verdict"},
        {&resolved, obs(MP_V_CRASHED, "MARLIN", "CutlassNvFp4", 1), MP_PROBE_GOOD, "as the good"},
        {&resolved, obs(MP_V_STABLE, "MARLIN", "MarlinNvFp4", 100), MP_PROBE_BAD, "dense"},
        {&slow, obs(MP_V_STABLE, "MARLIN", NULL, 81), MP_PROBE_GOOD, "at or above"},
        {&slow, obs(MP_V_STABLE, "MARLIN", NULL, 79), MP_PROBE_BAD, "below"},
        /* "no more than PCT % below" (docs/bisect.md): exactly PCT below is the same */
        {&slow50, obs(MP_V_STABLE, "MARLIN", NULL, 50), MP_PROBE_GOOD, "at or above"},
        {&slow, obs(MP_V_CRASHED, "MARLIN", NULL, -1), MP_PROBE_BAD, "no sequential rate"},
    };
    char why[256];
    for (size_t i = 0; i < MP_ARRAY_SIZE(rows); i++) {
        enum mp_probe_outcome got = mp_bisect_judge(rows[i].cfg, &g, &rows[i].o, why, sizeof(why));
        if (got != rows[i].want || !strstr(why, rows[i].why_has))
            fail_msg("row %zu: %s (%s)", i, mp_probe_outcome_name(got), why);
    }
    /* a diagnosis refines a failure without changing its class */
    struct mp_probe_obs crashed_g = obs(MP_V_CRASHED, "MARLIN", NULL, 100);
    struct mp_probe_obs race = obs(MP_V_ASYNC_RACE, "MARLIN", NULL, 100);
    assert_int_equal(mp_bisect_judge(&verdict, &crashed_g, &race, why, sizeof(why)), MP_PROBE_GOOD);
    struct mp_probe_obs broken = race;
    broken.usable = false;
    assert_int_equal(mp_bisect_judge(&verdict, &g, &broken, why, sizeof(why)), MP_PROBE_SKIP);
    struct mp_probe_obs g_noms = obs(MP_V_STABLE, "MARLIN", NULL, -1);
    assert_int_equal(mp_bisect_judge(&slow, &g_noms, &g, why, sizeof(why)), MP_PROBE_SKIP);

    struct mp_bisect_cfg c;
    assert_int_equal(mp_bisect_parse_by("throughput:15", &c, why, sizeof(why)), 0);
    assert_true(c.by == MP_BY_THROUGHPUT && c.pct == 15);
    assert_int_equal(mp_bisect_parse_by("resolved", &c, why, sizeof(why)), 0);
    assert_int_equal(c.by, MP_BY_RESOLVED);
    assert_int_equal(mp_bisect_parse_by("throughput:0", &c, why, sizeof(why)), MP_EUSAGE);
    assert_int_equal(mp_bisect_parse_by("throughput:x", &c, why, sizeof(why)), MP_EUSAGE);
    assert_int_equal(mp_bisect_parse_by("speed", &c, why, sizeof(why)), MP_EUSAGE);
}

/* Run a whole search against a hidden change point: probes, in order. */
static size_t search(size_t m, size_t change, const bool *skip, size_t *order, long *first_bad,
                     struct mp_bisect_step *last)
{
    enum mp_probe_outcome out[64] = {0};
    size_t k = 0;
    for (;;) {
        mp_bisect_next(out, m, last);
        if (last->done)
            break;
        order[k++] = last->next;
        assert_int_equal(out[last->next], MP_PROBE_UNKNOWN); /* never probed twice */
        out[last->next] = skip && skip[last->next] ? MP_PROBE_SKIP
                          : last->next >= change   ? MP_PROBE_BAD
                                                   : MP_PROBE_GOOD;
        assert_true(k <= m);
    }
    *first_bad = last->first_bad;
    return k;
}

static void test_next(void **state)
{
    (void)state;
    size_t order[64];
    long fb;
    struct mp_bisect_step st;
    /* 9 builds, change at 6: bad (8), good (0), then the middle */
    size_t k = search(9, 6, NULL, order, &fb, &st);
    assert_int_equal(fb, 6);
    assert_int_equal(st.last_good, 5);
    assert_int_equal(order[0], 8);
    assert_int_equal(order[1], 0);
    assert_int_equal(order[2], 4);
    assert_true(k <= 2 + 3); /* log2(7 in between) */
    for (size_t m = 2; m <= 40; m++) {
        for (size_t change = 1; change < m; change++) {
            unsigned bound = 2;
            while ((1ul << (bound - 2)) < m - 1)
                bound++;
            k = search(m, change, NULL, order, &fb, &st);
            assert_int_equal(fb, (long)change);
            assert_int_equal(st.last_good, (long)change - 1);
            assert_true(k <= bound);
            assert_false(st.ambiguous || st.inconsistent);
        }
    }
    /* skipped builds around the change: an ambiguous answer, never a wrong one */
    bool skip[9] = {false, false, false, false, false, true, true, false, false};
    search(9, 6, skip, order, &fb, &st);
    assert_true(st.done && st.ambiguous);
    assert_true(st.last_good == 4 && fb == 7);
    /* the two-build case: bad, good, done */
    k = search(2, 1, NULL, order, &fb, &st);
    assert_int_equal(k, 2);
    assert_true(fb == 1 && st.last_good == 0);
    /* the bad build came out like the good one: nothing to bisect */
    enum mp_probe_outcome same[5] = {MP_PROBE_GOOD, 0, 0, 0, MP_PROBE_GOOD};
    mp_bisect_next(same, 5, &st);
    assert_true(st.done && st.first_bad == -1);
    /* a good build above the first bad one: flagged */
    enum mp_probe_outcome two[5] = {MP_PROBE_GOOD, MP_PROBE_BAD, 0, MP_PROBE_GOOD, MP_PROBE_BAD};
    mp_bisect_next(two, 5, &st);
    assert_true(st.done && st.inconsistent && st.first_bad == 1);
}

static void test_required(void **state)
{
    (void)state;
    char why[512];
    double p;
    /* failed after 2 requests, then after 9: p = 2 / 12 */
    struct mp_stats_attempt bad[2] = {{2, true}, {9, true}};
    unsigned long n = mp_bisect_required(bad, 2, 0, &p, why, sizeof(why));
    assert_true(fabs(p - 2.0 / 13.0) < 1e-9 || fabs(p - 2.0 / 11.0) < 1e-9);
    assert_int_equal(n, mp_stats_required_n(p));
    assert_true(pow(1 - p, (double)n) <= 0.05 && pow(1 - p, (double)(n - 1)) > 0.05);
    assert_non_null(strstr(why, "95 %"));
    /* --probe-requests wins, p is still measured */
    assert_int_equal(mp_bisect_required(bad, 2, 500, &p, why, sizeof(why)), 500);
    assert_true(p > 0);
    /* no failed request: no extra load */
    struct mp_stats_attempt clean[1] = {{59, false}};
    assert_int_equal(mp_bisect_required(clean, 1, 0, &p, why, sizeof(why)), 0);
    assert_true(p == 0);
    assert_int_equal(mp_bisect_required(NULL, 0, 0, &p, why, sizeof(why)), 0);
    /* confidence: required requests give at least 0.95 */
    double c = mp_bisect_confidence(0.1, mp_stats_required_n(0.1), why, sizeof(why));
    assert_true(c >= 0.95 && c < 0.96);
    assert_true(mp_bisect_confidence(0.1, 10, why, sizeof(why)) < 0.7);
    assert_true(mp_bisect_confidence(0, 0, why, sizeof(why)) == 1.0);
    /* exactly 1 - (1 - p)^n over the n clean requests served (docs/bisect.md
     * "Confidence"): 15 clean against p = 0.25 */
    assert_true(fabs(mp_bisect_confidence(0.25, 15, why, sizeof(why)) - (1 - pow(0.75, 15))) < 1e-12);
    assert_non_null(strstr(why, "15 clean requests"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_judge),
        cmocka_unit_test(test_next),
        cmocka_unit_test(test_required),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
