/* test_html.c - the HTML report and its SVG charts: escaping of everything
 * taken from engines and logs (also inside SVG text), charts with empty,
 * single and n/a data, log excerpts with line numbers and the request
 * timeline from the attempt's evidence (a crash and a hang), the
 * normal-vs-blocking chart drawn from the rates its ratio divides, the
 * latency table from the phase histograms, "Are the numbers comparable?"
 * (a throttled attempt, a preempted phase), the workload, a well-formed
 * page; and the evidence's round trip through the store (context lines
 * written at attempt finish, the request cap). */
#include "compat.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "report/report.h"
#include "report/svg.h"
#include "store/store.h"
#include "version.h"
#include "xalloc.h"

const char mp_version[] = "0.0.0-test";

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

static void test_esc(void **state)
{
    MP_UNUSED(state);
    struct buf b = BUF_INIT;
    mp_html_esc(&b, "<a href='x'>&\"\x01\xff", 0);
    assert_string_equal(b.data, "&lt;a href=&#39;x&#39;&gt;&amp;&quot;\xEF\xBF\xBD\xEF\xBF\xBD");
    buf_reset(&b);
    mp_html_esc(&b, "abcdef", 3);
    assert_string_equal(b.data, "abc…");
    buf_reset(&b);
    mp_html_esc(&b, "é<", 1); /* never cuts inside a character */
    assert_string_equal(b.data, "…");
    buf_reset(&b);
    mp_html_esc(&b, NULL, 0);
    assert_string_equal(b.data, "—");
    buf_release(&b);
}

/* The number in data-v="..." after the n-th (0-based) occurrence of "data-v=\"". */
static double data_v(const char *h, size_t n)
{
    const char *p = h;
    for (size_t i = 0; p && i <= n; i++) {
        p = strstr(p, "data-v=\"");
        if (p && i < n)
            p++;
    }
    assert_non_null(p);
    return strtod(p + 8, NULL);
}

