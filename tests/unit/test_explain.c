/* test_explain.c - mp_kn_explain: statuses per vLLM era, predictions,
 * overrides, secrets, the closing sentence. */
#include "compat.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "knowledge/knowledge.h"
#include "secret.h"

static const struct mp_kn_knob_report *find(const struct mp_explain *e, const char *name)
{
    for (size_t i = 0; i < e->nknobs; i++)
        if (!strcmp(e->knobs[i].name, name))
            return &e->knobs[i];
    fail_msg("knob %s not reported", name);
    return NULL;
}

static void run(const char *ver, char **env, size_t nenv, char **flags, size_t nflags,
                struct mp_explain *e)
{
    assert_int_equal(mp_kn_explain(mp_knowledge_builtin(), ver, env, nenv, flags, nflags, e), 0);
}

static void test_scaled_mm(void **st)
{
    (void)st;
    char *env[] = {"VLLM_SCALED_MM_BACKEND=marlin", "VLLM_NVFP4_GEMM_BACKEND=marlin"};
    struct mp_explain e;
    run("0.17.0", env, 2, NULL, 0, &e);
    assert_true(e.version_known);
    assert_string_equal(e.engine_version, "0.17.0");
    const struct mp_kn_knob_report *r = find(&e, "VLLM_SCALED_MM_BACKEND");
    assert_string_equal(r->status, "unknown-to-engine");
    assert_string_equal(r->affects, "none");
    assert_string_equal(r->kind, "env");
    r = find(&e, "VLLM_NVFP4_GEMM_BACKEND");
    assert_string_equal(r->status, "no-moe-effect");
    assert_string_equal(r->affects, "linear");
    assert_null(e.predicted_moe_backend);
    assert_non_null(strstr(e.prediction_reason, "run qualify"));
    assert_non_null(strstr(e.summary, "VLLM_SCALED_MM_BACKEND is not a vLLM variable in any "
                                      "upstream release"));
    assert_non_null(strstr(e.summary, "moeprobe minimize"));
    mp_kn_explain_release(&e);
}

static void test_moe_backend_flag(void **st)
{
    (void)st;
    char *flags[] = {"--moe-backend", "cutlass", "--enforce-eager", "--max-model-len=8192"};
    struct mp_explain e;
    run("0.17.0", NULL, 0, flags, 4, &e);
    assert_string_equal(e.predicted_moe_backend, "VLLM_CUTLASS");
    const struct mp_kn_knob_report *r = find(&e, "--moe-backend");
    assert_string_equal(r->knob, "--moe-backend cutlass");
    assert_string_equal(r->status, "active");
    assert_string_equal(r->affects, "moe");
    assert_string_equal(find(&e, "--enforce-eager")->knob, "--enforce-eager");
    assert_string_equal(find(&e, "--max-model-len")->affects, "unknown");
    mp_kn_explain_release(&e);

    run("0.15.1", NULL, 0, flags, 2, &e);
    assert_null(e.predicted_moe_backend);
    assert_string_equal(find(&e, "--moe-backend")->status, "not-yet-available");
    assert_non_null(strstr(e.summary, "--moe-backend does not exist in vLLM 0.15.1"));
    mp_kn_explain_release(&e);

    char *bad[] = {"--moe-backend=triton"};
    run("0.20.0", NULL, 0, bad, 1, &e);
    assert_null(e.predicted_moe_backend);
    assert_non_null(strstr(find(&e, "--moe-backend")->note, "ValueError"));
    mp_kn_explain_release(&e);

    char *kc[] = {"--kernel-config", "{\"moe_backend\": \"flashinfer_b12x\"}"};
    run("0.30.0", NULL, 0, kc, 2, &e);
    assert_string_equal(e.predicted_moe_backend, "FLASHINFER_B12X");
    mp_kn_explain_release(&e);
}

