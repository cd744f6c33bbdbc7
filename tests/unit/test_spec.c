/* Unit tests: candidate specs, word splitting, launch building, redaction. */
#include "compat.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "cli/spec.h"
#include "knowledge/knowledge.h"
#include "engine/launch.h"
#include "secret.h"

static void test_split_quotes(void **state)
{
    (void)state;
    struct mp_strv w = MP_STRV_INIT;
    assert_int_equal(mp_split_words("a 'b c' \"d \\\"e\" f\\ g", &w, NULL), 0);
    assert_int_equal(w.n, 4);
    assert_string_equal(w.v[0], "a");
    assert_string_equal(w.v[1], "b c");
    assert_string_equal(w.v[2], "d \"e");
    assert_string_equal(w.v[3], "f g");
    mp_strv_release(&w);
    struct mp_diag d = MP_DIAG_INIT;
    assert_int_equal(mp_split_words("a 'b", &w, &d), MP_EPARSE);
    assert_non_null(strstr(d.msg, "unterminated"));
    mp_strv_release(&w);
}

static void test_candidate_parse(void **state)
{
    (void)state;
    struct mp_candidate c;
    assert_int_equal(mp_candidate_parse("marlin3: VLLM_USE_FLASHINFER_MOE_FP4=0 "
                                        "VLLM_TEST_FORCE_FP8_MARLIN=1 --moe-backend marlin",
                                        &c, NULL),
                     0);
    assert_string_equal(c.name, "marlin3");
    assert_int_equal(c.env.n, 2);
    assert_string_equal(c.env.v[1], "VLLM_TEST_FORCE_FP8_MARLIN=1");
    assert_int_equal(c.args.n, 2);
    assert_string_equal(c.args.v[0], "--moe-backend");
    assert_int_equal(mp_candidate_nknobs(&c), 3);
    char *s = mp_candidate_knobs_str(&c);
    assert_string_equal(s, "VLLM_USE_FLASHINFER_MOE_FP4=0 VLLM_TEST_FORCE_FP8_MARLIN=1 --moe-backend marlin");
    free(s);
    mp_candidate_release(&c);

    assert_int_equal(mp_candidate_parse("auto:", &c, NULL), 0);
    assert_int_equal(mp_candidate_nknobs(&c), 0);
    mp_candidate_release(&c);

    struct mp_diag d = MP_DIAG_INIT;
    assert_int_equal(mp_candidate_parse("--moe-backend cutlass", &c, &d), MP_EPARSE);
    assert_non_null(strstr(d.msg, "NAME: KNOBS"));
    assert_int_equal(mp_candidate_parse("bad name: X=1", &c, &d), MP_EPARSE);
    assert_int_equal(mp_candidate_parse(": X=1", &c, &d), MP_EPARSE);
}

static void test_env_word(void **state)
{
    (void)state;
    assert_true(mp_is_env_word("VLLM_X=1"));
    assert_true(mp_is_env_word("_A="));
    assert_false(mp_is_env_word("--kernel-config={\"moe_backend\":\"x\"}"));
    assert_false(mp_is_env_word("=1"));
    assert_false(mp_is_env_word("1A=2"));
}

static void test_launch_port_and_env(void **state)
{
    (void)state;
    struct mp_candidate c;
    mp_candidate_parse("x: VLLM_A=1 --moe-backend cutlass", &c, NULL);
    char *cmd[] = {"vllm", "serve", "M", "--port", "{port}"};
    const char *extra[] = {"CUDA_LAUNCH_BLOCKING=1", NULL};
    struct mp_launch l;
    mp_launch_build(&l, cmd, 5, &c, 8123, extra, "n1");
    assert_int_equal(l.argv.n, 7);
    assert_string_equal(l.argv.v[4], "8123");
    assert_string_equal(l.argv.v[5], "--moe-backend");
    assert_int_equal(l.env.n, 2);
    assert_string_equal(l.env.v[1], "CUDA_LAUNCH_BLOCKING=1");
    assert_null(l.container_runtime);
    mp_launch_release(&l);

    /* no placeholder: --port appended */
    char *cmd2[] = {"vllm", "serve", "M"};
    mp_launch_build(&l, cmd2, 3, &c, 9000, NULL, NULL);
    assert_string_equal(l.argv.v[l.argv.n - 2], "--port");
    assert_string_equal(l.argv.v[l.argv.n - 1], "9000");
    mp_launch_release(&l);
    mp_candidate_release(&c);
}

