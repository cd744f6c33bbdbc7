/* Unit tests: the environment the candidates inherit (#29 item 1): which
 * variables reach the engine per command shape, --clean-env's keep list,
 * the knowledge's judgement per vLLM version, no false "changed nothing"
 * when an inherited variable acts, and the same-configuration judgement
 * counting inherited variables as knobs of every candidate. */
#include "compat.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "knowledge/knowledge.h"
#include "model/report.h"
#include "run/inherit.h"
#include "verdict/derive.h"
#include "verdict/inherit.h"
#include "verdict/sameconf.h"
#include "xalloc.h"

static char *env[] = {"PATH=/usr/bin", "VLLM_TEST_FORCE_FP8_MARLIN=1", "CUDA_VISIBLE_DEVICES=0",
                      "HF_TOKEN=hf_secretsecret", "VLLM_API_KEY=sk-verysecretvalue",
                      "FLASHINFER_FOO=2", "CUDA_LAUNCH_BLOCKING=1", "VLLMX=3", NULL};

static const struct mp_inh_var *find(const struct mp_inherited *in, const char *name)
{
    for (size_t i = 0; i < in->n; i++)
        if (!strcmp(in->v[i].name, name))
            return &in->v[i];
    return NULL;
}

static void test_collect_host(void **state)
{
    (void)state;
    char *cmd[] = {"vllm", "serve", "M"};
    struct mp_inherited in;
    mp_inherit_collect(env, cmd, 3, false, &in);
    assert_int_equal(in.n, 5); /* VLLM_, CUDA_, FLASHINFER_ only; sorted */
    assert_string_equal(in.v[0].name, "CUDA_LAUNCH_BLOCKING");
    assert_non_null(find(&in, "VLLM_TEST_FORCE_FP8_MARLIN"));
    assert_null(find(&in, "HF_TOKEN"));
    assert_null(find(&in, "VLLMX"));
    assert_string_equal(find(&in, "VLLM_API_KEY")->value, "***");
    for (size_t i = 0; i < in.n; i++)
        assert_true(in.v[i].passed);
    mp_inherited_release(&in);
}

/* A container does not inherit the client's environment: only what the
 * command passes through by name; sudo resets it unless told to keep. */
static void test_collect_shapes(void **state)
{
    (void)state;
    char *docker[] = {"docker", "run", "--gpus", "all", "-e", "VLLM_TEST_FORCE_FP8_MARLIN",
                      "-e", "CUDA_VISIBLE_DEVICES=1", "img", "vllm", "serve"};
    struct mp_inherited in;
    mp_inherit_collect(env, docker, MP_ARRAY_SIZE(docker), false, &in);
    assert_int_equal(in.n, 1);
    assert_string_equal(in.v[0].name, "VLLM_TEST_FORCE_FP8_MARLIN");
    mp_inherited_release(&in);
    char *sudo[] = {"sudo", "vllm", "serve"};
    mp_inherit_collect(env, sudo, 3, false, &in);
    assert_int_equal(in.n, 0);
    mp_inherited_release(&in);
    char *sudo_e[] = {"sudo", "--preserve-env=FLASHINFER_FOO", "vllm", "serve"};
    mp_inherit_collect(env, sudo_e, 4, false, &in);
    assert_int_equal(in.n, 1);
    assert_string_equal(in.v[0].name, "FLASHINFER_FOO");
    mp_inherited_release(&in);
}

/* The clients' own ways of passing the host's environment, and of not:
 * podman's --env-host and -e 'PREFIX*' (podman-run(1)); apptainer's
 * -e/--cleanenv and -C/--containall (apptainer-exec(1)); sudo in front of
 * the client resets what it sees (so its -e NAME finds nothing). */
