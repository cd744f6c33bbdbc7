/* test_quality.c - the output check: prompt-set parsing, judging single
 * answers (degenerate, wrong, pass), quoting, first differing token, the
 * decision across candidates (including "inconclusive"), agreement with
 * refengine's generator (no false alarms on healthy text, garbage mode
 * caught) and the verdict garbage-output in the report. */
#include "compat.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen.h"
#include "quality/quality.h"
#include "report/report.h"
#include "version.h"
#include "xalloc.h"

/* main.c is not linked into unit tests; report.c reads the version */
const char mp_version[] = "0.0.0-test";

static void test_builtin_set(void **state)
{
    MP_UNUSED(state);
    const struct mp_sanity_set *s = mp_sanity_builtin();
    assert_true(s->n >= 4);
    assert_int_equal(s->max_tokens, 32);
    size_t n = 0;
    const char *const *pr = mp_quality_prompts(&n);
    assert_int_equal(n, s->n);
    bool copy = false, arith = false;
    for (size_t i = 0; i < n; i++) {
        assert_non_null(pr[i]);
        assert_string_equal(pr[i], s->p[i].prompt);
        assert_true(s->p[i].nexpect >= 1);
        copy = copy || !strcmp(s->p[i].kind, "copy");
        arith = arith || !strcmp(s->p[i].kind, "arithmetic");
    }
    assert_true(copy && arith);
}

static void parse_err(const char *json, const char *want)
{
    struct mp_sanity_set s;
    struct mp_diag d = MP_DIAG_INIT;
    assert_int_equal(mp_sanity_parse(json, strlen(json), &s, &d), MP_EPARSE);
    if (!strstr(d.msg, want)) {
        fprintf(stderr, "diag '%s' lacks '%s'\n", d.msg, want);
        fail();
    }
    assert_null(s.p);
}

static void test_parse_errors(void **state)
{
    MP_UNUSED(state);
    parse_err("{\"prompts\": [", "malformed JSON");
    parse_err("{}", "\"prompts\" must be an array");
    parse_err("{\"prompts\": []}", "\"prompts\" must be an array");
    parse_err("{\"prompts\": [{\"id\":\"a\",\"prompt\":\"x\"}]}", "non-empty \"expect\"");
    parse_err("{\"prompts\": [{\"id\":\"a\",\"prompt\":\"x\",\"expect\":[1]}]}", "non-string");
    parse_err("{\"prompts\": [{\"id\":\"a\",\"prompt\":\"x\",\"expect\":[\"y\"]},"
              "{\"id\":\"a\",\"prompt\":\"z\",\"expect\":[\"y\"]}]}",
              "duplicate id");
    parse_err("{\"max_tokens\": 0, \"prompts\": [{\"id\":\"a\",\"prompt\":\"x\",\"expect\":[\"y\"]}]}",
              "max_tokens");
    struct mp_sanity_set s;
    const char *ok = "{\"prompts\": [{\"id\":\"a\",\"prompt\":\"x\",\"expect\":[\"y\",\"z\"]}]}";
    assert_int_equal(mp_sanity_parse(ok, strlen(ok), &s, NULL), 0);
    assert_int_equal(s.n, 1);
    assert_int_equal(s.p[0].nexpect, 2);
    assert_string_equal(s.p[0].kind, "fact");
    mp_sanity_release(&s);
}

static void test_degenerate(void **state)
{
    MP_UNUSED(state);
    assert_string_equal(mp_quality_degenerate(NULL), "empty");
    assert_string_equal(mp_quality_degenerate(""), "empty");
    assert_string_equal(mp_quality_degenerate(" \n\t "), "empty");
    assert_string_equal(mp_quality_degenerate("locklocklocklocklock"), "one token repeated");
    assert_string_equal(mp_quality_degenerate(" lock lock lock lock lock lock lock lock"),
                        "one token repeated");
    assert_string_equal(mp_quality_degenerate("!!!!!!!!!!!!"), "no letters or digits");
    assert_string_equal(mp_quality_degenerate("the the the the the the the the the x"),
                        "one token repeated");
    assert_string_equal(mp_quality_degenerate("\x01\x02\x03\x04 ab"), "non-printable");
    assert_string_equal(mp_quality_degenerate("\xff\xfe\xfd\xfc ab"), "non-printable");
    assert_string_equal(mp_quality_degenerate("\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd ab"),
                        "non-printable");
    /* healthy short and long answers */
    assert_null(mp_quality_degenerate(" Paris"));
    assert_null(mp_quality_degenerate(" 4"));
    assert_null(mp_quality_degenerate(" alpha beta gamma"));
    assert_null(mp_quality_degenerate(" Paris. It is known for the Eiffel Tower, the Louvre"));
    assert_null(mp_quality_degenerate(" 4\n2 + 3 = 5\n3 + 3 = 6"));
    assert_null(mp_quality_degenerate(" café, naïve, 東京"));
    assert_null(mp_quality_degenerate(" alpha beta gamma alpha beta gamma alpha beta gamma"));
}

