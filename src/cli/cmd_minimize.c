/* cmd_minimize.c - `moeprobe minimize`: the smallest set of knob changes
 * that turns a failing configuration (--from) into a working one (--to),
 * found with delta debugging, each test a full attempt. */
#include "compat.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "buf.h"
#include "cli/commands.h"
#include "file.h"
#include "cli/opts.h"
#include "cli/scoreopt.h"
#include "cli/session.h"
#include "err.h"
#include "escape.h"
#include "model/candidate.h"
#include "quality/quality.h"
#include "report/report.h"
#include "run/runner.h"
#include "store/store.h"
#include "verdict/correct.h"
#include "verdict/ddmin.h"
#include "verdict/eta.h"
#include "verdict/stats.h"
#include "xalloc.h"


static const char minimize_head[] =
    "usage: moeprobe minimize --from 'KNOBS' --to 'KNOBS' [options] -- SERVER COMMAND...\n"
    "\n"
    "--from is a knob set that fails, --to one that works. moeprobe verifies both,\n"
    "then finds a 1-minimal subset of the differences that, added to --from, still\n"
    "works (Zeller's ddmin). Every test is a full attempt; a pass must serve the\n"
    "number of clean requests that --from's failure rate requires, so a flaky\n"
    "failure cannot fake a pass, and its greedy answers must pass the output check\n"
    "(as in qualify; not with --no-quality), so a knob set whose answers are garbage\n"
    "is a fail; and its scoring pass must agree with --to's (teacher-forced logprobs\n"
    "and the task gate; --agreement 0 --accuracy 0 turn it off), so a knob set that\n"
    "reaches a backend computing something else is a fail too. Results go to\n"
    "minimize.json in the run directory.\n"
    "\n";
static const char minimize_tail[] =
    "\n"
    "example (which of the Marlin variables mattered?):\n"
    "  moeprobe minimize --from '' --to 'VLLM_USE_FLASHINFER_MOE_FP4=0 VLLM_TEST_FORCE_FP8_MARLIN=1 \\\n"
    "      VLLM_NVFP4_GEMM_BACKEND=marlin VLLM_SCALED_MM_BACKEND=marlin' -- vllm serve M\n"
    "\n"
    "exit codes: 0 a minimal set was found; 1 the premise is false (--to fails or\n"
    "            --from works); 2 usage or input error; 3 internal error; 128+N signal N\n";

static int find_key(const struct mp_knobs *s, const struct mp_knob *k)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->k[i].env == k->env && !strcmp(s->k[i].key, k->key))
            return (int)i;
    return -1;
}

/* Build the candidate: from's knobs with the chosen differences applied
 * (replacing a knob of the same name/flag, else added). */
static void apply(const struct mp_knobs *from, const struct mp_knobs *diff, const size_t *sub,
                  size_t nsub, const char *name, struct mp_candidate *out)
{
    struct mp_knobs cur;
    memset(&cur, 0, sizeof(cur));
    for (size_t i = 0; i < from->n; i++)
        mp_knobs_add(&cur, from->k[i].env, from->k[i].key, from->k[i].words.v, from->k[i].words.n);
    for (size_t i = 0; i < nsub; i++) {
        const struct mp_knob *k = &diff->k[sub[i]];
        int at = find_key(&cur, k);
        if (at >= 0) {
            struct mp_knob *t = &cur.k[at];
            mp_strv_release(&t->words);
            for (size_t w = 0; w < k->words.n; w++)
                mp_strv_push(&t->words, k->words.v[w]);
            free(t->text);
            t->text = xstrdup(k->text);
        } else {
            mp_knobs_add(&cur, k->env, k->key, k->words.v, k->words.n);
        }
    }
    memset(out, 0, sizeof(*out));
    out->name = xstrdup(name);
    for (size_t i = 0; i < cur.n; i++)
        for (size_t w = 0; w < cur.k[i].words.n; w++)
            mp_strv_push(cur.k[i].env ? &out->env : &out->args, cur.k[i].words.v[w]);
    mp_knobs_release(&cur);
}

struct mctx {
    struct mp_runctx *run;
    struct mp_report *rep;
    struct mp_knobs from, diff;
    struct mp_workload pass_wl;   /* workload a pass must survive */
    unsigned long need;
    struct buf tests;             /* JSON array items */
    unsigned ntests;
    bool json;
    struct mp_store *store;       /* evidence store or NULL */
    const struct mp_opts *o;
    bool need_known;              /* need and pass_wl are set (from --from's attempt) */
    bool expect_to;               /* the next test is --to itself */
    long to_ci;                   /* --to's test (report index), -1 before it ran */
    struct mp_cli_score *sco;     /* the scoring pass (cli/scoreopt.h) */
};

