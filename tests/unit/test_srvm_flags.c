/* test_srvm_flags.c - the server's-view flags (model/srvmetrics.h): a
 * phase is `queued` only when requests waited in a meaningful share of its
 * /metrics scrapes, not on one scrape that caught a burst of arrivals
 * (#16), with the threshold pinned exactly at its boundary; `preempted` on
 * any preemption; a phase stored without the count keeps the old rule. */
#include "compat.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <string.h>

#include "model/srvmetrics.h"
#include "observe/srvmetrics.h"

static void test_queued_rule(void **st)
{
    (void)st;
    static const struct {
        int scrapes, waiting;
        bool queued;
    } rows[] = {
        {0, 0, false},
        {4, 0, false},
        {4, 1, false},  /* one scrape is never enough, whatever the share */
        {1, 1, false},
        {2, 2, true},   /* the minimum: two scrapes */
        {8, 2, true},   /* exactly a quarter: queued */
        {9, 2, false},  /* just under a quarter */
        {12, 3, true},
        {13, 3, false},
        {60, 1, false}, /* a minute-long phase whose first tick caught the arrivals */
        {60, 14, false},
        {60, 15, true},
        {60, 60, true},
        {3, 4, false},  /* more waiting scrapes than scrapes: inconsistent, not queued */
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        if (mp_srvm_queued_rule(rows[i].scrapes, rows[i].waiting) != rows[i].queued)
            fail_msg("%d of %d scrapes waiting: want queued=%d", rows[i].waiting,
                     rows[i].scrapes, rows[i].queued);
    }
}

static void test_set_flags(void **st)
{
    (void)st;
    struct mp_server_metrics m;
    memset(&m, 0, sizeof(m));
    m.state = MP_SRVM_OK;
    m.scrapes = 20;
    m.waiting_max = 6;
    m.preemptions = 0;
    /* counted: the rule decides */
    m.waiting_counted = true;
    m.waiting_scrapes = 1;
    mp_srvm_set_flags(&m);
    assert_false(m.queued);
    assert_false(m.preempted);
    m.waiting_scrapes = 5; /* a quarter of 20 */
    mp_srvm_set_flags(&m);
    assert_true(m.queued);
    m.waiting_scrapes = 4;
    mp_srvm_set_flags(&m);
    assert_false(m.queued);
    /* nothing waited at all: never queued */
    m.waiting_max = 0;
    m.waiting_scrapes = 20;
    mp_srvm_set_flags(&m);
    assert_false(m.queued);
    /* not counted (stored before the count): any scrape that saw waiting */
    m.waiting_counted = false;
    m.waiting_scrapes = 0;
    m.waiting_max = 1;
    mp_srvm_set_flags(&m);
    assert_true(m.queued);
    m.waiting_max = -1; /* not exported */
    mp_srvm_set_flags(&m);
    assert_false(m.queued);
    /* preempted on any preemption; nothing flagged unless the phase was read */
    m.preemptions = 1;
    mp_srvm_set_flags(&m);
    assert_true(m.preempted);
    m.state = MP_SRVM_UNREADABLE;
    m.waiting_max = 5;
    mp_srvm_set_flags(&m);
    assert_false(m.preempted);
    assert_false(m.queued);
}

/* The collector counts the scrapes that saw requests waiting (a series
 * the engine does not export counts none), so the rule above decides. */
static void test_observe_counts(void **st)
{
    (void)st;
    struct mp_server_metrics m;
    memset(&m, 0, sizeof(m));
    struct mp_srvm_snap sn;
    memset(&sn, 0, sizeof(sn));
    const double waiting[] = {0, 3, 0, 0, 2, 0, 0, 0}; /* 2 of 8: exactly a quarter */
    for (size_t i = 0; i < sizeof(waiting) / sizeof(waiting[0]); i++) {
        sn.waiting = waiting[i];
        mp_srvm_observe(&m, &sn);
    }
    assert_int_equal(m.scrapes, 8);
    assert_true(m.waiting_counted);
    assert_int_equal(m.waiting_scrapes, 2);
    m.state = MP_SRVM_OK;
    mp_srvm_set_flags(&m);
    assert_true(m.queued);
    sn.waiting = 0; /* a ninth scrape without waiting: 2 of 9 */
    mp_srvm_observe(&m, &sn);
    mp_srvm_set_flags(&m);
    assert_false(m.queued);
    sn.waiting = __builtin_nan(""); /* not exported: not a waiting scrape */
    mp_srvm_observe(&m, &sn);
    assert_int_equal(m.waiting_scrapes, 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_queued_rule),
        cmocka_unit_test(test_set_flags),
        cmocka_unit_test(test_observe_counts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
