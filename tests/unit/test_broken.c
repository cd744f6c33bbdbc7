/* Unit tests: a server command that fails before any backend is chosen
 * (verdict/broken.h, #29 item 3). */
#include "compat.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "verdict/broken.h"
#include "xalloc.h"

static void att(struct mp_attempt_result *a, const char *cls, const char *msg)
{
    memset(a, 0, sizeof(*a));
    a->outcome = MP_OUT_STARTUP_FAILURE;
    a->fail_class = xstrdup(cls);
    a->fail_message = xstrdup(msg);
}

static void test_before_selection(void **state)
{
    (void)state;
    struct mp_candidate auto_c, cut;
    mp_candidate_from_knobs("auto", "", &auto_c, NULL);
    mp_candidate_from_knobs("cutlass", "--moe-backend cutlass", &cut, NULL);
    struct mp_attempt_result a;
    att(&a, "startup", "OSError: nvidia/Nemotron-X is not a local folder and is not a valid model");
    assert_true(mp_broken_before_selection(&auto_c, &a));
    assert_true(mp_broken_before_selection(&cut, &a));
    /* a selection line was logged: the knobs got as far as a backend */
    a.res.moe_backend = xstrdup("MARLIN");
    assert_false(mp_broken_before_selection(&cut, &a));
    mp_attempt_result_release(&a);
    /* the engine's reason names the candidate's knob: a knob failure */
    att(&a, "startup", "vllm serve: error: unrecognized arguments: --moe-backend cutlass");
    assert_false(mp_broken_before_selection(&cut, &a));
    assert_true(mp_broken_before_selection(&auto_c, &a));
    mp_attempt_result_release(&a);
    att(&a, "unsupported-backend", "NvFp4 MoE backend 'cutlass' is not supported");
    assert_false(mp_broken_before_selection(&cut, &a));
    /* not a start-up failure */
    a.outcome = MP_OUT_CRASH;
    assert_false(mp_broken_before_selection(&auto_c, &a));
    mp_attempt_result_release(&a);
    mp_candidate_release(&auto_c);
    mp_candidate_release(&cut);
}

static void test_same_way(void **state)
{
    (void)state;
    struct mp_attempt_result a, b, c;
    att(&a, "startup", "exited with status 1; server.log:12: torch.OutOfMemoryError: 70.3 GiB");
    att(&b, "startup", "exited with status 1; server.log:14: torch.OutOfMemoryError: 71.0 GiB");
    att(&c, "startup", "exited with status 1; server.log:12: 401 Client Error: gated repo");
    assert_true(mp_broken_same_way(&a, &b));
    assert_false(mp_broken_same_way(&a, &c));
    free(c.fail_class);
    c.fail_class = xstrdup("out-of-memory");
    free(c.fail_message);
    c.fail_message = xstrdup(a.fail_message);
    assert_false(mp_broken_same_way(&a, &c)); /* another class */
    mp_attempt_result_release(&a);
    mp_attempt_result_release(&b);
    mp_attempt_result_release(&c);
}

/* Failures that are the knobs' although they do not name a knob's key:
 * the selection itself found no backend (vLLM issue 35065, corpus log 011:
 * "No NvFp4 MoE backend supports the deployment configuration"), vLLM
 * names the flag's value in capitals (PR 33417: "NvFp4 MoE backend
 * 'FLASHINFER_CUTLASS' does not support ..."), an environment value that
 * vllm/envs.py's bool(int(os.getenv(...))) cannot read. */
static void test_knob_failures_without_the_key(void **state)
{
    (void)state;
    struct mp_candidate auto_c, fic, env;
    mp_candidate_from_knobs("auto", "", &auto_c, NULL);
    mp_candidate_from_knobs("fic", "--moe-backend flashinfer_cutlass", &fic, NULL);
    mp_candidate_from_knobs("env", "VLLM_USE_FLASHINFER_MOE_FP4=true", &env, NULL);
    struct mp_attempt_result a;
    att(&a, "no-moe-backend",
        "NotImplementedError: No NvFp4 MoE backend supports the deployment configuration.");
    assert_false(mp_broken_before_selection(&auto_c, &a));
    mp_attempt_result_release(&a);
    att(&a, "startup", "ValueError: NvFp4 MoE backend 'FLASHINFER_CUTLASS' does not support the "
                       "deployment configuration since kernel does not support current device.");
    assert_false(mp_broken_before_selection(&fic, &a));
    assert_true(mp_broken_before_selection(&auto_c, &a));
    mp_attempt_result_release(&a);
    att(&a, "python-error", "ValueError: invalid literal for int() with base 10: 'true'");
    assert_false(mp_broken_before_selection(&env, &a));
    assert_true(mp_broken_before_selection(&auto_c, &a));
    mp_attempt_result_release(&a);
    mp_candidate_release(&auto_c);
    mp_candidate_release(&fic);
    mp_candidate_release(&env);
}

/* Two failures alike say "whatever the knobs" only for candidates that
 * share no knob: one bad knob breaks every candidate that sets it. */
static void test_knobs_apart(void **state)
{
    (void)state;
    struct mp_candidate auto_c, cut, mar, fi1, fi2, envm;
    mp_candidate_from_knobs("auto", "", &auto_c, NULL);
    mp_candidate_from_knobs("cutlass", "--moe-backend cutlass", &cut, NULL);
    mp_candidate_from_knobs("marlin", "--moe-backend=marlin", &mar, NULL);
    mp_candidate_from_knobs("fi1", "VLLM_USE_FLASHINFER_MOE_FP4=1 VLLM_FLASHINFER_MOE_BACKEND=latency",
                            &fi1, NULL);
    mp_candidate_from_knobs("fi2", "VLLM_USE_FLASHINFER_MOE_FP4=1", &fi2, NULL);
    mp_candidate_from_knobs("envm", "VLLM_TEST_FORCE_FP8_MARLIN=1", &envm, NULL);
    assert_true(mp_broken_knobs_apart(&auto_c, &cut));
    assert_true(mp_broken_knobs_apart(&fi1, &auto_c));
    assert_true(mp_broken_knobs_apart(&cut, &envm));
    assert_true(mp_broken_knobs_apart(&fi1, &envm));
    assert_false(mp_broken_knobs_apart(&cut, &mar)); /* both set --moe-backend */
    assert_false(mp_broken_knobs_apart(&fi1, &fi2));
    mp_candidate_release(&auto_c);
    mp_candidate_release(&cut);
    mp_candidate_release(&mar);
    mp_candidate_release(&fi1);
    mp_candidate_release(&fi2);
    mp_candidate_release(&envm);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_before_selection),
        cmocka_unit_test(test_same_way),
        cmocka_unit_test(test_knob_failures_without_the_key),
        cmocka_unit_test(test_knobs_apart),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
