/* html.c - the self-contained HTML report: one file, no scripts, no network,
 * readable on a phone. Summary (recommendation and why), candidate table,
 * throughput chart, output check, then per candidate: knobs, resolved
 * backends, verdict with evidence (server.log excerpts with line numbers),
 * TTFT/ITL distributions, a request timeline with the failure marked and,
 * for diagnosed candidates, normal vs launch-blocking throughput. Charts
 * are inline SVG (svg.c). Everything from logs, engines and the command
 * line goes through mp_html_esc. The attempt files (requests.jsonl,
 * server.log, server.times) are read from the run directory; missing files
 * just leave their part out. */
#include "quality/quality.h"
#include "report/report.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/svg.h"
#include "verdict/stats.h"
#include "xalloc.h"

#define MAX_REQ_LINES 20000
#define MAX_LINE 65536
#define EXCERPT_CONTEXT 2
#define EXCERPT_LINE_MAX 400

static const char css[] =
    ":root{--fg:#1d2330;--mut:#5b6475;--bd:#d9dee7;--bg:#fff;--alt:#f5f7fa;--ok:#1a7f37;"
    "--bad:#c62828;--warn:#a15c00}"
    "*{box-sizing:border-box}"
    "body{margin:0;font:15px/1.5 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;color:var(--fg);"
    "background:var(--bg)}"
    "main{max-width:980px;margin:0 auto;padding:12px 14px 40px}"
    "h1{font-size:1.45em;margin:.4em 0 .2em}h2{font-size:1.2em;margin:1.6em 0 .5em;border-bottom:1px solid var(--bd);"
    "padding-bottom:.2em}h3{font-size:1.05em;margin:1.2em 0 .4em}"
    ".fp{color:var(--mut);font-size:.9em}.fp b{color:var(--fg);font-weight:600}"
    ".rec{border-left:5px solid var(--ok);background:#eef8f0;padding:10px 14px;border-radius:4px}"
    ".norec{border-left:5px solid var(--warn);background:#fdf5e8;padding:10px 14px;border-radius:4px}"
    ".banner{border:2px solid var(--bad);background:#fdecea;padding:10px 14px;border-radius:4px;"
    "margin:12px 0}"
    ".scroll{overflow-x:auto;-webkit-overflow-scrolling:touch}"
    "table{border-collapse:collapse;width:100%;font-size:.9em}"
    "th,td{border-bottom:1px solid var(--bd);padding:5px 7px;text-align:left;vertical-align:top}"
    "th{background:var(--alt);white-space:nowrap}td.n{text-align:right;font-variant-numeric:tabular-nums;"
    "white-space:nowrap}"
    "code,pre{font:12.5px/1.45 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}"
    "code{background:var(--alt);padding:1px 4px;border-radius:3px;word-break:break-all}"
    "td code{white-space:nowrap;word-break:normal}"
    "pre{background:#f6f8fa;border:1px solid var(--bd);padding:8px;overflow-x:auto;white-space:pre;"
    "border-radius:4px}"
    "pre .hl{background:#fff3c4;display:inline-block;min-width:100%}"
    "pre .ln{color:#8a93a3;user-select:none}"
    ".v{display:inline-block;padding:1px 8px;border-radius:10px;font-size:.85em;font-weight:600;"
    "white-space:nowrap;color:#fff;background:#6b7280}"
    ".v-stable{background:var(--ok)}.v-async-race{background:#b45309}.v-kernel-fault{background:#9f1239}"
    ".v-crashed,.v-startup-failure{background:var(--bad)}.v-hang{background:#7c3aed}"
    ".v-garbage-output{background:#be185d}.v-not-delivered{background:#475569}"
    "section.cand{border:1px solid var(--bd);border-radius:6px;padding:4px 14px 10px;margin:16px 0}"
    "dl.kv{display:grid;grid-template-columns:max-content 1fr;gap:2px 12px;margin:.5em 0}"
    "dl.kv dt{color:var(--mut)}dl.kv dd{margin:0;word-break:break-word}"
    "figure.chart{margin:10px 0}figure.chart figcaption{font-weight:600;font-size:.92em;margin-bottom:2px}"
    "figure.chart svg{width:100%;max-width:700px;height:auto;display:block}"
    "svg text{font:11px system-ui,sans-serif;fill:#1d2330}svg .lab{fill:#5b6475}svg .na{fill:#8a93a3}"
    "svg .val{font-weight:600}svg .ax{stroke:#9aa3b2}svg .p50{stroke:#1d2330;stroke-dasharray:3 2}"
    "svg .p99{stroke:#c62828;stroke-dasharray:3 2}svg .ro{fill:#3b7dd8}svg .rf{fill:#c62828}"
    "svg .ph{stroke:#9aa3b2;stroke-dasharray:2 3}svg .phl{fill:#5b6475;font-size:10px}"
    "svg .fail{stroke:#c62828;stroke-width:2}svg .failt{fill:#c62828;font-weight:600}"
    ".note{color:var(--mut);font-size:.9em}.bad{color:var(--bad)}"
    ".grid2{display:grid;grid-template-columns:1fr;gap:0 18px}"
    "@media(min-width:760px){.grid2{grid-template-columns:1fr 1fr}}"
    "footer{margin-top:30px;color:var(--mut);font-size:.85em}"
    /* phones: a 480-unit chart is drawn at ~0.75 scale; larger text keeps it legible */
    "@media(max-width:600px){svg text,svg .phl{font-size:13px}body{font-size:14px}}";

