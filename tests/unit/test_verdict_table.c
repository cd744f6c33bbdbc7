/* test_verdict_table.c - the one runner of tests/verdict/rules.test: the
 * verdict rules of docs/verdicts.md as data. Each block describes the
 * candidates of a report (facts of their first normal attempt, their
 * diagnosis, their output-check answers), runs the whole
 * mp_verdict_finalize on it (decide, output check, shared results, knob
 * delivery) and checks each candidate's verdict and a substring of its why.
 * A new rule is one block. The file is found under $ROOT (tests/run.sh sets
 * it) or the current directory; a missing file or a malformed line fails. */
#include "compat.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "file.h"
#include "model/report.h"
#include "quality/quality.h"
#include "verdict/verdict.h"
#include "xalloc.h"

/* The next word of *p (a "quoted" one may hold spaces), or NULL at the end. */
static char *word(char **p)
{
    char *s = *p;
    while (*s == ' ' || *s == '\t')
        s++;
    if (!*s)
        return NULL;
    char *w = s;
    bool q = false;
    char *o = s;
    for (; *s && (q || (*s != ' ' && *s != '\t')); s++) {
        if (*s == '"')
            q = !q;
        else
            *o++ = *s;
    }
    if (*s)
        s++;
    *o = '\0';
    *p = s;
    return w;
}

/* The answers of a candidate to the built-in sanity prompts. */
static char **answers(const char *kind, size_t *n)
{
    const struct mp_sanity_set *set = mp_sanity_builtin();
    char **t = xcalloc(set->n + 1, sizeof(*t));
    for (size_t i = 0; i < set->n; i++) {
        if (!strcmp(kind, "right"))
            t[i] = xasprintf(" %s.", set->p[i].expect[0]);
        else if (!strcmp(kind, "wrong"))
            t[i] = xstrdup(" I would rather talk about the weather today.");
        else
            t[i] = xstrdup(" the the the the the the the the");
    }
    *n = set->n;
    return t;
}

/* Apply one key[=value] of a cand line; false for an unknown key. */
static bool apply(struct mp_cand_report *c, struct mp_attempt_result *a, const char *k,
                  const char *v)
{
    struct mp_diagnosis *dg = &c->diag;
    if (!strcmp(k, "outcome"))
        a->outcome = mp_outcome_from_name(v);
    else if (!strcmp(k, "class"))
        a->fail_class = xstrdup(v);
    else if (!strcmp(k, "msg"))
        free(a->fail_message), a->fail_message = xstrdup(v);
    else if (!strcmp(k, "ok"))
        a->req_ok = strtoul(v, NULL, 10);
    else if (!strcmp(k, "failed"))
        a->req_failed = strtoul(v, NULL, 10);
    else if (!strcmp(k, "ok_before"))
        a->ok_before_failure = strtoul(v, NULL, 10);
    else if (!strcmp(k, "same_as"))
        a->same_as = xstrdup(v);
    else if (!strcmp(k, "quality"))
        a->quality_texts = answers(v, &a->nquality);
    else if (!strcmp(k, "missing"))
        mp_attempt_add_dlv(a, v, MP_DLV_MISSING, "not in the engine's environment");
    else if (!strcmp(k, "cuda_fault"))
        a->cuda_fault = true;
    else if (!strcmp(k, "engine_died"))
        a->engine_died = true;
    else if (!strcmp(k, "unfinished"))
        c->unfinished = true;
    else if (!strcmp(k, "diag"))
        dg->done = true;
    else if (!strcmp(k, "lb"))
        dg->launch_blocking = mp_lb_from_name(v);
    else if (!strcmp(k, "clean"))
        dg->requests_clean = strtoul(v, NULL, 10);
    else if (!strcmp(k, "required"))
        dg->requests_required = strtoul(v, NULL, 10);
    else if (!strcmp(k, "ratio"))
        dg->throughput_ratio = strtod(v, NULL);
    else if (!strcmp(k, "note"))
        dg->note = xstrdup(v);
    else if (!strcmp(k, "pinned"))
        free(dg->pinned_site), dg->pinned_site = xstrdup(v);
    else if (!strcmp(k, "launch"))
        free(dg->launch_site), dg->launch_site = xstrdup(v);
    else
        return false;
    return true;
}

