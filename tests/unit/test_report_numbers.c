/* Unit tests: the numbers of #16 in the reports - per-phase TTFT/TPOT/ITL/E2E
 * (mean, std, percentiles of --percentiles), request/output/total token
 * throughput and the per-request decode rate in report.json with `vllm bench
 * serve`'s key names, the workload object, report.md's workload section and
 * latency table (escaped), and report --format csv (RFC 4180 quoting, the
 * spreadsheet formula guard, one row per candidate and phase). The report
 * model is built here with known histograms; the histogram's documented
 * tolerance is 1 % (base/hist.h). Also report.md's "Server's view" (the
 * engine's /metrics per phase beside the client's numbers, from synthetic
 * struct mp_server_metrics: a normal, a preempted and an unreadable phase). */
#include "compat.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "buf.h"
#include "cli/opts.h"
#include "model/score.h"
#include "report/report.h"
#include "report/srvm.h"
#include "xalloc.h"

const char mp_version[] = "0.0.0-test";

static void hist_fill(struct mp_hist *h, double first, double step, int n)
{
    for (int i = 0; i < n; i++)
        mp_hist_add(h, first + step * i);
}

/* A clean candidate with a sequential phase of 10 requests whose TTFT are
 * 10, 20, ..., 100 ms, TPOT 5..14 ms, ITL 1..100 ms (100 gaps), E2E
 * 100..1000 ms, per-request rates 100..190 tok/s; 2 s wall, 100 output and
 * 150 prompt tokens; and a concurrency-4 phase of 4 requests whose usage
 * gave prompt tokens for 2 of them only, with no TPOT samples. */
static void add_cand(struct mp_report *rep, const char *name, const char *knobs, const char *backend,
                     const char *phase2)
{
    struct mp_candidate c;
    assert_int_equal(mp_candidate_from_knobs("x", knobs, &c, NULL), 0);
    free(c.name); /* any name a store may hold, not only what --candidate accepts */
    c.name = xstrdup(name);
    size_t i = mp_report_add_candidate(rep, &c);
    mp_candidate_release(&c);
    struct mp_attempt_result a;
    memset(&a, 0, sizeof(a));
    a.dir = xasprintf("/nonexistent/attempts/x-1");
    a.index = 1;
    a.outcome = MP_OUT_CLEAN;
    a.res.moe_backend = backend ? xstrdup(backend) : NULL;
    a.req_ok = 14;
    a.nphases = 2;
    struct mp_phase_result *s = &a.phases[0];
    snprintf(s->name, sizeof(s->name), "sequential");
    s->level = 1;
    s->planned = s->ok = 10;
    s->wall_s = 2.0;
    s->tokens = 100;
    s->tok_s = 50;
    s->prompt_tokens = 150;
    s->prompt_n = 10;
    hist_fill(&s->m.ttft_ms, 10, 10, 10);
    hist_fill(&s->m.tpot_ms, 5, 1, 10);
    hist_fill(&s->m.itl_ms, 1, 1, 100);
    hist_fill(&s->m.e2e_ms, 100, 100, 10);
    hist_fill(&s->m.req_tok_s, 100, 10, 10);
    struct mp_phase_result *k = &a.phases[1];
    snprintf(k->name, sizeof(k->name), "%s", phase2);
    k->level = 4;
    k->planned = k->ok = 4;
    k->wall_s = 0.5;
    k->tokens = 40;
    k->tok_s = 80;
    k->prompt_tokens = 100;
    k->prompt_n = 2;
    hist_fill(&k->m.ttft_ms, 200, 0, 4);
    hist_fill(&k->m.e2e_ms, 400, 0, 4);
    mp_report_add_attempt(rep, i, &a);
}

static void build(struct mp_report *rep)
{
    mp_report_init(rep, "/nonexistent");
    add_cand(rep, "auto", "", "MARLIN", "concurrency-4");
    rep->has_workload = true;
    mp_workload_default(&rep->workload);
    mp_workload_add_conc(&rep->workload, "4:16");
    rep->workload.max_tokens = 64;
    rep->workload.input_tokens = 512;
    rep->workload.chat = true;
    mp_workload_add_prefill(&rep->workload, 8192, 3);
    mp_report_finalize(rep);
}

static cJSON *phase_of(cJSON *root, int cand, int phase)
{
    cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "candidates"), cand);
    cJSON *tp = cJSON_GetObjectItem(c, "throughput");
    return cJSON_GetArrayItem(cJSON_GetObjectItem(tp, "phases"), phase);
}