/* How many clean requests a pass needs, from --from's failure (the first
 * attempt of the run): need and pass_wl. */
static void set_need(struct mctx *m, const struct mp_attempt_result *fa, struct mp_stats_async *est)
{
    struct mp_stats_attempt obs = {.served = fa->ok_before_failure, .failed = fa->outcome == MP_OUT_CRASH};
    mp_stats_async_estimate(&obs, 1, est);
    m->need = obs.failed ? est->required_n : 0;
    if (m->o->diag_max_requests && m->need > m->o->diag_max_requests)
        m->need = m->o->diag_max_requests;
    m->pass_wl = m->o->wl;
    m->pass_wl.min_total_ok = m->need;
    m->need_known = true;
}

/* Before the runner's estimate: the tests still ahead (verdict/eta.h) -
 * --to's check, a pass, then ddmin's tests as it runs when one difference
 * matters, half of them expected to fail like --from did, the others to
 * run a pass's workload. */
static void eta_prepare(void *ud, const struct mp_report *rep)
{
    struct mctx *m = ud;
    if (!m->need_known && rep->n && rep->c[0].nattempts) {
        struct mp_stats_async est;
        set_need(m, &rep->c[0].attempts[0], &est);
    }
    double left = mp_eta_ddmin_tests_left(m->diff.n, m->ntests + 1);
    /* --to's check (the second test) passes; ddmin's tests half and half */
    double to = m->ntests + 1 < 2 ? 1 : 0, dd = MP_MAX(0.0, left - to);
    m->run->eta_extra_attempts = left;
    m->run->eta_extra_wl = m->need_known ? &m->pass_wl : NULL;
    m->run->eta_extra_fail_share = left > 0 ? 0.5 * dd / left : 0;
}

/* A knob's text as it may leave the process (minimize.json, stdout,
 * stderr): the session's mask, which knows both ends' secret values and
 * masks NAME=VALUE words too - a flag knob such as '--hf-token VALUE' is
 * masked through its value, which mp_redact_assignment alone misses.
 * Caller frees. */
static char *knob_out(const struct mctx *m, const char *text)
{
    return mp_store_mask_apply(m->store ? mp_store_mask(m->store) : NULL, text, strlen(text), true,
                               NULL);
}

static const char *rel(const struct mp_report *rep, const char *dir)
{
    size_t rl = strlen(rep->run_dir);
    return !strncmp(dir, rep->run_dir, rl) && dir[rl] == '/' ? dir + rl + 1 : dir;
}

/* The output check of test ci, which ran clean, as qualify does it: its
 * greedy answers are judged together with those of every earlier test
 * that ran clean, so an answer that is degenerate, or wrong where another
 * test answered right, makes it garbage. NULL when it is not garbage (or
 * the check did not run: --no-quality), else the reason (caller frees).
 * *ran tells whether the check ran. */
static char *output_garbage(const struct mp_report *rep, size_t ci, bool *ran)
{
    struct mp_qcand_in *in = xcalloc(ci + 2, sizeof(*in));
    for (size_t i = 0; i <= ci; i++) {
        const struct mp_attempt_result *p = mp_cand_primary(&rep->c[i]);
        in[i].name = rep->c[i].cand.name;
        if (p && p->outcome == MP_OUT_CLEAN && p->nquality) {
            in[i].texts = (const char *const *)p->quality_texts;
            in[i].ntexts = p->nquality;
        }
    }
    struct mp_qcheck q;
    mp_qcheck_run(mp_sanity_builtin(), in, ci + 1, &q);
    free(in);
    *ran = q.c[ci].status != MP_QC_NOT_RUN;
    char *why = q.c[ci].status == MP_QC_GARBAGE
                    ? xstrdup(q.c[ci].why ? q.c[ci].why : "answers are garbage")
                    : NULL;
    mp_qcheck_release(&q);
    return why;
}

/* Run one configuration; returns 1 works, 0 fails, <0 error/interrupted.
 * Works = ran clean, served the requests a pass needs, and its output
 * passed the output check (unless --no-quality). */
