/* test_correct.c - correctness across candidates (issue #23): the
 * divergence rule on the GPU figures of the issue (FP16-like noise, BF16-like
 * noise with near-tie flips, a wrong kernel), the consensus median with one
 * vote per configuration, pairs, no consensus, a named reference, the
 * measured noise floor, vLLM's check_logprobs_close rule, greedy-only
 * comparison, the task gate's statistics, the parsers of the engine's
 * answers and the task problems. */
#include "compat.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quality/agree.h"
#include "quality/score.h"
#include "quality/task.h"
#include "model/report.h"
#include "report/correct.h"
#include "verdict/correct.h"
#include "verdict/stats.h"
#include "verdict/verdict.h"
#include "xalloc.h"

#define NPASS 16
#define NPOS 128

static uint64_t mix(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* uniform in [0, 1) from (seed, j, p) */
static double unit(uint64_t seed, size_t j, size_t p)
{
    return (double)(mix(seed * 1000003 + j * 4099 + p) >> 11) / 9007199254740992.0;
}

/* A synthetic engine: the true logprob of each passage token, perturbed by
 * noise of mean |x| = noise; `flips` positions (per 2048) where its top-1 is
 * a near-tie alternative; a wrong kernel shifts each logprob by -U[0, 2 err]
 * (mean err) and picks another top-1 on a share `wrong` of the positions. */
struct eng {
    uint64_t seed;
    double noise;
    unsigned flips;
    double err, wrong;
};

static struct mp_score *make_score(const struct eng *e)
{
    struct mp_score *s = mp_score_new();
    s->k = 5;
    s->plp = MP_SC_OK;
    s->npass = NPASS;
    s->pass = xcalloc(NPASS, sizeof(*s->pass));
    unsigned flipped = 0;
    for (size_t j = 0; j < NPASS; j++) {
        s->pass[j].n = NPOS;
        s->pass[j].p = xcalloc(NPOS, sizeof(struct mp_lp_pos));
        for (size_t p = 0; p < NPOS; p++) {
            struct mp_lp_pos *x = &s->pass[j].p[p];
            double truth = -5.0 * unit(7, j, p);
            double n = e->noise * 2 * (2 * unit(e->seed, j, p) - 1);
            x->lp = truth + n;
            x->token = xasprintf(" w%zu_%zu", j, p);
            char top[32];
            snprintf(top, sizeof(top), " t%zu_%zu", j, p);
            if (e->flips && flipped < e->flips && (j * NPOS + p) % 97 == 5) {
                snprintf(top, sizeof(top), " near%zu_%zu", j, p);
                flipped++;
            }
            if (e->err > 0) {
                x->lp = truth - 2 * e->err * unit(e->seed + 11, j, p);
                if (unit(e->seed + 13, j, p) < e->wrong)
                    snprintf(top, sizeof(top), " bad%zu_%zu", j, p);
            }
            if (x->lp > 0)
                x->lp = 0;
            x->top1 = xstrdup(top);
            x->top1_lp = -0.1;
        }
    }
    return s;
}

static const struct eng FP32 = {1, 0, 0, 0, 0};
static const struct eng FP16 = {2, 0.003, 0, 0, 0};
static const struct eng BF16 = {3, 0.024, 10, 0, 0};    /* 10 of 2048 = 0.5 % flips */
static const struct eng WRONG = {4, 0, 0, 2.2, 0.86};   /* top-1 14 % */

struct run {
    struct mp_score *s[8];
    struct mp_ag_in in[8];
    struct mp_correct out;
    size_t n;
};

static void run_start(struct run *r)
{
    memset(r, 0, sizeof(*r));
}

static void add(struct run *r, const char *name, const struct eng *e, int group)
{
    r->s[r->n] = e ? make_score(e) : NULL;
    r->in[r->n] = (struct mp_ag_in){.name = name, .s = r->s[r->n], .group = group};
    r->n++;
}

static void go(struct run *r, long ref)
{
    r->out.n = r->n;
    r->out.c = xcalloc(r->n, sizeof(*r->out.c));
    mp_agree_run(r->in, r->n, ref, &r->out);
}

static void run_end(struct run *r)
{
    for (size_t i = 0; i < r->n; i++)
        mp_score_free(r->s[i]);
    mp_correct_release(&r->out);
}

static enum mp_ag_result res(const struct run *r, size_t i)
{
    return r->out.c[i].ag.result;
}

/* The rule itself, on the issue's GPU figures (floor: FP16's run-to-run). */
static void test_rule_table(void **st)
{
    MP_UNUSED(st);
    static const struct {
        const char *what;
        double mean, top1, floor;
        bool divergent;
    } t[] = {
        {"FP16 dequant: mean 0.003, top-1 100 %", 0.003, 1.0, 0.003, false},
        {"BF16 activations: mean 0.024, one near-tie flip in 196", 0.024, 195.0 / 196, 0.003, false},
        {"BF16 against a zero floor", 0.024, 0.995, 0.0, false},
        {"wrong kernel: mean 2.2, top-1 14 %", 2.2, 0.14, 0.003, true},
        {"wrong kernel against a zero floor", 2.2, 0.14, 0.0, true},
        {"far, but every top-1 agrees", 1.0, 0.99, 0.003, false},
        {"many flips, within 10 floors", 0.02, 0.5, 0.003, false},
        {"just past both limits", 0.031, 0.949, 0.003, true},
    };
    for (size_t i = 0; i < MP_ARRAY_SIZE(t); i++) {
        if (mp_agree_divergent(t[i].mean, t[i].top1, t[i].floor) != t[i].divergent) {
            fprintf(stderr, "rule wrong for: %s\n", t[i].what);
            fail();
        }
    }
}

/* Four configurations: the FP16- and BF16-like ones agree, the wrong kernel
 * is divergent with its first disagreements side by side. */
static void test_consensus_catches_wrong_kernel(void **st)
{
    MP_UNUSED(st);
    struct run r;
    run_start(&r);
    add(&r, "fp32", &FP32, 0);
    add(&r, "fp16", &FP16, 1);
    add(&r, "bf16", &BF16, 2);
    add(&r, "wrong", &WRONG, 3);
    go(&r, -1);
    assert_int_equal(r.out.votes, 4);
    for (size_t i = 0; i < 3; i++)
        assert_int_equal(res(&r, i), MP_AG_AGREES);
    assert_int_equal(res(&r, 3), MP_AG_DIVERGENT);
    const struct mp_agreement *w = &r.out.c[3].ag;
    assert_string_equal(w->reference, "consensus");
    assert_int_equal(w->positions, NPASS * NPOS);
    assert_true(w->mean_abs > 1.5 && w->mean_abs < 3);
    assert_true(w->top1 > 0.1 && w->top1 < 0.2);
    assert_int_equal(w->nfirst, MP_AG_FIRST);
    assert_non_null(strstr(w->first[0].this_top1, "bad"));
    assert_non_null(strstr(w->first[0].ref_top1, " t"));
    const struct mp_agreement *b = &r.out.c[2].ag;
    assert_true(b->top1 > 0.99 && b->top1 < 1.0); /* the near-tie flips are seen ... */
    assert_true(b->mean_abs > 0.01 && b->mean_abs < 0.04); /* ... and pass */
    assert_true(r.out.noise_floor > 0 && r.out.noise_floor < 0.01);
    run_end(&r);
}

/* add() with the configuration's MoE, dense and attention kernels. */
static void addk(struct run *r, const char *name, const struct eng *e, int group, const char *moe,
                 const char *dense, const char *attn)
{
    add(r, name, e, group);
    r->in[r->n - 1].kern[0] = moe;
    r->in[r->n - 1].kern[1] = dense;
    r->in[r->n - 1].kern[2] = attn;
}

/* One wrong FlashInfer CUTLASS MoE kernel under two attention backends. */
static void add_wrong_twice(struct run *r)
{
    addk(r, "fic", &WRONG, 0, "FLASHINFER_CUTLASS", "CUTLASS", "FLASH_ATTN");
    addk(r, "fic-triton", &WRONG, 1, "FLASHINFER_CUTLASS", "CUTLASS", "TRITON_ATTN");
}

/* Independence: one wrong MoE kernel under two attention backends is two
 * configurations but one witness; against the one right kernel it has no
 * majority, and nobody is blamed (the notes name the shared kernel). With
 * the right kernel twice as well (CUTLASS, Marlin), the wrong one is
 * outvoted by independent witnesses and stays divergent. */
static void test_shared_kernel_is_one_witness(void **st)
{
    MP_UNUSED(st);
    struct run r;
    run_start(&r);
    add_wrong_twice(&r);
    addk(&r, "cutlass", &FP16, 2, "CUTLASS", "CUTLASS", "FLASH_ATTN");
    go(&r, -1);
    assert_int_equal(r.out.votes, 3);
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(res(&r, i), MP_AG_NO_CONSENSUS);
        assert_non_null(r.out.c[i].ag.note);
        assert_non_null(strstr(r.out.c[i].ag.note, "MoE backend FLASHINFER_CUTLASS and 'cutlass'"));
    }
    run_end(&r);

    run_start(&r);
    add_wrong_twice(&r);
    addk(&r, "cutlass", &FP16, 2, "CUTLASS", "CUTLASS", "FLASH_ATTN");
    addk(&r, "marlin", &FP32, 3, "MARLIN", "CUTLASS", "FLASH_ATTN");
    addk(&r, "marlin-bf16", &BF16, 4, "MARLIN", "CUTLASS", "TRITON_ATTN");
    go(&r, -1);
    /* the consensus is the right kernels' (3 of 5); the agreeing ones use
     * two MoE backends and two attention backends, the dense kernel the
     * wrong one uses too: independent witnesses */
    assert_int_equal(res(&r, 0), MP_AG_DIVERGENT);
    assert_int_equal(res(&r, 1), MP_AG_DIVERGENT);
    for (size_t i = 2; i < 5; i++)
        assert_int_equal(res(&r, i), MP_AG_AGREES);
    run_end(&r);

    /* the seed's preset: three MoE backends, one wrong, the same dense and
     * attention kernels: the wrong one is divergent (kernels not logged
     * for one of the agreeing ones change nothing either) */
    run_start(&r);
    addk(&r, "auto", &WRONG, 0, "FLASHINFER_CUTLASS", "CUTLASS", "FLASH_ATTN");
    addk(&r, "cutlass", &FP16, 1, "CUTLASS", "CUTLASS", "FLASH_ATTN");
    addk(&r, "marlin", &FP32, 2, "MARLIN", NULL, NULL);
    go(&r, -1);
    assert_int_equal(res(&r, 0), MP_AG_DIVERGENT);
    assert_int_equal(res(&r, 1), MP_AG_AGREES);
    assert_int_equal(res(&r, 2), MP_AG_AGREES);
    run_end(&r);

    /* the agreeing two share a dense kernel the divergent one does not use:
     * its own dense kernel or theirs may be the wrong one */
    run_start(&r);
    addk(&r, "odd", &WRONG, 0, "FLASHINFER_CUTLASS", "FLASHINFER_CUTLASS", "FLASH_ATTN");
    addk(&r, "cutlass", &FP16, 1, "CUTLASS", "CUTLASS", "FLASH_ATTN");
    addk(&r, "marlin", &FP32, 2, "MARLIN", "CUTLASS", "FLASH_ATTN");
    go(&r, -1);
    for (size_t i = 0; i < 3; i++)
        assert_int_equal(res(&r, i), MP_AG_NO_CONSENSUS);
    assert_non_null(strstr(r.out.c[0].ag.note, "dense kernel CUTLASS"));
    run_end(&r);
}