static double num(cJSON *o, const char *key)
{
    cJSON *v = cJSON_GetObjectItem(o, key);
    if (!cJSON_IsNumber(v))
        fail_msg("%s is not a number", key);
    return v->valuedouble;
}

/* within the histogram's documented 1 % (and the JSON's 3 decimals) */
static void near(double got, double want)
{
    if (fabs(got - want) > want * 0.01 + 0.001)
        fail_msg("%g is not within 1 %% of %g", got, want);
}

static void test_json_numbers(void **state)
{
    (void)state;
    struct mp_report rep;
    build(&rep);
    struct buf b = BUF_INIT;
    mp_report_json(&rep, &b);
    cJSON *root = cJSON_Parse(b.data);
    assert_non_null(root);
    cJSON *s = phase_of(root, 0, 0);
    assert_string_equal(cJSON_GetObjectItem(s, "phase")->valuestring, "sequential");
    /* existing fields stay */
    near(num(s, "tok_s"), 50);
    assert_int_equal((int)num(s, "ok"), 10);
    /* throughput, vLLM's names */
    near(num(s, "request_throughput"), 5);
    near(num(s, "output_throughput"), 50);
    near(num(s, "total_token_throughput"), 125);
    assert_int_equal((int)num(s, "total_input_tokens"), 150);
    assert_int_equal((int)num(s, "total_output_tokens"), 100);
    /* TTFT 10..100: mean 55, population std sqrt(825), nearest-rank p50 50, p90 90, p99 100 */
    near(num(s, "mean_ttft_ms"), 55);
    near(num(s, "std_ttft_ms"), sqrt(825));
    near(num(s, "median_ttft_ms"), 50);
    near(num(s, "p50_ttft_ms"), 50);
    near(num(s, "p90_ttft_ms"), 90);
    near(num(s, "p99_ttft_ms"), 100);
    near(num(s, "mean_tpot_ms"), 9.5);
    near(num(s, "p90_tpot_ms"), 13);
    near(num(s, "mean_itl_ms"), 50.5);
    near(num(s, "p99_itl_ms"), 99);
    near(num(s, "std_itl_ms"), sqrt((100.0 * 100 - 1) / 12));
    near(num(s, "mean_e2el_ms"), 550);
    near(num(s, "p50_e2el_ms"), 500);
    near(num(s, "mean_request_tok_s"), 145);
    near(num(s, "median_request_tok_s"), 140);
    near(num(s, "p90_request_tok_s"), 180);
    /* only the report's percentiles */
    assert_null(cJSON_GetObjectItem(s, "p95_ttft_ms"));
    /* usage for 2 of 4 requests: the input is scaled up to all 4 */
    cJSON *k = phase_of(root, 0, 1);
    assert_int_equal((int)num(k, "total_input_tokens"), 200);
    near(num(k, "total_token_throughput"), (200 + 40) / 0.5);
    near(num(k, "request_throughput"), 8);
    /* no TPOT sample: null, not 0 */
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(k, "mean_tpot_ms")));
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(k, "p99_tpot_ms")));
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(k, "std_tpot_ms")));
    near(num(k, "p99_ttft_ms"), 200);
    near(num(k, "std_ttft_ms"), 0);
    /* the percentiles the report used */
    cJSON *pc = cJSON_GetObjectItem(root, "percentiles");
    assert_int_equal(cJSON_GetArraySize(pc), 3);
    assert_int_equal((int)cJSON_GetArrayItem(pc, 2)->valuedouble, 99);
    cJSON_Delete(root);
    buf_release(&b);

    /* --percentiles 50,95,99.9: the keys follow */
    rep.percentiles[0] = 50;
    rep.percentiles[1] = 95;
    rep.percentiles[2] = 99.9;
    rep.npercentiles = 3;
    mp_report_json(&rep, &b);
    root = cJSON_Parse(b.data);
    s = phase_of(root, 0, 0);
    near(num(s, "p95_itl_ms"), 95);
    near(num(s, "p99.9_itl_ms"), 100);
    near(num(s, "p95_request_tok_s"), 190);
    assert_null(cJSON_GetObjectItem(s, "p90_itl_ms"));
    assert_null(cJSON_GetObjectItem(s, "p99_itl_ms"));
    near(num(s, "median_itl_ms"), 50); /* median is always there, as in vLLM */
    cJSON_Delete(root);
    buf_release(&b);
    mp_report_release(&rep);
}