static void test_svg(void **state)
{
    MP_UNUSED(state);
    struct buf b = BUF_INIT;
    const char *labels[] = { "a<b", "c" };
    const double vals[] = { 10, -1 };
    const char *leg[] = { "seq<", "#123456", NULL };
    mp_svg_hbars(&b, "T&", "tok/s", labels, vals, NULL, 2, leg);
    assert_non_null(strstr(b.data, "<figcaption>T&amp;</figcaption>"));
    assert_non_null(strstr(b.data, ">a&lt;b</text>"));
    assert_non_null(strstr(b.data, ">n/a</text>"));
    assert_non_null(strstr(b.data, "seq&lt;"));
    assert_true(data_v(b.data, 0) == 10);
    assert_int_equal(count(b.data, "data-v="), 1);
    assert_int_equal(count(b.data, "<svg "), 1);
    assert_int_equal(count(b.data, "</svg>"), 1);
    /* a legend wider than the chart wraps into a second row */
    buf_reset(&b);
    const char *wide[] = { "concurrency-16", "#1", "concurrency-32", "#2", "concurrency-64", "#3",
                           "prefill-8192", "#4", NULL };
    mp_svg_hbars(&b, "w", "tok/s", labels, vals, NULL, 1, wide);
    assert_non_null(strstr(b.data, "y=24 width=12"));
    buf_reset(&b);
    struct mp_hist h = MP_HIST_INIT;
    mp_svg_hist(&b, "empty", "ms", &h, NULL);
    assert_non_null(strstr(b.data, "no samples"));
    assert_null(strstr(b.data, "<svg"));
    buf_reset(&b);
    mp_hist_add(&h, 5);
    mp_svg_hist(&b, "one", "ms", &h, NULL); /* lo == hi */
    assert_non_null(strstr(b.data, "p50 5.00"));
    assert_non_null(strstr(b.data, "n = 1<"));
    assert_null(strstr(b.data, "nan"));
    assert_null(strstr(b.data, "inf"));
    buf_reset(&b);
    for (int i = 0; i < 99; i++)
        mp_hist_add(&h, 10);
    mp_svg_hist(&b, "many", "ms", &h, NULL);
    assert_non_null(strstr(b.data, "p50 10.0"));
    assert_non_null(strstr(b.data, ">99</text>")); /* the tallest bin: the 99 samples of 10 ms */
    mp_hist_free(&h);
    buf_reset(&b);
    /* lines: ordinal x, a point per value, n/a values left out */
    const double x1[] = { 1, 4, 8 }, y1[] = { 100, 350, -1 };
    const double x2[] = { 1, 8 }, y2[] = { 80, 500 };
    const struct mp_svg_series sr[] = { { "a<", "#111111", x1, y1, 3 }, { "b", NULL, x2, y2, 2 } };
    mp_svg_lines(&b, "L", "in flight", "tok/s", sr, 2);
    assert_int_equal(count(b.data, "<circle"), 4);
    assert_int_equal(count(b.data, "<polyline"), 2);
    assert_non_null(strstr(b.data, "data-x=\"8\" data-y=\"500\""));
    assert_non_null(strstr(b.data, "<title>a&lt;: 350 tok/s at 4</title>"));
    assert_null(strstr(b.data, "data-y=\"-1\""));
    buf_reset(&b);
    mp_svg_lines(&b, "L0", "x", "y", sr, 0);
    assert_non_null(strstr(b.data, "L0: no data"));
    buf_reset(&b);
    const struct mp_svg_span s[] = { { 0, 1, 0, false }, { 0.5, 0.6, 1, true } };
    const double mt[] = { 0 };
    const char *mk[] = { "warm<up" };
    struct mp_svg_tl t = { mt, mk, 1, 0.6, "illegal<address", -1, NULL };
    mp_svg_timeline(&b, "tl", s, 2, &t);
    assert_non_null(strstr(b.data, "class=\"rf\""));
    assert_non_null(strstr(b.data, "class=\"fail\""));
    assert_null(strstr(b.data, "class=\"stop\""));
    assert_non_null(strstr(b.data, "illegal&lt;address"));
    assert_non_null(strstr(b.data, "warm&lt;up"));
    /* no unquoted attribute value runs into "/>" (HTML would read it as part of the value) */
    assert_null(strstr(b.data, "=ro/>"));
    buf_reset(&b);
    /* a hang: the last token, the silent span and the stall */
    struct mp_svg_tl th = { NULL, NULL, 0, 3.0, "hang", 1.0, "last token" };
    mp_svg_timeline(&b, "tl", s, 2, &th);
    assert_non_null(strstr(b.data, "class=\"stop\""));
    assert_non_null(strstr(b.data, "class=\"stall\""));
    assert_non_null(strstr(b.data, "class=\"fail\""));
    for (const char *p = strstr(b.data, "height="); p; p = strstr(p + 1, "height=")) {
        const char *v = p + 7;
        while (*v >= '0' && *v <= '9')
            v++;
        assert_true(*v != '/'); /* an unquoted number never runs into "/>" */
    }
    buf_reset(&b);
    mp_svg_timeline(&b, "none", NULL, 0, NULL);
    assert_non_null(strstr(b.data, "no requests"));
    buf_release(&b);
}

static void add_req(struct mp_evidence *ev, long seq, const char *phase, const char *outcome,
                    double start, double ttft, double e2e)
{
    struct mp_ev_req r;
    memset(&r, 0, sizeof(r));
    r.seq = seq;
    snprintf(r.phase, sizeof(r.phase), "%s", phase);
    snprintf(r.outcome, sizeof(r.outcome), "%s", outcome);
    r.start_s = start;
    r.ttft_ms = ttft;
    r.e2e_ms = e2e;
    r.output_tokens = 8;
    mp_evidence_add_req(ev, &r);
}

static void set_phase(struct mp_phase_result *ph, const char *name, int level, int ok, double tok_s,
                      double rate_p50)
{
    snprintf(ph->name, sizeof(ph->name), "%s", name);
    ph->level = level;
    ph->ok = ok;
    ph->tok_s = tok_s;
    ph->req_tok_s_p50 = rate_p50;
}