/* Does test ci's scoring pass agree with --to's (logprobs, task gate)?
 * NULL when it does or cannot be compared (*compared tells which), else
 * why not (caller frees). */
static char *wrong_vs_to(struct mctx *m, size_t ci, const struct mp_attempt_result *a,
                         bool *compared)
{
    *compared = false;
    if (m->expect_to) {
        m->expect_to = false;
        m->to_ci = (long)ci;
        return NULL;
    }
    const struct mp_attempt_result *to =
        m->to_ci >= 0 ? mp_cand_primary(&m->rep->c[m->to_ci]) : NULL;
    return to ? mp_correct_against(to->score, "--to", a->score, m->rep->c[ci].cand.name, compared)
              : NULL;
}

/* The test's correctness in minimize.json. */
static void correctness_json(struct mctx *m, const struct mp_attempt_result *a, const char *wrong,
                             bool compared)
{
    struct buf *t = &m->tests;
    buf_printf(t, ", \"correctness\": \"%s\"",
               wrong                                     ? "wrong"
               : !a->score                               ? "not-run"
               : (long)(m->rep->n - 1) == m->to_ci       ? "reference"
               : compared                                ? "agrees"
                                                         : "not-measured");
    if (wrong) {
        buf_adds(t, ", \"correctness_why\": ");
        buf_add_json_str(t, wrong, strlen(wrong));
        if (!m->run->quiet)
            fprintf(stderr, "moeprobe: minimize: %s ran clean but computes something else than "
                            "--to: %s\n", m->rep->c[m->rep->n - 1].cand.name, wrong);
    }
}

static int try_config(struct mctx *m, const struct mp_candidate *c, const char *const *knob_texts,
                      size_t nk, const struct mp_workload *wl)
{
    size_t ci = mp_report_add_candidate(m->rep, c);
    const struct mp_attempt_result *a = NULL;
    int rc = mp_run_attempt(m->run, m->rep, ci, false, wl, &a);
    if (rc < 0)
        return rc;
    if (m->run->signo)
        return -EINTR;
    bool pass = a->outcome == MP_OUT_CLEAN && a->req_ok >= (wl->min_total_ok ? wl->min_total_ok : 1);
    bool checked = false;
    char *garbage = a->outcome == MP_OUT_CLEAN ? output_garbage(m->rep, ci, &checked) : NULL;
    if (garbage)
        pass = false;
    bool compared = false;
    char *wrong = pass ? wrong_vs_to(m, ci, a, &compared) : NULL; /* verdict/correct.h */
    if (wrong)
        pass = false;
    struct buf *t = &m->tests;
    if (t->len)
        buf_adds(t, ",\n    ");
    buf_adds(t, "{\"knobs\": [");
    for (size_t i = 0; i < nk; i++) {
        if (i)
            buf_adds(t, ", ");
        char *r = knob_out(m, knob_texts[i]);
        buf_add_json_str(t, r, strlen(r));
        free(r);
    }
    buf_printf(t, "], \"outcome\": \"%s\", \"attempt\": \"%s\", \"requests_ok\": %lu, \"moe_backend\": ",
               pass ? "pass" : "fail", mp_outcome_name(a->outcome), a->req_ok);
    if (a->res.moe_backend)
        buf_add_json_str(t, a->res.moe_backend, strlen(a->res.moe_backend));
    else
        buf_adds(t, "null");
    buf_adds(t, ", \"evidence\": ");
    char *ev = xasprintf("%s/server.log%s", rel(m->rep, a->dir), "");
    if (a->fail_line > 0 || a->res.moe_backend_line > 0) {
        free(ev);
        ev = xasprintf("%s/server.log:%ld", rel(m->rep, a->dir),
                       a->fail_line > 0 ? a->fail_line : a->res.moe_backend_line);
    }
    buf_add_json_str(t, ev, strlen(ev));
    free(ev);
    buf_printf(t, ", \"output_check\": \"%s\"",
               garbage ? "garbage" : checked ? "pass" : "not-run");
    if (garbage) {
        char *why = mp_store_mask_apply(m->store ? mp_store_mask(m->store) : NULL, garbage,
                                        strlen(garbage), false, NULL);
        buf_adds(t, ", \"why\": ");
        buf_add_json_str(t, why, strlen(why));
        free(why);
        if (!m->run->quiet)
            fprintf(stderr, "moeprobe: minimize: %s ran clean but fails the output check: %s\n",
                    c->name, garbage);
    }
    free(garbage);
    correctness_json(m, a, wrong, compared);
    free(wrong);
    buf_adds(t, "}");
    m->ntests++;
    if (m->store) {
        char *knobs = mp_candidate_knobs_str(c);
        int e = mp_store_add_minimize_test(m->store, m->ntests, knobs, c->name, pass);
        free(knobs);
        if (e == 0)
            e = mp_store_candidate_done(m->store, ci, NULL, NULL);
        if (e < 0)
            return mp_error("cannot write the evidence store: %s", mp_store_errmsg(m->store));
    }
    return pass ? 1 : 0;
}

