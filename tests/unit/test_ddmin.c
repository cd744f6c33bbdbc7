/* test_ddmin.c - delta debugging: results, 1-minimality, caching, errors. */
#include "compat.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verdict/ddmin.h"
#include "xalloc.h"

/* A test oracle over up to 16 items (n <= 16) or a plain predicate (any n). */
struct oracle {
    size_t n;
    int (*pred)(const struct oracle *o, const uint32_t *mask, const size_t *s, size_t k);
    uint32_t need;              /* items that must all be present */
    uint32_t alt;               /* or, alternatively, all of these */
    size_t culprit;             /* for the large-n test */
    unsigned calls;
    unsigned char seen[1 << 16]; /* how often each subset was tested (n <= 16) */
    int fail_at;                /* return an error on this call (1-based), 0 = never */
    unsigned progress_calls;
    unsigned last_progress_tests;
};

static int pred_need(const struct oracle *o, const uint32_t *mask, const size_t *s, size_t k)
{
    MP_UNUSED(s);
    MP_UNUSED(k);
    return (*mask & o->need) == o->need || (o->alt && (*mask & o->alt) == o->alt);
}

/* non-monotone: interesting iff item 0 present and an even number of items */
static int pred_parity(const struct oracle *o, const uint32_t *mask, const size_t *s, size_t k)
{
    MP_UNUSED(o);
    MP_UNUSED(s);
    return (*mask & 1u) && (k % 2 == 0);
}

static int pred_always(const struct oracle *o, const uint32_t *mask, const size_t *s, size_t k)
{
    MP_UNUSED(o);
    MP_UNUSED(mask);
    MP_UNUSED(s);
    MP_UNUSED(k);
    return 1;
}

static int pred_culprit(const struct oracle *o, const uint32_t *mask, const size_t *s, size_t k)
{
    MP_UNUSED(mask);
    for (size_t i = 0; i < k; i++)
        if (s[i] == o->culprit)
            return 1;
    return 0;
}

static int oracle_test(void *ud, const size_t *s, size_t k)
{
    struct oracle *o = ud;
    uint32_t mask = 0;
    o->calls++;
    if (o->fail_at && (int)o->calls == o->fail_at)
        return -1234;
    for (size_t i = 0; i < k; i++) {
        assert_true(s[i] < o->n);
        if (i > 0)
            assert_true(s[i - 1] < s[i]); /* ascending, distinct */
        if (s[i] < 32)
            mask |= 1u << s[i];
    }
    if (o->n <= 16) {
        assert_int_equal(o->seen[mask], 0); /* never the same subset twice */
        o->seen[mask]++;
        if (mask == (uint32_t)((1u << o->n) - 1))
            fail_msg("the full set must not be tested");
    }
    return o->pred(o, &mask, s, k);
}

static void on_progress(void *ud, unsigned tests, const size_t *s, size_t k)
{
    struct oracle *o = ud;
    MP_UNUSED(s);
    MP_UNUSED(k);
    assert_true(tests > o->last_progress_tests);
    o->last_progress_tests = tests;
    o->progress_calls++;
}

static struct oracle *new_oracle(size_t n, int (*pred)(const struct oracle *, const uint32_t *, const size_t *, size_t))
{
    struct oracle *o = xcalloc(1, sizeof(*o));
    o->n = n;
    o->pred = pred;
    return o;
}

/* Run ddmin, check the result is interesting and 1-minimal under the
 * oracle's predicate, and return it as a mask. */
static uint32_t run(struct oracle *o, struct mp_ddmin_stats *st)
{
    size_t *res = NULL, nres = 99;
    uint32_t mask = 0;
    int rc = mp_ddmin(o->n, oracle_test, o, &res, &nres, st, on_progress);
    assert_int_equal(rc, 0);
    assert_int_equal(st->tests_run, o->calls);
    assert_int_equal(o->progress_calls, o->calls);
    for (size_t i = 0; i < nres; i++)
        mask |= 1u << res[i];
    /* interesting (the full set counts as interesting by precondition) */
    if (nres < o->n)
        assert_true(o->pred(o, &mask, res, nres));
    /* 1-minimal: dropping any one element makes it uninteresting */
    for (size_t i = 0; i < nres; i++) {
        size_t sub[32], m = 0;
        for (size_t j = 0; j < nres; j++)
            if (j != i)
                sub[m++] = res[j];
        uint32_t sm = mask & ~(1u << res[i]);
        assert_false(o->pred(o, &sm, sub, m));
    }
    free(res);
    return mask;
}

static void test_single_culprit(void **state)
{
    struct mp_ddmin_stats st;
    MP_UNUSED(state);
    for (size_t c = 0; c < 8; c++) {
        struct oracle *o = new_oracle(8, pred_need);
        o->need = 1u << c;
        assert_int_equal(run(o, &st), 1u << c);
        assert_true(st.tests_run <= 8);
        free(o);
    }
}

static void test_two_needed_together(void **state)
{
    struct mp_ddmin_stats st;
    MP_UNUSED(state);
    struct oracle *o = new_oracle(8, pred_need);
    o->need = (1u << 2) | (1u << 6);
    assert_int_equal(run(o, &st), o->need);
    free(o);
    /* every pair position */
    for (size_t a = 0; a < 8; a++) {
        for (size_t b = a + 1; b < 8; b++) {
            o = new_oracle(8, pred_need);
            o->need = (1u << a) | (1u << b);
            assert_int_equal(run(o, &st), o->need);
            free(o);
        }
    }
}

