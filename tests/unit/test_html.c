/* test_html.c - the HTML report and its SVG charts: escaping of everything
 * taken from engines and logs (also inside SVG text), charts with empty,
 * single and n/a data, log excerpts with line numbers and the request
 * timeline read from an attempt directory, and a well-formed page. */
#include "compat.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "report/report.h"
#include "report/svg.h"
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
    assert_int_equal(count(b.data, "<svg "), 1);
    assert_int_equal(count(b.data, "</svg>"), 1);
    buf_reset(&b);
    mp_svg_hist(&b, "empty", "ms", NULL, 0, NULL);
    assert_non_null(strstr(b.data, "no samples"));
    assert_null(strstr(b.data, "<svg"));
    buf_reset(&b);
    const double one[] = { 5 };
    mp_svg_hist(&b, "one", "ms", one, 1, NULL); /* lo == hi */
    assert_non_null(strstr(b.data, "p50 5.00"));
    assert_null(strstr(b.data, "nan"));
    assert_null(strstr(b.data, "inf"));
    buf_reset(&b);
    const struct mp_svg_span s[] = { { 0, 1, 0, false }, { 0.5, 0.6, 1, true } };
    const double mt[] = { 0 };
    const char *mk[] = { "warm<up" };
    mp_svg_timeline(&b, "tl", s, 2, 0.6, "illegal<address", mt, mk, 1);
    assert_non_null(strstr(b.data, "class=\"rf\""));
    assert_non_null(strstr(b.data, "class=\"fail\""));
    assert_non_null(strstr(b.data, "illegal&lt;address"));
    assert_non_null(strstr(b.data, "warm&lt;up"));
    /* no unquoted attribute value runs into "/>" (HTML would read it as part of the value) */
    assert_null(strstr(b.data, "=ro/>"));
    buf_reset(&b);
    mp_svg_timeline(&b, "none", NULL, 0, -1, NULL, NULL, NULL, 0);
    assert_non_null(strstr(b.data, "no requests"));
    buf_release(&b);
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

static void test_page(void **state)
{
    MP_UNUSED(state);
    char run[] = "/tmp/test_html_XXXXXX";
    assert_non_null(mkdtemp(run));
    char *adir = xasprintf("%s/attempts", run);
    assert_int_equal(mkdir(adir, 0755), 0);
    free(adir);
    adir = xasprintf("%s/attempts/fic-1", run);
    assert_int_equal(mkdir(adir, 0755), 0);
    write_file(adir, "server.log",
               "line 1\nline 2\nUsing 'FLASHINFER_CUTLASS' NvFp4 MoE backend\nline 4\nline 5\n"
               "line 6\nline 7\nline 8\ntorch.AcceleratorError: <script>alert(1)</script>\nline 10\n");
    write_file(adir, "server.times", "0.1\n0.1\n0.2\n0.2\n0.2\n0.3\n0.3\n0.3\n0.45\n0.5\n");
    write_file(adir, "requests.jsonl",
               "{\"id\":1,\"phase\":\"warmup\",\"outcome\":\"ok\",\"start_s\":0.25,\"e2e_ms\":50}\n"
               "{\"id\":2,\"phase\":\"sequential\",\"outcome\":\"ok\",\"start_s\":0.3,\"e2e_ms\":50}\n"
               "not json\n"
               "{\"id\":3,\"phase\":\"sequential\",\"outcome\":\"stream-error\",\"start_s\":0.4,\"e2e_ms\":40}\n");

    struct mp_report rep;
    mp_report_init(&rep, run);
    rep.fp.model = xstrdup("evil/<img src=x onerror=alert(1)>");
    struct mp_candidate c;
    assert_int_equal(mp_candidate_from_knobs("fic", "HF_TOKEN=sekrit-value-1 --moe-backend flashinfer_cutlass", &c,
                                             NULL), 0);
    mp_report_add_candidate(&rep, &c);
    mp_candidate_release(&c);
    struct mp_attempt_result a;
    memset(&a, 0, sizeof(a));
    a.dir = adir;
    a.index = 1;
    a.outcome = MP_OUT_CRASH;
    a.res.moe_backend = xstrdup("FLASHINFER_CUTLASS");
    a.res.moe_backend_line = 3;
    a.fail_line = 9;
    a.fail_class = xstrdup("illegal-address");
    a.fail_message = xstrdup("<script>alert(2)</script>");
    a.command = xstrdup("refengine --port 1 'a<b'");
    a.req_ok = 2;
    a.req_failed = 1;
    a.nphases = 1;
    snprintf(a.phases[0].name, sizeof(a.phases[0].name), "sequential");
    a.phases[0].ok = 1;
    a.phases[0].failed = 1;
    a.phases[0].tok_s = 12.5;
    mp_hist_add(&a.phases[0].m.ttft_ms, 3);
    mp_hist_add(&a.phases[0].m.ttft_ms, 4);
    mp_report_add_attempt(&rep, 0, &a);
    mp_report_finalize(&rep);

    struct buf b = BUF_INIT;
    mp_report_html(&rep, &b);
    const char *h = b.data;
    assert_true(!strncmp(h, "<!doctype html>", 15));
    assert_non_null(strstr(h, "</html>\n"));
    assert_null(strstr(h, "<script"));
    assert_null(strstr(h, "<img"));
    assert_non_null(strstr(h, "evil/&lt;img src=x onerror=alert(1)&gt;"));
    assert_non_null(strstr(h, "&lt;script&gt;alert(2)&lt;/script&gt;"));
    assert_non_null(strstr(h, "&lt;script&gt;alert(1)&lt;/script&gt;")); /* from server.log */
    assert_non_null(strstr(h, "Content-Security-Policy"));
    assert_null(strstr(h, "sekrit"));
    assert_non_null(strstr(h, "HF_TOKEN=***"));
    assert_non_null(strstr(h, "v-crashed"));
    /* excerpt: lines 1-5 and 7-10 with the two evidence lines highlighted and a gap */
    assert_non_null(strstr(h, "lines 3, 9 (highlighted)"));
    assert_non_null(strstr(h, "<span class=hl><span class=ln>    3 </span>Using"));
    assert_non_null(strstr(h, "<span class=ln>   …</span>"));
    assert_null(strstr(h, "line 6\n"));
    /* timeline: 3 requests, one failed, failure marked at server.times line 9 */
    assert_int_equal(count(h, "class=\"ro\""), 2);
    assert_int_equal(count(h, "class=\"rf\""), 1);
    assert_non_null(strstr(h, "illegal-address (server.log:9)"));
    assert_non_null(strstr(h, "Time to first token"));
    assert_non_null(strstr(h, "Inter-token latency, fic: no samples"));
    assert_int_equal(count(h, "<svg "), count(h, "</svg>"));
    assert_int_equal(count(h, "<section"), count(h, "</section>"));
    assert_int_equal(count(h, "<table"), count(h, "</table>"));
    assert_non_null(strstr(h, "<a href=\"#c-fic\">"));
    assert_non_null(strstr(h, "id=\"c-fic\""));
    buf_release(&b);
    mp_report_release(&rep);

    const char *names[] = { "server.log", "server.times", "requests.jsonl" };
    for (size_t i = 0; i < 3; i++) {
        char *p = xasprintf("%s/attempts/fic-1/%s", run, names[i]);
        unlink(p);
        free(p);
    }
    char *p = xasprintf("%s/attempts/fic-1", run);
    rmdir(p);
    free(p);
    p = xasprintf("%s/attempts", run);
    rmdir(p);
    free(p);
    rmdir(run);
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
        cmocka_unit_test(test_checkpoint),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