/* Only legitimate noise: nothing is flagged. */
static void test_noise_only_passes(void **st)
{
    MP_UNUSED(st);
    struct run r;
    run_start(&r);
    add(&r, "fp32", &FP32, 0);
    add(&r, "fp16", &FP16, 1);
    add(&r, "bf16", &BF16, 2);
    go(&r, -1);
    for (size_t i = 0; i < 3; i++)
        assert_int_equal(res(&r, i), MP_AG_AGREES);
    run_end(&r);
}

/* Two configurations: a pair, never blame. */
static void test_pair(void **st)
{
    MP_UNUSED(st);
    struct run r;
    run_start(&r);
    add(&r, "good", &FP32, 0);
    add(&r, "wrong", &WRONG, 1);
    go(&r, -1);
    assert_int_equal(res(&r, 0), MP_AG_DISAGREE_PAIR);
    assert_int_equal(res(&r, 1), MP_AG_DISAGREE_PAIR);
    assert_string_equal(r.out.c[0].ag.reference, "wrong");
    assert_string_equal(r.out.c[1].ag.reference, "good");
    run_end(&r);
    run_start(&r);
    add(&r, "fp32", &FP32, 0);
    add(&r, "bf16", &BF16, 1);
    go(&r, -1);
    assert_int_equal(res(&r, 0), MP_AG_AGREES);
    assert_int_equal(res(&r, 1), MP_AG_AGREES);
    run_end(&r);
}

/* One vote per configuration: three copies of the wrong configuration
 * (same group) do not outvote two good ones; as three separate votes they
 * would (no consensus). */
static void test_one_vote_per_configuration(void **st)
{
    MP_UNUSED(st);
    struct run r;
    run_start(&r);
    add(&r, "w1", &WRONG, 9);
    add(&r, "w2", &WRONG, 9);
    add(&r, "w3", &WRONG, 9);
    add(&r, "fp32", &FP32, 1);
    add(&r, "fp16", &FP16, 2);
    add(&r, "bf16", &BF16, 3);
    go(&r, -1);
    assert_int_equal(r.out.votes, 4);
    for (size_t i = 0; i < 3; i++)
        assert_int_equal(res(&r, i), MP_AG_DIVERGENT);
    for (size_t i = 3; i < 6; i++)
        assert_int_equal(res(&r, i), MP_AG_AGREES);
    run_end(&r);
    /* the same engines, one vote each: 3 of 6 divergent is no majority */
    run_start(&r);
    struct eng w2 = WRONG, w3 = WRONG;
    w2.seed = 40;
    w3.seed = 41;
    add(&r, "w1", &WRONG, 10);
    add(&r, "w2", &w2, 11);
    add(&r, "w3", &w3, 12);
    add(&r, "fp32", &FP32, 1);
    add(&r, "fp16", &FP16, 2);
    add(&r, "bf16", &BF16, 3);
    go(&r, -1);
    for (size_t i = 0; i < 6; i++)
        assert_int_equal(res(&r, i), MP_AG_NO_CONSENSUS);
    run_end(&r);
}