static void esc(struct buf *b, const char *s)
{
    mp_html_esc(b, s, 4000);
}

/* The escaped words of v, separated by ", ". */
static void esc_list(struct buf *b, const struct mp_strv *v)
{
    for (size_t k = 0; k < v->n; k++) {
        buf_adds(b, k ? ", " : "");
        esc(b, v->v[k]);
    }
}

static void verdict_badge(struct buf *b, const char *v)
{
    buf_adds(b, "<span class=\"v v-");
    mp_html_esc(b, v ? v : "none", 40);
    buf_adds(b, "\">");
    mp_html_esc(b, v ? v : "not run", 40);
    buf_adds(b, "</span>");
}

static const char *rel(const struct mp_report *rep, const char *dir)
{
    size_t rl = strlen(rep->run_dir);
    if (dir && !strncmp(dir, rep->run_dir, rl) && dir[rl] == '/')
        return dir + rl + 1;
    return dir;
}

static double phase_tok_s(const struct mp_attempt_result *a, const char *prefix, bool best)
{
    double v = -1;
    for (size_t i = 0; a && i < a->nphases; i++) {
        const struct mp_phase_result *ph = &a->phases[i];
        if (ph->ok <= 0)
            continue;
        if (best ? !strncmp(ph->name, prefix, strlen(prefix)) : !strcmp(ph->name, prefix))
            v = MP_MAX(v, ph->tok_s);
    }
    return v;
}

static void num_cell(struct buf *b, double v)
{
    if (v < 0)
        buf_adds(b, "<td class=n>—</td>");
    else
        buf_printf(b, "<td class=n>%.1f</td>", v);
}

/* An id usable in href="#..." (candidate names are [A-Za-z0-9._-]+). */
static void anchor(struct buf *b, const char *name)
{
    buf_adds(b, "c-");
    for (const char *p = name; *p; p++) {
        char c = *p;
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '-' || c == '_' || c == '.';
        buf_addc(b, ok ? c : '_');
    }
}

/* ---- reading attempt files ---- */

/* Read a file line by line; fn returns false to stop. */
static void for_lines(const char *path, bool (*fn)(void *ud, long lineno, const char *line),
                      void *ud)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return;
    char *line = xmalloc(MAX_LINE);
    long n = 0;
    while (fgets(line, MAX_LINE, f)) {
        size_t l = strlen(line);
        bool whole = l && line[l - 1] == '\n';
        if (whole)
            line[--l] = 0;
        n++;
        bool go = fn(ud, n, line);
        /* skip the rest of an over-long line */
        while (!whole) {
            int c = fgetc(f);
            if (c == EOF || c == '\n')
                break;
        }
        if (!go)
            break;
    }
    free(line);
    fclose(f);
}

struct reqs {
    struct mp_svg_span *s;
    size_t n;
    double *mark_t;
    char **marks;
    size_t nmarks;
    char last_phase[32];
    double first_fail_end;
};

static bool req_line(void *ud, long lineno, const char *line)
{
    struct reqs *r = ud;
    if (lineno > MAX_REQ_LINES)
        return false;
    cJSON *j = cJSON_Parse(line);
    if (!j)
        return true;
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(j, "start_s");
    const cJSON *e2e = cJSON_GetObjectItemCaseSensitive(j, "e2e_ms");
    const cJSON *out = cJSON_GetObjectItemCaseSensitive(j, "outcome");
    const cJSON *ph = cJSON_GetObjectItemCaseSensitive(j, "phase");
    if (cJSON_IsNumber(st)) {
        r->s = xreallocarray(r->s, r->n + 1, sizeof(*r->s));
        struct mp_svg_span *sp = &r->s[r->n++];
        sp->t0 = st->valuedouble;
        sp->t1 = sp->t0 + (cJSON_IsNumber(e2e) && e2e->valuedouble > 0 ? e2e->valuedouble / 1e3 : 0);
        sp->failed = !(cJSON_IsString(out) && !strcmp(out->valuestring, "ok"));
        sp->lane = 0;
        if (sp->failed && r->first_fail_end < 0)
            r->first_fail_end = sp->t1;
        if (cJSON_IsString(ph) && strcmp(ph->valuestring, r->last_phase) != 0 && r->nmarks < 16) {
            snprintf(r->last_phase, sizeof(r->last_phase), "%s", ph->valuestring);
            r->mark_t = xreallocarray(r->mark_t, r->nmarks + 1, sizeof(*r->mark_t));
            r->marks = xreallocarray(r->marks, r->nmarks + 1, sizeof(*r->marks));
            r->mark_t[r->nmarks] = sp->t0;
            r->marks[r->nmarks++] = xstrdup(ph->valuestring);
        }
    }
    cJSON_Delete(j);
    return true;
}

