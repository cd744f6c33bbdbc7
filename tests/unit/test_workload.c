/* test_workload.c - sized prompts (deterministic, about 4 bytes a token,
 * ending with the question) and the prefill phase. */
#include "compat.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "model/workload.h"

static void test_sized_prompt(void **st)
{
    (void)st;
    static const int sizes[] = {1, 16, 100, 512, 8192, 65536};
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        for (size_t i = 0; i < MP_NPROMPTS + 2; i++) {
            char *p = mp_prompt_sized(i, sizes[k]);
            char *again = mp_prompt_sized(i, sizes[k]);
            assert_string_equal(p, again); /* deterministic */
            const char *q = mp_prompts[i % MP_NPROMPTS];
            size_t n = strlen(p), ql = strlen(q);
            assert_true(n >= ql);
            assert_string_equal(p + n - ql, q); /* the question comes last */
            size_t want = (size_t)sizes[k] * 4;
            if (want > ql + 64) /* long enough for notes: within a few bytes of 4 a token */
                assert_true(n >= want - 4 && n <= want + 4);
            for (size_t c = 0; c < n; c++)
                assert_true(p[c] == '\n' || (p[c] >= 0x20 && p[c] < 0x7f));
            free(p);
            free(again);
        }
    }
    char *a = mp_prompt_sized(0, 512), *b = mp_prompt_sized(1, 512);
    assert_string_not_equal(a, b); /* prompts differ by index */
    free(a);
    free(b);
    char *s = mp_prompt_sized(3, 0);
    assert_string_equal(s, mp_prompts[3]);
    free(s);
}

static void test_prefill_phase(void **st)
{
    (void)st;
    struct mp_workload w;
    mp_workload_default(&w);
    size_t n0 = w.nphases;
    assert_int_equal(mp_workload_add_prefill(&w, 8192, 3), 0);
    assert_int_equal(w.nphases, n0 + 1);
    assert_string_equal(w.phases[n0].name, "prefill-8192");
    assert_int_equal(w.phases[n0].level, 1);
    assert_int_equal(w.phases[n0].requests, 3);
    assert_int_equal(w.phases[n0].input_tokens, 8192);
    assert_int_not_equal(mp_workload_add_prefill(&w, 0, 3), 0);
    assert_int_not_equal(mp_workload_add_prefill(&w, 10, 0), 0);
    while (w.nphases < MP_MAX_PHASES)
        assert_int_equal(mp_workload_add_prefill(&w, 10, 1), 0);
    assert_int_not_equal(mp_workload_add_prefill(&w, 10, 1), 0); /* no room */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sized_prompt),
        cmocka_unit_test(test_prefill_phase),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