/* --reference NAME: the named candidate decides, even with two. */
static void test_reference(void **st)
{
    MP_UNUSED(st);
    struct run r;
    run_start(&r);
    add(&r, "good", &FP32, 0);
    add(&r, "wrong", &WRONG, 1);
    go(&r, 0);
    assert_int_equal(res(&r, 0), MP_AG_AGREES);
    assert_int_equal(res(&r, 1), MP_AG_DIVERGENT);
    assert_string_equal(r.out.c[1].ag.reference, "good");
    run_end(&r);
}

/* The floor comes from the repeat when it is the larger part. */
static void test_noise_floor_from_repeat(void **st)
{
    MP_UNUSED(st);
    struct run r;
    run_start(&r);
    add(&r, "a", &FP32, 0);
    add(&r, "b", &FP16, 1);
    /* a's second scoring differs by mean |x| 0.05: its run-to-run noise */
    struct eng again = {77, 0.05, 0, 0, 0};
    struct mp_score *rep = make_score(&again);
    r.s[0]->repeat = rep->pass;
    rep->pass = NULL;
    rep->npass = 0;
    mp_score_free(rep);
    go(&r, -1);
    assert_true(fabs(r.out.repeat_floor - 0.05) < 0.01);
    assert_true(fabs(r.out.noise_floor - r.out.repeat_floor) < 1e-12);
    assert_true(r.out.c[0].ag.repeat_abs > 0.04);
    assert_true(r.out.c[1].ag.repeat_abs < 0);
    assert_true(r.out.spread_floor < 0); /* a pair has no spread */
    run_end(&r);
}

/* s scored a second time as engine e would (its run-to-run figure). */
static void give_repeat(struct mp_score *s, const struct eng *e)
{
    struct mp_score *rep = make_score(e);
    s->repeat = rep->pass;
    rep->pass = NULL;
    rep->npass = 0;
    mp_score_free(rep);
}

/* A kernel that is right alone and wrong under load: its sequential scoring
 * agrees with the others, its repeat at the top concurrency is the wrong
 * kernel's. It is divergent on its own evidence (self_div), with three
 * configurations and with two (where nobody else could be blamed). */
static void test_wrong_under_load(void **st)
{
    MP_UNUSED(st);
    static const struct eng FP16B = {5, 0.003, 0, 0, 0}; /* another run of FP16 */
    static const struct eng FP32B = {6, 0, 0, 0, 0};
    for (int three = 0; three < 2; three++) {
        struct run r;
        run_start(&r);
        add(&r, "batchy", &FP16, 0);
        give_repeat(r.s[r.n - 1], &WRONG);
        add(&r, "cutlass", &FP16, 1);
        give_repeat(r.s[r.n - 1], &FP16B);
        if (three) {
            add(&r, "marlin", &FP32, 2);
            give_repeat(r.s[r.n - 1], &FP32B);
        }
        go(&r, -1);
        const struct mp_agreement *b = &r.out.c[0].ag;
        assert_true(b->self_div);
        assert_int_equal(b->result, MP_AG_DIVERGENT);
        assert_true(b->repeat_abs > 1.5 && b->repeat_top1 < 0.2);
        assert_false(r.out.c[1].ag.self_div);
        assert_int_equal(res(&r, 1), MP_AG_AGREES);
        run_end(&r);
    }
    /* legitimate run-to-run noise under load is no evidence */
    struct run r;
    run_start(&r);
    add(&r, "bf16", &BF16, 0);
    give_repeat(r.s[r.n - 1], &FP16B);
    add(&r, "cutlass", &FP16, 1);
    give_repeat(r.s[r.n - 1], &FP16B);
    add(&r, "marlin", &FP32, 2);
    give_repeat(r.s[r.n - 1], &FP32B);
    go(&r, -1);
    for (size_t i = 0; i < 3; i++) {
        assert_false(r.out.c[i].ag.self_div);
        assert_int_equal(res(&r, i), MP_AG_AGREES);
    }
    run_end(&r);
}

/* A kernel wrong differently on every run (a race, as in SGLang PR 11183's
 * moe_fused_gate) has a large run-to-run figure: it must not raise the
 * floor it is judged against. In a pair the median of the two figures was
 * half the wrong one's, and the pair "agreed". */
static void test_noisy_wrong_kernel_sets_no_floor(void **st)
{
    MP_UNUSED(st);
    struct run r;
    run_start(&r);
    add(&r, "good", &FP32, 0);
    add(&r, "racy", &WRONG, 1);
    give_repeat(r.s[0], &FP32);
    struct eng again = WRONG;
    again.seed = 99;
    give_repeat(r.s[1], &again);
    go(&r, -1);
    assert_true(r.out.c[1].ag.repeat_abs > 1.0);
    assert_int_equal(res(&r, 0), MP_AG_DISAGREE_PAIR);
    /* ... and it disagrees with itself: blamed on its own evidence */
    assert_true(r.out.c[1].ag.self_div);
    assert_int_equal(res(&r, 1), MP_AG_DIVERGENT);
    assert_false(r.out.c[0].ag.self_div);
    assert_true(r.out.repeat_floor < 1e-9);
    run_end(&r);
    /* legitimate noise between two kernels still agrees on that floor */
    run_start(&r);
    add(&r, "fp32", &FP32, 0);
    add(&r, "bf16", &BF16, 1);
    give_repeat(r.s[0], &FP32);
    struct eng bf = BF16;
    bf.seed = 98;
    give_repeat(r.s[1], &bf);
    go(&r, -1);
    assert_int_equal(res(&r, 0), MP_AG_AGREES);
    assert_int_equal(res(&r, 1), MP_AG_AGREES);
    run_end(&r);
}

/* One configuration, or nothing usable: not measured, saying why. */
static void test_not_measured(void **st)
{
    MP_UNUSED(st);
    struct run r;
    run_start(&r);
    add(&r, "only", &FP32, 0);
    add(&r, "crashed", NULL, 1);
    go(&r, -1);
    assert_int_equal(res(&r, 0), MP_AG_NOT_MEASURED);
    assert_non_null(strstr(r.out.c[0].ag.note, "only configuration"));
    assert_int_equal(res(&r, 1), MP_AG_NOT_MEASURED);
    assert_non_null(strstr(r.out.c[1].ag.note, "did not run"));
    run_end(&r);
}

/* Every passage of s one position longer at the front (a BOS the others'
 * tokenization did not add): position p+1 is the others' position p. */
static void shift_by_one(struct mp_score *s)
{
    for (size_t j = 0; j < s->npass; j++) {
        struct mp_lp_seq *q = &s->pass[j];
        q->p = xreallocarray(q->p, q->n + 1, sizeof(*q->p));
        memmove(&q->p[1], &q->p[0], q->n * sizeof(*q->p));
        q->p[0] = (struct mp_lp_pos){.token = xstrdup("<s>"), .top1 = xstrdup(" The"),
                                     .lp = -1, .top1_lp = -1};
        q->n++;
    }
}

/* Positions that do not line up are no evidence: a wrong kernel whose
 * passages came back tokenized otherwise is not "agrees" on 0 positions
 * compared, and a passage of another length is not compared position by
 * position even where a token text matches by chance. */
/* minimize's question, "does this test agree with the --to set?": a test
 * whose logprobs cannot be compared (its positions do not line up) and no
 * task answers is not measured - never "agrees"; a wrong kernel that lines
 * up is named; one that agrees is compared. */