/* Greedy lanes: the lowest lane free at the request's start. */
static void assign_lanes(struct mp_svg_span *s, size_t n)
{
    double end[64];
    int used = 0;
    for (size_t i = 0; i < n; i++) {
        int l = 0;
        while (l < used && end[l] > s[i].t0)
            l++;
        if (l == used && used < 64)
            used++;
        if (l >= 64)
            l = 63;
        s[i].lane = l;
        end[l] = s[i].t1;
    }
}

struct nth {
    long want;
    double v;
};

static bool nth_line(void *ud, long lineno, const char *line)
{
    struct nth *t = ud;
    if (lineno == t->want) {
        t->v = strtod(line, NULL);
        return false;
    }
    return true;
}

struct excerpt {
    long want[4];
    size_t nwant;
    struct buf *out;
    long last;
};

static bool excerpt_line(void *ud, long lineno, const char *line)
{
    struct excerpt *e = ud;
    bool in = false, hit = false, beyond = true;
    for (size_t i = 0; i < e->nwant; i++) {
        if (lineno >= e->want[i] - EXCERPT_CONTEXT && lineno <= e->want[i] + EXCERPT_CONTEXT)
            in = true;
        hit = hit || lineno == e->want[i];
        beyond = beyond && lineno > e->want[i] + EXCERPT_CONTEXT;
    }
    if (in) {
        if (e->last && lineno != e->last + 1)
            buf_adds(e->out, "<span class=ln>   …</span>\n");
        buf_printf(e->out, "%s<span class=ln>%5ld </span>", hit ? "<span class=hl>" : "", lineno);
        mp_html_esc(e->out, line, EXCERPT_LINE_MAX);
        buf_adds(e->out, hit ? "</span>\n" : "\n");
        e->last = lineno;
    }
    return !beyond;
}

static void log_excerpt(struct buf *b, const struct mp_report *rep, const struct mp_attempt_result *a)
{
    struct excerpt e = { .out = b };
    const long cand[] = { a->res.moe_backend_line, a->res.unknown_env_line, a->res.linear_kernel_line,
                          a->fail_line };
    for (size_t i = 0; i < MP_ARRAY_SIZE(cand); i++) {
        bool dup = false;
        for (size_t k = 0; k < e.nwant; k++)
            dup = dup || e.want[k] == cand[i];
        if (cand[i] > 0 && !dup)
            e.want[e.nwant++] = cand[i];
    }
    if (!e.nwant)
        return;
    /* ascending, for the "beyond" test and the "…" gaps */
    for (size_t i = 1; i < e.nwant; i++)
        for (size_t k = i; k > 0 && e.want[k] < e.want[k - 1]; k--) {
            long t = e.want[k];
            e.want[k] = e.want[k - 1];
            e.want[k - 1] = t;
        }
    char *path = xasprintf("%s/server.log", a->dir);
    buf_adds(b, "<p class=note>Evidence: <code>");
    esc(b, rel(rep, a->dir));
    buf_adds(b, "/server.log</code>, lines ");
    for (size_t i = 0; i < e.nwant; i++)
        buf_printf(b, "%s%ld", i ? ", " : "", e.want[i]);
    buf_adds(b, " (highlighted)</p><pre>");
    size_t before = b->len;
    for_lines(path, excerpt_line, &e);
    if (b->len == before)
        buf_adds(b, "(server.log is not in the run directory)");
    buf_adds(b, "</pre>\n");
    free(path);
}

static void timeline(struct buf *b, const struct mp_attempt_result *a)
{
    struct reqs r = { .first_fail_end = -1 };
    char *path = xasprintf("%s/requests.jsonl", a->dir);
    for_lines(path, req_line, &r);
    free(path);
    if (!r.n) {
        free(r.mark_t);
        free(r.marks);
        return;
    }
    assign_lanes(r.s, r.n);
    double fail_at = -1;
    char *label = NULL;
    if (a->outcome == MP_OUT_CRASH || a->outcome == MP_OUT_HANG) {
        if (a->fail_line > 0) {
            struct nth t = { a->fail_line, -1 };
            char *tp = xasprintf("%s/server.times", a->dir);
            for_lines(tp, nth_line, &t);
            free(tp);
            fail_at = t.v;
        }
        if (fail_at < 0)
            fail_at = r.first_fail_end;
        label = xasprintf("%s%s%s", a->fail_class ? a->fail_class : "failure",
                          a->fail_line > 0 ? " (server.log:" : "", "");
        if (a->fail_line > 0) {
            char *l2 = xasprintf("%s%ld)", label, a->fail_line);
            free(label);
            label = l2;
        }
    }
    char *title = xasprintf("Requests over time, attempt %d%s (one bar per request; red = failed)",
                            a->index, a->launch_blocking ? ", CUDA_LAUNCH_BLOCKING=1" : "");
    mp_svg_timeline(b, title, r.s, r.n, fail_at, label, r.mark_t, (const char *const *)r.marks,
                    r.nmarks);
    free(title);
    free(label);
    for (size_t i = 0; i < r.nmarks; i++)
        free(r.marks[i]);
    free(r.marks);
    free(r.mark_t);
    free(r.s);
}

