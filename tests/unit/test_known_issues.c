/* test_known_issues.c - the known-issue matcher (knowledge/issues.h) on
 * made-up facts: signature criteria gate every match, context criteria make
 * it exact or near (saying what differs) or leave it unconfirmed; near hits
 * only where nothing matches exactly; the table's entries are well formed. */
#include "compat.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "knowledge/issues.h"

static const char table[] =
    "{\"format\": 1, \"newest_version\": \"0.31.0\", \"known_issues\": ["
    " {\"id\": \"fi-sm120\", \"title\": \"FI CUTLASS rejected on SM120\", \"source\": "
    "\"https://example.org/1\", \"fixed_in\": \"vLLM 0.15.1\", \"workaround\": \"upgrade\","
    "  \"match\": {\"class\": \"unsupported-backend\", \"message\": \"FLASHINFER_CUTLASS\","
    "   \"device\": [\"sm120\", \"sm121\"], \"engine\": {\"from\": \"0.15.0\", \"until\": \"0.15.1\"}}},"
    " {\"id\": \"no-backend\", \"title\": \"No backend\", \"source\": \"https://example.org/2\","
    "  \"match\": {\"class\": \"no-moe-backend\", \"unless\": \"swiglu\", \"device\": \"sm120\"}},"
    " {\"id\": \"fp8-xid\", \"title\": \"FP8 dense Xid\", \"source\": \"https://example.org/3\","
    "  \"match\": {\"class\": \"illegal-address\", \"kernel\": \"FlashInferFP8ScaledMM\"}},"
    " {\"id\": \"tactics\", \"title\": \"Failed tactics\", \"source\": \"https://example.org/4\","
    "  \"match\": {\"class\": \"none\", \"finding\": [\"autotuner-tactics\"]}},"
    " {\"id\": \"w4a16\", \"title\": \"W4A16 dense\", \"source\": \"https://example.org/5\","
    "  \"match\": {\"kernel\": \"^linear:.*W4A16\", \"engine\": {\"from\": \"0.29.0\", \"until\": \"0.30.0\"}}}"
    "]}";

static struct mp_knowledge *load(void)
{
    struct mp_knowledge *k = NULL;
    struct mp_diag d = MP_DIAG_INIT;
    if (mp_knowledge_load_mem(table, strlen(table), &k, &d) != 0)
        fail_msg("table: %s", d.msg);
    return k;
}

static const struct mp_ki_hit *hit(const struct mp_ki_hits *h, const char *id)
{
    for (size_t i = 0; i < h->n; i++)
        if (!strcmp(h->v[i].issue->id, id))
            return &h->v[i];
    return NULL;
}