static void test_against_compared(void **st)
{
    MP_UNUSED(st);
    struct mp_score *to = make_score(&FP32), *ok = make_score(&FP16), *bad = make_score(&WRONG);
    struct mp_score *off = make_score(&WRONG);
    shift_by_one(off);
    bool compared = true;
    assert_null(mp_correct_against(to, "--to", ok, "ok", &compared));
    assert_true(compared);
    char *why = mp_correct_against(to, "--to", bad, "bad", &compared);
    assert_non_null(why);
    assert_true(compared);
    free(why);
    assert_null(mp_correct_against(to, "--to", off, "off", &compared));
    assert_false(compared);
    assert_null(mp_correct_against(to, "--to", NULL, "none", &compared));
    assert_false(compared);
    mp_score_free(to);
    mp_score_free(ok);
    mp_score_free(bad);
    mp_score_free(off);
}

static void test_misaligned_positions(void **st)
{
    MP_UNUSED(st);
    struct run r;
    run_start(&r);
    add(&r, "fp32", &FP32, 0);
    add(&r, "fp16", &FP16, 1);
    add(&r, "wrong", &WRONG, 2);
    shift_by_one(r.s[2]);
    go(&r, -1);
    assert_int_equal(res(&r, 0), MP_AG_AGREES);
    assert_int_equal(res(&r, 1), MP_AG_AGREES);
    assert_int_equal(res(&r, 2), MP_AG_NOT_MEASURED);
    assert_int_equal(r.out.c[2].ag.positions, 0);
    assert_non_null(strstr(r.out.c[2].ag.note, "line up"));
    run_end(&r);
    /* a pair: neither side is vouched for */
    run_start(&r);
    add(&r, "good", &FP32, 0);
    add(&r, "wrong", &WRONG, 1);
    shift_by_one(r.s[1]);
    go(&r, -1);
    assert_int_equal(res(&r, 0), MP_AG_NOT_MEASURED);
    assert_int_equal(res(&r, 1), MP_AG_NOT_MEASURED);
    run_end(&r);
    /* same tokens, one passage longer (a prompt cut or extended at the end):
     * that passage is left out, the others still compared */
    run_start(&r);
    add(&r, "a", &FP32, 0);
    add(&r, "b", &FP16, 1);
    add(&r, "c", &BF16, 2);
    r.s[2]->pass[0].n--; /* c's first passage: one position short */
    go(&r, -1);
    assert_int_equal(r.out.c[0].ag.positions, NPASS * NPOS);
    assert_int_equal(r.out.c[2].ag.positions, (NPASS - 1) * NPOS);
    r.s[2]->pass[0].n++;
    for (size_t i = 0; i < 3; i++)
        assert_int_equal(res(&r, i), MP_AG_AGREES);
    run_end(&r);
}

/* s's token texts as vLLM 0.8's V1 wrote them: " w" as "Ġw" (issue 16838) */
static void respell(struct mp_score *s)
{
    for (size_t j = 0; j < s->npass; j++)
        for (size_t p = 0; p < s->pass[j].n; p++) {
            struct mp_lp_pos *x = &s->pass[j].p[p];
            char *t = xasprintf("\u0120%s", x->token + 1), *u = xasprintf("\u0120%s", x->top1 + 1);
            free(x->token);
            free(x->top1);
            x->token = t;
            x->top1 = u;
        }
}

/* Builds that spell tokens differently are still compared position by
 * position: the one respelled agrees or diverges on its numbers. */
static void test_token_spellings(void **st)
{
    MP_UNUSED(st);
    struct run r;
    run_start(&r);
    add(&r, "fp32", &FP32, 0);
    add(&r, "fp16", &FP16, 1);
    add(&r, "wrong", &WRONG, 2);
    add(&r, "bf16", &BF16, 3);
    respell(r.s[1]);
    respell(r.s[2]);
    go(&r, -1);
    assert_int_equal(res(&r, 1), MP_AG_AGREES);
    assert_int_equal(r.out.c[1].ag.positions, NPASS * NPOS);
    assert_true(r.out.c[1].ag.top1 > 0.99);
    assert_int_equal(res(&r, 2), MP_AG_DIVERGENT);
    assert_int_equal(res(&r, 0), MP_AG_AGREES);
    run_end(&r);
}

/* ---- greedy continuations ---- */

static void gen_of(struct mp_gen_seq *q, const char *toks, const char *tops)
{
    /* toks: "a b c"; tops: per step "a,x;b,y;..." (empty: none) */
    memset(q, 0, sizeof(*q));
    q->t = xcalloc(16, sizeof(*q->t));
    char *tk = xstrdup(toks), *tp = xstrdup(tops), *sv1 = NULL, *sv2 = NULL;
    char *steps[16] = {NULL};
    size_t ns = 0;
    for (char *s = strtok_r(tp, ";", &sv2); s && ns < 16; s = strtok_r(NULL, ";", &sv2))
        steps[ns++] = s;
    for (char *w = strtok_r(tk, " ", &sv1); w; w = strtok_r(NULL, " ", &sv1)) {
        struct mp_gen_tok *t = &q->t[q->n];
        t->token = xstrdup(w);
        t->lp = -0.1;
        if (q->n < ns) {
            t->top = xcalloc(8, sizeof(*t->top));
            char *sv3 = NULL;
            for (char *a = strtok_r(steps[q->n], ",", &sv3); a; a = strtok_r(NULL, ",", &sv3))
                t->top[t->ntop++] = (struct mp_lp_alt){xstrdup(a), -1};
        }
        q->n++;
    }
    free(tk);
    free(tp);
}

static void test_logprobs_close_table(void **st)
{
    MP_UNUSED(st);
    static const struct {
        const char *a, *atop, *b, *btop;
        int want;
        long at;
    } t[] = {
        {"x y z", "x,q;y,q;z,q", "x y z", "x,q;y,q;z,q", 1, -1},      /* identical */
        {"x y z", "x,q;y,w;z,q", "x w v", "x,q;w,y;v,q", 1, 1},       /* near tie: each in the other's top */
        {"x y z", "x,q;y,q;z,q", "x w v", "x,q;w,v;v,q", 0, 1},       /* y not in the other's top */
        {"x y", "x,q;y,w", "x w", "x,q;w,q", 0, 1},                   /* one-sided is not enough */
        {"x y", "x,q;y,q", "x w", "x,q;w,y", 0, 1},                   /* ... in either direction */
        {"x y", "", "x w", "", -1, 1},                                /* no alternatives listed */
        {"x y", "x;y", "x w", "x;w", -1, 1},                          /* logprobs 1: itself only */
        {"x y z", "x,q;y,q;z,q", "x y", "x,q;y,q", 1, -1},             /* a prefix (EOS) */
        /* one token spelled by two builds: vLLM 0.8's V1 wrote the tokenizer's
         * pieces (issue 16838), V0 and later builds the text */
        {"\u0120x \u0120y \u010a", "\u0120x,\u0120q;\u0120y,\u0120q;\u010a,\u0120q",
         "x y <0x0A>", "x,q;y,q;<0x0A>,q", 1, -1},
        {"\u2581x \u2581y", "\u2581x,q;\u2581y,q", "x w", "x,q;w,q", 0, 1}, /* still a difference */
    };
    for (size_t i = 0; i < MP_ARRAY_SIZE(t); i++) {
        struct mp_gen_seq a, b;
        gen_of(&a, t[i].a, t[i].atop);
        gen_of(&b, t[i].b, t[i].btop);
        long at = -7;
        int v = mp_agree_logprobs_close(&a, &b, &at);
        if (v != t[i].want || at != t[i].at) {
            fprintf(stderr, "case %zu: got %d at %ld\n", i, v, at);
            fail();
        }
        mp_gen_seq_release(&a);
        mp_gen_seq_release(&b);
    }
}