static double median_rate(const struct mp_attempt_result *a)
{
    struct mp_phase_metrics m;
    mp_attempt_metrics(a, &m);
    double v = m.req_tok_s.n ? mp_hist_percentile(&m.req_tok_s, 50) : -1;
    mp_phase_metrics_release(&m);
    return v;
}

/* A histogram's shape as 2000 evenly spaced quantiles, for mp_svg_hist (bounded, whatever the
 * number of samples). */
static void svg_hist(struct buf *b, const char *title, const struct mp_hist *h, const char *color)
{
    double q[2000];
    mp_svg_hist(b, title, "ms", q, mp_hist_quantiles(h, q, MP_ARRAY_SIZE(q)), color);
}

/* ---- sections ---- */

static void header(const struct mp_report *rep, struct buf *b)
{
    buf_adds(b, "<!doctype html>\n<html lang=en><head><meta charset=utf-8>"
                "<meta name=viewport content=\"width=device-width,initial-scale=1\">"
                "<meta http-equiv=Content-Security-Policy content=\"default-src 'none'; "
                "style-src 'unsafe-inline'; img-src data:\">"
                "<title>moeprobe report");
    if (rep->fp.model) {
        buf_adds(b, ": ");
        mp_html_esc(b, rep->fp.model, 120);
    }
    buf_printf(b, "</title><style>%s</style></head><body><main>\n", css);
    buf_adds(b, "<h1>moeprobe qualify report</h1>\n<p class=fp>");
    buf_adds(b, "model <b>");
    esc(b, rep->fp.model);
    buf_adds(b, "</b> · GPU <b>");
    esc(b, rep->fp.gpu);
    if (rep->fp.compute_capability) {
        buf_adds(b, " (cc ");
        esc(b, rep->fp.compute_capability);
        buf_adds(b, ")");
    }
    buf_adds(b, "</b> · engine <b>");
    esc(b, rep->fp.engine);
    buf_adds(b, " ");
    esc(b, rep->fp.engine_version);
    buf_adds(b, "</b> · driver <b>");
    esc(b, rep->fp.driver);
    buf_adds(b, "</b> · CUDA <b>");
    esc(b, rep->fp.cuda);
    buf_adds(b, "</b> · host <b>");
    esc(b, rep->fp.host_arch);
    buf_adds(b, "</b><br>run ");
    esc(b, rep->started);
    buf_adds(b, " → ");
    esc(b, rep->finished);
    if (rep->interrupted)
        buf_adds(b, " <span class=bad>(interrupted)</span>");
    buf_adds(b, "</p>\n");
    if (rep->checkpoint_summary) {
        buf_adds(b, "<details><summary>checkpoint: ");
        esc(b, rep->checkpoint_summary);
        buf_adds(b, "</summary><ul>");
        for (size_t i = 0; i < rep->checkpoint_notes.n; i++) {
            buf_adds(b, "<li>");
            esc(b, rep->checkpoint_notes.v[i]);
            buf_adds(b, "</li>");
        }
        buf_adds(b, "</ul></details>\n");
    }
}

/* The banner of a run that did not finish (the same facts as report.md's):
 * how it ended, the unfinished candidates, the command that continues it. */
static void incomplete_banner(const struct mp_report *rep, struct buf *b)
{
    if (!mp_report_incomplete(rep))
        return;
    size_t nunf = mp_report_nunfinished(rep);
    buf_adds(b, "<div class=banner role=alert><b>");
    buf_adds(b, rep->interrupted ? "This run was interrupted</b> (by a signal) before it finished"
                                 : "This run did not finish</b> (moeprobe was killed, or the run "
                                   "is still going)");
    if (nunf) {
        buf_printf(b, ": %zu of %zu candidate%s unfinished: ", nunf, rep->n,
                   rep->n == 1 ? " is" : "s are");
        bool first = true;
        for (size_t i = 0; i < rep->n; i++) {
            if (!rep->c[i].unfinished)
                continue;
            buf_adds(b, first ? "<b>" : ", <b>");
            esc(b, rep->c[i].cand.name);
            buf_adds(b, "</b>");
            first = false;
        }
        buf_adds(b, " (no verdict yet; not counted below)");
    }
    buf_adds(b, ".<br>");
    char *cmd = mp_report_resume_command(rep);
    if (cmd) {
        buf_adds(b, "Continue it with <code>");
        mp_html_esc(b, cmd, 8192);
        buf_adds(b, "</code> (finished candidates are kept).");
    } else {
        buf_adds(b, "A ");
        esc(b, rep->subcommand);
        buf_adds(b, " run cannot be resumed: start it again with a new <code>--out DIR</code>.");
    }
    free(cmd);
    buf_adds(b, "</div>\n");
}