/* "cand NAME key=value ...": the candidate and its attempt. */
static void add_cand(struct mp_report *rep, char *rest, const char *where)
{
    char *name = word(&rest);
    if (!name)
        fail_msg("%s: cand without a name", where);
    const char *knobs = "--moe-backend marlin";
    char *words[64], *w;
    size_t nw = 0;
    while ((w = word(&rest)) != NULL && nw < MP_ARRAY_SIZE(words)) {
        if (!strncmp(w, "knobs=", 6))
            knobs = w + 6;
        else
            words[nw++] = w;
    }
    char *spec = xasprintf("%s: %s", name, knobs);
    struct mp_candidate cd;
    struct mp_diag d;
    if (mp_candidate_parse(spec, &cd, &d) != 0)
        fail_msg("%s: bad knobs in '%s'", where, spec);
    size_t i = mp_report_add_candidate(rep, &cd);
    mp_candidate_release(&cd);
    free(spec);
    struct mp_attempt_result at;
    memset(&at, 0, sizeof(at));
    at.index = 1;
    at.fail_message = xstrdup("boom");
    at.fail_phase = xstrdup("sequential");
    at.req_ok = 12;
    at.req_failed = 1;
    at.ok_before_failure = 5;
    at.res.moe_backend = xstrdup("MARLIN");
    struct mp_attempt_result *a = mp_report_add_attempt(rep, i, &at);
    struct mp_cand_report *c = &rep->c[i];
    c->diag.throughput_ratio = -1;
    c->diag.pinned_site = xstrdup("gemm");
    c->diag.launch_site = xstrdup("moe_forward");
    for (size_t k = 0; k < nw; k++) {
        char *eq = strchr(words[k], '=');
        const char *v = "";
        if (eq) {
            *eq = '\0';
            v = eq + 1;
        }
        if (!apply(c, a, words[k], v))
            fail_msg("%s: unknown key '%s'", where, words[k]);
    }
}

static const struct mp_cand_report *find(const struct mp_report *rep, const char *name)
{
    for (size_t i = 0; i < rep->n; i++)
        if (!strcmp(rep->c[i].cand.name, name))
            return &rep->c[i];
    return NULL;
}

/* "expect NAME VERDICT WHY...": checked on the finalized report. */
static void check(const struct mp_report *rep, char *rest, const char *where, const char *rule)
{
    char *name = word(&rest), *verdict = word(&rest);
    while (*rest == ' ')
        rest++;
    const struct mp_cand_report *c = name ? find(rep, name) : NULL;
    if (!c || !verdict)
        fail_msg("%s: expect names no candidate of the block", where);
    const char *got = c->verdict == MP_V_NONE ? "none" : mp_verdict_name(c->verdict);
    if (strcmp(got, verdict) != 0 || !c->why || !strstr(c->why, rest))
        fail_msg("%s: rule '%s': %s is %s '%s', want %s '%s'", where, rule, name, got,
                 c->why ? c->why : "", verdict, rest);
}

static void test_rules_file(void **st)
{
    (void)st;
    const char *root = getenv("ROOT") ? getenv("ROOT") : ".";
    char *path = xasprintf("%s/tests/verdict/rules.test", root);
    struct buf text = BUF_INIT;
    if (mp_read_file(path, 1 << 20, &text, NULL) < 0)
        fail_msg("cannot read %s (run from the repository root or set ROOT)", path);
    struct mp_report rep;
    mp_report_init(&rep, "/run");
    struct mp_strv expects = MP_STRV_INIT;
    char rule[256] = "";
    size_t blocks = 0, lineno = 0;
    char *line = text.data;
    for (bool more = true; more;) {
        char *nl = strchr(line, '\n');
        more = nl != NULL;
        if (nl)
            *nl = '\0';
        lineno++;
        char where[300];
        snprintf(where, sizeof(where), "%s:%zu", path, lineno);
        if (!strncmp(line, "cand ", 5)) {
            add_cand(&rep, line + 5, where);
        } else if (!strncmp(line, "expect ", 7)) {
            mp_strv_push(&expects, where);
            mp_strv_push(&expects, line + 7);
        } else if (line[0] == '#' && !rep.n) {
            snprintf(rule, sizeof(rule), "%s", line + 1);
        } else if (line[0] != '\0' && line[0] != '#') {
            fail_msg("%s: not a rule line: '%s'", where, line);
        }
        if ((line[0] == '\0' || !more) && rep.n) { /* the block is complete */
            if (!expects.n)
                fail_msg("%s: rule '%s' expects nothing", where, rule);
            mp_verdict_finalize(&rep);
            for (size_t i = 0; i + 1 < expects.n; i += 2)
                check(&rep, expects.v[i + 1], expects.v[i], rule);
            blocks++;
            mp_report_release(&rep);
            mp_report_init(&rep, "/run");
            mp_strv_release(&expects);
        }
        if (nl)
            line = nl + 1;
    }
    mp_report_release(&rep);
    mp_strv_release(&expects);
    buf_release(&text);
    free(path);
    assert_true(blocks >= 25); /* the file was read whole */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rules_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
