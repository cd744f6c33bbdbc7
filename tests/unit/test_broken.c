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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_before_selection),
        cmocka_unit_test(test_same_way),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