static int ddmin_test(void *ud, const size_t *subset, size_t n)
{
    struct mctx *m = ud;
    if (n == 0)
        return 0; /* the empty change is --from itself, verified to fail */
    struct mp_candidate c;
    char name[32];
    snprintf(name, sizeof(name), "test-%u", m->ntests + 1);
    apply(&m->from, &m->diff, subset, n, name, &c);
    const char **texts = xcalloc(n + 1, sizeof(*texts));
    for (size_t i = 0; i < n; i++)
        texts[i] = m->diff.k[subset[i]].text;
    int rc = try_config(m, &c, texts, n, &m->pass_wl);
    free(texts);
    mp_candidate_release(&c);
    return rc;
}

static void ddmin_progress(void *ud, unsigned tests, const size_t *subset, size_t n)
{
    struct mctx *m = ud;
    if (m->run->quiet)
        return;
    fprintf(stderr, "moeprobe: minimize: %u test(s) run; current subset:", tests);
    for (size_t i = 0; i < n; i++) {
        char *k = knob_out(m, m->diff.k[subset[i]].text);
        char *e = mp_term_dup(k);
        fprintf(stderr, " %s", e);
        free(e);
        free(k);
    }
    fputc('\n', stderr);
}

/* --from and --to as candidates, and the knobs by which --to differs from
 * --from into m->from and m->diff. 0 or MP_EXIT_USAGE (message printed). */
static int min_ends(struct mctx *m, const struct mp_opts *o, struct mp_candidate *from_c,
                    struct mp_candidate *to_c)
{
    struct mp_diag d = MP_DIAG_INIT;
    if (!o->from || !o->to)
        return mp_error("minimize needs both --from 'KNOBS' (fails) and --to 'KNOBS' (works)"),
               MP_EXIT_USAGE;
    if (mp_candidate_from_knobs("from", o->from, from_c, &d) < 0 ||
        mp_candidate_from_knobs("to", o->to, to_c, &d) < 0)
        return mp_error("minimize: %s", d.msg), MP_EXIT_USAGE;
    mp_candidate_knobs(from_c, &m->from);
    struct mp_knobs to_k;
    memset(&to_k, 0, sizeof(to_k));
    mp_candidate_knobs(to_c, &to_k);
    for (size_t i = 0; i < to_k.n; i++) {
        int at = find_key(&m->from, &to_k.k[i]);
        if (at >= 0 && !strcmp(m->from.k[at].text, to_k.k[i].text))
            continue;
        mp_knobs_add(&m->diff, to_k.k[i].env, to_k.k[i].key, to_k.k[i].words.v, to_k.k[i].words.n);
    }
    mp_knobs_release(&to_k);
    if (m->diff.n == 0)
        return mp_error("--to adds nothing to --from: there is no difference to minimise"),
               MP_EXIT_USAGE;
    return 0;
}

/* The premise (--from fails, --to works), then ddmin into *minimal.
 * Returns the exit code. */
