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
            size_t want = (size_t)sizes[k] * 4;
            if (want <= ql) {
                /* shorter than the question: its start, cut at a word's end */
                assert_true(n >= want && n <= ql);
                assert_memory_equal(p, q, n);
                assert_true(n == ql || q[n] == ' ');
                free(p);
                free(again);
                continue;
            }
            assert_true(n >= ql);
            assert_string_equal(p + n - ql, q); /* the question comes last */
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

/* A small --input-tokens N is honoured (#16): --input-tokens 10 used to
 * give the preamble and the question, ~30 tokens, whatever N was. Every N
 * from 1 to 60 gives a prompt within a word (or half the preamble) of 4
 * bytes a token, never the whole preamble when the question alone is
 * nearer. */
static void test_small_prompt(void **st)
{
    (void)st;
    static const size_t hl = sizeof("Read these notes, then answer the question after them.\n\n") - 1;
    for (int tokens = 1; tokens <= 60; tokens++) {
        for (size_t i = 0; i < MP_NPROMPTS; i++) {
            char *p = mp_prompt_sized(i, tokens);
            const char *q = mp_prompts[i];
            size_t n = strlen(p), ql = strlen(q), want = (size_t)tokens * 4;
            assert_true(n > 0);
            if (want <= ql) { /* a word is at most 18 bytes in these prompts */
                assert_true(n >= want && n < want + 19);
            } else if (want < hl + 2 + ql) { /* the question alone or with the preamble: the nearer */
                size_t d = n > want ? n - want : want - n;
                assert_true(d <= (hl + 2) / 2 + 1);
                assert_true(n == ql || n == hl + 2 + ql);
            } else {
                assert_true(n >= want - 4 && n <= want + 4);
            }
            free(p);
        }
    }
    /* the case of the issue: 10 tokens, 40 bytes, is the question's first words */
    char *p = mp_prompt_sized(0, 10);
    assert_string_equal(p, "Explain in detail how a mixture-of-experts");
    free(p);
    /* the boundaries, with the 64-byte question 5: 13 tokens is its first 52
     * bytes (a word's end), 16 exactly the question, 17 the question alone
     * (nearer than with the preamble) */
    assert_int_equal(strlen(mp_prompts[5]), 64);
    p = mp_prompt_sized(5, 16);
    assert_string_equal(p, mp_prompts[5]);
    free(p);
    p = mp_prompt_sized(5, 13); /* 52 bytes: cut after "exact" */
    assert_string_equal(p, "Give a recipe for a simple vegetable soup with exact");
    free(p);
    p = mp_prompt_sized(5, 17);
    assert_string_equal(p, mp_prompts[5]);
    free(p);
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
        cmocka_unit_test(test_small_prompt),
        cmocka_unit_test(test_prefill_phase),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