static void summary(const struct mp_report *rep, struct buf *b)
{
    buf_adds(b, "<h2>Recommendation</h2>\n");
    if (rep->recommended >= 0) {
        const struct mp_cand_report *c = &rep->c[rep->recommended];
        char *knobs = mp_candidate_knobs_str(&c->cand);
        buf_adds(b, "<div class=rec><b>");
        esc(b, c->cand.name);
        buf_adds(b, "</b>");
        if (knobs[0]) {
            buf_adds(b, " <code>");
            esc(b, knobs);
            buf_adds(b, "</code>");
        }
        buf_adds(b, "<br>");
        esc(b, rep->recommendation_why);
        buf_adds(b, ".</div>\n");
        free(knobs);
    } else if (mp_report_is_resolve_map(rep)) {
        buf_adds(b, "<div class=norec><b>Resolution only</b> (<code>moeprobe resolve</code>): "
                    "each engine was stopped as soon as its kernel selections were logged; no "
                    "load was driven, so nothing is recommended.</div>\n");
    } else {
        buf_adds(b, mp_report_nunfinished(rep)
                        ? "<div class=norec><b>No finished candidate qualified.</b><ul>"
                        : "<div class=norec><b>No candidate qualified.</b><ul>");
        for (size_t i = 0; i < rep->learned.n; i++) {
            buf_adds(b, "<li>");
            esc(b, rep->learned.v[i]);
            buf_adds(b, "</li>");
        }
        buf_adds(b, "</ul></div>\n");
    }
    buf_adds(b, "<p class=note>Results apply to this fingerprint only (GPU, driver, CUDA, engine "
                "version, model). A short run bounds, not proves, the failure rate.</p>\n");
}

/* " knob delivery unverified: A, B" after a verdict badge. */
static void unverified_note(struct buf *b, const struct mp_attempt_result *p)
{
    bool any = false;
    for (size_t j = 0; p && j < p->ndlv; j++) {
        if (!mp_dlv_unverified_note(p, j))
            continue;
        buf_adds(b, any ? ", " : " <span class=note>knob delivery unverified: ");
        esc(b, p->dlv[j].knob);
        any = true;
    }
    if (any)
        buf_adds(b, "</span>");
}

/* The knob delivery of the primary attempt, one line per knob. */
static void delivery_dd(struct buf *b, const struct mp_attempt_result *p)
{
    if (!p->ndlv)
        return;
    buf_adds(b, "<dt>knob delivery</dt><dd><ul>");
    for (size_t j = 0; j < p->ndlv; j++) {
        const struct mp_knob_dlv *d = &p->dlv[j];
        buf_adds(b, "<li><code>");
        esc(b, d->knob);
        buf_printf(b, "</code> <span class=\"dlv dlv-%s%s\">%s</span>: ",
                   mp_dlv_status_name(d->status), d->status == MP_DLV_MISSING ? " bad" : "",
                   mp_dlv_status_name(d->status));
        esc(b, d->evidence);
        buf_adds(b, "</li>");
    }
    buf_adds(b, "</ul></dd>");
}

static void cand_table(const struct mp_report *rep, struct buf *b)
{
    buf_adds(b, "<h2>Candidates</h2>\n<div class=scroll><table><thead><tr><th>candidate</th>"
                "<th>verdict</th><th>resolved MoE backend</th><th>seq tok/s</th>"
                "<th>best conc tok/s</th><th>failed / requests</th><th>output check</th>"
                "<th>knobs</th></tr>"
                "</thead><tbody>\n");
    for (size_t i = 0; i < rep->n; i++) {
        const struct mp_cand_report *c = &rep->c[i];
        const struct mp_attempt_result *p = mp_cand_primary(c);
        char *knobs = mp_candidate_knobs_str(&c->cand);
        buf_adds(b, "<tr><td><a href=\"#");
        anchor(b, c->cand.name);
        buf_adds(b, "\">");
        esc(b, c->cand.name);
        buf_adds(b, "</a></td><td>");
        verdict_badge(b, c->unfinished ? "unfinished" : c->verdict);
        unverified_note(b, p);
        buf_adds(b, "</td><td>");
        esc(b, p ? (p->res.moe_backend ? p->res.moe_backend : "(not logged)") : NULL);
        buf_adds(b, "</td>");
        num_cell(b, phase_tok_s(p, "sequential", false));
        num_cell(b, phase_tok_s(p, "concurrency-", true));
        unsigned long ok = 0, failed = 0;
        for (size_t j = 0; j < c->nattempts; j++)
            if (!c->attempts[j].launch_blocking) {
                ok += c->attempts[j].req_ok;
                failed += c->attempts[j].req_failed;
            }
        buf_printf(b, "<td class=n>%lu / %lu</td><td>", failed, ok + failed);
        const struct mp_qcand_out *q = i < rep->qc.n ? &rep->qc.c[i] : NULL;
        if (!q || q->status == MP_QC_NOT_RUN)
            buf_adds(b, "—");
        else
            buf_printf(b, "%s%zu/%zu%s", q->status == MP_QC_OK ? "" : "<span class=bad>", q->passed,
                       rep->qc.nprompts, q->status == MP_QC_OK ? "" : " garbage</span>");
        buf_adds(b, "</td><td>");
        if (knobs[0]) {
            buf_adds(b, "<code>");
            esc(b, knobs);
            buf_adds(b, "</code>");
        } else {
            buf_adds(b, "(none)");
        }
        buf_adds(b, "</td></tr>\n");
        free(knobs);
    }
    buf_adds(b, "</tbody></table></div>\n");
}