/* cost (#27): an attempt's engine time split into the engine's start-up,
 * its requests (the phases' wall time) and moeprobe's own (the rest); a
 * stop at the selection lines is counted; the run's cost sums them. */
static void test_json_cost(void **state)
{
    (void)state;
    struct mp_report rep;
    mp_report_init(&rep, "/nonexistent");
    add_cand(&rep, "auto", "", "MARLIN", "concurrency-4"); /* phases: 2.0 s + 0.5 s */
    rep.c[0].attempts[0].ready_s = 3;
    rep.c[0].attempts[0].wall_s = 7.5;
    /* the correctness pass's requests are requests too (1.0 s scoring + 0.5 s tasks) */
    rep.c[0].attempts[0].score = mp_score_new();
    rep.c[0].attempts[0].score->score_s = 1.0;
    rep.c[0].attempts[0].score->task_s = 0.5;
    struct mp_candidate c;
    assert_int_equal(mp_candidate_from_knobs("fc", "--moe-backend flashinfer_cutlass", &c, NULL), 0);
    size_t i = mp_report_add_candidate(&rep, &c);
    mp_candidate_release(&c);
    struct mp_attempt_result a;
    memset(&a, 0, sizeof(a));
    a.index = 1;
    a.outcome = MP_OUT_SAME_CONFIG;
    a.dir = xasprintf("/nonexistent/attempts/fc-1");
    a.same_as = xstrdup("auto");
    a.same_why = xstrdup("the same resolved configuration as 'auto'");
    a.res.moe_backend = xstrdup("MARLIN");
    a.ready_s = 0.4;
    a.wall_s = 0.45;
    mp_report_add_attempt(&rep, i, &a);
    mp_report_finalize(&rep);
    struct buf b = BUF_INIT;
    mp_report_json(&rep, &b);
    cJSON *root = cJSON_Parse(b.data);
    assert_non_null(root);
    cJSON *k0 = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(root, "candidates"), 0), "cost");
    near(num(k0, "startup_seconds"), 3);
    near(num(k0, "request_seconds"), 4.0);
    near(num(k0, "overhead_seconds"), 0.5);
    assert_int_equal((int)num(k0, "selection_stops"), 0);
    assert_int_equal((int)num(k0, "engine_starts"), 1);
    cJSON *k1 = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(root, "candidates"), 1), "cost");
    assert_int_equal((int)num(k1, "selection_stops"), 1);
    near(num(k1, "startup_seconds"), 0.4);
    near(num(k1, "overhead_seconds"), 0.05);
    cJSON *run = cJSON_GetObjectItem(root, "cost");
    assert_int_equal((int)num(run, "engine_starts"), 2);
    assert_int_equal((int)num(run, "selection_stops"), 1);
    near(num(run, "startup_seconds"), 3.4);
    near(num(run, "request_seconds"), 4.0);
    near(num(run, "overhead_seconds"), 0.55);
    cJSON_Delete(root);
    buf_release(&b);
    /* report.md: the candidate's line and the run's row */
    mp_report_markdown(&rep, &b);
    assert_non_null(strstr(b.data, "(engine start-up 3.0 s, requests 4.0 s, moeprobe's own 0.5 s)"));
    assert_non_null(strstr(b.data, "| cost | 1 stopped at their selection lines; engine start-up 3.4 s, "
                                   "requests 4.0 s, moeprobe's own 0.6 s |"));
    buf_release(&b);
    mp_report_release(&rep);
}

