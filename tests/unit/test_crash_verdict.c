/* test_crash_verdict.c - the rules that turn a GPU fault's record into
 * what a candidate is said to be (#24): a hardware or driver Xid voids a
 * diagnosis (verdict/sysxid.h, a table over verdicts and causes); which
 * kernel a candidate's crash is reported with and whether it only surfaced
 * there (mp_cand_kernel); the words next to the verdict (report/crash.h);
 * the record's JSON form survives a round trip (the store keeps it so). */
#include "compat.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "model/gpufault.h"
#include "model/report.h"
#include "report/crash.h"
#include "verdict/sysxid.h"
#include "xalloc.h"

static void add_xid(struct mp_attempt_result *a, int xid, const char *cause)
{
    struct mp_xid_record x = {.xid = xid, .source = "kmsg", .cause = (char *)cause,
                              .detail = "words", .t_s = 1.0};
    mp_gpu_fault_add_xid(&a->fault, &x);
}

static void add_kernel(struct mp_attempt_result *a, const char *name, const char *label,
                       bool exception)
{
    struct mp_kernel_fault k = {.name = (char *)name, .short_name = (char *)name,
                                .family_label = (char *)label, .device = -1, .sm = -1, .warp = -1,
                                .exception = exception ? "CUDBG_EXCEPTION_WARP_ILLEGAL_ADDRESS" : NULL,
                                .line = 7};
    mp_gpu_fault_add_kernel(&a->fault, &k);
}

/* a candidate with n attempts (the last one blocked when blocked) */
static void cand(struct mp_cand_report *c, size_t n, bool blocked)
{
    memset(c, 0, sizeof(*c));
    c->attempts = xcalloc(n, sizeof(*c->attempts));
    c->nattempts = n;
    for (size_t i = 0; i < n; i++) {
        c->attempts[i].dir = xasprintf("/run/attempts/x-%zu", i + 1);
        c->attempts[i].outcome = MP_OUT_CRASH;
        c->attempts[i].launch_blocking = blocked && i == n - 1;
    }
}

static void cand_free(struct mp_cand_report *c)
{
    for (size_t i = 0; i < c->nattempts; i++)
        mp_attempt_result_release(&c->attempts[i]);
    free(c->attempts);
}

static void test_sysxid_table(void **st)
{
    (void)st;
    static const struct {
        enum mp_verdict in;
        int xid;
        const char *cause;     /* NULL: no Xid */
        enum mp_verdict out;
        const char *says;      /* in the new sentence, NULL: unchanged */
    } rows[] = {
        {MP_V_KERNEL_FAULT, 79, "hardware", MP_V_CRASHED, "not evidence about the kernel"},
        {MP_V_ASYNC_RACE, 48, "hardware", MP_V_CRASHED, "diagnosis is void"},
        {MP_V_KERNEL_FAULT, 119, "driver", MP_V_CRASHED, "Xid 119 (driver"},
        {MP_V_KERNEL_FAULT, 31, "application", MP_V_KERNEL_FAULT, NULL},
        {MP_V_ASYNC_RACE, 13, "application", MP_V_ASYNC_RACE, NULL},
        {MP_V_KERNEL_FAULT, 154, "informational", MP_V_KERNEL_FAULT, NULL},
        {MP_V_KERNEL_FAULT, 999, "unknown", MP_V_KERNEL_FAULT, NULL},
        {MP_V_KERNEL_FAULT, 0, NULL, MP_V_KERNEL_FAULT, NULL},
        {MP_V_CRASHED, 79, "hardware", MP_V_CRASHED, "a hardware failure, not evidence"},
        {MP_V_HANG, 119, "driver", MP_V_HANG, "a driver failure"},
        {MP_V_SERVER_ERROR, 74, "hardware", MP_V_SERVER_ERROR, "Xid 74"},
        {MP_V_STABLE, 48, "hardware", MP_V_STABLE, "note:"},
        {MP_V_NONE, 79, "hardware", MP_V_NONE, NULL},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        struct mp_cand_report c;
        cand(&c, 2, true);
        if (rows[i].cause)
            add_xid(&c.attempts[1], rows[i].xid, rows[i].cause);
        add_xid(&c.attempts[0], 13, "application");
        char *why = NULL;
        enum mp_verdict v = mp_verdict_sysxid(&c, rows[i].in, "the old sentence", &why);
        if (v != rows[i].out || (rows[i].says == NULL) != (why == NULL) ||
            (why && !strstr(why, rows[i].says)))
            fail_msg("row %zu: %s with Xid %d (%s): got %s '%s'", i, mp_verdict_name(rows[i].in),
                     rows[i].xid, rows[i].cause ? rows[i].cause : "none", mp_verdict_name(v),
                     why ? why : "(unchanged)");
        if (why && rows[i].in == MP_V_KERNEL_FAULT && v == MP_V_CRASHED &&
            !strstr(why, "it read as kernel-fault: the old sentence"))
            fail_msg("row %zu: the voided verdict is not said: %s", i, why);
        free(why);
        cand_free(&c);
    }
}