static const char *phase_color(const char *name)
{
    if (!strcmp(name, "sequential"))
        return "#3b7dd8";
    if (!strcmp(name, "concurrency-4"))
        return "#16a085";
    if (!strcmp(name, "concurrency-8"))
        return "#e67e22";
    if (!strncmp(name, "concurrency-", 12))
        return "#8e44ad";
    return "#7f8c8d";
}

static void throughput_chart(const struct mp_report *rep, struct buf *b)
{
    struct mp_strv labels = MP_STRV_INIT;
    double *vals = NULL;
    const char **colors = NULL;
    size_t n = 0;
    const char *leg[16];
    size_t nleg = 0;
    for (size_t i = 0; i < rep->n; i++) {
        const struct mp_attempt_result *p = mp_cand_primary(&rep->c[i]);
        for (size_t k = 0; p && k < p->nphases; k++) {
            const struct mp_phase_result *ph = &p->phases[k];
            if (!strcmp(ph->name, "warmup") || !strcmp(ph->name, "quality") ||
                !strcmp(ph->name, "extended"))
                continue;
            /* short labels (the legend names the phases): "marlin · c8" */
            char *ln = !strcmp(ph->name, "sequential") ? xstrdup("seq")
                       : !strncmp(ph->name, "concurrency-", 12) ? xasprintf("c%s", ph->name + 12)
                                                                 : xstrdup(ph->name);
            mp_strv_push_owned(&labels, xasprintf("%.12s%s · %s", rep->c[i].cand.name,
                                                  strlen(rep->c[i].cand.name) > 12 ? "…" : "", ln));
            free(ln);
            vals = xreallocarray(vals, n + 1, sizeof(*vals));
            colors = xreallocarray(colors, n + 1, sizeof(*colors));
            vals[n] = ph->ok > 0 ? ph->tok_s : -1;
            colors[n] = phase_color(ph->name);
            bool seen = false;
            for (size_t l = 0; l < nleg; l++)
                seen = seen || !strcmp(leg[2 * l], ph->name);
            if (!seen && nleg < 7) {
                leg[2 * nleg] = ph->name;
                leg[2 * nleg + 1] = colors[n];
                nleg++;
            }
            n++;
        }
    }
    leg[2 * nleg] = NULL;
    if (n) {
        buf_adds(b, "<h2>Throughput</h2>\n");
        mp_svg_hbars(b, "Aggregate output tok/s per candidate and phase (primary attempt)", "tok/s",
                     (const char *const *)labels.v, vals, colors, n, leg);
    }
    mp_strv_release(&labels);
    free(vals);
    free(colors);
}

static void output_check(const struct mp_report *rep, struct buf *b)
{
    const struct mp_qcheck *q = &rep->qc;
    if (!q->status || !strcmp(q->status, "not-run"))
        return;
    const struct mp_sanity_set *set = mp_sanity_builtin();
    buf_adds(b, "<h2>Output check</h2>\n<p>Greedy answers to the sanity prompts, compared across "
                "candidates");
    if (q->ref >= 0) {
        buf_adds(b, " (reference: <b>");
        esc(b, rep->c[q->ref].cand.name);
        buf_adds(b, "</b>)");
    }
    buf_adds(b, ".");
    if (q->note) {
        buf_adds(b, " <span class=note>");
        esc(b, q->note);
        buf_adds(b, ".</span>");
    }
    buf_adds(b, "</p>\n<div class=scroll><table><thead><tr><th>prompt</th>");
    for (size_t i = 0; i < q->n; i++) {
        if (q->c[i].status == MP_QC_NOT_RUN)
            continue;
        buf_adds(b, "<th>");
        esc(b, rep->c[i].cand.name);
        buf_adds(b, "</th>");
    }
    buf_adds(b, "</tr></thead><tbody>\n");
    for (size_t k = 0; k < q->nprompts; k++) {
        buf_adds(b, "<tr><td><code>");
        esc(b, set->p[k].prompt);
        buf_adds(b, "</code></td>");
        for (size_t i = 0; i < q->n; i++) {
            if (q->c[i].status == MP_QC_NOT_RUN)
                continue;
            const struct mp_attempt_result *p = mp_cand_primary(&rep->c[i]);
            const char *t = p && k < p->nquality ? p->quality_texts[k] : NULL;
            char *qt = mp_quality_quote(t, 60);
            enum mp_qres r = q->c[i].res[k];
            buf_printf(b, "<td%s><code>", r == MP_Q_PASS ? "" : " class=bad");
            esc(b, qt);
            buf_printf(b, "</code> %s</td>", r == MP_Q_PASS ? "✓" : mp_qres_name(r));
            free(qt);
        }
        buf_adds(b, "</tr>\n");
    }
    buf_adds(b, "</tbody></table></div>\n<ul class=note>");
    for (size_t i = 0; i < q->n; i++) {
        const struct mp_qcand_out *c = &q->c[i];
        if (c->status == MP_QC_NOT_RUN || c->ref < 0)
            continue;
        buf_adds(b, "<li><b>");
        esc(b, rep->c[i].cand.name);
        buf_printf(b, "</b>: %zu of %zu answers identical to ", c->identical, c->compared);
        esc(b, rep->c[c->ref].cand.name);
        if (c->diff_prompt >= 0) {
            buf_adds(b, "; first difference in <code>");
            esc(b, set->p[c->diff_prompt].id);
            buf_printf(b, "</code> at token %ld: <code>", c->diff_token);
            esc(b, c->diff_this);
            buf_adds(b, "</code> vs <code>");
            esc(b, c->diff_ref);
            buf_adds(b, "</code>");
        }
        if (c->why) {
            buf_adds(b, " — <span class=bad>");
            esc(b, c->why);
            buf_adds(b, "</span>");
        }
        buf_adds(b, "</li>");
    }
    buf_adds(b, "</ul>\n");
}

