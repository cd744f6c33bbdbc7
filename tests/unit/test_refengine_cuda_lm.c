/* test_refengine_cuda_lm.c - the logits' GPU term of CUDA worlds
 * (refengine/cuda_lm.h) without a GPU: the hook in lm.h adds the term to
 * the logit of the token it names, the readout's spread is its scale and
 * ignores the hidden vector's size (RMS norm), a CUDA error (here: the
 * stub's "not built") is reported once and the term is 0 after it, and the
 * world keys cuda_logit_scale / cuda_path parse. */
#include "compat.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cuda_lm.h"
#include "err.h"
#include "gen.h"
#include "lm.h"
#include "world.h"

static uint64_t boosted; /* the token hash the test term raises */

static double boost_term(void *arg, uint64_t ctx, uint64_t th)
{
    MP_UNUSED(ctx);
    return th == boosted ? *(const double *)arg : 0;
}

/* The term lands on the named token's logit, at every context, in greedy
 * tokens and in logprobs (a token outside the vocabulary too). */
static void test_term_feeds_logits(void **st)
{
    MP_UNUSED(st);
    double add = 40;
    struct re_lm_term t = {.fn = boost_term, .arg = &add};
    struct re_lm plain = {.seed = 3}, with = {.seed = 3, .term = &t};
    uint64_t ctx = re_lm_ctx0(&plain);
    boosted = re_gen_hash(" backend", 8, 0);
    for (int i = 0; i < 50; i++) {
        size_t n;
        assert_string_equal(re_lm_argmax(&with, ctx, &n), " backend");
        struct re_lm_step a, b;
        re_lm_eval(&plain, ctx, " zebra", 6, false, 3, &a);
        re_lm_eval(&with, ctx, " zebra", 6, false, 3, &b);
        assert_true(b.own.lp < a.own.lp - 10); /* the mass went to " backend" */
        assert_string_equal(b.top[0].tok, " backend");
        ctx = re_lm_push(ctx, " of", 3);
    }
    boosted = re_gen_hash(" zebra", 6, 0); /* outside the vocabulary */
    struct re_lm_step a, b;
    re_lm_eval(&plain, ctx, " zebra", 6, false, 3, &a);
    re_lm_eval(&with, ctx, " zebra", 6, false, 3, &b);
    assert_int_equal(b.own.rank, 1);
    assert_true(b.own.lp > a.own.lp + 1);
}

/* scale x (row . y / rms(y)): spread about scale over tokens, 0 for y = 0,
 * the same for y and 5y, linear in the scale */
static void test_readout(void **st)
{
    MP_UNUSED(st);
    enum { H = 256 };
    float y[H], y5[H], z[H] = {0};
    uint64_t s = 11;
    for (int i = 0; i < H; i++) {
        y[i] = (float)((double)(re_gen_mix(&s) >> 11) / 9007199254740992.0 - 0.5);
        y5[i] = 5 * y[i];
    }
    double ss = 0;
    int n = 2000;
    for (int k = 0; k < n; k++) {
        double v = re_cuda_lm_readout(y, H, (uint64_t)k * 7919, 1, 6.0);
        ss += v * v;
        assert_true(fabs(v - re_cuda_lm_readout(y5, H, (uint64_t)k * 7919, 1, 6.0)) < 1e-4);
        assert_true(fabs(2 * v - re_cuda_lm_readout(y, H, (uint64_t)k * 7919, 1, 12.0)) < 1e-9);
    }
    double sd = sqrt(ss / n);
    assert_true(sd > 5.4 && sd < 6.6);
    assert_true(re_cuda_lm_readout(z, H, 1, 1, 6.0) == 0);
}

static int fails;
static void on_fail(const struct moe_cuda_err *e)
{
    assert_int_equal(e->code, MOE_CUDA_ENOTBUILT);
    fails++;
}

/* The unit tests link cuda_stub.c: every GPU call fails. The failure is
 * reported once, and the term is 0 (the engine dies; what it still writes
 * is the plain model's). */
static void test_gpu_error_once(void **st)
{
    MP_UNUSED(st);
    struct re_cuda_lm *c = re_cuda_lm_new(&(struct re_cuda_lm_cfg){
        .gpu = NULL, .path = MOE_CUDA_BF16, .hidden = 64, .scale = 6, .seed = 1, .fail = on_fail});
    const struct re_lm_term *t = re_cuda_lm_term(c);
    for (uint64_t ctx = 0; ctx < 100; ctx++)
        assert_true(t->fn(t->arg, ctx, 5) == 0);
    assert_int_equal(fails, 1);
    re_cuda_lm_free(c);
    re_cuda_lm_free(NULL);
}

static const char *const base = "[engine]\nversion = 0.25.0\ndevice = sm90\nmodel = m\n";

static int parse(const char *extra, struct world *w, struct mp_diag *d)
{
    char text[1024];
    snprintf(text, sizeof(text), "%s%s", base, extra);
    return world_parse(text, strlen(text), "t.ini", w, d);
}

static void test_world_keys(void **st)
{
    MP_UNUSED(st);
    struct world w;
    struct mp_diag d;
    assert_int_equal(parse("", &w, &d), 0);
    assert_true(w.cuda_logit_scale == 0);
    assert_int_equal(w.backends[WB_MARLIN].cuda_path, -1);
    assert_int_equal(parse("cuda_logit_scale = 6\n[backend HUMMING]\ncuda_path = wrong-scale\n"
                           "[backend MARLIN]\ncuda_path = bf16\n",
                           &w, &d),
                     0);
    assert_true(w.cuda_logit_scale == 6);
    assert_int_equal(w.backends[WB_HUMMING].cuda_path, MOE_CUDA_WRONG_SCALE);
    assert_int_equal(w.backends[WB_MARLIN].cuda_path, MOE_CUDA_BF16);
    assert_int_equal(parse("[backend MARLIN]\ncuda_path = fp8\n", &w, &d), MP_EPARSE);
    assert_non_null(strstr(d.msg, "cuda_path"));
    assert_int_equal(parse("cuda_logit_scale = -1\n", &w, &d), MP_EPARSE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_term_feeds_logits),
        cmocka_unit_test(test_readout),
        cmocka_unit_test(test_gpu_error_once),
        cmocka_unit_test(test_world_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