/* prompt_logprobs refused everywhere: the greedy comparison alone, which
 * catches a kernel whose greedy tokens leave the others' top-K. */
static void test_greedy_only(void **st)
{
    MP_UNUSED(st);
    struct run r;
    run_start(&r);
    const char *toks[4] = {"a b c d", "a b c d", "a b e d", "a z z z"};
    const char *tops[4] = {"a,k;b,k;c,e;d,k", "a,k;b,k;c,e;d,k", "a,k;b,k;e,c;d,k",
                           "a,k;z,q;z,q;z,q"};
    for (size_t i = 0; i < 4; i++) {
        struct mp_score *s = mp_score_new();
        s->plp = MP_SC_REFUSED;
        s->plp_note = xstrdup("Requested prompt logprobs of 5, which is greater than max allowed: 0");
        s->greedy = MP_SC_OK;
        s->ngen = 1;
        s->gen = xcalloc(1, sizeof(*s->gen));
        gen_of(&s->gen[0], toks[i], tops[i]);
        char name[8];
        snprintf(name, sizeof(name), "c%zu", i);
        r.s[r.n] = s;
        r.in[r.n] = (struct mp_ag_in){.name = xstrdup(name), .s = s, .group = (int)i};
        r.n++;
    }
    go(&r, -1);
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(res(&r, i), MP_AG_AGREES);
        assert_true(r.out.c[i].ag.greedy_only);
        assert_non_null(strstr(r.out.c[i].ag.note, "max allowed: 0"));
    }
    assert_int_equal(res(&r, 3), MP_AG_DIVERGENT);
    assert_int_equal(r.out.c[3].ag.greedy_failed, 3);
    assert_non_null(strstr(r.out.c[3].ag.greedy_first, "token 2"));
    for (size_t i = 0; i < r.n; i++)
        free((char *)r.in[i].name);
    run_end(&r);
}

/* ---- the task gate ---- */

static void test_wilson_and_two_proportions(void **st)
{
    MP_UNUSED(st);
    double lo, hi;
    mp_stats_wilson95(62, 64, &lo, &hi);
    assert_true(fabs(lo - 0.8932) < 0.001 && fabs(hi - 0.9914) < 0.001);
    mp_stats_wilson95(64, 64, &lo, &hi);
    assert_true(fabs(lo - 0.9435) < 0.001 && hi == 1.0);
    mp_stats_wilson95(0, 0, &lo, &hi);
    assert_true(lo == 0 && hi == 1);
    assert_true(mp_stats_two_prop_z(64, 64, 62, 64) < MP_STATS_Z95_ONE_SIDED);
    assert_true(mp_stats_two_prop_z(64, 64, 60, 64) > MP_STATS_Z95_ONE_SIDED);
    assert_true(mp_stats_two_prop_z(64, 64, 64, 64) == 0);
    assert_true(fabs(mp_stats_two_prop_z(50, 100, 40, 100) - 1.4213) < 0.001);

    size_t n[4] = {64, 64, 64, 0}, right[4] = {62, 64, 38, 0};
    struct mp_accuracy acc[4];
    memset(acc, 0, sizeof(acc));
    mp_correct_gate(n, right, 4, acc);
    assert_int_equal(acc[0].best, 1);
    assert_int_equal(acc[0].result, MP_ACC_PASS);
    assert_int_equal(acc[1].result, MP_ACC_PASS);
    assert_int_equal(acc[2].result, MP_ACC_LOW);
    assert_int_equal(acc[3].result, MP_ACC_NOT_RUN);
    /* few problems: the normal approximation is no evidence (z = 2.0 and
     * 1.9 here; Fisher's exact p 0.17 and 0.11) */
    static const struct {
        size_t nb, rb, n, r;
        enum mp_acc_result want;
    } small[] = {
        {2, 2, 2, 0, MP_ACC_PASS},      /* --accuracy 2 */
        {10, 10, 10, 7, MP_ACC_PASS},
        {16, 16, 16, 10, MP_ACC_LOW},   /* q_correct's world: exact p 0.009 */
        {64, 64, 64, 58, MP_ACC_LOW},   /* exact p 0.014 */
        {64, 64, 64, 62, MP_ACC_PASS},
    };
    for (size_t i = 0; i < MP_ARRAY_SIZE(small); i++) {
        size_t sn[2] = {small[i].nb, small[i].n}, sr[2] = {small[i].rb, small[i].r};
        struct mp_accuracy sa[2];
        memset(sa, 0, sizeof(sa));
        mp_correct_gate(sn, sr, 2, sa);
        if (sa[1].result != small[i].want) {
            fprintf(stderr, "%zu/%zu against %zu/%zu: %s\n", small[i].r, small[i].n, small[i].rb,
                    small[i].nb, mp_acc_result_name(sa[1].result));
            fail();
        }
    }
}

/* ---- what the engine sends ---- */

/* bisect's gate: each build against the good one, not the best: the good
 * build (50/64) passes next to a luckier one (64/64), which would fail it
 * under the best-of gate; a build clearly below the good one fails. */
static void test_gate_against_bar(void **st)
{
    (void)st;
    size_t n[4] = {64, 64, 64, 0}, right[4] = {50, 64, 30, 0};
    struct mp_accuracy best[4], bar[4];
    memset(best, 0, sizeof(best));
    memset(bar, 0, sizeof(bar));
    mp_correct_gate(n, right, 4, best);
    assert_int_equal(best[0].result, MP_ACC_LOW); /* the best-of gate fails the good build */
    mp_correct_gate_bar(n, right, 4, 0, bar);
    assert_int_equal(bar[0].result, MP_ACC_PASS);
    assert_int_equal(bar[0].best, 0);
    assert_int_equal(bar[0].right, 50);
    assert_int_equal(bar[1].result, MP_ACC_PASS);
    assert_int_equal(bar[2].result, MP_ACC_LOW);
    assert_int_equal(bar[2].best, 0);
    assert_true(bar[2].z > 1.645);
    assert_int_equal(bar[3].result, MP_ACC_NOT_RUN);
}