static void test_exact_near_unconfirmed(void **st)
{
    (void)st;
    struct mp_knowledge *k = load();
    const char *msgs[] = {"ValueError: NvFp4 MoE backend 'FLASHINFER_CUTLASS' does not support"};
    struct mp_ki_facts f = {.crash_class = "unsupported-backend", .messages = msgs, .nmessages = 1,
                            .device = "sm120", .engine_version = "0.15.0"};
    struct mp_ki_hits h;
    assert_int_equal(mp_ki_match(k, &f, &h), 1);
    assert_int_equal(h.v[0].kind, MP_KI_EXACT);
    assert_null(h.v[0].differs);
    assert_null(h.v[0].unconfirmed);
    struct buf b = BUF_INIT;
    mp_ki_hit_line(&h.v[0], &b);
    assert_non_null(strstr(b.data, "matches known issue fi-sm120 (FI CUTLASS rejected on SM120): "
                                   "fixed in vLLM 0.15.1 / workaround: upgrade"));
    buf_release(&b);
    mp_ki_hits_release(&h);

    /* the fix release: a near match that says so */
    f.engine_version = "0.19.0";
    assert_int_equal(mp_ki_match(k, &f, &h), 1);
    assert_int_equal(h.v[0].kind, MP_KI_NEAR);
    assert_non_null(strstr(h.v[0].differs, "vLLM 0.19.0 (known issue: >= 0.15.0, < 0.15.1)"));
    assert_non_null(strstr(h.v[0].differs, "at or after the fix (vLLM 0.15.1)"));
    b = (struct buf)BUF_INIT;
    mp_ki_hits_to_json(&h, &b);
    cJSON *j = cJSON_Parse(b.data);
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(j, 0), "match")->valuestring, "near");
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(j, 0), "source")->valuestring,
                        "https://example.org/1");
    cJSON_Delete(j);
    buf_release(&b);
    mp_ki_hits_release(&h);

    /* another device: near; no device, no version: exact, unconfirmed */
    f.engine_version = "0.15.0";
    f.device = "sm90";
    mp_ki_match(k, &f, &h);
    assert_int_equal(h.v[0].kind, MP_KI_NEAR);
    assert_non_null(strstr(h.v[0].differs, "device sm90 (known issue: sm120/sm121)"));
    mp_ki_hits_release(&h);
    f.device = NULL;
    f.engine_version = NULL;
    mp_ki_match(k, &f, &h);
    assert_int_equal(h.v[0].kind, MP_KI_EXACT);
    assert_non_null(strstr(h.v[0].unconfirmed, "the device is not known"));
    assert_non_null(strstr(h.v[0].unconfirmed, "the vLLM version is not known"));
    mp_ki_hits_release(&h);

    /* the signature gates: another class or message matches nothing */
    f.crash_class = "illegal-address";
    assert_int_equal(mp_ki_match(k, &f, &h), 0);
    mp_ki_hits_release(&h);
    mp_knowledge_free(k);
}

static void test_signatures(void **st)
{
    (void)st;
    struct mp_knowledge *k = load();
    struct mp_ki_hits h;
    /* unless vetoes */
    const char *sw[] = {"No NvFp4 MoE backend supports", "Model sets swiglu_limit=7.0"};
    struct mp_ki_facts f = {.crash_class = "no-moe-backend", .messages = sw, .nmessages = 2,
                            .device = "sm120"};
    assert_int_equal(mp_ki_match(k, &f, &h), 0);
    mp_ki_hits_release(&h);
    f.nmessages = 1;
    assert_int_equal(mp_ki_match(k, &f, &h), 1);
    assert_string_equal(h.v[0].issue->id, "no-backend");
    mp_ki_hits_release(&h);

    /* a kernel in the resolved selections or named by the error text */
    const char *kern[] = {"fp8:FlashInferFP8ScaledMMLinearKernel"};
    struct mp_ki_facts g = {.crash_class = "illegal-address", .kernels = kern, .nkernels = 1};
    assert_non_null((mp_ki_match(k, &g, &h), hit(&h, "fp8-xid")));
    mp_ki_hits_release(&h);
    const char *txt[] = {"gone with VLLM_DISABLED_KERNELS=FlashInferFP8ScaledMMLinearKernel"};
    struct mp_ki_facts g2 = {.crash_class = "illegal-address", .messages = txt, .nmessages = 1};
    assert_non_null((mp_ki_match(k, &g2, &h), hit(&h, "fp8-xid")));
    mp_ki_hits_release(&h);
    g2.nmessages = 0;
    assert_null((mp_ki_match(k, &g2, &h), hit(&h, "fp8-xid")));
    mp_ki_hits_release(&h);

    /* "none": no crash; a finding code */
    const char *codes[] = {"moe-backend", "autotuner-tactics"};
    struct mp_ki_facts t = {.findings = codes, .nfindings = 2};
    assert_non_null((mp_ki_match(k, &t, &h), hit(&h, "tactics")));
    mp_ki_hits_release(&h);
    t.crash_class = "illegal-instruction";
    assert_null((mp_ki_match(k, &t, &h), hit(&h, "tactics")));
    mp_ki_hits_release(&h);

    /* a crawl: no crash class named, a dense kernel in a version range */
    const char *w[] = {"linear:FlashInferCuteDslNvFp4W4A16LinearKernel"};
    struct mp_ki_facts c = {.kernels = w, .nkernels = 1, .engine_version = "0.29.0"};
    assert_int_equal((mp_ki_match(k, &c, &h), h.v[0].kind), MP_KI_EXACT);
    mp_ki_hits_release(&h);
    mp_knowledge_free(k);
}