static void test_launch_docker(void **state)
{
    (void)state;
    struct mp_candidate c;
    mp_candidate_parse("x: VLLM_SCALED_MM_BACKEND=marlin HF_TOKEN=hf_abcdefgh123", &c, NULL);
    char *cmd[] = {"docker", "run", "--gpus", "all", "-p", "{port}:8000", "img", "vllm", "serve", "M"};
    struct mp_launch l;
    mp_launch_build(&l, cmd, 10, &c, 8001, NULL, "moeprobe-x-1");
    assert_string_equal(l.container_runtime, "docker");
    assert_string_equal(l.container_name, "moeprobe-x-1");
    assert_string_equal(l.argv.v[1], "run");
    assert_string_equal(l.argv.v[2], "-e");
    assert_string_equal(l.argv.v[3], "VLLM_SCALED_MM_BACKEND=marlin");
    assert_string_equal(l.argv.v[5], "HF_TOKEN=hf_abcdefgh123");
    assert_string_equal(l.argv.v[6], "--name");
    assert_int_equal(l.env.n, 0);
    char *disp = mp_launch_display(&l);
    assert_null(strstr(disp, "abc"));
    assert_non_null(strstr(disp, "HF_TOKEN=***"));
    assert_non_null(strstr(disp, "8001:8000"));
    free(disp);
    mp_launch_release(&l);
    mp_candidate_release(&c);
}

static void test_redaction(void **state)
{
    (void)state;
    assert_true(mp_is_secret_name("HF_TOKEN", 8));
    assert_true(mp_is_secret_name("my_api_key", 10));
    assert_true(mp_is_secret_name("DB_PASSWORD", 11));
    assert_false(mp_is_secret_name("VLLM_USE_V1", 11));
    char *r = mp_redact_assignment("OPENAI_API_KEY=sk-1234567890");
    assert_string_equal(r, "OPENAI_API_KEY=***");
    free(r);
    r = mp_redact_assignment("VLLM_X=secretish");
    assert_string_equal(r, "VLLM_X=secretish");
    free(r);
}

static void test_preset(void **state)
{
    (void)state;
    struct mp_candidate *c;
    size_t n;
    assert_int_equal(mp_preset_load("sm12x-nvfp4", &c, &n), 0);
    assert_int_equal(n, 5);
    assert_string_equal(c[0].name, "auto");
    assert_int_equal(mp_candidate_nknobs(&c[0]), 0);
    assert_string_equal(c[4].name, "marlin-env");
    assert_string_equal(c[4].env.v[0], "VLLM_SCALED_MM_BACKEND=marlin");
    for (size_t i = 0; i < n; i++)
        mp_candidate_release(&c[i]);
    free(c);
    assert_int_equal(mp_preset_load("nope", &c, &n), MP_EUSAGE);
}

static const struct mp_preset_cand *pc(const struct mp_preset_cand *p, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(p[i].cand.name, name))
            return &p[i];
    return NULL;
}

static char *knobs_of(const struct mp_preset_cand *p)
{
    return mp_candidate_knobs_str(&p->cand);
}

/* The preset per vLLM era (#29 item 2): the knobs that exist there, a
 * candidate with no road not applicable, later backends only where the
 * knowledge has them. */
