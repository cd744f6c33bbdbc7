/* Unit tests: what knob delivery does to a report - a candidate with a
 * missing knob is not-delivered (never recommended, grouped or a no-op
 * knob), unverified delivery is stated next to the result and in
 * noop_knobs, and every format shows candidates[].knob_delivery. */
#include "compat.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "buf.h"
#include "report/report.h"
#include "xalloc.h"

const char mp_version[] = "0.0.0-test";

static void add(struct mp_report *rep, const char *name, const char *knobs, double seq_tok_s,
                const char *dlv_knob, enum mp_dlv_status st)
{
    struct mp_candidate c;
    assert_int_equal(mp_candidate_from_knobs(name, knobs, &c, NULL), 0);
    size_t i = mp_report_add_candidate(rep, &c);
    mp_candidate_release(&c);
    struct mp_attempt_result a;
    memset(&a, 0, sizeof(a));
    a.dir = xasprintf("/nonexistent/attempts/%s-1", name);
    a.index = 1;
    a.outcome = MP_OUT_CLEAN;
    a.res.moe_backend = xstrdup("MARLIN");
    a.req_ok = 12;
    a.nphases = 1;
    snprintf(a.phases[0].name, sizeof(a.phases[0].name), "sequential");
    a.phases[0].ok = 12;
    a.phases[0].tok_s = seq_tok_s;
    if (dlv_knob)
        mp_attempt_add_dlv(&a, dlv_knob, st,
                           st == MP_DLV_MISSING      ? "none of the 2 processes has it"
                           : st == MP_DLV_VERIFIED   ? "pid 7 has it"
                                                     : "no non-default args line");
    mp_report_add_attempt(rep, i, &a);
}

static void test_rules(void **state)
{
    (void)state;
    struct mp_report rep;
    mp_report_init(&rep, "/nonexistent");
    add(&rep, "auto", "", 100, NULL, MP_DLV_VERIFIED);
    add(&rep, "envm", "VLLM_X=1", 110, "VLLM_X=1", MP_DLV_VERIFIED);
    add(&rep, "drop", "VLLM_Y=1", 500, "VLLM_Y=1", MP_DLV_MISSING); /* the fastest */
    add(&rep, "flagu", "--foo 1", 90, "--foo 1", MP_DLV_UNVERIFIED);
    mp_report_finalize(&rep);
    assert_string_equal(mp_verdict_name(rep.c[2].verdict), "not-delivered");
    assert_non_null(strstr(rep.c[2].why, "VLLM_Y=1 did not reach the engine"));
    assert_string_equal(mp_verdict_name(rep.c[1].verdict), "stable");
    assert_string_equal(mp_verdict_name(rep.c[3].verdict), "stable");
    assert_int_equal(rep.recommended, 1); /* envm, not the faster drop */
    assert_int_equal(rep.ngroups, 1);
    assert_int_equal(rep.groups[0].candidates.n, 3);
    for (size_t k = 0; k < rep.groups[0].candidates.n; k++)
        assert_string_not_equal(rep.groups[0].candidates.v[k], "drop");
    assert_int_equal(rep.nnoop, 2);
    for (size_t k = 0; k < rep.nnoop; k++)
        assert_string_not_equal(rep.noop[k].candidate, "drop");
    assert_string_equal(rep.noop[0].knob, "VLLM_X=1");
    assert_string_equal(rep.noop[0].delivery, "verified");
    assert_null(rep.noop[0].delivery_evidence);
    assert_string_equal(rep.noop[1].knob, "--foo 1");
    assert_string_equal(rep.noop[1].delivery, "unverified");
    assert_string_equal(rep.noop[1].delivery_evidence, "no non-default args line");

    struct buf b = BUF_INIT;
    mp_report_json(&rep, &b);
    cJSON *j = cJSON_Parse(b.data);
    assert_non_null(j);
    cJSON *c2 = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "candidates"), 2);
    cJSON *kd = cJSON_GetArrayItem(cJSON_GetObjectItem(c2, "knob_delivery"), 0);
    assert_string_equal(cJSON_GetObjectItem(kd, "knob")->valuestring, "VLLM_Y=1");
    assert_string_equal(cJSON_GetObjectItem(kd, "status")->valuestring, "missing");
    assert_non_null(cJSON_GetObjectItem(kd, "evidence"));
    cJSON *n1 = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "noop_knobs"), 1);
    assert_string_equal(cJSON_GetObjectItem(n1, "delivery")->valuestring, "unverified");
    assert_string_equal(cJSON_GetObjectItem(n1, "delivery_evidence")->valuestring,
                        "no non-default args line");
    cJSON_Delete(j);
    buf_reset(&b);
    mp_report_markdown(&rep, &b);
    assert_non_null(strstr(b.data, "| stable (knob delivery unverified: --foo 1) |"));
    assert_non_null(strstr(b.data, "`VLLM_Y=1` **missing**: none of the 2 processes has it"));
    assert_non_null(strstr(b.data, "its delivery to the engine is unverified (no non-default args line)"));
    buf_reset(&b);
    mp_report_html(&rep, &b);
    assert_non_null(strstr(b.data, "v-not-delivered"));
    assert_non_null(strstr(b.data, "dlv-missing"));
    assert_non_null(strstr(b.data, "knob delivery unverified: --foo 1"));
    buf_release(&b);
    mp_report_release(&rep);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rules),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