/* An exact hit hides near ones (a near hit is a lead, not a name). */
static void test_near_only_without_exact(void **st)
{
    (void)st;
    struct mp_knowledge *k = load();
    const char *msgs[] = {"FLASHINFER_CUTLASS rejected"};
    const char *codes[] = {"autotuner-tactics"};
    const char *kern[] = {"linear:X_W4A16"};
    struct mp_ki_facts f = {.crash_class = "unsupported-backend", .messages = msgs, .nmessages = 1,
                            .kernels = kern, .nkernels = 1, .findings = codes, .nfindings = 1,
                            .device = "sm121", .engine_version = "0.29.0"};
    struct mp_ki_hits h;
    mp_ki_match(k, &f, &h);
    assert_int_equal(h.n, 1); /* w4a16 exact; fi-sm120 (version differs) not listed */
    assert_string_equal(h.v[0].issue->id, "w4a16");
    mp_ki_hits_release(&h);
    mp_knowledge_free(k);
}

/* The built-in table: at least 15 issues, each with a public source and a
 * signature; bad entries are load errors. */
static void test_table(void **st)
{
    (void)st;
    const struct mp_knowledge *k = mp_knowledge_builtin();
    assert_true(k->nissues >= 15);
    for (size_t i = 0; i < k->nissues; i++) {
        const struct mp_kn_issue *is = &k->issues[i];
        assert_true(!strncmp(is->source, "https://", 8));
        assert_true(is->nclasses || is->message || is->kernel || is->nfindings);
    }
    static const char *const bad[] = {
        "{\"format\": 1, \"newest_version\": \"0.1\", \"known_issues\": [{\"id\": \"a\", "
        "\"title\": \"t\", \"source\": \"http://x\", \"match\": {\"message\": \"x\"}}]}",
        "{\"format\": 1, \"newest_version\": \"0.1\", \"known_issues\": [{\"id\": \"a\", "
        "\"title\": \"t\", \"source\": \"https://x\", \"match\": {\"device\": \"sm120\"}}]}",
        "{\"format\": 1, \"newest_version\": \"0.1\", \"known_issues\": [{\"id\": \"a\", "
        "\"title\": \"t\", \"source\": \"https://x\", \"match\": {\"message\": \"(\"}}]}",
        "{\"format\": 1, \"newest_version\": \"0.1\", \"known_issues\": [{\"id\": \"a\", "
        "\"title\": \"t\", \"source\": \"https://x\", \"match\": {\"class\": \"boom\"}}]}",
        "{\"format\": 1, \"newest_version\": \"0.1\", \"known_issues\": [{\"id\": \"a\", "
        "\"title\": \"t\", \"source\": \"https://x\", \"match\": {\"message\": \"x\", \"color\": 1}}]}",
        "{\"format\": 1, \"newest_version\": \"0.1\", \"ngc_images\": [{\"tag\": \"26.03\", \"vllm\": \"x\", "
        "\"source\": \"https://x\"}]}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct mp_knowledge *kk = NULL;
        struct mp_diag d = MP_DIAG_INIT;
        if (mp_knowledge_load_mem(bad[i], strlen(bad[i]), &kk, &d) == 0)
            fail_msg("bad table %zu loaded", i);
        assert_null(kk);
    }
    char buf[16];
    assert_string_equal(mp_ki_device("12.1", buf, sizeof(buf)), "sm121");
    assert_string_equal(mp_ki_device("sm_120a", buf, sizeof(buf)), "sm120");
    assert_string_equal(mp_ki_device("9.0", buf, sizeof(buf)), "sm90");
    assert_null(mp_ki_device("gpu", buf, sizeof(buf)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exact_near_unconfirmed),
        cmocka_unit_test(test_signatures),
        cmocka_unit_test(test_near_only_without_exact),
        cmocka_unit_test(test_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