static void test_page(void **state)
{
    MP_UNUSED(state);
    struct mp_report rep;
    mp_report_init(&rep, "/run");
    rep.fp.model = xstrdup("evil/<img src=x onerror=alert(1)>");
    struct mp_candidate c;
    assert_int_equal(mp_candidate_from_knobs("fic", "HF_TOKEN=sekrit-value-1 --moe-backend flashinfer_cutlass", &c,
                                             NULL), 0);
    mp_report_add_candidate(&rep, &c);
    mp_candidate_release(&c);
    rep.has_workload = true;
    mp_workload_default(&rep.workload);
    rep.workload.max_tokens = 64;
    rep.workload.stall_timeout_s = 120;
    assert_int_equal(mp_workload_add_conc(&rep.workload, "4:16"), 0);
    struct mp_phase_spec *soak = &rep.workload.phases[rep.workload.nphases++];
    snprintf(soak->name, sizeof(soak->name), "soak"); /* a soak's timed phase */
    soak->level = 8;
    soak->requests = INT_MAX;
    soak->duration_s = 60;

    struct mp_attempt_result a;
    memset(&a, 0, sizeof(a));
    a.dir = xstrdup("/run/attempts/fic-1");
    a.index = 1;
    a.outcome = MP_OUT_CRASH;
    a.res.moe_backend = xstrdup("FLASHINFER_CUTLASS");
    a.res.moe_backend_line = 3;
    a.fail_line = 9;
    a.fail_request_line = 4;
    a.fail_class = xstrdup("illegal-address");
    a.fail_message = xstrdup("<script>alert(2)</script>");
    a.command = xstrdup("refengine --port 1 'a<b'");
    a.req_ok = 3;
    a.req_failed = 1;
    a.nphases = 4;
    set_phase(&a.phases[0], "warmup", 1, 1, 50, 90);
    set_phase(&a.phases[1], "sequential", 1, 2, 40, 120);
    set_phase(&a.phases[2], "concurrency-4", 4, 0, 0, 0);
    a.phases[2].failed = 1;
    set_phase(&a.phases[3], "quality", 1, 1, 20, 30); /* the output check, after the load */
    a.phases[3].planned = 8;
    a.phases[1].wall_s = 2.0;
    for (int i = 1; i <= 100; i++) {
        mp_hist_add(&a.phases[1].m.ttft_ms, i);       /* p50 50, p90 90, p99 99 */
        mp_hist_add(&a.phases[1].m.e2e_ms, 1000 + i);
    }
    /* the engine's view: the warm-up's /metrics unreadable (engine text in
     * the reason), sequential normal, concurrency-4 preempted and queued */
    a.phases[0].srv.state = MP_SRVM_UNREADABLE;
    snprintf(a.phases[0].srv.reason, sizeof(a.phases[0].srv.reason),
             "/metrics said <script>alert(3)</script>");
    struct mp_server_metrics *sm = &a.phases[1].srv;
    sm->state = MP_SRVM_OK;
    sm->ttft = (struct mp_srvm_lat){ 47.5, 45, 97.5, 100 };
    sm->itl = (struct mp_srvm_lat){ 12.25, 12, 20, 700 };
    sm->gen_tokens = 128;
    sm->kv_usage_max = 0.25;
    a.phases[1].tokens = 128;
    a.phases[2].srv = *sm;
    a.phases[2].srv.preemptions = 2;
    a.phases[2].srv.waiting_max = 3;
    mp_srvm_set_flags(&a.phases[1].srv);
    mp_srvm_set_flags(&a.phases[2].srv);
    /* the GPU throttled while it ran: a comparability sentence */
    a.workload_s = 10;
    a.gpu.samples = 10;
    a.gpu.throttle_reasons = 0x20; /* SW thermal slowdown */
    struct mp_evidence *ev = xcalloc(1, sizeof(*ev));
    for (long n = 1; n <= 5; n++) {
        char *t = n == 3 ? xstrdup("Using 'FLASHINFER_CUTLASS' NvFp4 MoE backend") : xasprintf("line %ld", n);
        mp_evidence_add_line(ev, n, t, n == 3);
        free(t);
    }
    const char *tail[] = { "line 7", "line 8", "torch.AcceleratorError: <script>alert(1)</script>",
                           "line 10", "line 11" };
    for (long n = 11; n >= 7; n--) /* out of order: kept ascending */
        mp_evidence_add_line(ev, n, tail[n - 7], n == 9);
    assert_true(mp_evidence_add_line(ev, 9, "again", false)); /* a duplicate is merged */
    assert_int_equal(ev->nlines, 10);
    add_req(ev, 1, "warmup", "ok", 0.25, 5, 50);
    add_req(ev, 2, "sequential", "ok", 0.3, 5, 50);
    add_req(ev, 3, "sequential", "ok", 0.35, 5, 40);
    add_req(ev, 4, "concurrency-4", "stream-error", 0.4, 5, 40); /* fail at 0.44 */
    ev->reqs_total = 4;
    a.evidence = ev;
    mp_report_add_attempt(&rep, 0, &a);

    /* the blocked attempt: a faster warm-up but a slower sequential phase;
     * the ratio divides the sequential medians (60 / 120), never the
     * attempt's other rates */
    struct mp_attempt_result bl;
    memset(&bl, 0, sizeof(bl));
    bl.dir = xstrdup("/run/attempts/fic-2-blocking");
    bl.index = 2;
    bl.launch_blocking = true;
    bl.outcome = MP_OUT_CLEAN;
    bl.req_ok = 30;
    bl.nphases = 3;
    set_phase(&bl.phases[0], "warmup", 1, 1, 50, 200);
    set_phase(&bl.phases[1], "sequential", 1, 3, 30, 60);
    set_phase(&bl.phases[2], "concurrency-4", 4, 26, 900, 240);
    mp_report_add_attempt(&rep, 0, &bl);
    rep.c[0].diag.done = true;
    rep.c[0].diag.throughput_ratio = 0.5;
    mp_report_finalize(&rep);

    struct buf b = BUF_INIT;
    mp_report_html(&rep, &b);
    const char *h = b.data;
    if (getenv("TEST_HTML_DUMP")) {
        FILE *f = fopen(getenv("TEST_HTML_DUMP"), "w");
        fputs(h, f);
        fclose(f);
    }
    assert_true(!strncmp(h, "<!doctype html>", 15));
    assert_non_null(strstr(h, "</html>\n"));
    assert_null(strstr(h, "<script"));
    assert_null(strstr(h, "<img"));
    assert_non_null(strstr(h, "evil/&lt;img src=x onerror=alert(1)&gt;"));
    assert_non_null(strstr(h, "&lt;script&gt;alert(2)&lt;/script&gt;"));
    assert_non_null(strstr(h, "&lt;script&gt;alert(1)&lt;/script&gt;")); /* from the log line */
    assert_non_null(strstr(h, "Content-Security-Policy"));
    assert_null(strstr(h, "sekrit"));
    assert_non_null(strstr(h, "HF_TOKEN=***"));
    assert_non_null(strstr(h, "v-crashed"));
    /* excerpt: lines 1-5 and 7-11 with the two cited lines highlighted and a gap */
    assert_non_null(strstr(h, "lines 3, 9 (highlighted)"));
    assert_non_null(strstr(h, "<span class=hl><span class=ln>    3 </span>Using"));
    assert_non_null(strstr(h, "<span class=ln>   …</span>\n<span class=ln>    7 </span>line 7"));
    assert_null(strstr(h, "line 6\n"));
    assert_null(strstr(h, "</span>again"));
    /* timeline: 4 requests, one failed, the failure at the end of request 4 */
    assert_int_equal(count(h, "class=\"ro\""), 3);
    assert_int_equal(count(h, "class=\"rf\""), 1);
    assert_non_null(strstr(h, "illegal-address (server.log:9)"));
    assert_non_null(strstr(h, "first failed request ended (0.44 s)"));
    assert_non_null(strstr(h, "4 requests."));
    assert_null(strstr(h, "class=\"stop\"")); /* a crash is no hang */
    /* latency per phase at 50/90/99 from the histograms (within their 1 %: 50, 90, 99);
     * the empty TPOT shows "—" */
    assert_non_null(strstr(h, "<th colspan=3>TTFT</th>"));
    assert_non_null(strstr(h, "<tr><td>sequential</td><td class=n>100</td><td class=n>50.1</td>"
                              "<td class=n>89.8</td><td class=n>99.0</td><td class=n>—</td>"));
    /* means ± std (exact: TTFT 1..100 ms) and the phase's throughputs
     * (2 OK requests and 128 tokens in 2 s; no prompt tokens: total unknown) */
    assert_non_null(strstr(h, "<tr><td>sequential</td><td class=n>50.5 ± 28.9</td><td class=n>—</td>"
                              "<td class=n>—</td><td class=n>1050.5 ± 28.9</td><td class=n>—</td>"
                              "<td class=n>1.00</td><td class=n>64.0</td><td class=n>—</td></tr>"));
    /* the server's view beside it: the same rows as report.md's (srvm.c),
     * the flagged phase highlighted, the unreadable one a note, escaped */
    const char *sv = strstr(h, "<h4>Server's view per phase, attempt 1");
    assert_non_null(sv);
    assert_true(sv > strstr(h, "<h4>Latency per phase, attempt 1"));
    const char *sv_end = strstr(sv, "</table>");
    assert_non_null(sv_end);
    assert_non_null(strstr(sv, "<tr><td>sequential</td><td class=n>47.5</td><td class=n>45.0</td>"
                               "<td class=n>97.5</td><td class=n>50.1</td><td class=n>12.2</td>"
                               "<td class=n>—</td><td class=n>128</td><td class=n>128</td>"
                               "<td class=n>0</td><td class=n>0</td><td class=n>25.0</td><td>—</td></tr>"));
    const char *flagged = strstr(sv, "<tr class=bad><td>concurrency-4</td>");
    assert_non_null(flagged);
    assert_true(flagged < sv_end);
    assert_non_null(strstr(flagged, "<td class=n>2</td><td class=n>3</td><td class=n>25.0</td>"
                                    "<td><b>preempted, queued</b></td></tr>"));
    assert_int_equal(count(sv, "<tr class=bad>"), 1);
    const char *w = strstr(sv, "<td>warmup</td>");
    assert_true(!w || w > sv_end); /* no row of dashes for the unreadable phase */
    assert_non_null(strstr(sv_end, "<p class=note>fic: the engine&#39;s /metrics could not be read in "
                                   "phase warmup (/metrics said &lt;script&gt;alert(3)&lt;/script&gt;).</p>"));
    /* are the numbers comparable: report.md's sentences (the throttled
     * attempt, the preempted and queued phase), escaped, one list */
    const char *cmp = strstr(h, "<h2>Are the numbers comparable?</h2>\n<ul>");
    assert_non_null(cmp);
    assert_int_equal(count(h, "<h2>Are the numbers comparable?</h2>"), 1);
    const char *cmp_end = strstr(cmp, "</ul>");
    assert_non_null(cmp_end);
    char reasons[256];
    mp_gpu_reasons_str(0x20, reasons, sizeof(reasons));
    char *thr = xasprintf("<li>fic: the GPU throttled its clocks (%s) while it ran</li>", reasons);
    const char *t = strstr(cmp, thr);
    assert_non_null(t);
    assert_true(t < cmp_end);
    free(thr);
    const char *pre = strstr(cmp, "<li>phase concurrency-4 of fic: the engine preempted 2 requests and "
                                   "kept up to 3 requests waiting: it measured the KV cache and the "
                                   "scheduler, not the kernel</li>");
    assert_non_null(pre);
    assert_true(pre < cmp_end);
    assert_true(cmp < strstr(h, "<h2>Per candidate</h2>"));
    assert_non_null(strstr(h, "Time to first token, fic"));
    assert_non_null(strstr(h, "Inter-token latency, fic: no samples"));
    /* normal vs blocking: exactly the sequential medians 120 and 60 */
    const char *nb = strstr(h, "normal vs launch-blocking (median of the sequential phase; ratio 0.50x)");
    assert_non_null(nb);
    assert_true(data_v(nb, 0) == 120);
    assert_true(data_v(nb, 1) == 60);
    assert_non_null(strstr(nb, ">normal (attempt 1)</text>"));
    assert_non_null(strstr(nb, ">blocking (attempt 2)</text>"));
    assert_non_null(strstr(nb, "60.0 / 120.0 tok/s = 0.50x."));
    assert_null(strstr(nb, "the stored ratio"));
    /* throughput against concurrency: the primary's served load phases */
    assert_non_null(strstr(h, "against concurrency"));
    assert_non_null(strstr(h, "data-x=\"1\" data-y=\"40\""));
    assert_null(strstr(h, "data-x=\"4\"")); /* concurrency-4 served nothing */
    /* the workload */
    assert_non_null(strstr(h, "<h2>Workload</h2>"));
    assert_non_null(strstr(h, "64 output tokens a request"));
    assert_non_null(strstr(h, "<tr><td>concurrency-4</td><td class=n>4</td><td class=n>16</td>"
                              "<td class=n>~15</td><td class=n>64</td><td class=n>—</td>"));
    assert_non_null(strstr(h, "<tr><td>soak</td><td class=n>8</td><td class=n>until the time limit"
                              "</td><td class=n>~15</td><td class=n>64</td><td class=n>60 s</td>"));
    /* every phase the attempts ran is in it, as in report.md: the output check too */
    assert_non_null(strstr(h, "<tr><td>quality</td><td class=n>1</td><td class=n>8</td>"
                              "<td class=n>quality prompts</td><td class=n>32 (greedy, EOS honoured)"
                              "</td>"));
    assert_int_equal(count(h, "<svg "), count(h, "</svg>"));
    assert_int_equal(count(h, "<section"), count(h, "</section>"));
    assert_int_equal(count(h, "<table"), count(h, "</table>"));
    assert_int_equal(count(h, "<div"), count(h, "</div>"));
    assert_non_null(strstr(h, "<a href=\"#c-fic\">"));
    assert_non_null(strstr(h, "id=\"c-fic\""));
    /* a stored ratio that is not what the rates give is said */
    rep.c[0].diag.throughput_ratio = 0.7;
    buf_reset(&b);
    mp_report_html(&rep, &b);
    assert_non_null(strstr(b.data, "the stored ratio is 0.70x"));
    buf_release(&b);
    mp_report_release(&rep);
}