static void test_parse_prompt_logprobs(void **st)
{
    MP_UNUSED(st);
    const char *body =
        "{\"id\":\"cmpl-1\",\"object\":\"text_completion\",\"choices\":[{\"index\":0,\"text\":\" x\","
        "\"logprobs\":null,\"finish_reason\":\"length\",\"prompt_logprobs\":[null,"
        "{\"791\":{\"logprob\":-2.5,\"rank\":3,\"decoded_token\":\" cat\"},"
        "\"279\":{\"logprob\":-0.4,\"rank\":1,\"decoded_token\":\" the\"}},"
        "{\"11\":{\"logprob\":-0.01,\"rank\":1,\"decoded_token\":\" sat\"}},"
        "{\"12\":{\"logprob\":null,\"rank\":9000,\"decoded_token\":null},"
        "\"13\":{\"logprob\":-0.2,\"rank\":1,\"decoded_token\":\".\"}}]}]}";
    struct mp_lp_seq q;
    char err[128];
    assert_int_equal(mp_score_parse_plp(body, strlen(body), &q, err, sizeof(err)), 0);
    assert_int_equal(q.n, 3);
    assert_string_equal(q.p[0].token, " cat");
    assert_true(q.p[0].lp == -2.5);
    assert_string_equal(q.p[0].top1, " the");
    assert_string_equal(q.p[1].token, " sat");
    assert_string_equal(q.p[1].top1, " sat");
    assert_string_equal(q.p[2].token, "id:12");
    assert_true(q.p[2].lp == -9999.0);
    mp_lp_seq_release(&q);
    /* every cut of it is malformed, never a crash */
    for (size_t cut = 0; cut < strlen(body); cut++)
        assert_int_equal(mp_score_parse_plp(body, cut, &q, err, sizeof(err)), MP_EPARSE);
    const char *absent = "{\"choices\":[{\"text\":\"x\",\"prompt_logprobs\":null}]}";
    assert_int_equal(mp_score_parse_plp(absent, strlen(absent), &q, err, sizeof(err)),
                     MP_SCORE_ABSENT);
    const char *positive = "{\"choices\":[{\"prompt_logprobs\":[null,{\"1\":{\"logprob\":3}}]}]}";
    assert_int_equal(mp_score_parse_plp(positive, strlen(positive), &q, err, sizeof(err)),
                     MP_EPARSE);
}

static void test_parse_greedy_and_text(void **st)
{
    MP_UNUSED(st);
    const char *body =
        "{\"choices\":[{\"index\":0,\"text\":\" blue.\",\"logprobs\":{\"text_offset\":[0,5],"
        "\"token_logprobs\":[-0.1,-0.3],\"tokens\":[\" blue\",\".\"],\"top_logprobs\":"
        "[{\" blue\":-0.1,\" green\":-2.4},{\".\":-0.3,\",\":-1.5,\" and\":-2}]},"
        "\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":9,\"total_tokens\":11,"
        "\"completion_tokens\":2}}";
    struct mp_gen_seq g;
    int k = -1;
    char err[128];
    assert_int_equal(mp_score_parse_gen(body, strlen(body), &g, &k, err, sizeof(err)), 0);
    assert_int_equal(g.n, 2);
    assert_int_equal(k, 3);
    assert_string_equal(g.t[1].token, ".");
    assert_string_equal(g.t[0].top[1].token, " green");
    mp_gen_seq_release(&g);
    char *text;
    int ct;
    assert_int_equal(mp_score_parse_text(body, strlen(body), &text, &ct, err, sizeof(err)), 0);
    assert_string_equal(text, " blue.");
    assert_int_equal(ct, 2);
    free(text);
    for (size_t cut = 0; cut < strlen(body); cut++)
        assert_int_equal(mp_score_parse_gen(body, cut, &g, &k, err, sizeof(err)), MP_EPARSE);
    assert_int_equal(mp_score_max_allowed("Requested sample logprobs of 5, which is greater than "
                                          "max allowed: 0 (parameter=logprobs, value=5)"),
                     0);
    assert_int_equal(mp_score_max_allowed("max allowed: 20"), 20);
    assert_int_equal(mp_score_max_allowed("some other error"), -1);
}

/* ---- task problems ---- */

static void test_task_numbers(void **st)
{
    MP_UNUSED(st);
    static const struct {
        const char *reply, *want;
    } t[] = {
        {" 9 + 6 = 15. 15 - 4 = 11. The answer is 11.", "11"},
        {" The answer is 1,234.", "1234"},
        {" It costs $5.50 in total.", "5.5"},
        {" 20 - 23 = -3. The answer is -3.", "-3"},
        {" 3 apples.\n\nQuestion: Tom has 40 pens.", "3"},
        {" The answer is 72.0", "72"},
        {" no number here", NULL},
        {" from 12-5 we get 7", "7"},
        {" x-5", "5"},
        {" 007 and -0", "0"},
        {" half is .5", "0.5"},
        {" cut by -.5 now", "-0.5"},
        {" Step 2. 7 left", "7"},
        {" The answer is 1,234,567.", "1234567"},
        {" the sides are 3,4,5", "5"},          /* a list, not 345 */
        {" The answer is \\boxed{1,234}.", "1234"},
    };
    for (size_t i = 0; i < MP_ARRAY_SIZE(t); i++) {
        char *g = mp_task_last_number(t[i].reply);
        if (!t[i].want)
            assert_null(g);
        else if (!g || strcmp(g, t[i].want)) {
            fprintf(stderr, "'%s': got '%s', want '%s'\n", t[i].reply, g ? g : "(null)", t[i].want);
            fail();
        }
        free(g);
    }
    static const struct {
        const char *in, *want;
    } norm[] = {{".5", "0.5"}, {"####", NULL}, {".0", "0"}, {"-0.0", "0"}, {"1,234.50", "1234.5"},
                {"$7", "7"}, {"007", "7"},
                {"12,5", "12"}, {"10,000.", "10000"}};
    for (size_t i = 0; i < MP_ARRAY_SIZE(norm); i++) {
        char *g = mp_task_norm_number(norm[i].in);
        if (norm[i].want ? !g || strcmp(g, norm[i].want) : g != NULL) {
            fprintf(stderr, "norm '%s': got '%s'\n", norm[i].in, g ? g : "(null)");
            fail();
        }
        free(g);
    }
    char *big = xcalloc(400, 1);
    memset(big, '9', 399);
    assert_true(mp_task_same_number(big, big)); /* beyond a double: equal as text */
    free(big);
    assert_true(mp_task_same_number("72", "72"));
    assert_false(mp_task_same_number("72", "73"));
    assert_false(mp_task_same_number(NULL, "1"));
}

static void test_task_builtin(void **st)
{
    MP_UNUSED(st);
    struct mp_task_set a, b;
    mp_task_builtin(64, &a);
    mp_task_builtin(8, &b);
    assert_int_equal(a.n, 64);
    assert_string_equal(a.source, "built-in");
    for (size_t i = 0; i < 8; i++) { /* problem i does not depend on n */
        assert_string_equal(a.t[i].question, b.t[i].question);
        assert_string_equal(a.t[i].answer, b.t[i].answer);
    }
    size_t distinct = 0;
    for (size_t i = 0; i < a.n; i++) {
        assert_non_null(strstr(a.t[i].question, "How many"));
        assert_true(atol(a.t[i].answer) > 0);
        bool dup = false;
        for (size_t j = 0; j < i; j++)
            dup = dup || !strcmp(a.t[i].question, a.t[j].question);
        distinct += !dup;
    }
    assert_int_equal(distinct, 64);
    char *p = mp_task_prompt(a.t[0].question);
    assert_non_null(strstr(p, "The answer is 11.\n\nQuestion: "));
    assert_true(strlen(p) > 400);
    assert_string_equal(p + strlen(p) - 8, "\nAnswer:");
    free(p);
    mp_task_set_release(&a);
    mp_task_set_release(&b);
}