static void test_preset_eras(void **state)
{
    (void)state;
    const struct mp_knowledge *kn = mp_knowledge_builtin();
    struct mp_preset_cand *p = NULL;
    size_t n = 0;
    char *k;
    assert_int_equal(mp_preset_express(kn, "sm12x-nvfp4", "0.15.1", &p, &n), 0);
    assert_int_equal(n, 5);
    assert_string_equal(k = knobs_of(pc(p, n, "cutlass")), "VLLM_USE_FLASHINFER_MOE_FP4=0");
    free(k);
    assert_string_equal(k = knobs_of(pc(p, n, "marlin")), "VLLM_TEST_FORCE_FP8_MARLIN=1");
    free(k);
    assert_string_equal(k = knobs_of(pc(p, n, "flashinfer_cutlass")),
                        "VLLM_USE_FLASHINFER_MOE_FP4=1 VLLM_FLASHINFER_MOE_BACKEND=throughput");
    free(k);
    assert_string_equal(k = knobs_of(pc(p, n, "marlin-env")), "VLLM_SCALED_MM_BACKEND=marlin");
    free(k);
    for (size_t i = 0; i < n; i++)
        assert_null(p[i].not_applicable);
    mp_preset_free(p, n);

    assert_int_equal(mp_preset_express(kn, "sm12x-nvfp4", "0.13.0", &p, &n), 0);
    assert_non_null(pc(p, n, "marlin")->not_applicable);
    assert_non_null(strstr(pc(p, n, "marlin")->not_applicable, "not applicable to vLLM 0.13.0"));
    assert_non_null(strstr(pc(p, n, "marlin")->not_applicable, "0.17.0"));
    assert_null(pc(p, n, "cutlass")->not_applicable);
    mp_preset_free(p, n);

    assert_int_equal(mp_preset_express(kn, "sm12x-nvfp4", "0.17.0", &p, &n), 0);
    assert_int_equal(n, 5);
    assert_string_equal(k = knobs_of(pc(p, n, "cutlass")), "--moe-backend cutlass");
    free(k);
    assert_null(pc(p, n, "flashinfer_b12x"));
    mp_preset_free(p, n);
    /* the knowledge's --moe-backend eras: flashinfer_b12x from v0.23, b12x from v0.29 */
    assert_int_equal(mp_preset_express(kn, "sm12x-nvfp4", "0.22.0", &p, &n), 0);
    assert_null(pc(p, n, "flashinfer_b12x"));
    mp_preset_free(p, n);
    assert_int_equal(mp_preset_express(kn, "sm12x-nvfp4", "0.23.0", &p, &n), 0);
    assert_non_null(pc(p, n, "flashinfer_b12x"));
    assert_null(pc(p, n, "b12x"));
    mp_preset_free(p, n);
    assert_int_equal(mp_preset_express(kn, "sm12x-nvfp4", "0.29.0", &p, &n), 0);
    assert_string_equal(k = knobs_of(pc(p, n, "b12x")), "--moe-backend b12x");
    free(k);
    mp_preset_free(p, n);
    /* not known yet: the newest era's flags, no later-only backends */
    assert_int_equal(mp_preset_express(kn, "sm12x-nvfp4", NULL, &p, &n), 0);
    assert_int_equal(n, 5);
    mp_preset_free(p, n);
}

static void test_image_version(void **state)
{
    (void)state;
    char v[64];
    char *up[] = {"docker", "run", "--gpus", "all", "vllm/vllm-openai:v0.17.0-cu130", "M"};
    const struct mp_knowledge *kn = mp_knowledge_builtin();
    assert_true(mp_image_engine_version(kn, up, 6, v, sizeof(v)));
    assert_string_equal(v, "0.17.0");
    /* an NGC tag: the knowledge's table of NVIDIA's release notes */
    char *ngc[] = {"docker", "run", "nvcr.io/nvidia/vllm:26.01-py3", "vllm", "serve"};
    struct mp_kn_image_version iv;
    mp_kn_image_version(kn, ngc[2], &iv);
    assert_int_equal(mp_image_engine_version(kn, ngc, 5, v, sizeof(v)), iv.version[0] != 0);
    if (iv.version[0])
        assert_string_equal(v, iv.version);
    char *unknown[] = {"docker", "run", "nvcr.io/nvidia/vllm:99.99-py3", "vllm", "serve"};
    assert_false(mp_image_engine_version(kn, unknown, 5, v, sizeof(v))); /* never guessed */
    char *host[] = {"vllm", "serve", "vllm/vllm-openai:v0.17.0"};
    assert_false(mp_image_engine_version(kn, host, 3, v, sizeof(v)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split_quotes),      cmocka_unit_test(test_candidate_parse),
        cmocka_unit_test(test_env_word),          cmocka_unit_test(test_launch_port_and_env),
        cmocka_unit_test(test_launch_docker),     cmocka_unit_test(test_redaction),
        cmocka_unit_test(test_preset),            cmocka_unit_test(test_preset_eras),
        cmocka_unit_test(test_image_version),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