static int min_search(struct mctx *m, const struct mp_candidate *from_c, size_t **minimal,
                      size_t *nmin)
{
    const struct mp_opts *o = m->o;
    const char **texts = xcalloc(m->from.n + 1, sizeof(*texts));
    for (size_t i = 0; i < m->from.n; i++)
        texts[i] = m->from.k[i].text;
    int r = try_config(m, from_c, texts, m->from.n, &o->wl); /* 1. --from must fail */
    free(texts);
    if (r == 1) {
        mp_error("the --from configuration works (it ran every phase clean): nothing to minimise");
        return MP_EXIT_NONE;
    }
    if (r >= 0) {
        /* how many clean requests a pass needs, from --from's failure */
        struct mp_stats_async est;
        set_need(m, &m->rep->c[m->rep->n - 1].attempts[0], &est);
        if (!o->quiet && m->need)
            fprintf(stderr, "moeprobe: minimize: a pass must serve %lu clean requests (%s)\n",
                    m->need, est.why);
        m->expect_to = true;
        size_t *all = xcalloc(m->diff.n, sizeof(*all));
        for (size_t i = 0; i < m->diff.n; i++)
            all[i] = i;
        r = ddmin_test(m, all, m->diff.n); /* 2. --to must work */
        free(all);
        if (r == 0) {
            mp_error("the --to configuration does not work (see %s/minimize.json): nothing to "
                     "minimise", o->out_dir);
            return MP_EXIT_NONE;
        }
    }
    if (r >= 0) {
        struct mp_ddmin_stats st; /* 3. ddmin */
        memset(&st, 0, sizeof(st));
        r = mp_ddmin(m->diff.n, ddmin_test, m, minimal, nmin, &st, ddmin_progress);
    }
    if (r >= 0)
        return MP_EXIT_OK;
    return m->run->signo ? 128 + m->run->signo : r == MP_EUSAGE ? MP_EXIT_USAGE : MP_EXIT_INTERNAL;
}

/* The resolved backend of the minimal configuration: the last passing test
 * with exactly its knobs (borrowed), or NULL. */
static const char *min_backend(const struct mctx *m, const size_t *minimal, size_t nmin)
{
    const char *b = NULL;
    struct mp_candidate mc;
    apply(&m->from, &m->diff, minimal, nmin, "minimal", &mc);
    char *want = mp_candidate_knobs_str(&mc);
    for (size_t i = 0; i < m->rep->n; i++) {
        char *have = mp_candidate_knobs_str(&m->rep->c[i].cand);
        const struct mp_attempt_result *a = mp_cand_primary(&m->rep->c[i]);
        if (!strcmp(have, want) && a && a->outcome == MP_OUT_CLEAN)
            b = a->res.moe_backend;
        free(have);
    }
    free(want);
    mp_candidate_release(&mc);
    return b;
}

/* minimize.json: the minimal change (ok), what a pass needs, every test. */
static void min_json(const struct mctx *m, bool ok, const size_t *minimal, size_t nmin,
                     const char *backend, struct buf *out)
{
    buf_adds(out, "{\n  \"minimal\": ");
    if (ok) {
        buf_adds(out, "[");
        for (size_t i = 0; i < nmin; i++) {
            char *red = knob_out(m, m->diff.k[minimal[i]].text);
            buf_adds(out, i ? ", " : "");
            buf_add_json_str(out, red, strlen(red));
            free(red);
        }
        buf_adds(out, "]");
    } else {
        buf_adds(out, "null");
    }
    buf_printf(out, ",\n  \"requests_required_for_pass\": %lu,\n  \"tests\": [\n    %s\n  ]",
               m->need, m->tests.data ? m->tests.data : "");
    buf_adds(out, ",\n  \"minimal_moe_backend\": ");
    if (backend)
        buf_add_json_str(out, backend, strlen(backend));
    else
        buf_adds(out, "null");
    buf_adds(out, "\n}\n");
}

/* The result for people on stdout: the minimal change, its backend, the
 * differences not needed. */
static void min_text(const struct mctx *m, const size_t *minimal, size_t nmin, const char *backend)
{
    printf("minimal knob change that makes it work (%u tests):", m->ntests);
    for (size_t i = 0; i < nmin; i++) {
        char *k = knob_out(m, m->diff.k[minimal[i]].text);
        char *e = mp_term_dup(k);
        printf(" %s", e);
        free(e);
        free(k);
    }
    char *mb = mp_term_dup(backend ? backend : "(not logged)"); /* engine's words */
    printf("\nresolved MoE backend of the minimal configuration: %s\n", mb);
    free(mb);
    for (size_t i = 0; i < m->diff.n; i++) {
        bool in = false;
        for (size_t k = 0; k < nmin; k++)
            in = in || minimal[k] == i;
        if (in)
            continue;
        char *k = knob_out(m, m->diff.k[i].text);
        char *e = mp_term_dup(k);
        printf("not needed: %s\n", e);
        free(e);
        free(k);
    }
}

/* minimize.json and stdout; returns exit_code, or MP_EXIT_INTERNAL when
 * the file cannot be written. */
