/* test_sameconf.c - "the same configuration" is safe, not hopeful: equal
 * logged selections plus only knobs that act through those selections (per
 * the knowledge, per engine version) or that the engine called unknown. */
#include "compat.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "knowledge/knowledge.h"
#include "verdict/sameconf.h"

struct res {
    const char *version, *moe, *attn, *dense, *unknown;
    const char *drafter; /* the MTP drafter's MoE selection; "" loaded without one; NULL none */
    const char *other;   /* "WHAT=VALUE" of another selection line */
    const char *kind;    /* the MoE oracle */
};

static void fill(struct mp_resolved *r, const struct res *x)
{
    memset(r, 0, sizeof(*r));
    r->engine_version = x->version ? (char *)x->version : NULL;
    r->moe_backend = x->moe ? (char *)x->moe : NULL;
    r->attention_backend = x->attn ? (char *)x->attn : NULL;
    if (x->dense)
        mp_strv_push(&r->linear_kernels, x->dense);
    if (x->unknown)
        mp_strv_push(&r->unknown_env, x->unknown);
    r->moe_kind = x->kind ? (char *)x->kind : NULL;
    if (x->drafter) {
        r->drafter.loaded_line = 90;
        r->drafter.moe_backend = x->drafter[0] ? (char *)x->drafter : NULL;
        r->drafter.line = x->drafter[0] ? 95 : 0;
    }
    if (x->other) {
        const char *eq = strchr(x->other, '=');
        char what[64];
        snprintf(what, sizeof(what), "%.*s", (int)(eq - x->other), x->other);
        mp_resolved_add_sel(r, what, eq + 1, 40);
    }
}

static void clear(struct mp_resolved *r)
{
    mp_strv_release(&r->linear_kernels);
    mp_strv_release(&r->unknown_env);
    for (size_t i = 0; i < r->nother; i++) {
        free(r->other[i].what);
        free(r->other[i].value);
    }
    free(r->other);
}

/* Judge spec b against spec a; returns same, and checks that why contains want. */
static bool judge(const char *sa, struct res xa, const char *sb, struct res xb, const char *want)
{
    struct mp_candidate a, b;
    struct mp_diag d;
    assert_int_equal(mp_candidate_parse(sa, &a, &d), 0);
    assert_int_equal(mp_candidate_parse(sb, &b, &d), 0);
    struct mp_resolved ra, rb;
    fill(&ra, &xa);
    fill(&rb, &xb);
    struct mp_sameconf s;
    mp_sameconf_judge(mp_knowledge_builtin(), &a, &ra, &b, &rb, &s);
    assert_non_null(s.why);
    if (want && !strstr(s.why, want))
        fail_msg("why '%s' lacks '%s'", s.why, want);
    bool same = s.same;
    mp_sameconf_release(&s);
    clear(&ra);
    clear(&rb);
    mp_candidate_release(&a);
    mp_candidate_release(&b);
    return same;
}

#define FC "FLASHINFER_CUTLASS"
#define DENSE "nvfp4=NvFp4LinearBackend.FLASHINFER_CUTLASS"

static void test_same(void **st)
{
    (void)st;
    struct res r19 = {"0.19.0", FC, "FLASHINFER", DENSE, NULL, NULL, NULL, NULL};
    /* --moe-backend naming what auto chose */
    assert_true(judge("auto:", r19, "fc: --moe-backend flashinfer_cutlass", r19,
                      "acts only through the moe selection in vLLM 0.19.0"));
    /* the FlashInfer env pair in the oracle era */
    assert_true(judge("auto:", r19,
                      "fienv: VLLM_USE_FLASHINFER_MOE_FP4=1 VLLM_FLASHINFER_MOE_BACKEND=throughput",
                      r19, "VLLM_FLASHINFER_MOE_BACKEND=throughput (acts only"));
    /* a variable the engine itself called unknown */
    struct res unk = r19;
    unk.unknown = "VLLM_DEFAULT_MOE_BACKEND";
    assert_true(judge("auto:", r19, "x: VLLM_DEFAULT_MOE_BACKEND=marlin", unk,
                      "reported it as an unknown variable"));
    /* identical knobs */
    assert_true(judge("a: --moe-backend marlin", r19, "b: --moe-backend marlin", r19, "the same knobs"));
    /* the differing knob may sit on the tested side too */
    assert_true(judge("fc: --moe-backend flashinfer_cutlass", r19, "auto:", r19, "--moe-backend"));
}