static void cand_section(const struct mp_report *rep, size_t i, struct buf *b)
{
    const struct mp_cand_report *c = &rep->c[i];
    const struct mp_attempt_result *p = mp_cand_primary(c);
    buf_adds(b, "<section class=cand id=\"");
    anchor(b, c->cand.name);
    buf_adds(b, "\"><h3>");
    esc(b, c->cand.name);
    buf_adds(b, " ");
    verdict_badge(b, c->unfinished ? "unfinished" : c->verdict);
    buf_adds(b, "</h3>\n<p>");
    esc(b, c->why);
    buf_adds(b, "</p>\n<dl class=kv>");
    char *knobs = mp_candidate_knobs_str(&c->cand);
    buf_adds(b, "<dt>knobs</dt><dd>");
    if (knobs[0]) {
        buf_adds(b, "<code>");
        esc(b, knobs);
        buf_adds(b, "</code>");
    } else {
        buf_adds(b, "(none)");
    }
    buf_adds(b, "</dd>");
    free(knobs);
    if (p) {
        buf_adds(b, "<dt>MoE backend</dt><dd>");
        esc(b, p->res.moe_backend);
        if (p->res.moe_candidates.n) {
            buf_adds(b, " <span class=note>out of ");
            esc_list(b, &p->res.moe_candidates);
            buf_adds(b, "</span>");
        }
        buf_adds(b, "</dd><dt>dense NVFP4</dt><dd>");
        esc(b, p->res.linear_kernel);
        if (p->res.linear_kernels.n) {
            buf_adds(b, "</dd><dt>dense kernels</dt><dd>");
            esc_list(b, &p->res.linear_kernels);
        }
        if (p->res.unquantized_moe_backend) {
            buf_adds(b, "</dd><dt>unquantized MoE</dt><dd>");
            esc(b, p->res.unquantized_moe_backend);
        }
        buf_adds(b, "</dd><dt>attention</dt><dd>");
        esc(b, p->res.attention_backend);
        buf_adds(b, "</dd>");
        if (p->res.unknown_env.n) {
            buf_adds(b, "<dt>unknown to the engine</dt><dd>");
            esc_list(b, &p->res.unknown_env);
            buf_adds(b, "</dd>");
        }
        buf_adds(b, "<dt>command</dt><dd><code>");
        esc(b, p->command);
        buf_adds(b, "</code></dd>");
        delivery_dd(b, p);
    }
    for (size_t j = 0; j < c->nattempts; j++) {
        const struct mp_attempt_result *a = &c->attempts[j];
        buf_printf(b, "<dt>attempt %d</dt><dd>", a->index);
        if (a->launch_blocking)
            buf_adds(b, "<code>CUDA_LAUNCH_BLOCKING=1</code> ");
        if (a->outcome == MP_OUT_RESOLVED) {
            buf_printf(b, "stopped after %.1f s, once resolved (no load)", a->ready_s);
        } else if (a->outcome == MP_OUT_SAME_CONFIG) {
            buf_printf(b, "stopped after %.1f s, once resolved: the same configuration as <code>",
                       a->ready_s);
            esc(b, a->same_as ? a->same_as : "?");
            buf_adds(b, "</code> (shared result)");
        } else {
            buf_printf(b, "%s, %lu ok / %lu failed, ready in %.1f s", mp_outcome_name(a->outcome),
                       a->req_ok, a->req_failed, a->ready_s);
        }
        if (a->fail_class) {
            buf_adds(b, "; <span class=bad>");
            esc(b, a->fail_class);
            buf_adds(b, "</span>");
            if (a->fail_message) {
                buf_adds(b, ": ");
                mp_html_esc(b, a->fail_message, 300);
            }
        }
        if (a->sites.n) {
            buf_adds(b, "; sites: ");
            esc_list(b, &a->sites);
        }
        buf_adds(b, "</dd>");
    }
    if (c->diag.done && c->diag.reasoning) {
        buf_adds(b, "<dt>diagnosis</dt><dd>");
        esc(b, c->diag.reasoning);
        buf_adds(b, "</dd>");
    }
    buf_adds(b, "</dl>\n");
    /* evidence: primary attempt, and the first failing blocked one */
    if (p)
        log_excerpt(b, rep, p);
    for (size_t j = 0; j < c->nattempts; j++) {
        const struct mp_attempt_result *a = &c->attempts[j];
        if (a->launch_blocking && a->fail_line > 0) {
            log_excerpt(b, rep, a);
            break;
        }
    }
    if (!p) {
        buf_adds(b, "</section>\n");
        return;
    }
    timeline(b, p);
    buf_adds(b, "<div class=grid2>");
    char *t1 = xasprintf("Time to first token, %s", c->cand.name);
    char *t2 = xasprintf("Inter-token latency, %s", c->cand.name);
    struct mp_phase_metrics pm;
    mp_attempt_metrics(p, &pm);
    svg_hist(b, t1, &pm.ttft_ms, "#3b7dd8");
    svg_hist(b, t2, &pm.itl_ms, "#16a085");
    mp_phase_metrics_release(&pm);
    free(t1);
    free(t2);
    buf_adds(b, "</div>\n");
    /* normal vs launch-blocking */
    bool blocked = false;
    for (size_t j = 0; j < c->nattempts; j++)
        blocked = blocked || c->attempts[j].launch_blocking;
    if (blocked) {
        size_t n = c->nattempts;
        char **labels = xcalloc(n + 1, sizeof(*labels));
        double *vals = xcalloc(n + 1, sizeof(*vals));
        const char **colors = xcalloc(n + 1, sizeof(*colors));
        for (size_t j = 0; j < n; j++) {
            const struct mp_attempt_result *a = &c->attempts[j];
            labels[j] = xasprintf("attempt %d %s", a->index, a->launch_blocking ? "blocking" : "normal");
            vals[j] = median_rate(a);
            colors[j] = a->launch_blocking ? "#b45309" : "#3b7dd8";
        }
        static const char *const leg[] = { "normal", "#3b7dd8", "CUDA_LAUNCH_BLOCKING=1", "#b45309",
                                           NULL };
        char *title = c->diag.throughput_ratio > 0
                          ? xasprintf("Per-request decode rate, normal vs launch-blocking "
                                      "(median; ratio %.2fx)", c->diag.throughput_ratio)
                          : xstrdup("Per-request decode rate, normal vs launch-blocking (median)");
        mp_svg_hbars(b, title, "tok/s", (const char *const *)labels, vals, colors, n, leg);
        free(title);
        for (size_t j = 0; j < n; j++)
            free(labels[j]);
        free(labels);
        free(vals);
        free(colors);
    }
    buf_adds(b, "</section>\n");
}