static const struct mp_sanity_prompt capital = {
    .id = "capital", .kind = "fact", .prompt = "The capital of France is",
    .expect = (char *[]){ "Paris" }, .nexpect = 1,
};

static void test_judge(void **state)
{
    MP_UNUSED(state);
    const char *why = NULL;
    assert_int_equal(mp_quality_judge(&capital, " Paris", &why), MP_Q_PASS);
    assert_int_equal(mp_quality_judge(&capital, " paris, of course.", NULL), MP_Q_PASS);
    assert_int_equal(mp_quality_judge(&capital, " Parisian food", &why), MP_Q_WRONG);
    assert_string_equal(why, "expected answer absent");
    assert_int_equal(mp_quality_judge(&capital, " Berlin", NULL), MP_Q_WRONG);
    assert_int_equal(mp_quality_judge(&capital, "", &why), MP_Q_DEGENERATE);
    assert_string_equal(why, "empty");
    assert_int_equal(mp_quality_judge(&capital, NULL, NULL), MP_Q_MISSING);
    assert_string_equal(mp_qres_name(MP_Q_DEGENERATE), "degenerate");
}

static void test_quote(void **state)
{
    MP_UNUSED(state);
    char *q = mp_quality_quote("a\"b\\c\nd\x01", 100);
    assert_string_equal(q, "\"a\\\"b\\\\c\\nd\\x01\"");
    free(q);
    q = mp_quality_quote("locklocklock", 4);
    assert_string_equal(q, "\"lock\"… (12 bytes)");
    free(q);
    /* never cuts inside a UTF-8 sequence; invalid bytes escaped */
    q = mp_quality_quote("ab\xc3\xa9", 3);
    assert_string_equal(q, "\"ab\"… (4 bytes)");
    free(q);
    q = mp_quality_quote("<\xff>", 10);
    assert_string_equal(q, "\"<\\xff>\"");
    free(q);
    q = mp_quality_quote(NULL, 10);
    assert_string_equal(q, "(none)");
    free(q);
}

static void test_first_diff(void **state)
{
    MP_UNUSED(state);
    char *a = NULL, *b = NULL;
    assert_int_equal(mp_quality_first_diff(" alpha beta", " alpha beta", &a, &b), -1);
    assert_null(a);
    assert_int_equal(mp_quality_first_diff(" alpha beta gamma", " alpha delta gamma", &a, &b), 1);
    assert_string_equal(a, "\" beta\"");
    assert_string_equal(b, "\" delta\"");
    free(a);
    free(b);
    assert_int_equal(mp_quality_first_diff(" Paris", " Paris is", &a, &b), 1);
    assert_string_equal(a, "(end)");
    assert_string_equal(b, "\" is\"");
    free(a);
    free(b);
    assert_int_equal(mp_quality_first_diff("", " x", NULL, NULL), 0);
}

/* A generated answer as refengine streams it for a completion with
 * max_tokens, without ignore_eos. */
static char *re_answer(const char *prompt, uint64_t seed, bool garbage, unsigned max_tokens)
{
    struct re_gen g;
    re_gen_init(&g, prompt, strlen(prompt), seed, garbage);
    size_t cap = 64 * (size_t)max_tokens + 1, len = 0;
    char *out = xcalloc(cap, 1);
    for (unsigned i = 0; i < max_tokens && !re_gen_is_eos(&g, i); i++) {
        const char *t = re_gen_token(&g, i);
        size_t n = strlen(t);
        memcpy(out + len, t, n);
        len += n;
    }
    return out;
}

/* refengine's healthy answers pass every built-in prompt for any seed, its
 * garbage answers are degenerate, and free text of healthy backends is never
 * called degenerate. */