static int min_write(const struct mctx *m, int exit_code, const size_t *minimal, size_t nmin)
{
    bool ok = exit_code == MP_EXIT_OK;
    const char *backend = ok ? min_backend(m, minimal, nmin) : NULL;
    struct buf out = BUF_INIT;
    min_json(m, ok, minimal, nmin, backend, &out);
    int we = mp_write_file_atomic(m->o->out_dir, "minimize.json", out.data, out.len);
    if (we < 0) {
        mp_error("cannot write '%s/minimize.json': %s", m->o->out_dir, mp_strerror(we));
        exit_code = MP_EXIT_INTERNAL;
    }
    if (m->o->json)
        fwrite(out.data, 1, out.len, stdout);
    else if (ok)
        min_text(m, minimal, nmin, backend);
    fflush(stdout);
    buf_release(&out);
    return exit_code;
}

/* The session part of minimize: the run recorded, the search, the files.
 * Returns the exit code. */
static int min_session(struct mctx *m, struct mp_session *ss, int argc, char **argv,
                       struct mp_candidate *ends, size_t **minimal, size_t *nmin)
{
    const struct mp_opts *o = m->o;
    if (mkdir(o->out_dir, 0777) != 0 && errno != EEXIST) {
        int e = errno;
        mp_error("cannot create run directory '%s': %s", o->out_dir, strerror(e));
        return mp_cli_out_dir_input_error(-e) ? MP_EXIT_USAGE : MP_EXIT_INTERNAL;
    }
    /* both ends' knobs are masked: a secret in --from alone is in every test */
    int ec = mp_session_begin(ss, "minimize", o, 0, ends, 2, m->rep);
    if (ec)
        return ec;
    m->store = ss->store;
    if (mp_session_record_run(ss, argv + 1, (size_t)(argc - 1), m->rep) < 0)
        return MP_EXIT_INTERNAL;
    struct mp_runctx ctx;
    mp_session_runctx(ss, &ctx);
    if (!o->no_quality) /* a knob set whose answers are garbage does not work */
        ctx.quality_prompts = mp_quality_prompts(&ctx.nquality);
    ctx.score = mp_cli_score_plan(m->sco); /* a test that computes something else fails */
    m->run = &ctx;
    ctx.eta_prepare = eta_prepare;
    ctx.eta_ud = m;
    ec = min_search(m, &ends[0], minimal, nmin); /* before *minimal is read */
    ec = min_write(m, ec, *minimal, *nmin);
    if (mp_session_fingerprint(ss, m->rep) == 0)
        mp_session_finish(ss, ctx.signo != 0);
    m->run = NULL;
    return ec;
}

int cmd_minimize(int argc, char **argv)
{
    struct mp_opts o;
    int rc = mp_opts_parse(&o, MP_CMD_MINIMIZE, argc, argv, minimize_head, minimize_tail);
    if (rc != 0) {
        mp_opts_release(&o);
        return rc > 0 ? MP_EXIT_OK : MP_EXIT_USAGE;
    }
    struct mctx m;
    memset(&m, 0, sizeof(m));
    m.to_ci = -1;
    struct mp_cli_score sco; /* the scoring pass (cli/scoreopt.h) */
    memset(&sco, 0, sizeof(sco));
    struct mp_report rep;
    mp_report_init(&rep, o.out_dir);
    m.sco = &sco;
    m.rep = &rep;
    m.o = &o;
    m.json = o.json;
    struct mp_candidate ends[2];
    memset(ends, 0, sizeof(ends));
    size_t *minimal = NULL, nmin = 0;
    struct mp_session ss = MP_SESSION_INIT;
    int exit_code = mp_cli_run_dir_check("minimize", o.out_dir, false) != 0 ||
                            mp_cli_score_init(&sco, &o) < 0
                        ? MP_EXIT_USAGE
                        : 0;
    if (!exit_code)
        exit_code = min_ends(&m, &o, &ends[0], &ends[1]);
    if (!exit_code)
        exit_code = min_session(&m, &ss, argc, argv, ends, &minimal, &nmin);
    mp_session_end_exit(&ss, exit_code, &rep);
    free(minimal);
    buf_release(&m.tests);
    mp_knobs_release(&m.from);
    mp_knobs_release(&m.diff);
    mp_candidate_release(&ends[0]);
    mp_candidate_release(&ends[1]);
    mp_report_release(&rep);
    mp_cli_score_release(&sco);
    mp_opts_release(&o);
    return exit_code;
}