static void test_json_workload(void **state)
{
    (void)state;
    struct mp_report rep;
    build(&rep);
    /* a soak's timed phase: no request count, a duration */
    struct mp_phase_spec *sk = &rep.workload.phases[rep.workload.nphases++];
    snprintf(sk->name, sizeof(sk->name), "soak");
    sk->level = 8;
    sk->requests = INT_MAX;
    sk->duration_s = 3600;
    struct buf b = BUF_INIT;
    mp_report_json(&rep, &b);
    cJSON *root = cJSON_Parse(b.data);
    cJSON *w = cJSON_GetObjectItem(root, "workload");
    assert_true(cJSON_IsObject(w));
    assert_string_equal(cJSON_GetObjectItem(w, "api")->valuestring, "chat");
    assert_int_equal((int)num(w, "max_tokens"), 64);
    assert_int_equal((int)num(w, "input_tokens"), 512);
    cJSON *sm = cJSON_GetObjectItem(w, "sampling");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(sm, "ignore_eos")));
    assert_int_equal((int)num(sm, "temperature"), 0);
    cJSON *ph = cJSON_GetObjectItem(w, "phases");
    assert_int_equal(cJSON_GetArraySize(ph), 5); /* warmup, sequential, 4:16, prefill, soak */
    cJSON *p2 = cJSON_GetArrayItem(ph, 2);
    assert_string_equal(cJSON_GetObjectItem(p2, "name")->valuestring, "concurrency-4");
    assert_int_equal((int)num(p2, "concurrency"), 4);
    assert_int_equal((int)num(p2, "requests"), 16);
    assert_int_equal((int)num(p2, "input_tokens"), 512);
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(p2, "duration_s")));
    cJSON *p3 = cJSON_GetArrayItem(ph, 3);
    assert_string_equal(cJSON_GetObjectItem(p3, "name")->valuestring, "prefill-8192");
    assert_int_equal((int)num(p3, "input_tokens"), 8192);
    cJSON *p4 = cJSON_GetArrayItem(ph, 4);
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(p4, "requests")));
    assert_int_equal((int)num(p4, "duration_s"), 3600);
    /* and in report.md */
    struct buf md = BUF_INIT;
    mp_report_markdown(&rep, &md);
    assert_non_null(strstr(md.data, "| soak | 8 | until the duration | 3600 s | 512 |"));
    assert_non_null(strstr(md.data, "| prefill-8192 | 1 | 3 | — | 8192 |"));
    assert_non_null(strstr(md.data, "API `chat` (`/v1/chat/completions`), at most 64 output tokens"));
    buf_release(&md);
    cJSON_Delete(root);
    buf_release(&b);
    /* the store does not say: null */
    rep.has_workload = false;
    mp_report_json(&rep, &b);
    root = cJSON_Parse(b.data);
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(root, "workload")));
    cJSON_Delete(root);
    buf_release(&b);
    mp_report_release(&rep);
}

/* The numbers of the first table row of report.md starting with prefix,
 * in cell order ("a / b / c" gives three). */
static size_t md_row_numbers(const char *md, const char *prefix, double *out, size_t max)
{
    const char *r = strstr(md, prefix);
    if (!r)
        fail_msg("no row '%s' in:\n%s", prefix, md);
    size_t n = 0;
    const char *end = strchr(r, '\n');
    for (const char *p = r + strlen(prefix); p < end && n < max;) {
        char *e;
        double v = strtod(p, &e);
        if (e != p) {
            out[n++] = v;
            p = e;
        } else {
            p++;
        }
    }
    return n;
}

static void test_markdown(void **state)
{
    (void)state;
    struct mp_report rep;
    mp_report_init(&rep, "/nonexistent");
    add_cand(&rep, "a|b*c", "", "MARLIN", "conc|<x>");
    rep.has_workload = true;
    mp_workload_default(&rep.workload);
    mp_workload_add_conc(&rep.workload, "4:16");
    mp_report_finalize(&rep);
    struct buf b = BUF_INIT;
    mp_report_markdown(&rep, &b);
    const char *md = b.data;
    assert_non_null(strstr(md, "## Workload\n"));
    assert_non_null(strstr(md, "| concurrency-4 | 4 | 16 | — | ~15 |"));
    assert_non_null(strstr(md, "API `completions`"));
    assert_non_null(strstr(md, "## Latency and throughput\n"));
    assert_non_null(strstr(md, "| candidate | phase | concurrency | ok | TTFT ms (p50 / p90 / p99) |"));
    /* the row: outside text escaped; TTFT p50/p90/p99, TPOT, ITL, E2E, req/s, out, total */
    double v[32];
    size_t n = md_row_numbers(md, "| a\\|b\\*c | sequential |", v, 32);
    assert_int_equal(n, 2 + 12 + 3);
    const double want[] = {1, 10, 50, 90, 100, 9, 13, 14, 50, 90, 99, 500, 900, 1000, 5, 50, 125};
    for (size_t i = 0; i < n; i++)
        near(v[i], want[i]);
    /* the phase name from the store is escaped too; no TPOT sample is a dash */
    const char *r = strstr(md, "| a\\|b\\*c | conc\\|&lt;x&gt; | 4 | 4 | 200 / 200 / 200 | — |");
    assert_non_null(r);
    /* the rest of report.md is there as before */
    assert_non_null(strstr(md, "## Candidates\n"));
    assert_non_null(strstr(md, "## Details\n"));
    buf_release(&b);

    /* the chosen percentiles name the columns */
    rep.percentiles[0] = 50;
    rep.percentiles[1] = 95;
    rep.npercentiles = 2;
    mp_report_markdown(&rep, &b);
    assert_non_null(strstr(b.data, "| TTFT ms (p50 / p95) |"));
    n = md_row_numbers(b.data, "| a\\|b\\*c | sequential |", v, 32);
    assert_int_equal(n, 2 + 8 + 3);
    near(v[3], 100); /* TTFT p95 of 10..100 */
    buf_release(&b);

    /* with --api chat the fixed prompts carry the chat template's tokens too */
    rep.workload.chat = true;
    mp_report_markdown(&rep, &b);
    assert_non_null(strstr(b.data, "| concurrency-4 | 4 | 16 | — | ~15 + chat template |"));
    assert_non_null(strstr(b.data, "~15-token prompts (plus the chat template's tokens)."));
    buf_reset(&b);
    mp_report_html(&rep, &b);
    assert_non_null(strstr(b.data, "<td class=n>~15 + chat template</td>"));
    assert_non_null(strstr(b.data, "the fixed short prompts (~15 + chat template tokens)"));
    buf_release(&b);
    rep.workload.chat = false;

    rep.has_workload = false;
    mp_report_markdown(&rep, &b);
    assert_non_null(strstr(b.data, "does not record the workload"));
    buf_release(&b);
    mp_report_release(&rep);
}