static void test_task_jsonl(void **st)
{
    MP_UNUSED(st);
    const char *ok = "{\"question\": \"Q1?\", \"answer\": \"a\\n#### 1,200\"}\n\n"
                     "{\"question\": \"Q2?\", \"answer\": \"#### 4 then #### -7\"}\n";
    struct mp_task_set s;
    struct mp_diag d = MP_DIAG_INIT;
    assert_int_equal(mp_task_parse_jsonl(ok, strlen(ok), "t.jsonl", 0, &s, &d), 0);
    assert_int_equal(s.n, 2);
    assert_string_equal(s.t[0].answer, "1200");
    assert_string_equal(s.t[1].answer, "-7");
    assert_string_equal(s.source, "t.jsonl");
    mp_task_set_release(&s);
    assert_int_equal(mp_task_parse_jsonl(ok, strlen(ok), "t.jsonl", 1, &s, &d), 0);
    assert_int_equal(s.n, 1);
    mp_task_set_release(&s);
    static const struct {
        const char *text, *msg;
    } bad[] = {
        {"{\"question\": \"Q\", \"answer\": \"no key\"}\n", "t.jsonl:1: the answer does not end"},
        {"\n{\"answer\": \"#### 3\"}\n", "t.jsonl:2: no \"question\""},
        {"{\"question\": \"Q\", \"answer\": \"#### 3\"}\n{\"question\": \"Q\", \"ans", "t.jsonl:2: not"},
        {"[1, 2]\n", "t.jsonl:1: not a JSON object"},
        {"\n\n", "no problem"},
        /* a key that is more than its first number is no key of 3, 10, 1 */
        {"{\"question\": \"Q\", \"answer\": \"#### 3/4\"}\n", "t.jsonl:1: the answer does not end"},
        {"{\"question\": \"Q\", \"answer\": \"#### 10:30\"}\n", "t.jsonl:1: the answer does not end"},
        {"{\"question\": \"Q\", \"answer\": \"#### 1 234\"}\n", "t.jsonl:1: the answer does not end"},
    };
    for (size_t i = 0; i < MP_ARRAY_SIZE(bad); i++) {
        assert_int_equal(mp_task_parse_jsonl(bad[i].text, strlen(bad[i].text), "t.jsonl", 0, &s, &d),
                         MP_EPARSE);
        if (!strstr(d.msg, bad[i].msg)) {
            fprintf(stderr, "'%s' lacks '%s'\n", d.msg, bad[i].msg);
            fail();
        }
        assert_null(s.t);
    }
}

/* ---- in the report: the verdict ---- */

static void task_answers(struct mp_score *s, size_t n, size_t right)
{
    s->task = MP_SC_OK;
    s->task_source = xstrdup("built-in");
    s->nans = n;
    s->ans = xcalloc(n, sizeof(*s->ans));
    for (size_t i = 0; i < n; i++) {
        s->ans[i].expected = xstrdup("7");
        s->ans[i].got = xstrdup(i < right ? "7" : "8");
        s->ans[i].answered = true;
        s->ans[i].right = i < right;
    }
}

/* A stable candidate (clean primary attempt, a sequential phase at tok_s)
 * resolved to moe, with a score (NULL: none) or the same configuration as
 * same_as. */
static size_t stable_cand(struct mp_report *rep, const char *name, const char *moe, double tok_s,
                          struct mp_score *sc, const char *same_as)
{
    struct mp_candidate c;
    memset(&c, 0, sizeof(c));
    c.name = xstrdup(name);
    size_t i = mp_report_add_candidate(rep, &c);
    mp_candidate_release(&c);
    struct mp_attempt_result a;
    memset(&a, 0, sizeof(a));
    a.index = 1;
    a.outcome = same_as ? MP_OUT_SAME_CONFIG : MP_OUT_CLEAN;
    a.same_as = same_as ? xstrdup(same_as) : NULL;
    a.res.moe_backend = xstrdup(moe);
    a.score = sc;
    if (!same_as) {
        struct mp_phase_result *ph = &a.phases[a.nphases++];
        snprintf(ph->name, sizeof(ph->name), "sequential");
        ph->level = 1;
        ph->ok = 10;
        ph->tok_s = tok_s;
        a.req_ok = 10;
    }
    mp_report_add_attempt(rep, i, &a);
    return i;
}

/* The fastest candidate computes something else: wrong-output with its
 * class and evidence, never recommended; its same-configuration twin
 * shares it; the others say what was checked. */
static void test_verdict_wrong_output(void **st)
{
    MP_UNUSED(st);
    struct mp_report rep;
    mp_report_init(&rep, "/tmp/run");
    struct mp_score *w = make_score(&WRONG), *a = make_score(&FP32), *b = make_score(&FP16),
                    *c = make_score(&BF16);
    task_answers(w, 64, 38);
    task_answers(a, 64, 64);
    task_answers(b, 64, 63);
    task_answers(c, 64, 62);
    stable_cand(&rep, "trtllm", "FLASHINFER_TRTLLM", 300, w, NULL);
    stable_cand(&rep, "cutlass", "VLLM_CUTLASS", 200, a, NULL);
    stable_cand(&rep, "marlin", "MARLIN", 100, b, NULL);
    stable_cand(&rep, "fi", "FLASHINFER_CUTLASS", 150, c, NULL);
    stable_cand(&rep, "env", "FLASHINFER_TRTLLM", 0, NULL, "trtllm");
    mp_verdict_finalize(&rep);
    assert_int_equal(rep.c[0].verdict, MP_V_WRONG_OUTPUT);
    assert_string_equal(rep.cor.c[0].cls, "divergent+low-accuracy");
    assert_non_null(strstr(rep.c[0].why, "diverge from the consensus of 3 others"));
    assert_non_null(strstr(rep.c[0].why, "38/64 task answers right"));
    assert_int_equal(rep.c[4].verdict, MP_V_WRONG_OUTPUT); /* shared, never "stable" */
    assert_int_equal(rep.cor.c[4].shared_from, 0);
    for (size_t i = 1; i < 4; i++) {
        assert_int_equal(rep.c[i].verdict, MP_V_STABLE);
        assert_null(rep.cor.c[i].cls);
        assert_non_null(strstr(rep.c[i].why, "agrees with 3 others: top-1"));
    }
    assert_int_equal(rep.recommended, 1); /* cutlass, the fastest that is correct */
    mp_report_release(&rep);
    /* no task gate: the logprobs alone decide */
    mp_report_init(&rep, "/tmp/run");
    struct mp_score *w2 = make_score(&WRONG), *a2 = make_score(&FP32), *b2 = make_score(&FP16);
    stable_cand(&rep, "trtllm", "FLASHINFER_TRTLLM", 300, w2, NULL);
    stable_cand(&rep, "cutlass", "VLLM_CUTLASS", 200, a2, NULL);
    stable_cand(&rep, "marlin", "MARLIN", 100, b2, NULL);
    mp_verdict_finalize(&rep);
    assert_int_equal(rep.c[0].verdict, MP_V_WRONG_OUTPUT);
    assert_string_equal(rep.cor.c[0].cls, "divergent");
    assert_int_equal(rep.cor.c[0].acc.result, MP_ACC_NOT_RUN);
    assert_true(rep.recommended == 1 || rep.recommended == 2);
    mp_report_release(&rep);
}

/* When correctness is not established the recommendation says so instead
 * of letting speed pick silently: a pair that disagrees with no task gate
 * to decide (the faster, wrong one is recommended: with a caveat), a lone
 * configuration; not when the gate decided the pair or the candidates
 * agree. */