static void test_refengine_agreement(void **state)
{
    MP_UNUSED(state);
    const struct mp_sanity_set *s = mp_sanity_builtin();
    for (uint64_t seed = 0; seed < 50; seed++) {
        for (size_t k = 0; k < s->n; k++) {
            char *ok = re_answer(s->p[k].prompt, seed, false, (unsigned)s->max_tokens);
            char *bad = re_answer(s->p[k].prompt, seed, true, (unsigned)s->max_tokens);
            assert_int_equal(mp_quality_judge(&s->p[k], ok, NULL), MP_Q_PASS);
            assert_int_equal(mp_quality_judge(&s->p[k], bad, NULL), MP_Q_DEGENERATE);
            free(ok);
            free(bad);
        }
    }
    for (unsigned i = 0; i < 500; i++) {
        char prompt[64];
        snprintf(prompt, sizeof(prompt), "Write about topic %u", i);
        for (unsigned mt = 8; mt <= 64; mt *= 2) {
            char *t = re_answer(prompt, i, false, mt);
            const char *why = mp_quality_degenerate(t);
            if (why) {
                fprintf(stderr, "false alarm (%s) on '%s'\n", why, t);
                fail();
            }
            free(t);
        }
    }
}

static const char *const good[] = { " Paris", " 4", " alpha beta gamma", " cold" };
static const char *const lock[] = { "locklocklocklocklocklock", "locklocklocklocklocklock",
                                    "locklocklocklocklocklock", "locklocklocklocklocklock" };
static const char *const wrong1[] = { " Berlin is nice", " 4", " alpha beta gamma", " cold" };
static const char *const allwrong[] = { " a city", " a number", " words here", " a word" };
static const char *const varied[] = { " Paris", " 4", " alpha beta delta", " cold" };

static void test_qcheck(void **state)
{
    MP_UNUSED(state);
    const struct mp_sanity_set *s = mp_sanity_builtin();
    assert_int_equal(s->n, 4); /* the tables above follow the built-in set */
    struct mp_qcheck q;
    /* one garbage, one good, one not run */
    struct mp_qcand_in in[] = {
        { "good", good, 4 }, { "lock", lock, 4 }, { "crashed", NULL, 0 }, { "wrong", wrong1, 4 },
    };
    mp_qcheck_run(s, in, 4, &q);
    assert_string_equal(q.status, "ok");
    assert_null(q.note);
    assert_int_equal(q.ref, 0);
    assert_int_equal(q.c[0].status, MP_QC_OK);
    assert_int_equal(q.c[0].passed, 4);
    assert_int_equal(q.c[1].status, MP_QC_GARBAGE);
    assert_int_equal(q.c[1].degenerate, 4);
    assert_non_null(strstr(q.c[1].why, "one token repeated"));
    assert_non_null(strstr(q.c[1].why, "\"The capital of France is\""));
    assert_int_equal(q.c[2].status, MP_QC_NOT_RUN);
    assert_int_equal(q.c[3].status, MP_QC_GARBAGE);
    assert_non_null(strstr(q.c[3].why, "that good passes"));
    assert_non_null(strstr(q.c[3].why, "\" Berlin is nice\""));
    /* agreement */
    assert_int_equal(q.c[3].ref, 0);
    assert_int_equal(q.c[3].identical, 3);
    assert_int_equal(q.c[3].compared, 4);
    assert_int_equal(q.c[3].diff_prompt, 0);
    assert_int_equal(q.c[3].diff_token, 0);
    assert_string_equal(q.c[3].diff_this, "\" Berlin\"");
    assert_string_equal(q.c[3].diff_ref, "\" Paris\"");
    mp_qcheck_release(&q);

    /* nobody passes: inconclusive, nobody blamed for wrong answers */
    struct mp_qcand_in in2[] = { { "a", allwrong, 4 }, { "b", allwrong, 4 } };
    mp_qcheck_run(s, in2, 2, &q);
    assert_string_equal(q.status, "inconclusive");
    assert_non_null(strstr(q.note, "inconclusive for this model"));
    assert_int_equal(q.c[0].status, MP_QC_OK);
    assert_int_equal(q.c[1].status, MP_QC_OK);
    mp_qcheck_release(&q);

    /* ...but degenerate output still counts when nobody passes */
    struct mp_qcand_in in3[] = { { "a", allwrong, 4 }, { "b", lock, 4 } };
    mp_qcheck_run(s, in3, 2, &q);
    assert_string_equal(q.status, "inconclusive");
    assert_int_equal(q.c[0].status, MP_QC_OK);
    assert_int_equal(q.c[1].status, MP_QC_GARBAGE);
    mp_qcheck_release(&q);

    /* a prompt nobody passes is not held against anyone */
    struct mp_qcand_in in4[] = { { "a", varied, 4 }, { "b", varied, 4 } };
    mp_qcheck_run(s, in4, 2, &q);
    assert_string_equal(q.status, "partly-inconclusive");
    assert_non_null(strstr(q.note, "Repeat exactly"));
    assert_int_equal(q.c[0].status, MP_QC_OK);
    assert_int_equal(q.c[1].status, MP_QC_OK);
    assert_int_equal(q.c[1].identical, 4);
    assert_int_equal(q.c[1].diff_prompt, -1);
    mp_qcheck_release(&q);

    /* nothing ran */
    struct mp_qcand_in in5[] = { { "a", NULL, 0 } };
    mp_qcheck_run(s, in5, 1, &q);
    assert_string_equal(q.status, "not-run");
    assert_int_equal(q.ref, -1);
    mp_qcheck_release(&q);
}