/* the blocked run's kernel wins and is not "surfaced only"; without one,
 * the first normal attempt's, surfaced only; a hang's kernel (no
 * exception) is not a crash's */
static void test_cand_kernel(void **st)
{
    (void)st;
    struct mp_cand_report c;
    struct mp_cand_kernel ck;
    cand(&c, 3, true);
    assert_false(mp_cand_kernel(&c, &ck));
    add_kernel(&c.attempts[0], "spin_kernel", NULL, false);
    assert_false(mp_cand_kernel(&c, &ck));
    add_kernel(&c.attempts[1], "consumer", "Marlin MoE", true);
    assert_true(mp_cand_kernel(&c, &ck));
    assert_string_equal(ck.k->name, "consumer");
    assert_true(ck.surfaced_only);
    assert_ptr_equal(ck.a, &c.attempts[1]);
    char *note = mp_rep_kernel_note(&c);
    assert_string_equal(note, "surfaced in consumer (Marlin MoE)");
    free(note);
    add_kernel(&c.attempts[2], "faulty", "CUTLASS grouped GEMM", true);
    assert_true(mp_cand_kernel(&c, &ck));
    assert_string_equal(ck.k->name, "faulty");
    assert_false(ck.surfaced_only);
    note = mp_rep_kernel_note(&c);
    assert_string_equal(note, "in faulty (CUTLASS grouped GEMM)");
    free(note);
    struct buf md = BUF_INIT;
    mp_rep_kernel_note_md(&md, &c, 0);
    assert_string_equal(md.data, " in `faulty` (CUTLASS grouped GEMM)");
    buf_release(&md);
    cand_free(&c);
}

static void test_json_round_trip(void **st)
{
    (void)st;
    struct mp_attempt_result a;
    memset(&a, 0, sizeof(a));
    add_kernel(&a, "k<int>(float*)", "Fam", true);
    a.fault.k[0].pc = 0x7f00ULL;
    a.fault.k[0].has_pc = true;
    a.fault.k[0].device = 0;
    a.fault.k[0].pid = 42;
    a.fault.k[0].mangled = xstrdup("_Z1kIiEvPf");
    add_xid(&a, 31, "application");
    a.fault.x[0].pid = 552;
    a.fault.coredump = xstrdup("on: x");
    a.fault.kmsg = xstrdup("kernel log not readable: no CAP_SYSLOG");
    a.fault.other_xids = 3;
    cJSON *j = mp_gpu_fault_to_json(&a.fault, "attempts/a-1");
    char *text = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    struct mp_gpu_fault back;
    cJSON *p = cJSON_Parse(text);
    mp_gpu_fault_from_json(&back, p);
    cJSON_Delete(p);
    assert_int_equal(back.nk, 1);
    assert_string_equal(back.k[0].name, "k<int>(float*)");
    assert_string_equal(back.k[0].mangled, "_Z1kIiEvPf");
    assert_true(back.k[0].has_pc && back.k[0].pc == 0x7f00ULL);
    assert_int_equal(back.k[0].device, 0);
    assert_int_equal(back.k[0].sm, -1);
    assert_int_equal(back.k[0].pid, 42);
    assert_int_equal(back.k[0].line, 7);
    assert_string_equal(back.k[0].exception, "CUDBG_EXCEPTION_WARP_ILLEGAL_ADDRESS");
    assert_int_equal(back.nx, 1);
    assert_int_equal(back.x[0].xid, 31);
    assert_int_equal(back.x[0].pid, 552);
    assert_string_equal(back.x[0].cause, "application");
    assert_string_equal(back.kmsg, "kernel log not readable: no CAP_SYSLOG");
    assert_int_equal(back.other_xids, 3);
    assert_true(strstr(text, "\"evidence\":\"attempts/a-1/server.log:7\"") != NULL);
    /* damaged text: nothing known */
    struct mp_gpu_fault none;
    mp_gpu_fault_from_json(&none, NULL);
    assert_true(mp_gpu_fault_empty(&none));
    free(text);
    mp_gpu_fault_release(&back);
    mp_attempt_result_release(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sysxid_table),
        cmocka_unit_test(test_cand_kernel),
        cmocka_unit_test(test_json_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