static void test_not_same(void **st)
{
    (void)st;
    struct res r19 = {"0.19.0", FC, "FLASHINFER", DENSE, NULL, NULL, NULL, NULL};
    /* changes kernel behaviour without changing the selection line */
    assert_false(judge("auto:", r19, "atomic: VLLM_MARLIN_USE_ATOMIC_ADD=1", r19,
                       "without changing a selection line"));
    /* not in the knowledge */
    assert_false(judge("auto:", r19, "fork: VLLM_FORK_ONLY_KNOB=1", r19, "not in moeprobe's knowledge"));
    /* a selection knob whose effect the era does not restrict to selection */
    assert_false(judge("auto:", r19, "m: VLLM_TEST_FORCE_FP8_MARLIN=1", r19, "kernel behaviour"));
    /* --moe-backend before it existed (not a selection knob there) */
    struct res r15 = {"0.15.1", FC, "FLASHINFER", DENSE, NULL, NULL, NULL, NULL};
    assert_false(judge("auto:", r15, "fc: --moe-backend flashinfer_cutlass", r15, "0.15.1"));
    /* the VLLM_FLASHINFER_MOE_BACKEND env after its removal: only the engine's word counts */
    struct res r26 = {"0.26.0", FC, "FLASHINFER", DENSE, NULL, NULL, NULL, NULL};
    assert_false(judge("auto:", r26, "e: VLLM_FLASHINFER_MOE_BACKEND=latency", r26, NULL));
    /* selections differ or are missing */
    struct res other = r19;
    other.moe = "MARLIN";
    assert_false(judge("auto:", r19, "mar: --moe-backend marlin", other, "MoE backends differ"));
    struct res nomoe = r19;
    nomoe.moe = NULL;
    assert_false(judge("auto:", r19, "x: --moe-backend flashinfer_cutlass", nomoe, "not in both logs"));
    struct res att = r19;
    att.attn = "TRITON_ATTN";
    assert_false(judge("auto:", r19, "x: --moe-backend flashinfer_cutlass", att, "attention"));
    struct res dense = r19;
    dense.dense = "nvfp4=NvFp4LinearBackend.MARLIN";
    assert_false(judge("auto:", r19, "x: --moe-backend flashinfer_cutlass", dense, "dense"));
    struct res ver = r19;
    ver.version = "0.20.0";
    assert_false(judge("auto:", r19, "x: --moe-backend flashinfer_cutlass", ver, "versions differ"));
    struct res nover = r19;
    nover.version = NULL;
    assert_false(judge("auto:", nover, "x: --moe-backend flashinfer_cutlass", nover, "version"));
    /* an attention knob whose selection is not logged */
    struct res noattn = r19;
    noattn.attn = NULL;
    assert_false(judge("auto:", noattn, "x: --attention-backend FLASHINFER", noattn, "not in both logs"));
    /* the MTP drafter's own MoE selection is part of the configuration (#25) */
    struct res mtp = r19;
    mtp.drafter = "TRITON";
    assert_true(judge("auto:", mtp, "fc: --moe-backend flashinfer_cutlass", mtp,
                      "attention FLASHINFER, MTP drafter MoE TRITON) with knobs"));
    struct res mtp2 = mtp;
    mtp2.drafter = "FLASHINFER_CUTLASS";
    assert_false(judge("auto:", mtp, "fc: --moe-backend flashinfer_cutlass", mtp2,
                       "the MTP drafter's MoE selections differ (TRITON, FLASHINFER_CUTLASS)"));
    struct res mtp0 = mtp;
    mtp0.drafter = "";
    assert_false(judge("auto:", mtp, "fc: --moe-backend flashinfer_cutlass", mtp0,
                       "the MTP drafter's MoE selections differ (TRITON, none logged)"));
    assert_false(judge("auto:", r19, "fc: --moe-backend flashinfer_cutlass", mtp,
                       "one run loads an MTP drafter, the other does not"));
    /* other selection lines, and the oracle of the MoE line */
    struct res mx = r19, mx2 = r19;
    mx.other = "MxFp8 MoE=MARLIN";
    mx2.other = "MxFp8 MoE=TRITON";
    assert_false(judge("auto:", mx, "fc: --moe-backend flashinfer_cutlass", mx2,
                       "the MxFp8 MoE selections differ (MARLIN, TRITON)"));
    assert_false(judge("auto:", mx, "fc: --moe-backend flashinfer_cutlass", r19,
                       "the MxFp8 MoE selection is not in both logs"));
    struct res late = r19;
    late.other = "FlashInfer allreduce fusion=trtllm";
    assert_true(judge("auto:", late, "fc: --moe-backend flashinfer_cutlass", r19, NULL));
    struct res k1 = r19, k2 = r19;
    k1.kind = "NvFp4";
    k2.kind = "MxFp4";
    assert_false(judge("auto:", k1, "fc: --moe-backend flashinfer_cutlass", k2,
                       "the MoE oracles differ (NvFp4, MxFp4)"));
    /* one harmless and one unsafe knob: unsafe wins */
    assert_false(judge("auto:", r19, "x: --moe-backend flashinfer_cutlass VLLM_MARLIN_USE_ATOMIC_ADD=1",
                       r19, "VLLM_MARLIN_USE_ATOMIC_ADD"));
}

static void test_secret_redacted(void **st)
{
    (void)st;
    struct res r19 = {"0.19.0", FC, "FLASHINFER", DENSE, NULL, NULL, NULL, NULL};
    struct mp_candidate a, b;
    struct mp_diag d;
    assert_int_equal(mp_candidate_parse("a:", &a, &d), 0);
    assert_int_equal(mp_candidate_parse("b: HF_TOKEN=hf_abcdefghijklmnop", &b, &d), 0);
    struct mp_resolved ra, rb;
    fill(&ra, &r19);
    fill(&rb, &r19);
    struct mp_sameconf s;
    mp_sameconf_judge(mp_knowledge_builtin(), &a, &ra, &b, &rb, &s);
    assert_false(s.same);
    assert_null(strstr(s.why, "hf_abcdefghijklmnop"));
    assert_non_null(strstr(s.why, "HF_TOKEN"));
    mp_sameconf_release(&s);
    clear(&ra);
    clear(&rb);
    mp_candidate_release(&a);
    mp_candidate_release(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same),
        cmocka_unit_test(test_not_same),
        cmocka_unit_test(test_secret_redacted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