/* RFC 4180 split of one CSV record starting at *p (advanced past its CRLF)
 * into cells (caller frees each). Returns the number of cells, -1 at the end. */
static int csv_record(const char **p, char **cells, int max)
{
    const char *s = *p;
    if (!*s)
        return -1;
    int n = 0;
    for (;;) {
        struct buf c = BUF_INIT;
        buf_adds(&c, "");
        if (*s == '"') {
            s++;
            for (;;) {
                if (!*s)
                    fail_msg("unterminated quoted cell");
                if (*s == '"' && s[1] == '"') {
                    buf_addc(&c, '"');
                    s += 2;
                } else if (*s == '"') {
                    s++;
                    break;
                } else {
                    buf_addc(&c, *s++);
                }
            }
        } else {
            while (*s && *s != ',' && *s != '\r' && *s != '\n') {
                if (*s == '"')
                    fail_msg("a quote in an unquoted cell");
                buf_addc(&c, *s++);
            }
        }
        assert_true(n < max);
        cells[n++] = buf_detach(&c, NULL);
        if (*s == ',') {
            s++;
            continue;
        }
        if (s[0] != '\r' || s[1] != '\n')
            fail_msg("a record does not end with CRLF");
        *p = s + 2;
        return n;
    }
}

static int col(char **hdr, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(hdr[i], name))
            return i;
    fail_msg("no column %s", name);
    return -1;
}

static void free_cells(char **c, int n)
{
    for (int i = 0; i < n; i++)
        free(c[i]);
}