static void test_collect_client_options(void **state)
{
    (void)state;
    struct mp_inherited in;
    char *host[] = {"podman", "run", "--env-host", "img", "vllm", "serve"};
    mp_inherit_collect(env, host, MP_ARRAY_SIZE(host), false, &in);
    assert_int_equal(in.n, 5);
    mp_inherited_release(&in);
    char *glob[] = {"podman", "run", "-e", "VLLM_*", "img", "vllm", "serve"};
    mp_inherit_collect(env, glob, MP_ARRAY_SIZE(glob), false, &in);
    assert_non_null(find(&in, "VLLM_TEST_FORCE_FP8_MARLIN"));
    assert_non_null(find(&in, "VLLM_API_KEY"));
    assert_null(find(&in, "FLASHINFER_FOO"));
    mp_inherited_release(&in);
    char *clean[] = {"apptainer", "exec", "--cleanenv", "--nv", "v.sif", "vllm", "serve"};
    mp_inherit_collect(env, clean, MP_ARRAY_SIZE(clean), false, &in);
    assert_int_equal(in.n, 0);
    mp_inherited_release(&in);
    char *app[] = {"apptainer", "exec", "--nv", "v.sif", "vllm", "serve"};
    mp_inherit_collect(env, app, MP_ARRAY_SIZE(app), false, &in);
    assert_int_equal(in.n, 5);
    mp_inherited_release(&in);
    char *sudo[] = {"sudo", "docker", "run", "-e", "VLLM_TEST_FORCE_FP8_MARLIN", "img"};
    mp_inherit_collect(env, sudo, MP_ARRAY_SIZE(sudo), false, &in);
    assert_int_equal(in.n, 0);
    mp_inherited_release(&in);
    char *sudo_e[] = {"sudo", "-E", "docker", "run", "-e", "VLLM_TEST_FORCE_FP8_MARLIN", "img"};
    mp_inherit_collect(env, sudo_e, MP_ARRAY_SIZE(sudo_e), false, &in);
    assert_int_equal(in.n, 1);
    mp_inherited_release(&in);
}

static void test_clean_keeps_what_the_engine_needs(void **state)
{
    (void)state;
    char *cmd[] = {"vllm", "serve"};
    struct mp_inherited in;
    mp_inherit_collect(env, cmd, 2, true, &in);
    assert_true(in.clean_env);
    assert_false(find(&in, "VLLM_TEST_FORCE_FP8_MARLIN")->passed);
    assert_false(find(&in, "CUDA_LAUNCH_BLOCKING")->passed);
    assert_false(find(&in, "FLASHINFER_FOO")->passed);
    assert_true(find(&in, "CUDA_VISIBLE_DEVICES")->passed);
    assert_true(find(&in, "VLLM_API_KEY")->passed); /* a credential */
    mp_inherited_release(&in);
}

static void test_judge_per_version(void **state)
{
    (void)state;
    const struct mp_knowledge *kn = mp_knowledge_builtin();
    char *cmd[] = {"vllm", "serve"};
    struct mp_inherited in;
    mp_inherit_collect(env, cmd, 2, false, &in);
    mp_inherit_judge(kn, "0.17.0", &in);
    const struct mp_inh_var *m = find(&in, "VLLM_TEST_FORCE_FP8_MARLIN");
    assert_int_equal(m->acts, MP_INH_YES);
    assert_string_equal(m->affects, "moe");
    assert_int_equal(find(&in, "CUDA_VISIBLE_DEVICES")->acts, MP_INH_NO);
    assert_int_equal(find(&in, "CUDA_LAUNCH_BLOCKING")->acts, MP_INH_NO);
    assert_int_equal(find(&in, "FLASHINFER_FOO")->acts, MP_INH_UNKNOWN);
    assert_int_equal(mp_inherited_nacting(&in), 2);
    /* removed by v0.29 (PR #52182): no longer acts */
    mp_inherit_judge(kn, "0.29.0", &in);
    assert_int_equal(find(&in, "VLLM_TEST_FORCE_FP8_MARLIN")->acts, MP_INH_NO);
    /* version not known: it acts in some versions (0.15-0.23 on the MoE
     * backend) and not in others (removed in 0.28): it may act, and the
     * note says the version is not known - no era is guessed */
    mp_inherit_judge(kn, NULL, &in);
    m = find(&in, "VLLM_TEST_FORCE_FP8_MARLIN");
    assert_int_equal(m->acts, MP_INH_UNKNOWN);
    assert_string_equal(m->affects, "moe");
    assert_non_null(strstr(m->note, "version is not known"));
    assert_int_equal(mp_inherited_nacting(&in), 2); /* still counted against no-op claims */
    assert_int_equal(find(&in, "CUDA_LAUNCH_BLOCKING")->acts, MP_INH_NO);
    mp_inherited_release(&in);
}

static size_t add_cand(struct mp_report *rep, const char *name, const char *knobs,
                       const char *moe, const char *unknown_env)
{
    struct mp_candidate c;
    assert_int_equal(mp_candidate_from_knobs(name, knobs, &c, NULL), 0);
    size_t i = mp_report_add_candidate(rep, &c);
    mp_candidate_release(&c);
    struct mp_attempt_result a;
    memset(&a, 0, sizeof(a));
    a.index = 1;
    a.outcome = MP_OUT_RESOLVED;
    a.res.moe_backend = xstrdup(moe);
    if (unknown_env)
        mp_strv_push(&a.res.unknown_env, unknown_env);
    mp_report_add_attempt(rep, i, &a);
    return i;
}