static void test_env_rules(void **st)
{
    (void)st;
    char *env[] = {"VLLM_TEST_FORCE_FP8_MARLIN=1", "VLLM_USE_FLASHINFER_MOE_FP4=0"};
    struct mp_explain e;
    run("0.17.0", env, 2, NULL, 0, &e);
    assert_string_equal(e.predicted_moe_backend, "MARLIN");
    assert_string_equal(find(&e, "VLLM_USE_FLASHINFER_MOE_FP4")->status, "active");
    mp_kn_explain_release(&e);

    /* PR #43148 (first in v0.22) deprecated the FlashInfer variables, not
     * VLLM_TEST_FORCE_FP8_MARLIN; on v0.21 nothing was deprecated yet */
    run("0.22.0", env, 2, NULL, 0, &e);
    assert_string_equal(e.predicted_moe_backend, "MARLIN");
    assert_string_equal(find(&e, "VLLM_TEST_FORCE_FP8_MARLIN")->status, "active");
    assert_string_equal(find(&e, "VLLM_USE_FLASHINFER_MOE_FP4")->status, "deprecated");
    mp_kn_explain_release(&e);
    run("0.21.0", env, 2, NULL, 0, &e);
    assert_string_equal(find(&e, "VLLM_USE_FLASHINFER_MOE_FP4")->status, "active");
    mp_kn_explain_release(&e);

    /* removed only in v0.28 (PR #52182); the 0.23-0.27 no-op is uncertain */
    run("0.27.1", env, 1, NULL, 0, &e);
    assert_true(find(&e, "VLLM_TEST_FORCE_FP8_MARLIN")->uncertain);
    assert_non_null(strstr(find(&e, "VLLM_TEST_FORCE_FP8_MARLIN")->note, "uncertain"));
    mp_kn_explain_release(&e);
    run("0.28.0", env, 1, NULL, 0, &e);
    assert_string_equal(find(&e, "VLLM_TEST_FORCE_FP8_MARLIN")->status, "removed");
    assert_false(find(&e, "VLLM_TEST_FORCE_FP8_MARLIN")->uncertain);
    mp_kn_explain_release(&e);

    run("0.26.0", env, 2, NULL, 0, &e);
    assert_null(e.predicted_moe_backend);
    assert_string_equal(find(&e, "VLLM_USE_FLASHINFER_MOE_FP4")->status, "removed");
    assert_string_equal(find(&e, "VLLM_TEST_FORCE_FP8_MARLIN")->status, "no-moe-effect");
    mp_kn_explain_release(&e);

    run("0.14.0", env, 1, NULL, 0, &e);
    assert_null(e.predicted_moe_backend); /* before the oracle: FP8 only */
    mp_kn_explain_release(&e);

    /* FP4=1 comes first in the oracle: no MARLIN prediction */
    char *env2[] = {"VLLM_TEST_FORCE_FP8_MARLIN=1", "VLLM_USE_FLASHINFER_MOE_FP4=1"};
    run("0.17.0", env2, 2, NULL, 0, &e);
    assert_null(e.predicted_moe_backend);
    mp_kn_explain_release(&e);

    /* an explicit flag overrides the env rule */
    char *flags[] = {"--moe-backend", "cutlass"};
    run("0.17.0", env, 2, flags, 2, &e);
    assert_string_equal(e.predicted_moe_backend, "VLLM_CUTLASS");
    assert_string_equal(find(&e, "VLLM_TEST_FORCE_FP8_MARLIN")->status, "overridden");
    assert_non_null(strstr(e.summary, "overridden"));
    mp_kn_explain_release(&e);
}

/* --moe-backend is an argparse choice of the version's MoEBackend literal:
 * exact spelling; --kernel-config JSON is normalised. */