/* A hang: no request failed in the store (the stalled ones never
 * finished); the timeline shows the last token and the moment moeprobe
 * gave up (the end of the workload); a capped timeline says so. */
static void test_hang(void **state)
{
    MP_UNUSED(state);
    struct mp_report rep;
    mp_report_init(&rep, "/run");
    struct mp_candidate c;
    assert_int_equal(mp_candidate_from_knobs("h", "--moe-backend cutlass", &c, NULL), 0);
    mp_report_add_candidate(&rep, &c);
    mp_candidate_release(&c);
    struct mp_attempt_result a;
    memset(&a, 0, sizeof(a));
    a.dir = xstrdup("/run/attempts/h-1");
    a.index = 1;
    a.outcome = MP_OUT_HANG;
    a.fail_class = xstrdup("hang");
    a.ready_s = 1.0;
    a.workload_s = 5.5; /* gave up at 6.5 s */
    struct mp_evidence *ev = xcalloc(1, sizeof(*ev));
    add_req(ev, 1, "sequential", "ok", 1.1, 5, 100);  /* ends 1.2 */
    add_req(ev, 2, "sequential", "ok", 1.2, 5, 300);  /* ends 1.5: the last token */
    ev->reqs_total = 9000;
    a.evidence = ev;
    mp_report_add_attempt(&rep, 0, &a);
    rep.has_workload = true;
    mp_workload_default(&rep.workload);
    rep.workload.stall_timeout_s = 5;
    mp_report_finalize(&rep);
    struct buf b = BUF_INIT;
    mp_report_html(&rep, &b);
    const char *h = b.data;
    assert_non_null(strstr(h, "class=\"stop\""));
    assert_non_null(strstr(h, "class=\"stall\""));
    assert_non_null(strstr(h, "hang: 5.0 s without a token"));
    assert_non_null(strstr(h, "last token at 1.50 s"));
    assert_non_null(strstr(h, "declared the hang at 6.50 s"));
    assert_non_null(strstr(h, "stall timeout (5 s without token progress)"));
    assert_non_null(strstr(h, "The last 2 of the attempt's 9000 requests."));
    assert_non_null(strstr(h, "Latency per phase: no samples"));
    buf_release(&b);
    mp_report_release(&rep);
}