/* The case: VLLM_TEST_FORCE_FP8_MARLIN=1 exported, auto resolves
 * MARLIN, and --moe-backend marlin was listed as a knob that changed
 * nothing. With the acting variable inherited, no such claim is made; a
 * knob the engine called unknown is still one. */
static void test_no_false_noop(void **state)
{
    (void)state;
    struct mp_report rep;
    mp_report_init(&rep, "/tmp/x");
    add_cand(&rep, "auto", "", "MARLIN", NULL);
    add_cand(&rep, "marlin", "--moe-backend marlin", "MARLIN", NULL);
    add_cand(&rep, "menv", "VLLM_SCALED_MM_BACKEND=marlin", "MARLIN", "VLLM_SCALED_MM_BACKEND");
    mp_verdict_noop(&rep);
    assert_int_equal(rep.nnoop, 2); /* no inherited variable: both are claims */
    mp_report_derived_release(&rep);
    mp_inherited_add(&rep.inherited, "VLLM_TEST_FORCE_FP8_MARLIN", "1", true);
    mp_inherit_judge(mp_knowledge_builtin(), "0.17.0", &rep.inherited);
    mp_verdict_noop(&rep);
    assert_int_equal(rep.nnoop, 1);
    assert_string_equal(rep.noop[0].candidate, "menv");
    mp_report_release(&rep);
}

/* Inherited variables are knobs of every candidate: a candidate that
 * overrides one differs from one that inherits it. */
static void test_effective_candidates(void **state)
{
    (void)state;
    struct mp_inherited in;
    memset(&in, 0, sizeof(in));
    mp_inherited_add(&in, "VLLM_MARLIN_USE_ATOMIC_ADD", "1", true);
    mp_inherited_add(&in, "VLLM_GONE", "1", false);
    struct mp_candidate a, b, ea, eb;
    mp_candidate_from_knobs("a", "--moe-backend marlin", &a, NULL);
    mp_candidate_from_knobs("b", "VLLM_MARLIN_USE_ATOMIC_ADD=0", &b, NULL);
    mp_inherit_effective(&in, &a, &ea);
    mp_inherit_effective(&in, &b, &eb);
    assert_int_equal(ea.env.n, 1);
    assert_string_equal(ea.env.v[0], "VLLM_MARLIN_USE_ATOMIC_ADD=1");
    assert_int_equal(eb.env.n, 1);
    assert_string_equal(eb.env.v[0], "VLLM_MARLIN_USE_ATOMIC_ADD=0");
    struct mp_resolved r;
    memset(&r, 0, sizeof(r));
    r.moe_backend = (char *)"MARLIN";
    r.engine_version = (char *)"0.17.0";
    struct mp_sameconf sc;
    mp_sameconf_judge(mp_knowledge_builtin(), &ea, &r, &eb, &r, &sc);
    assert_false(sc.same); /* atomic add 1 vs 0: different kernels */
    mp_sameconf_release(&sc);
    mp_candidate_release(&a);
    mp_candidate_release(&b);
    mp_candidate_release(&ea);
    mp_candidate_release(&eb);
    mp_inherited_release(&in);
}

static void test_resume_mismatch(void **state)
{
    (void)state;
    struct mp_inherited was, now;
    memset(&was, 0, sizeof(was));
    memset(&now, 0, sizeof(now));
    mp_inherited_add(&was, "VLLM_X", "1", true);
    mp_inherited_add(&now, "VLLM_X", "1", true);
    assert_null(mp_inherit_mismatch(&was, &now));
    mp_inherited_add(&now, "VLLM_Y", "2", true);
    char *why = mp_inherit_mismatch(&was, &now);
    assert_non_null(why);
    assert_non_null(strstr(why, "VLLM_Y=2"));
    free(why);
    mp_inherited_release(&was);
    mp_inherited_release(&now);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_collect_host),
        cmocka_unit_test(test_collect_shapes),
        cmocka_unit_test(test_collect_client_options),
        cmocka_unit_test(test_clean_keeps_what_the_engine_needs),
        cmocka_unit_test(test_judge_per_version),
        cmocka_unit_test(test_no_false_noop),
        cmocka_unit_test(test_effective_candidates),
        cmocka_unit_test(test_resume_mismatch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