static void test_moe_backend_choices(void **st)
{
    (void)st;
    struct mp_explain e;
    char *hum[] = {"--moe-backend", "humming"};
    run("0.18.0", NULL, 0, hum, 2, &e);
    assert_null(e.predicted_moe_backend);
    assert_non_null(strstr(find(&e, "--moe-backend")->note, "invalid choice"));
    assert_non_null(strstr(find(&e, "--moe-backend")->note, "exit status 2"));
    assert_non_null(strstr(e.summary, "will not start"));
    mp_kn_explain_release(&e);
    run("0.26.0", NULL, 0, hum, 2, &e);
    assert_string_equal(e.predicted_moe_backend, "HUMMING");
    mp_kn_explain_release(&e);

    char *b12x[] = {"--moe-backend", "b12x"};
    run("0.27.1", NULL, 0, b12x, 2, &e);
    assert_null(e.predicted_moe_backend);
    mp_kn_explain_release(&e);
    run("0.29.0", NULL, 0, b12x, 2, &e);
    assert_string_equal(e.predicted_moe_backend, "B12X");
    mp_kn_explain_release(&e);

    /* argparse's type= lower-cases and turns '-' into '_' before the choices
     * test (engine/arg_utils.py): CUTLASS and flashinfer-cutlass work */
    char *upper[] = {"--moe-backend", "CUTLASS"};
    run("0.20.0", NULL, 0, upper, 2, &e);
    assert_string_equal(e.predicted_moe_backend, "VLLM_CUTLASS");
    assert_string_equal(find(&e, "--moe-backend")->status, "active");
    assert_null(strstr(find(&e, "--moe-backend")->note, "invalid choice: 'cutlass'"));
    assert_false(e.will_not_start);
    mp_kn_explain_release(&e);
    char *hyph[] = {"--moe-backend=flashinfer-cutlass"};
    run("0.20.0", NULL, 0, hyph, 1, &e);
    assert_string_equal(e.predicted_moe_backend, "FLASHINFER_CUTLASS");
    mp_kn_explain_release(&e);
    /* the error shows the normalised value, the choices sorted */
    char *bogus[] = {"--moe-backend", "Foo-Bar"};
    run("0.20.0", NULL, 0, bogus, 2, &e);
    assert_true(e.will_not_start);
    assert_string_equal(find(&e, "--moe-backend")->status, "rejected");
    assert_non_null(strstr(find(&e, "--moe-backend")->note, "invalid choice: 'foo_bar'"));
    assert_non_null(strstr(find(&e, "--moe-backend")->note,
                           "'aiter', 'auto', 'cutlass', 'deep_gemm', 'deep_gemm_mega_moe', "
                           "'emulation', 'flashinfer_cutedsl'"));
    mp_kn_explain_release(&e);
    /* --linear-backend is normalised the same way */
    char *lbu[] = {"--linear-backend", "FlashInfer-Cutlass"};
    run("0.22.0", NULL, 0, lbu, 2, &e);
    assert_string_equal(find(&e, "--linear-backend")->status, "no-moe-effect");
    assert_non_null(strstr(find(&e, "--linear-backend")->note, "flashinfer_cutlass"));
    mp_kn_explain_release(&e);
    char *kc[] = {"--kernel-config", "{\"moe_backend\": \"FLASHINFER-CUTLASS\"}"};
    run("0.20.0", NULL, 0, kc, 2, &e);
    assert_string_equal(e.predicted_moe_backend, "FLASHINFER_CUTLASS");
    mp_kn_explain_release(&e);

    /* --linear-backend first ships in v0.22.0 */
    char *lb[] = {"--linear-backend", "marlin"};
    run("0.21.0", NULL, 0, lb, 2, &e);
    assert_string_equal(find(&e, "--linear-backend")->status, "not-yet-available");
    mp_kn_explain_release(&e);
    run("0.22.0", NULL, 0, lb, 2, &e);
    assert_string_equal(find(&e, "--linear-backend")->status, "no-moe-effect");
    mp_kn_explain_release(&e);

    /* variables new on vLLM main are known, not "unknown-to-engine" */
    char *env[] = {"VLLM_DEEPEPLL_NVFP4_DISPATCH=1", "VLLM_HUMMING_MOE_GEMM_TYPE=x"};
    run(NULL, env, 2, NULL, 0, &e);
    assert_string_equal(find(&e, "VLLM_DEEPEPLL_NVFP4_DISPATCH")->status, "active");
    assert_string_equal(find(&e, "VLLM_HUMMING_MOE_GEMM_TYPE")->affects, "moe");
    mp_kn_explain_release(&e);
}

/* The MoEBackend literal per release: humming and triton_unfused from
 * v0.22.0 (before flashinfer_b12x), rdna3 only in the newest set. A value
 * the version refuses is never "active". */