static void test_csv(void **state)
{
    (void)state;
    struct mp_report rep;
    mp_report_init(&rep, "/nonexistent");
    add_cand(&rep, "auto", "", "MARLIN", "concurrency-4");
    /* outside text that a spreadsheet would run, and a quote and a comma */
    add_cand(&rep, "=HYPERLINK(\"http://x\",\"y\")", "--moe-backend cutlass",
             "@SUM(1+1)\x1b[2J", "+conc");
    /* a candidate that served no phase: one row, phase cells empty */
    struct mp_candidate c;
    assert_int_equal(mp_candidate_from_knobs("dead", "VLLM_X=1 HF_TOKEN=hf_abcdefghijkl", &c, NULL), 0);
    size_t di = mp_report_add_candidate(&rep, &c);
    mp_candidate_release(&c);
    struct mp_attempt_result a;
    memset(&a, 0, sizeof(a));
    a.dir = xstrdup("/nonexistent/attempts/dead-1");
    a.outcome = MP_OUT_STARTUP_FAILURE;
    a.fail_class = xstrdup("startup-error");
    mp_report_add_attempt(&rep, di, &a);
    /* a shared result: auto's numbers, and says so */
    assert_int_equal(mp_candidate_from_knobs("fc", "--moe-backend flashinfer_cutlass", &c, NULL), 0);
    size_t si = mp_report_add_candidate(&rep, &c);
    mp_candidate_release(&c);
    memset(&a, 0, sizeof(a));
    a.dir = xstrdup("/nonexistent/attempts/fc-1");
    a.outcome = MP_OUT_SAME_CONFIG;
    a.same_as = xstrdup("auto");
    mp_report_add_attempt(&rep, si, &a);
    mp_report_finalize(&rep);

    struct buf b = BUF_INIT;
    mp_report_csv(&rep, &b);
    const char *p = b.data;
    char *hdr[128], *row[128];
    int nh = csv_record(&p, hdr, 128);
    /* 15 fixed columns, 5 distributions x (mean, median, std, 3 percentiles),
     * shared_with, the run and its fingerprint (#29) */
    assert_int_equal(nh, 15 + 5 * 6 + 10);
    assert_string_equal(hdr[nh - 10], "shared_with");
    assert_string_equal(hdr[nh - 1], "model");
    assert_string_equal(hdr[0], "candidate");
    col(hdr, nh, "p99_ttft_ms");
    col(hdr, nh, "std_e2el_ms");
    col(hdr, nh, "median_request_tok_s");
    int rows = 0, nr;
    while ((nr = csv_record(&p, row, 128)) >= 0) {
        assert_int_equal(nr, nh); /* every record has every cell */
        rows++;
        if (rows == 1) {
            assert_string_equal(row[0], "auto");
            assert_string_equal(row[col(hdr, nh, "verdict")], "stable");
            assert_string_equal(row[col(hdr, nh, "phase")], "sequential");
            near(strtod(row[col(hdr, nh, "request_throughput")], NULL), 5);
            near(strtod(row[col(hdr, nh, "total_token_throughput")], NULL), 125);
            near(strtod(row[col(hdr, nh, "p90_ttft_ms")], NULL), 90);
            near(strtod(row[col(hdr, nh, "mean_itl_ms")], NULL), 50.5);
            assert_string_equal(row[col(hdr, nh, "total_input_tokens")], "150");
            assert_string_equal(row[col(hdr, nh, "run")], "/nonexistent");
            assert_string_equal(row[col(hdr, nh, "shared_with")], "");
        }
        if (rows == 2)
            assert_string_equal(row[col(hdr, nh, "mean_tpot_ms")], ""); /* no sample: empty */
        if (rows == 3) {
            /* the guard: a leading ' before = + - @; controls shown escaped */
            assert_string_equal(row[0], "'=HYPERLINK(\"http://x\",\"y\")");
            assert_string_equal(row[1], "'--moe-backend cutlass");
            assert_string_equal(row[3], "'@SUM(1+1)\\x1b[2J");
        }
        if (rows == 4)
            assert_string_equal(row[col(hdr, nh, "phase")], "'+conc");
        if (rows == 5) {
            assert_string_equal(row[0], "dead");
            assert_string_equal(row[1], "VLLM_X=1 'HF_TOKEN=***'"); /* never a secret (shell-quoted as in report.md) */
            assert_string_equal(row[col(hdr, nh, "verdict")], "startup-failure");
            assert_string_equal(row[col(hdr, nh, "phase")], "");
            assert_string_equal(row[col(hdr, nh, "p99_ttft_ms")], "");
        }
        if (rows == 6) { /* shared: auto's first phase, named as auto's */
            assert_string_equal(row[0], "fc");
            assert_string_equal(row[col(hdr, nh, "shared_with")], "auto");
            assert_string_equal(row[col(hdr, nh, "phase")], "sequential");
            near(strtod(row[col(hdr, nh, "request_throughput")], NULL), 5);
        }
        free_cells(row, nr);
    }
    assert_int_equal(rows, 2 + 2 + 1 + 2);
    /* RFC 4180: the quoted cell doubles its quotes */
    assert_non_null(strstr(b.data, "\"'=HYPERLINK(\"\"http://x\"\",\"\"y\"\")\","));
    assert_null(strchr(b.data, '\x1b'));
    assert_null(strstr(b.data, "hf_abcdefghijkl"));
    free_cells(hdr, nh);
    buf_release(&b);

    /* the header follows --percentiles */
    rep.percentiles[0] = 50;
    rep.percentiles[1] = 95;
    rep.npercentiles = 2;
    mp_report_csv(&rep, &b);
    p = b.data;
    nh = csv_record(&p, hdr, 128);
    assert_int_equal(nh, 15 + 5 * 5 + 10);
    col(hdr, nh, "p95_tpot_ms");
    for (int i = 0; i < nh; i++)
        assert_string_not_equal(hdr[i], "p99_tpot_ms");
    free_cells(hdr, nh);
    buf_release(&b);
    mp_report_release(&rep);
}

