/* test_refengine_lm.c - the reference engine's model (lm.h), its logprobs
 * in vLLM's shapes (logprobs.h), read back by moeprobe's own parsers, the
 * refusals per era, and its answers to the task problems (task.h): every
 * built-in problem solved from its text, the world's accuracy kept, a
 * wrong answer still fluent. */
#include "compat.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen.h"
#include "lm.h"
#include "logprobs.h"
#include "quality/score.h"
#include "quality/task.h"
#include "task.h"
#include "world.h"
#include "xalloc.h"

static void test_tokens(void **st)
{
    MP_UNUSED(st);
    static const struct {
        const char *text;
        size_t len;
    } t[] = {
        {" the cat", 4}, {"The", 3}, {"\nx", 1}, {", and", 1}, {"  x", 1},
        {" (a)", 2},     {"12,3", 2}, {" abcdefghijklmnopqrstu", 17},
    };
    for (size_t i = 0; i < MP_ARRAY_SIZE(t); i++)
        assert_int_equal(re_lm_token_len(t[i].text, strlen(t[i].text)), t[i].len);
}

/* Noise flips few greedy tokens, an error about half; the model's own
 * choice is the argmax of what logprobs report. */
static void test_noise_and_error(void **st)
{
    MP_UNUSED(st);
    struct re_lm clean = {.seed = 1}, noisy = {.seed = 1, .salt = 5, .noise = 0.02},
                 wrong = {.seed = 1, .salt = 6, .error = 4};
    unsigned flips_noise = 0, flips_err = 0, n = 4000;
    uint64_t ctx = re_lm_ctx0(&clean);
    for (unsigned i = 0; i < n; i++) {
        size_t a, b, c;
        const char *ta = re_lm_argmax(&clean, ctx, &a), *tb = re_lm_argmax(&noisy, ctx, &b),
                   *tc = re_lm_argmax(&wrong, ctx, &c);
        flips_noise += strcmp(ta, tb) != 0;
        flips_err += strcmp(ta, tc) != 0;
        struct re_lm_step s;
        re_lm_eval(&clean, ctx, ta, a, false, 5, &s);
        assert_int_equal(s.own.rank, 1);
        assert_true(fabs(s.own.lp - s.top[0].lp) < 1e-12);
        ctx = re_lm_push(ctx, ta, a);
    }
    assert_true(flips_noise < n / 50);           /* near ties only */
    assert_true(flips_err > n * 4 / 10 && flips_err < n * 6 / 10);
}

static void test_prompt_logprobs_read_back(void **st)
{
    MP_UNUSED(st);
    struct world w;
    memset(&w, 0, sizeof(w));
    world_parse_version("0.19.0", &w.ver_major, &w.ver_minor, &w.ver_patch);
    const char *body = "{\"prompt\":\"Water boils at one hundred degrees.\",\"prompt_logprobs\":5}";
    int status;
    char msg[1024], type[64], param[64];
    struct re_lp *lp = re_lp_new(body, strlen(body), false, false, &w, 20, &status, msg,
                                 sizeof(msg), type, sizeof(type), param, sizeof(param));
    assert_non_null(lp);
    const char *prompt = "Water boils at one hundred degrees.";
    struct re_gen g;
    re_gen_init(&g, prompt, strlen(prompt), 1, false);
    struct buf b = BUF_INIT;
    buf_adds(&b, "{\"choices\":[{\"index\":0,\"text\":\"x\",\"prompt_logprobs\":");
    re_lp_prompt_json(&b, lp, &g, prompt, strlen(prompt));
    buf_adds(&b, "}]}");
    struct mp_lp_seq q;
    char err[128];
    assert_int_equal(mp_score_parse_plp(b.data, b.len, &q, err, sizeof(err)), 0);
    assert_int_equal(q.n, 6); /* 7 tokens, the first without context */
    assert_string_equal(q.p[0].token, " boils");
    assert_string_equal(q.p[5].token, ".");
    for (size_t i = 0; i < q.n; i++)
        assert_true(q.p[i].top1_lp >= q.p[i].lp);
    mp_lp_seq_release(&q);
    buf_release(&b);
    re_lp_free(lp);
}