static void test_moe_backend_eras(void **st)
{
    (void)st;
    static const struct {
        const char *ver, *val, *status, *predict;
    } rows[] = {
        {"0.21.0", "humming", "rejected", NULL},
        {"0.22.0", "humming", "active", "HUMMING"},
        {"0.22.0", "triton_unfused", "rejected", NULL}, /* a choice, not an NvFp4 backend */
        {"0.21.0", "triton_unfused", "rejected", NULL},
        {"0.22.0", "flashinfer_b12x", "rejected", NULL},
        {"0.23.0", "flashinfer_b12x", "active", "FLASHINFER_B12X"},
        {"0.30.0", "rdna3", "rejected", NULL},
        {"0.31.0", "rdna3", "rejected", NULL},    /* a choice, not an NvFp4 backend */
        {"0.31.0", "B12X", "active", "B12X"},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        char *fl[] = {"--moe-backend", (char *)rows[i].val};
        struct mp_explain e;
        run(rows[i].ver, NULL, 0, fl, 2, &e);
        const struct mp_kn_knob_report *r = find(&e, "--moe-backend");
        if (strcmp(r->status, rows[i].status))
            fail_msg("%s on %s: status %s, want %s", rows[i].val, rows[i].ver, r->status,
                     rows[i].status);
        if (rows[i].predict)
            assert_string_equal(e.predicted_moe_backend, rows[i].predict);
        else
            assert_null(e.predicted_moe_backend);
        assert_int_equal(e.will_not_start, !strcmp(rows[i].status, "rejected"));
        struct buf b = BUF_INIT;
        mp_kn_explain_to_json(&e, &b);
        cJSON *j = cJSON_Parse(b.data);
        const cJSON *k0 = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "knobs"), 0);
        assert_string_equal(cJSON_GetObjectItem(k0, "status")->valuestring, rows[i].status);
        cJSON_Delete(j);
        buf_release(&b);
        mp_kn_explain_release(&e);
    }
}

/* "Unknown vLLM environment variable detected" from v0.17 (v0.17.1 log),
 * likely v0.16; silence before. VLLM_WATCHDOG_TIME_S was never one. */
static void test_unknown_env_era(void **st)
{
    (void)st;
    char *env[] = {"VLLM_FOO=1", "VLLM_WATCHDOG_TIME_S=5"};
    struct mp_explain e;
    run("0.17.0", env, 2, NULL, 0, &e);
    assert_non_null(strstr(find(&e, "VLLM_FOO")->note,
                           "prints 'Unknown vLLM environment variable detected: VLLM_FOO'"));
    assert_string_equal(find(&e, "VLLM_WATCHDOG_TIME_S")->status, "unknown-to-engine");
    assert_non_null(strstr(find(&e, "VLLM_WATCHDOG_TIME_S")->note, "launcher.py"));
    mp_kn_explain_release(&e);
    run("0.16.0", env, 1, NULL, 0, &e);
    assert_non_null(strstr(find(&e, "VLLM_FOO")->note, "uncertain whether"));
    mp_kn_explain_release(&e);
    run("0.15.1", env, 1, NULL, 0, &e);
    assert_non_null(strstr(find(&e, "VLLM_FOO")->note, "silently"));
    mp_kn_explain_release(&e);
    run(NULL, env, 1, NULL, 0, &e);
    assert_string_equal(e.engine_version, "0.31.0"); /* newest_version: v0.31.0 (2026-10-05) */
    mp_kn_explain_release(&e);
}

/* VLLM_USE_FBGEMM / VLLM_USE_NVFP4_CT_EMULATIONS: deprecated by PR #39538
 * in v0.22, still read; removal uncertain. VLLM_NVFP4_GEMM_BACKEND=fbgemm is
 * a ValueError in the kernels/linear era. 0/1 variables are bool(int()). */