static void write_file(const char *dir, const char *name, const char *text)
{
    char *p = xasprintf("%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    free(p);
}

/* The store keeps the cited lines with MP_EV_CONTEXT lines around them
 * (written at attempt finish from server.log) and the report's loader
 * reads them and the last MP_EV_MAX_REQS requests back: the page needs no
 * file of the attempt. */
static void test_store_evidence(void **state)
{
    MP_UNUSED(state);
    char run[] = "/tmp/test_html_XXXXXX";
    assert_non_null(mkdtemp(run));
    char *adir = xasprintf("%s/attempts", run);
    assert_int_equal(mkdir(adir, 0755), 0);
    free(adir);
    adir = xasprintf("%s/attempts/x-1", run);
    assert_int_equal(mkdir(adir, 0755), 0);
    struct buf log = BUF_INIT;
    for (int i = 1; i <= 40; i++)
        buf_printf(&log, i == 30 ? "torch.AcceleratorError: CUDA error: %0300d\n" : "line %d\n", i);
    write_file(adir, "server.log", log.data);
    buf_release(&log);

    struct mp_store *s = NULL;
    assert_int_equal(mp_store_open(run, MP_STORE_CREATE | MP_STORE_LOCK, &s, NULL), 0);
    char *argv[] = { "qualify", NULL };
    assert_int_equal(mp_store_run_begin(s, "qualify", argv, 1, "9.9", "t0"), 0);
    struct mp_candidate c;
    assert_int_equal(mp_candidate_from_knobs("x", "", &c, NULL), 0);
    assert_int_equal(mp_store_candidate(s, 0, &c), 0);
    int64_t id = 0;
    assert_int_equal(mp_store_attempt_begin(s, 0, 1, false, adir, &id), 0);
    size_t nreq = MP_EV_MAX_REQS + 5;
    for (size_t i = 1; i <= nreq; i++) {
        struct mp_store_request rq = { .seq = (long)i, .req_id = (long)i, .phase = "sequential",
                                       .outcome = i == nreq ? "stream-error" : "ok",
                                       .start_s = (double)i, .ttft_ms = 2, .e2e_ms = 10,
                                       .output_tokens = 8, .req_tok_s = -1 };
        assert_int_equal(mp_store_add_request(s, id, &rq), 0);
    }
    struct mp_attempt_result r;
    memset(&r, 0, sizeof(r));
    r.dir = adir;
    r.index = 1;
    r.outcome = MP_OUT_CRASH;
    r.res.moe_backend_line = 2;  /* context 1..4 (no line 0 or below) */
    r.res.unknown_env_line = 3;  /* overlaps: lines are stored once */
    r.fail_line = 30;            /* context 28..32 */
    assert_int_equal(mp_store_attempt_finish(s, id, &r), 0);
    assert_int_equal(mp_store_candidate_done(s, 0, NULL, NULL), 0);
    assert_int_equal(mp_store_run_finish(s, "t1", false), 0);
    mp_store_close(s);
    mp_candidate_release(&c);

    assert_int_equal(mp_store_open(run, MP_STORE_READONLY, &s, NULL), 0);
    struct mp_report rep;
    mp_report_init(&rep, run);
    assert_int_equal(mp_store_load(s, &rep, NULL), 0);
    mp_store_close(s);
    assert_int_equal(rep.n, 1);
    assert_int_equal(rep.c[0].nattempts, 1);
    const struct mp_evidence *ev = rep.c[0].attempts[0].evidence;
    assert_non_null(ev);
    const long want[] = { 1, 2, 3, 4, 5, 28, 29, 30, 31, 32 };
    assert_int_equal(ev->nlines, MP_ARRAY_SIZE(want));
    for (size_t i = 0; i < MP_ARRAY_SIZE(want); i++) {
        assert_int_equal(ev->lines[i].no, want[i]);
        assert_true(ev->lines[i].cited == (want[i] == 2 || want[i] == 3 || want[i] == 30));
    }
    assert_string_equal(ev->lines[0].text, "line 1");
    assert_int_equal(strlen(ev->lines[7].text), strlen("torch.AcceleratorError: CUDA error: ") + 300);
    /* the last MP_EV_MAX_REQS requests, in completion order */
    assert_int_equal(ev->reqs_total, nreq);
    assert_int_equal(ev->nreqs, MP_EV_MAX_REQS);
    assert_int_equal(ev->reqs[0].seq, 6);
    assert_int_equal(ev->reqs[MP_EV_MAX_REQS - 1].seq, (long)nreq);
    assert_string_equal(ev->reqs[MP_EV_MAX_REQS - 1].outcome, "stream-error");
    assert_string_equal(ev->reqs[0].phase, "sequential");
    mp_report_finalize(&rep);
    struct buf b = BUF_INIT;
    mp_report_html(&rep, &b);
    assert_non_null(strstr(b.data, "lines 2, 3, 30 (highlighted)"));
    assert_non_null(strstr(b.data, "The last 4000 of the attempt's 4005 requests."));
    buf_release(&b);
    mp_report_release(&rep);

    const char *names[] = { "attempts/x-1/server.log", "moeprobe.db", "moeprobe.db-wal",
                            "moeprobe.db-shm", "lock", "report.json" };
    for (size_t i = 0; i < MP_ARRAY_SIZE(names); i++) {
        char *p = xasprintf("%s/%s", run, names[i]);
        unlink(p);
        free(p);
    }
    rmdir(adir);
    free(adir);
    char *p = xasprintf("%s/attempts", run);
    rmdir(p);
    free(p);
    assert_int_equal(rmdir(run), 0);
}

/* qualify --model-dir: the inspect result lands in all three renderings */
static void test_checkpoint(void **state)
{
    MP_UNUSED(state);
    const char *root = getenv("ROOT");
    char *dir = xasprintf("%s%stests/data/checkpoints/swiglu-clamp", root ? root : "", root ? "/" : "");
    struct mp_inspect in;
    assert_int_equal(mp_inspect_dir(dir, &in, NULL), 0);
    free(dir);
    struct mp_report rep;
    mp_report_init(&rep, "/run");
    mp_report_set_checkpoint(&rep, &in);
    mp_report_set_checkpoint(&rep, &in); /* replaces, no leak */
    mp_inspect_release(&in);
    mp_report_finalize(&rep);
    struct buf b = BUF_INIT;
    mp_report_json(&rep, &b);
    assert_non_null(strstr(b.data, "\"checkpoint\":\t{"));
    assert_non_null(strstr(b.data, "\"swiglu_limit\":\t7"));
    buf_reset(&b);
    mp_report_markdown(&rep, &b);
    assert_non_null(strstr(b.data, "| checkpoint | GptOssForCausalLM, 32 experts (4 per token)"));
    assert_non_null(strstr(b.data, "- swiglu_limit=7:"));
    buf_reset(&b);
    mp_report_html(&rep, &b);
    assert_non_null(strstr(b.data, "<details><summary>checkpoint: GptOssForCausalLM"));
    buf_release(&b);
    mp_report_release(&rep);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_esc),
        cmocka_unit_test(test_svg),
        cmocka_unit_test(test_page),
        cmocka_unit_test(test_hang),
        cmocka_unit_test(test_store_evidence),
        cmocka_unit_test(test_checkpoint),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