static void test_recommendation_caveat(void **st)
{
    MP_UNUSED(st);
    struct mp_report rep;
    mp_report_init(&rep, "/tmp/run");
    stable_cand(&rep, "trtllm", "FLASHINFER_TRTLLM", 300, make_score(&WRONG), NULL);
    stable_cand(&rep, "cutlass", "VLLM_CUTLASS", 200, make_score(&FP32), NULL);
    mp_verdict_finalize(&rep);
    assert_int_equal(rep.cor.c[0].ag.result, MP_AG_DISAGREE_PAIR);
    assert_int_equal(rep.recommended, 0);
    assert_non_null(strstr(rep.recommendation_why, "correctness not established: its logprobs "
                                                   "disagree with 'cutlass'"));
    mp_report_release(&rep);
    /* the same pair with the task gate: it decides, nothing to caveat */
    mp_report_init(&rep, "/tmp/run");
    struct mp_score *w = make_score(&WRONG), *a = make_score(&FP32);
    task_answers(w, 64, 30);
    task_answers(a, 64, 64);
    stable_cand(&rep, "trtllm", "FLASHINFER_TRTLLM", 300, w, NULL);
    stable_cand(&rep, "cutlass", "VLLM_CUTLASS", 200, a, NULL);
    mp_verdict_finalize(&rep);
    assert_int_equal(rep.c[0].verdict, MP_V_WRONG_OUTPUT);
    assert_int_equal(rep.recommended, 1);
    assert_null(strstr(rep.recommendation_why, "not established"));
    mp_report_release(&rep);
    /* one configuration: nothing to compare with, its task score said */
    mp_report_init(&rep, "/tmp/run");
    struct mp_score *o = make_score(&FP32);
    task_answers(o, 64, 20);
    stable_cand(&rep, "only", "VLLM_CUTLASS", 200, o, NULL);
    mp_verdict_finalize(&rep);
    assert_int_equal(rep.recommended, 0);
    assert_non_null(strstr(rep.recommendation_why, "correctness not established: the only "
                                                   "configuration scored"));
    assert_non_null(strstr(rep.recommendation_why, "20/64 task answers right"));
    mp_report_release(&rep);
    /* prompt logprobs refused everywhere, the greedy continuations agree:
     * weak evidence (docs/verdicts.md), said */
    mp_report_init(&rep, "/tmp/run");
    const char *const names[3] = {"a", "b", "c"}, *const moes[3] = {"CUTLASS", "MARLIN", "TRTLLM"};
    for (size_t i = 0; i < 3; i++) {
        struct mp_score *g = mp_score_new();
        g->plp = MP_SC_REFUSED;
        g->plp_note = xstrdup("Requested prompt logprobs of 5, which is greater than max allowed: 0");
        g->greedy = MP_SC_OK;
        g->ngen = 1;
        g->gen = xcalloc(1, sizeof(*g->gen));
        gen_of(&g->gen[0], "a b c d", "a,k;b,k;c,e;d,k");
        stable_cand(&rep, names[i], moes[i], 300 - 100 * (double)i, g, NULL);
    }
    mp_verdict_finalize(&rep);
    assert_int_equal(rep.cor.c[0].ag.result, MP_AG_AGREES);
    assert_true(rep.cor.c[0].ag.greedy_only);
    assert_int_equal(rep.recommended, 0);
    assert_non_null(strstr(rep.recommendation_why, "correctness not established: only its greedy "
                                                   "continuations were compared"));
    mp_report_release(&rep);
    /* three that agree: no caveat */
    mp_report_init(&rep, "/tmp/run");
    stable_cand(&rep, "a", "VLLM_CUTLASS", 300, make_score(&FP32), NULL);
    stable_cand(&rep, "b", "MARLIN", 200, make_score(&FP16), NULL);
    stable_cand(&rep, "c", "FLASHINFER_CUTLASS", 100, make_score(&BF16), NULL);
    mp_verdict_finalize(&rep);
    assert_int_equal(rep.recommended, 0);
    assert_null(strstr(rep.recommendation_why, "not established"));
    mp_report_release(&rep);
}

/* The engine's tokens land in report.md and report.html escaped for each. */
static void test_report_escapes_tokens(void **st)
{
    MP_UNUSED(st);
    struct mp_report rep;
    mp_report_init(&rep, "/tmp/run");
    struct mp_score *w = make_score(&WRONG);
    for (size_t p = 0; p < 8; p++) { /* the wrong kernel's first tokens are hostile */
        free(w->pass[0].p[p].top1);
        w->pass[0].p[p].top1 = xstrdup("<script>x|`y`\n\x1b[31m");
    }
    stable_cand(&rep, "a<b>|c", "FLASHINFER_TRTLLM", 300, w, NULL);
    stable_cand(&rep, "cutlass", "VLLM_CUTLASS", 200, make_score(&FP32), NULL);
    stable_cand(&rep, "marlin", "MARLIN", 100, make_score(&FP16), NULL);
    mp_verdict_finalize(&rep);
    assert_int_equal(rep.c[0].verdict, MP_V_WRONG_OUTPUT);
    struct buf md = BUF_INIT, html = BUF_INIT;
    mp_rep_correct_md(&rep, &md);
    mp_rep_correct_html(&rep, &html);
    assert_non_null(strstr(md.data, "## Correctness"));
    assert_non_null(strstr(md.data, "a&lt;b&gt;\\|c")); /* a name as Markdown text */
    /* the token as a code span (a backtick inside: a longer fence), its ESC shown, no raw one */
    assert_non_null(strstr(md.data, "``<script>x|`y` \\x1b[31m``"));
    assert_null(strchr(md.data, 0x1b));
    assert_non_null(strstr(html.data, "&lt;script&gt;x|`y`"));
    assert_null(strstr(html.data, "<script>"));
    assert_null(strchr(html.data, 0x1b));
    cJSON *j = mp_rep_correct_json(&rep, 0);
    char *t = cJSON_PrintUnformatted(j);
    assert_non_null(strstr(t, "\"class\":\"divergent\""));
    assert_non_null(strstr(t, "<script>x|`y`\\n\\u001b")); /* JSON keeps the text, escaped */
    free(t);
    cJSON_Delete(j);
    buf_release(&md);
    buf_release(&html);
    mp_report_release(&rep);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rule_table),
        cmocka_unit_test(test_consensus_catches_wrong_kernel),
        cmocka_unit_test(test_shared_kernel_is_one_witness),
        cmocka_unit_test(test_wrong_under_load),
        cmocka_unit_test(test_noise_only_passes),
        cmocka_unit_test(test_pair),
        cmocka_unit_test(test_one_vote_per_configuration),
        cmocka_unit_test(test_reference),
        cmocka_unit_test(test_noise_floor_from_repeat),
        cmocka_unit_test(test_noisy_wrong_kernel_sets_no_floor),
        cmocka_unit_test(test_not_measured),
        cmocka_unit_test(test_misaligned_positions),
        cmocka_unit_test(test_against_compared),
        cmocka_unit_test(test_token_spellings),
        cmocka_unit_test(test_logprobs_close_table),
        cmocka_unit_test(test_greedy_only),
        cmocka_unit_test(test_wilson_and_two_proportions),
        cmocka_unit_test(test_gate_against_bar),
        cmocka_unit_test(test_parse_prompt_logprobs),
        cmocka_unit_test(test_parse_greedy_and_text),
        cmocka_unit_test(test_task_numbers),
        cmocka_unit_test(test_task_builtin),
        cmocka_unit_test(test_task_jsonl),
        cmocka_unit_test(test_verdict_wrong_output),
        cmocka_unit_test(test_recommendation_caveat),
        cmocka_unit_test(test_report_escapes_tokens),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