static void test_refusals_per_era(void **st)
{
    MP_UNUSED(st);
    static const struct {
        const char *version, *body;
        bool stream;
        long max;
        const char *msg, *type, *param;
    } t[] = {
        {"0.19.0", "{\"prompt\":\"x\",\"prompt_logprobs\":5,\"stream\":true}", true, 20,
         "`prompt_logprobs` are not available when `stream=True`. (parameter=prompt_logprobs)",
         "Bad Request", "prompt_logprobs"},
        {"0.10.1", "{\"prompt\":\"x\",\"prompt_logprobs\":5,\"stream\":true}", true, 20,
         "ValueError('`prompt_logprobs` are not available", "Bad Request", ""},
        {"0.19.0", "{\"prompt\":\"x\",\"prompt_logprobs\":5}", false, 0,
         "Requested prompt logprobs of 5, which is greater than max allowed: 0 "
         "(parameter=prompt_logprobs, value=5)", "BadRequestError", "prompt_logprobs"},
        {"0.13.0", "{\"prompt\":\"x\",\"logprobs\":5}", false, 0,
         "Requested sample logprobs of 5, which is greater than max allowed: 0", "BadRequestError",
         ""},
    };
    for (size_t i = 0; i < MP_ARRAY_SIZE(t); i++) {
        struct world w;
        memset(&w, 0, sizeof(w));
        world_parse_version(t[i].version, &w.ver_major, &w.ver_minor, &w.ver_patch);
        int status;
        char msg[1024], type[64], param[64];
        assert_null(re_lp_new(t[i].body, strlen(t[i].body), false, t[i].stream, &w, t[i].max,
                              &status, msg, sizeof(msg), type, sizeof(type), param, sizeof(param)));
        assert_int_equal(status, 400);
        if (!strstr(msg, t[i].msg)) {
            fprintf(stderr, "case %zu: '%s' lacks '%s'\n", i, msg, t[i].msg);
            fail();
        }
        assert_string_equal(type, t[i].type);
        assert_string_equal(param, t[i].param);
    }
    /* 0 is allowed with --max-logprobs 0 (vLLM checks `if params.logprobs:`) */
    struct world w;
    memset(&w, 0, sizeof(w));
    int status;
    char msg[256], type[64], param[64];
    const char *zero = "{\"prompt\":\"x\",\"logprobs\":0}";
    struct re_lp *lp = re_lp_new(zero, strlen(zero), false, false, &w, 0, &status, msg,
                                 sizeof(msg), type, sizeof(type), param, sizeof(param));
    assert_non_null(lp);
    re_lp_free(lp);
}

/* Every built-in problem is read and solved from its text alone. */
static void test_task_solver(void **st)
{
    MP_UNUSED(st);
    struct mp_task_set s;
    mp_task_builtin(1000, &s);
    for (size_t i = 0; i < s.n; i++) {
        long v = -1;
        if (!re_task_solve(s.t[i].question, strlen(s.t[i].question), &v) ||
            v != atol(s.t[i].answer)) {
            fprintf(stderr, "problem %zu '%s': solved %ld, key %s\n", i, s.t[i].question, v,
                    s.t[i].answer);
            fail();
        }
    }
    /* the world's accuracy, answer by answer, through the prompt */
    unsigned right = 0;
    for (size_t i = 0; i < s.n; i++) {
        char *p = mp_task_prompt(s.t[i].question), out[512];
        assert_true(re_task_reply(p, strlen(p), 0.6, 77, out, sizeof(out)));
        char *got = mp_task_last_number(out);
        assert_non_null(strstr(out, " The answer is "));
        right += mp_task_same_number(got, s.t[i].answer);
        free(got);
        free(p);
    }
    assert_true(right > 540 && right < 660);
    char out[64];
    assert_false(re_task_reply("hello\nAnswer:", 13, 1, 0, out, sizeof(out)));
    mp_task_set_release(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tokens),
        cmocka_unit_test(test_noise_and_error),
        cmocka_unit_test(test_prompt_logprobs_read_back),
        cmocka_unit_test(test_refusals_per_era),
        cmocka_unit_test(test_task_solver),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