static void test_percentiles_option(void **state)
{
    (void)state;
    double v[MP_REPORT_MAX_PCT];
    size_t n = 0;
    assert_int_equal(mp_cli_parse_percentiles("50,90,99", v, &n), 0);
    assert_int_equal(n, 3);
    assert_true(v[0] == 50 && v[1] == 90 && v[2] == 99);
    assert_int_equal(mp_cli_parse_percentiles("99.9,100,0.5", v, &n), 0);
    assert_true(n == 3 && v[0] == 99.9 && v[1] == 100 && v[2] == 0.5);
    assert_int_equal(mp_cli_parse_percentiles("1,2,3,4,5,6,7,8", v, &n), 0);
    assert_int_equal(n, 8);
    static const char *const bad[] = {
        "", "0", "101", "100.5", "-5", "50,", ",50", "50,,90", "1,2,3,4,5,6,7,8,9",
        "50,50", "50,50.0", "99.9999", "abc", "5e1", "nan", "inf", "50 ", ".5", "50.",
    };
    for (size_t i = 0; i < MP_ARRAY_SIZE(bad); i++) {
        n = 77;
        if (mp_cli_parse_percentiles(bad[i], v, &n) != -1)
            fail_msg("'%s' was accepted", bad[i]);
        assert_int_equal(n, 77); /* nothing half-set */
    }
}

/* A phase the engine's /metrics saw: TTFT mean/p50/p99, ITL mean (ms). */
static void srv_ok(struct mp_phase_result *ph, double ttft, double p50, double p99, double itl,
                   double gen, double preempt, double waiting, double kv)
{
    struct mp_server_metrics *m = &ph->srv;
    memset(m, 0, sizeof(*m));
    m->state = MP_SRVM_OK;
    m->scrapes = 3;
    m->ttft = (struct mp_srvm_lat){ ttft, p50, p99, 10 };
    m->itl = (struct mp_srvm_lat){ itl, itl, itl, 100 };
    m->gen_tokens = gen;
    m->prompt_tokens = 150;
    m->preemptions = preempt;
    m->waiting_max = waiting;
    m->running_max = 4;
    m->kv_usage_max = kv;
    mp_srvm_set_flags(m);
}

static void srv_unreadable(struct mp_phase_result *ph, const char *name, const char *reason)
{
    snprintf(ph->name, sizeof(ph->name), "%s", name);
    ph->level = 8;
    memset(&ph->srv, 0, sizeof(ph->srv));
    ph->srv.state = MP_SRVM_UNREADABLE;
    snprintf(ph->srv.reason, sizeof(ph->srv.reason), "%s", reason);
}