/* A clean attempt with the given quality answers (owned by the report). */
static void add_clean(struct mp_report *rep, const char *name, const char *knobs,
                      const char *const *texts, size_t n, double tok_s)
{
    struct mp_candidate c;
    assert_int_equal(mp_candidate_from_knobs(name, knobs, &c, NULL), 0);
    size_t i = mp_report_add_candidate(rep, &c);
    mp_candidate_release(&c);
    struct mp_attempt_result a;
    memset(&a, 0, sizeof(a));
    a.dir = xasprintf("/run/attempts/%s-1", name);
    a.index = 1;
    a.outcome = MP_OUT_CLEAN;
    a.res.moe_backend = xstrdup(name);
    a.req_ok = 10;
    a.nphases = 1;
    snprintf(a.phases[0].name, sizeof(a.phases[0].name), "sequential");
    a.phases[0].level = 1;
    a.phases[0].ok = 10;
    a.phases[0].tok_s = tok_s;
    a.nquality = n;
    a.quality_texts = xcalloc(n + 1, sizeof(char *));
    for (size_t k = 0; k < n; k++)
        a.quality_texts[k] = texts[k] ? xstrdup(texts[k]) : NULL;
    mp_report_add_attempt(rep, i, &a);
}

static void test_report_verdict(void **state)
{
    MP_UNUSED(state);
    struct mp_report rep;
    mp_report_init(&rep, "/run");
    /* the garbage candidate is the fastest: it must not be recommended */
    add_clean(&rep, "marlin", "--moe-backend marlin", good, 4, 10);
    add_clean(&rep, "fic", "--moe-backend flashinfer_cutlass", lock, 4, 50);
    mp_report_finalize(&rep);
    assert_string_equal(mp_verdict_name(rep.c[0].verdict), "stable");
    assert_non_null(strstr(rep.c[0].why, "output check passed (4 of 4"));
    assert_string_equal(mp_verdict_name(rep.c[1].verdict), "garbage-output");
    assert_non_null(strstr(rep.c[1].why, "degenerate"));
    assert_int_equal(rep.recommended, 0);
    mp_report_finalize(&rep); /* idempotent */
    assert_string_equal(mp_verdict_name(rep.c[1].verdict), "garbage-output");

    struct buf b = BUF_INIT;
    mp_report_json(&rep, &b);
    assert_non_null(strstr(b.data, "\"verdict\":\t\"garbage-output\""));
    assert_non_null(strstr(b.data, "\"output_check\""));
    assert_non_null(strstr(b.data, "\"first_difference\""));
    assert_non_null(strstr(b.data, "\"reference\":\t\"marlin\""));
    buf_reset(&b);
    mp_report_markdown(&rep, &b);
    assert_non_null(strstr(b.data, "## Output check"));
    assert_non_null(strstr(b.data, "| fic | **garbage** | 0/4 | 0/4 | capital token 0:"));
    buf_release(&b);
    mp_report_release(&rep);

    /* one candidate, all answers wrong but varied: inconclusive, still stable */
    mp_report_init(&rep, "/run");
    add_clean(&rep, "auto", "", allwrong, 4, 10);
    mp_report_finalize(&rep);
    assert_string_equal(mp_verdict_name(rep.c[0].verdict), "stable");
    assert_string_equal(rep.qc.status, "inconclusive");
    mp_report_release(&rep);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_builtin_set),   cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_degenerate),    cmocka_unit_test(test_judge),
        cmocka_unit_test(test_quote),         cmocka_unit_test(test_first_diff),
        cmocka_unit_test(test_refengine_agreement), cmocka_unit_test(test_qcheck),
        cmocka_unit_test(test_report_verdict),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