void mp_report_html(const struct mp_report *rep, struct buf *out)
{
    header(rep, out);
    incomplete_banner(rep, out);
    summary(rep, out);
    cand_table(rep, out);
    throughput_chart(rep, out);
    if (rep->ngroups) {
        buf_adds(out, "<h2>Same destination, different road</h2><ul>");
        for (size_t i = 0; i < rep->ngroups; i++) {
            buf_adds(out, "<li><b>");
            esc(out, rep->groups[i].moe_backend);
            buf_adds(out, "</b>: ");
            for (size_t k = 0; k < rep->groups[i].candidates.n; k++) {
                buf_adds(out, k ? ", " : "");
                esc(out, rep->groups[i].candidates.v[k]);
            }
            buf_adds(out, "</li>");
        }
        buf_adds(out, "</ul>\n");
    }
    if (rep->nnoop) {
        buf_adds(out, "<h2>Knobs that changed nothing</h2><ul>");
        for (size_t i = 0; i < rep->nnoop; i++) {
            const struct mp_noop *k = &rep->noop[i];
            buf_adds(out, "<li><code>");
            esc(out, k->knob);
            buf_adds(out, "</code> (");
            esc(out, k->candidate);
            buf_adds(out, ") resolved exactly like ");
            esc(out, k->resolved_like);
            if (k->engine_warning) {
                buf_adds(out, "; the engine said <q>");
                esc(out, k->engine_warning);
                buf_adds(out, "</q>");
            }
            if (k->delivery && strcmp(k->delivery, "verified") != 0) {
                buf_adds(out, "; its delivery to the engine is <span class=bad>");
                esc(out, k->delivery);
                buf_adds(out, "</span>");
                if (k->delivery_evidence) {
                    buf_adds(out, " (");
                    esc(out, k->delivery_evidence);
                    buf_adds(out, ")");
                }
            }
            buf_adds(out, "</li>");
        }
        buf_adds(out, "</ul>\n");
    }
    output_check(rep, out);
    buf_adds(out, "<h2>Per candidate</h2>\n");
    for (size_t i = 0; i < rep->n; i++)
        cand_section(rep, i, out);
    buf_adds(out, "<footer>moeprobe ");
    esc(out, rep->moeprobe_version);
    buf_adds(out, " · machine-readable: report.json · run directory <code>");
    esc(out, rep->run_dir);
    buf_adds(out, "</code></footer>\n</main></body></html>\n");
}