static size_t count_of(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

static void test_server_view(void **state)
{
    (void)state;
    struct mp_report rep;
    mp_report_init(&rep, "/nonexistent");
    add_cand(&rep, "a|b*c", "", "MARLIN", "conc|<x>");
    struct mp_attempt_result *a = &rep.c[0].attempts[0];
    /* normal: the engine's TTFT a little under the client's (p50 50 ms) */
    srv_ok(&a->phases[0], 47.5, 45, 97.5, 50.2, 100, 0, 0, 0.375);
    /* the KV cache ran out: preempted and queued; the engine exports no
     * generation-token counter (-1) */
    srv_ok(&a->phases[1], 150, 140, 380, 0, -1, 3, 4, 1);
    a->phases[1].srv.itl.n = 0; /* no ITL observation: unknown, not 0 */
    /* two phases whose /metrics could not be read, for the same reason
     * (engine text), and one for another */
    srv_unreadable(&a->phases[2], "concurrency-8", "/metrics answered <b>HTTP 404</b> | *x*");
    srv_unreadable(&a->phases[3], "concurrency-16", "/metrics answered <b>HTTP 404</b> | *x*");
    srv_unreadable(&a->phases[4], "soak", "");
    a->nphases = 5;
    mp_report_finalize(&rep);

    /* the one place that decides what a row says */
    struct mp_srvm_row r;
    assert_true(mp_rep_srvm_row(&a->phases[0], &r));
    assert_string_equal(r.cell[MP_SRVM_TTFT_MEAN], "47.5");
    assert_string_equal(r.cell[MP_SRVM_TTFT_P99], "97.5");
    assert_string_equal(r.cell[MP_SRVM_GEN_TOKENS], "100");
    assert_string_equal(r.cell[MP_SRVM_CLIENT_TOKENS], "100");
    assert_string_equal(r.cell[MP_SRVM_KV_MAX], "37.5");
    assert_null(r.flag);
    assert_true(mp_rep_srvm_row(&a->phases[1], &r));
    assert_string_equal(r.flag, "preempted, queued");
    assert_string_equal(r.cell[MP_SRVM_GEN_TOKENS], "—");
    assert_string_equal(r.cell[MP_SRVM_ITL_MEAN], "—");
    assert_string_equal(r.cell[MP_SRVM_CLIENT_ITL_MEAN], "—"); /* the phase has no ITL samples */
    assert_string_equal(r.cell[MP_SRVM_PREEMPTIONS], "3");
    assert_string_equal(r.cell[MP_SRVM_KV_MAX], "100.0");
    assert_false(mp_rep_srvm_row(&a->phases[2], &r));
    a->phases[1].srv.queued = false;
    assert_true(mp_rep_srvm_row(&a->phases[1], &r));
    assert_string_equal(r.flag, "preempted");
    a->phases[1].srv.queued = true;

    struct buf b = BUF_INIT;
    mp_report_markdown(&rep, &b);
    const char *md = b.data;
    const char *lat = strstr(md, "## Latency and throughput\n");
    const char *sv = strstr(md, "## Server's view\n");
    assert_non_null(lat);
    assert_non_null(sv);
    assert_true(sv > lat);
    assert_true(sv < strstr(md, "## Details\n"));
    assert_non_null(strstr(sv, "| candidate | phase | engine TTFT (mean / p50 / p99) | client TTFT p50 | "
                               "engine ITL mean | client ITL mean | engine output tokens | "
                               "client output tokens | preemptions | max waiting | max KV cache % | flag |"));
    /* normal: engine TTFT mean/p50/p99, client p50 (10..100: 50), engine and
     * client ITL mean (1..100: 50.5), tokens, preemptions, waiting, KV %; no flag */
    double v[32];
    size_t n = md_row_numbers(sv, "| a\\|b\\*c | sequential |", v, 32);
    assert_int_equal(n, 11);
    const double want[] = {47.5, 45, 97.5, 50, 50.2, 50.5, 100, 100, 0, 0, 37.5};
    for (size_t i = 0; i < n; i++)
        near(v[i], want[i]);
    const char *row = strstr(sv, "| a\\|b\\*c | sequential |");
    const char *eol = strchr(row, '\n');
    assert_true(eol - row > 6 && !memcmp(eol - 6, " — |", 6)); /* no flag */
    /* preempted: flagged, the phase name from the store escaped, unknowns a dash */
    assert_non_null(strstr(sv, "| a\\|b\\*c | conc\\|&lt;x&gt; | 150 / 140 / 380 | 200 | — | — | — | 40 | "
                               "3 | 4 | 100.0 | **preempted, queued** |\n"));
    /* unreadable: no row, the reason once (escaped), naming both phases; an
     * empty reason is "unreadable" */
    assert_null(strstr(sv, "| concurrency-8 |"));
    assert_null(strstr(sv, "| soak |"));
    assert_int_equal(count_of(md, "HTTP 404"), 1);
    assert_non_null(strstr(sv, "- a\\|b\\*c: the engine's /metrics could not be read in phases "
                               "concurrency-8, concurrency-16 (/metrics answered &lt;b&gt;HTTP "
                               "404&lt;/b&gt; \\| \\*x\\*)\n"));
    assert_non_null(strstr(sv, "- a\\|b\\*c: the engine's /metrics could not be read in phase soak "
                               "(unreadable)\n"));
    assert_null(strstr(md, "<b>"));
    buf_release(&b);

    /* nothing read: no section at all (report.md as before), even with an
     * unreadable phase */
    a->phases[0].srv.state = MP_SRVM_NONE;
    a->phases[1].srv.state = MP_SRVM_UNREADABLE;
    mp_report_markdown(&rep, &b);
    assert_null(strstr(b.data, "## Server's view"));
    buf_release(&b);
    mp_report_release(&rep);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_numbers),
        cmocka_unit_test(test_json_cost),
        cmocka_unit_test(test_json_workload),
        cmocka_unit_test(test_markdown),
        cmocka_unit_test(test_csv),
        cmocka_unit_test(test_percentiles_option),
        cmocka_unit_test(test_server_view),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