static void test_all_needed(void **state)
{
    struct mp_ddmin_stats st;
    MP_UNUSED(state);
    struct oracle *o = new_oracle(4, pred_need);
    o->need = 0xf;
    assert_int_equal(run(o, &st), 0xfu);
    assert_int_equal(st.tests_run, 2 + 4 + 4); /* halves, singles, complements */
    free(o);
}

static void test_alternatives(void **state)
{
    struct mp_ddmin_stats st;
    MP_UNUSED(state);
    /* either {1,3} or {5} works: the result is one of them, 1-minimal */
    struct oracle *o = new_oracle(8, pred_need);
    o->need = (1u << 1) | (1u << 3);
    o->alt = 1u << 5;
    uint32_t r = run(o, &st);
    assert_true(r == o->need || r == o->alt);
    free(o);
}

static void test_random_monotone(void **state)
{
    struct mp_ddmin_stats st;
    uint32_t seed = 12345;
    unsigned hits = 0;
    MP_UNUSED(state);
    for (int iter = 0; iter < 300; iter++) {
        seed = seed * 1103515245u + 12345u;
        size_t n = 1 + (seed >> 16) % 16;
        seed = seed * 1103515245u + 12345u;
        uint32_t need = (seed >> 8) & ((1u << n) - 1);
        struct oracle *o = new_oracle(n, pred_need);
        o->need = need;
        /* conjunctive monotone predicate: exactly the needed set comes out */
        assert_int_equal(run(o, &st), need);
        hits += st.cache_hits;
        free(o);
    }
    /* repeated questions do come up (and were answered from the cache:
     * oracle_test fails on any subset asked twice) */
    assert_true(hits > 0);
}

static void test_non_monotone(void **state)
{
    struct mp_ddmin_stats st;
    MP_UNUSED(state);
    for (size_t n = 2; n <= 12; n += 2) {
        struct oracle *o = new_oracle(n, pred_parity);
        uint32_t r = run(o, &st); /* checks interesting + 1-minimal */
        assert_true(r & 1u);
        free(o);
    }
}

static void test_edges(void **state)
{
    struct mp_ddmin_stats st;
    size_t *res = (size_t *)&st, nres = 7;
    MP_UNUSED(state);

    /* n = 0: nothing to test */
    struct oracle *o = new_oracle(0, pred_always);
    assert_int_equal(mp_ddmin(0, oracle_test, o, &res, &nres, &st, NULL), 0);
    assert_null(res);
    assert_int_equal(nres, 0);
    assert_int_equal(o->calls, 0);
    free(o);

    /* the empty set is interesting already: nothing is needed */
    o = new_oracle(5, pred_always);
    assert_int_equal(run(o, &st), 0u);
    free(o);

    /* one item that is needed: only the empty set gets tested */
    o = new_oracle(1, pred_need);
    o->need = 1;
    assert_int_equal(run(o, &st), 1u);
    assert_int_equal(st.tests_run, 1);
    free(o);

    /* bad arguments */
    assert_int_equal(mp_ddmin(3, NULL, NULL, &res, &nres, NULL, NULL), -22);
    assert_int_equal(mp_ddmin(3, oracle_test, NULL, NULL, &nres, NULL, NULL), -22);
}

static void test_error_propagates(void **state)
{
    struct mp_ddmin_stats st;
    MP_UNUSED(state);
    for (int at = 1; at <= 6; at++) {
        size_t *res = (size_t *)&st, nres = 7;
        struct oracle *o = new_oracle(8, pred_need);
        o->need = (1u << 2) | (1u << 6);
        o->fail_at = at;
        assert_int_equal(mp_ddmin(8, oracle_test, o, &res, &nres, &st, NULL), -1234);
        assert_null(res);
        assert_int_equal(nres, 0);
        assert_int_equal(o->calls, (unsigned)at);
        assert_int_equal(st.tests_run, (unsigned)at); /* the failed call counts */
        free(o);
    }
}

static void test_large_n(void **state)
{
    struct mp_ddmin_stats st;
    size_t *res = NULL, nres = 0;
    MP_UNUSED(state);
    struct oracle *o = new_oracle(200, pred_culprit);
    o->culprit = 137; /* in the third 64-bit word of the cache keys */
    assert_int_equal(mp_ddmin(200, oracle_test, o, &res, &nres, &st, NULL), 0);
    assert_int_equal(nres, 1);
    assert_int_equal(res[0], 137);
    /* a single culprit is found by halving: about 2 log2(n) tests */
    assert_true(st.tests_run <= 2 * 8 + 1);
    free(res);
    free(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_single_culprit),
        cmocka_unit_test(test_two_needed_together),
        cmocka_unit_test(test_all_needed),
        cmocka_unit_test(test_alternatives),
        cmocka_unit_test(test_random_monotone),
        cmocka_unit_test(test_non_monotone),
        cmocka_unit_test(test_edges),
        cmocka_unit_test(test_error_propagates),
        cmocka_unit_test(test_large_n),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