static void test_env_values(void **st)
{
    (void)st;
    char *fb[] = {"VLLM_USE_FBGEMM=1", "VLLM_USE_NVFP4_CT_EMULATIONS=1"};
    struct mp_explain e;
    static const struct {
        const char *ver, *status;
        bool uncertain;
    } fbr[] = {{"0.21.0", "no-moe-effect", false}, {"0.22.0", "deprecated", false},
               {"0.29.0", "deprecated", false}, {"0.30.0", "removed", true}};
    for (size_t i = 0; i < sizeof(fbr) / sizeof(fbr[0]); i++) {
        run(fbr[i].ver, fb, 2, NULL, 0, &e);
        for (size_t j = 0; j < 2; j++) {
            const struct mp_kn_knob_report *r = &e.knobs[j];
            if (strcmp(r->status, fbr[i].status) || r->uncertain != fbr[i].uncertain)
                fail_msg("%s on %s: %s%s", r->name, fbr[i].ver, r->status,
                         r->uncertain ? " (uncertain)" : "");
        }
        mp_kn_explain_release(&e);
    }
    char *gemm[] = {"VLLM_NVFP4_GEMM_BACKEND=fbgemm"};
    run("0.20.0", gemm, 1, NULL, 0, &e);
    assert_true(e.will_not_start);
    assert_string_equal(find(&e, "VLLM_NVFP4_GEMM_BACKEND")->status, "rejected");
    assert_string_equal(find(&e, "VLLM_NVFP4_GEMM_BACKEND")->stops,
                        "ValueError: Unknown VLLM_NVFP4_GEMM_BACKEND='fbgemm'. Valid choices: "
                        "['flashinfer-cutlass', 'cutlass', 'marlin', 'flashinfer-trtllm', "
                        "'flashinfer-cudnn', 'emulation']");
    assert_non_null(strstr(e.verdict, "will not start"));
    mp_kn_explain_release(&e);
    run("0.17.0", gemm, 1, NULL, 0, &e);
    assert_false(e.will_not_start);
    mp_kn_explain_release(&e);

    char *tru[] = {"VLLM_USE_FLASHINFER_MOE_FP4=true"};
    run("0.17.0", tru, 1, NULL, 0, &e);
    assert_true(e.will_not_start);
    assert_string_equal(find(&e, "VLLM_USE_FLASHINFER_MOE_FP4")->stops,
                        "ValueError: invalid literal for int() with base 10: 'true'");
    assert_non_null(strstr(e.verdict, "fix: set VLLM_USE_FLASHINFER_MOE_FP4=0 or"));
    mp_kn_explain_release(&e);
    char *empty[] = {"VLLM_TEST_FORCE_FP8_MARLIN="};
    run("0.17.0", empty, 1, NULL, 0, &e);
    assert_true(e.will_not_start);
    assert_null(e.predicted_moe_backend);
    mp_kn_explain_release(&e);
    char *two[] = {"VLLM_USE_FLASHINFER_MOE_FP4= 2"}; /* int(' 2') is 2: on */
    run("0.17.0", two, 1, NULL, 0, &e);
    assert_false(e.will_not_start);
    mp_kn_explain_release(&e);
    char *fib[] = {"VLLM_FLASHINFER_MOE_BACKEND=fast"};
    run("0.17.0", fib, 1, NULL, 0, &e);
    assert_string_equal(find(&e, "VLLM_FLASHINFER_MOE_BACKEND")->stops,
                        "ValueError: Invalid value 'fast' for VLLM_FLASHINFER_MOE_BACKEND. Valid "
                        "options: ['throughput', 'latency', 'masked_gemm'].");
    mp_kn_explain_release(&e);
    run("0.26.0", fib, 1, NULL, 0, &e); /* removed: not read, only unknown */
    assert_false(e.will_not_start);
    mp_kn_explain_release(&e);
}

static void test_secrets_and_json(void **st)
{
    (void)st;
    char *env[] = {"HF_TOKEN=hf_abcdef", "MY_API_KEY=zzz", "NOEQUALS"};
    char *flags[] = {"--api-key", "sk-123", "--served-model-name", "m"};
    struct mp_explain e;
    run(NULL, env, 3, flags, 4, &e);
    assert_false(e.version_known);
    assert_string_equal(e.engine_version, mp_knowledge_builtin()->newest_version);
    assert_int_equal(e.nknobs, 4);
    struct buf b = BUF_INIT;
    mp_kn_explain_to_json(&e, &b);
    assert_null(strstr(b.data, "hf_abcdef"));
    assert_null(strstr(b.data, "zzz"));
    assert_null(strstr(b.data, "sk-123"));
    assert_non_null(strstr(b.data, "HF_TOKEN=***"));
    cJSON *j = cJSON_Parse(b.data);
    assert_non_null(j);
    assert_true(cJSON_IsArray(cJSON_GetObjectItem(j, "knobs")));
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(j, "predicted_moe_backend")));
    cJSON_Delete(j);
    buf_release(&b);
    assert_non_null(strstr(e.prediction_reason, "engine version unknown"));
    mp_kn_explain_release(&e);
    assert_int_equal(mp_kn_explain(mp_knowledge_builtin(), "latest", NULL, 0, NULL, 0, &e),
                     MP_EPARSE);
    assert_true(mp_is_secret_name("db_password", 11));
    assert_false(mp_is_secret_name("VLLM_USE_V1", 11));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scaled_mm),
        cmocka_unit_test(test_moe_backend_flag),
        cmocka_unit_test(test_env_rules),
        cmocka_unit_test(test_moe_backend_choices),
        cmocka_unit_test(test_moe_backend_eras),
        cmocka_unit_test(test_unknown_env_era),
        cmocka_unit_test(test_env_values),
        cmocka_unit_test(test_secrets_and_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
