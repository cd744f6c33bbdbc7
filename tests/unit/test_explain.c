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
    run("0.28.0", NULL, 0, b12x, 2, &e);
    assert_string_equal(e.predicted_moe_backend, "B12X");
    mp_kn_explain_release(&e);

    char *upper[] = {"--moe-backend", "CUTLASS"};
    run("0.20.0", NULL, 0, upper, 2, &e);
    assert_null(e.predicted_moe_backend);
    assert_non_null(strstr(find(&e, "--moe-backend")->note, "case- and hyphen-sensitive"));
    mp_kn_explain_release(&e);
    char *hyph[] = {"--moe-backend=flashinfer-cutlass"};
    run("0.20.0", NULL, 0, hyph, 1, &e);
    assert_null(e.predicted_moe_backend);
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
        cmocka_unit_test(test_secrets_and_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
