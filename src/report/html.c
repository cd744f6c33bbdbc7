/* html.c - the self-contained HTML report: one file, no scripts, no network,
 * readable from a phone to a 1280 px screen without cutting a column or a
 * log line. This file: the page, its style, the fingerprint, the
 * recommendation, the candidate table, the output check and the lists of
 * roads and no-op knobs. A candidate's section is html_cand.c, the charts
 * and tables of numbers html_charts.c, the log excerpts and the request
 * timeline html_evidence.c; inline SVG comes from svg.c. Everything is
 * rendered from the report model (which the store fills), nothing is read
 * from the run directory; everything from logs, engines and the command
 * line goes through mp_html_esc. */
#include "report/crash.h"
#include "report/html_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quality/quality.h"
#include "report/correct.h"
#include "report/internal.h"
#include "report/overview.h"
#include "report/report.h"
#include "report/svg.h"
#include "xalloc.h"

/* Nothing is clipped: tables wrap their cells (and scroll sideways inside
 * their box when even that does not fit, on phones), log lines wrap at any
 * character, long words in code break, and chart text stays inside its
 * viewBox (svg.c). */
static const char css[] =
    ":root{--fg:#1d2330;--mut:#5b6475;--bd:#d9dee7;--bg:#fff;--alt:#f5f7fa;--ok:#1a7f37;"
    "--bad:#c62828;--warn:#a15c00}"
    "*{box-sizing:border-box}"
    "body{margin:0;font:15px/1.5 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;color:var(--fg);"
    "background:var(--bg);overflow-wrap:break-word}"
    "main{max-width:1200px;margin:0 auto;padding:12px 14px 40px}"
    "h1{font-size:1.45em;margin:.4em 0 .2em}h2{font-size:1.2em;margin:1.6em 0 .5em;border-bottom:1px solid var(--bd);"
    "padding-bottom:.2em}h3{font-size:1.05em;margin:1.2em 0 .4em}h4{font-size:.95em;margin:1em 0 .3em}"
    ".fp{color:var(--mut);font-size:.9em}.fp b{color:var(--fg);font-weight:600}"
    ".rec{border-left:5px solid var(--ok);background:#eef8f0;padding:10px 14px;border-radius:4px}"
    ".norec{border-left:5px solid var(--warn);background:#fdf5e8;padding:10px 14px;border-radius:4px}"
    ".banner{border:2px solid var(--bad);background:#fdecea;padding:10px 14px;border-radius:4px;"
    "margin:12px 0}"
    ".scroll{overflow-x:auto;-webkit-overflow-scrolling:touch;max-width:100%}"
    "table{border-collapse:collapse;width:100%;font-size:.9em}"
    /* cells break long words only when they must (break-word keeps a
     * column as wide as its longest word: a phone scrolls the table
     * rather than stacking letters); code breaks anywhere */
    "th,td{border-bottom:1px solid var(--bd);padding:5px 7px;text-align:left;vertical-align:top;"
    "overflow-wrap:break-word}"
    "th{background:var(--alt)}td.n{text-align:right;font-variant-numeric:tabular-nums;"
    "white-space:nowrap}table.lat th{text-align:center;white-space:nowrap}"
    "code,pre{font:12.5px/1.45 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}"
    "code{background:var(--alt);padding:1px 4px;border-radius:3px;overflow-wrap:anywhere}"
    "td code{overflow-wrap:break-word}"
    "pre{background:#f6f8fa;border:1px solid var(--bd);padding:8px;white-space:pre-wrap;"
    "overflow-wrap:anywhere;word-break:break-all;border-radius:4px;max-width:100%}"
    "pre .hl{background:#fff3c4}"
    "ul.next pre{margin:.3em 0 .6em}a.ev{white-space:nowrap}"
    "pre .ln{color:#8a93a3;user-select:none}"
    ".v{display:inline-block;padding:1px 8px;border-radius:10px;font-size:.85em;font-weight:600;"
    "white-space:nowrap;color:#fff;background:#6b7280}"
    ".v-stable{background:var(--ok)}.v-async-race{background:#b45309}.v-kernel-fault{background:#9f1239}"
    ".v-crashed,.v-startup-failure{background:var(--bad)}.v-hang{background:#7c3aed}"
    ".v-garbage-output{background:#be185d}.v-wrong-output{background:#9d174d}.v-not-delivered{background:#475569}"
    ".v-not-applicable{background:#64748b}"
    "section.cand{border:1px solid var(--bd);border-radius:6px;padding:4px 14px 10px;margin:16px 0}"
    "dl.kv{display:grid;grid-template-columns:max-content minmax(0,1fr);gap:2px 12px;margin:.5em 0}"
    "dl.kv dt{color:var(--mut)}dl.kv dd{margin:0;min-width:0;overflow-wrap:anywhere}"
    "dl.kv ul{margin:0;padding-left:1.2em}"
    "figure.chart{margin:10px 0;min-width:0}"
    "figure.chart figcaption{font-weight:600;font-size:.92em;margin-bottom:2px}"
    "figure.chart svg{width:100%;max-width:700px;height:auto;display:block}"
    "svg text{font:11px system-ui,sans-serif;fill:#1d2330}svg .lab{fill:#5b6475}svg .na{fill:#8a93a3}"
    "svg .val{font-weight:600}svg .ax{stroke:#9aa3b2}svg .p50{stroke:#1d2330;stroke-dasharray:3 2}"
    "svg .p99{stroke:#c62828;stroke-dasharray:3 2}svg .ro{fill:#3b7dd8}svg .rf{fill:#c62828}"
    "svg .ph{stroke:#9aa3b2;stroke-dasharray:2 3}svg .phl{fill:#5b6475;font-size:10px}"
    "svg .fail{stroke:#c62828;stroke-width:2}svg .failt{fill:#c62828;font-weight:600}"
    "svg .stop{stroke:#7c3aed;stroke-width:2;stroke-dasharray:2 2}svg .stopt{fill:#7c3aed;font-weight:600}"
    "svg .stall{fill:#7c3aed;fill-opacity:.12}"
    ".note{color:var(--mut);font-size:.9em}.bad{color:var(--bad)}"
    ".grid2{display:grid;grid-template-columns:minmax(0,1fr);gap:0 18px}"
    "@media(min-width:760px){.grid2{grid-template-columns:minmax(0,1fr) minmax(0,1fr)}}"
    "footer{margin-top:30px;color:var(--mut);font-size:.85em}"
    /* phones: a 480-unit chart is drawn at ~0.75 scale; larger text keeps it legible */
    "@media(max-width:600px){svg text,svg .phl{font-size:13px}body{font-size:14px}"
    /* phones: the candidates table is a card per candidate, each cell under
     * its column's name, so the verdict's reason is read without scrolling
     * sideways (issue #29: the first screen says why) */
    "table.cands,table.cands tbody,table.cands tr{display:block}"
    "table.cands thead{display:none}table.cands tr{border-bottom:2px solid var(--bd);padding:4px 0}"
    "table.cands td{display:flow-root;border:0;padding:2px 4px 2px 7.8em}"
    "table.cands td.n{text-align:left;white-space:normal}"
    "table.cands td::before{content:attr(data-l);float:left;width:7.2em;margin-left:-7.5em;"
    "color:var(--mut);font-size:.9em}}";

static void esc(struct buf *b, const char *s)
{
    mp_html_text(b, s);
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
    buf_printf(b, "<h1>%s</h1>\n<p class=fp>", mp_rep_title(rep));
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
    if (rep->resumes > 0) {
        char rw[64];
        buf_printf(b, " <span>(%s)</span>",
                   mp_rep_resumed_words(rep->resumes, rw, sizeof(rw)));
    }
    buf_adds(b, "</p>\n");
    mp_rep_inherited_html(rep, b);
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
    if (rep->stop_reason) {
        mp_rep_stop_html(rep, b);
        return;
    }
    if (!mp_report_incomplete(rep))
        return;
    size_t nunf = mp_report_nunfinished(rep);
    buf_adds(b, "<div class=banner role=alert><b>");
    if (rep->interrupted && rep->stopped_by) {
        buf_adds(b, "This run was stopped by an I/O error</b> before it finished (");
        esc(b, rep->stopped_by);
        buf_adds(b, ")");
    } else {
        buf_adds(b, rep->interrupted ? "This run was interrupted</b> (by a signal) before it finished"
                                     : "This run did not finish</b> (moeprobe was killed, or the run "
                                       "is still going)");
    }
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

/* The one-line reason and a link to the evidence in the candidate's
 * section (the log excerpt with the cited line). */
static void why_cell(const struct mp_report *rep, const struct mp_cand_report *c, struct buf *b)
{
    char *why = mp_rep_reason_line(rep, c), *ev = mp_rep_evidence_ref(rep, c);
    esc(b, why);
    if (ev) {
        buf_adds(b, " <a class=ev href=\"#");
        mp_html_anchor(b, c->cand.name);
        buf_adds(b, "\">");
        esc(b, strrchr(ev, '/') ? strrchr(ev, '/') + 1 : ev);
        buf_adds(b, "</a>");
    }
    free(why);
    free(ev);
}

static void cand_table(const struct mp_report *rep, struct buf *b)
{
    buf_adds(b, "<h2>Candidates</h2>\n<div class=scroll><table class=cands><thead><tr><th>candidate</th>"
                "<th>verdict</th><th>resolved MoE backend</th><th>why (evidence)</th>"
                "<th>seq tok/s</th><th>conc tok/s</th><th>failed / requests</th>"
                "<th>output check</th><th>knobs</th></tr>"
                "</thead><tbody>\n");
    for (size_t i = 0; i < rep->n; i++) {
        const struct mp_cand_report *c = &rep->c[i];
        const struct mp_attempt_result *p = mp_cand_primary(c);
        char *knobs = mp_candidate_knobs_str(&c->cand);
        buf_adds(b, "<tr><td data-l=candidate><a href=\"#");
        mp_html_anchor(b, c->cand.name);
        buf_adds(b, "\">");
        esc(b, c->cand.name);
        buf_adds(b, "</a></td><td data-l=verdict>");
        mp_html_badge(b, c->unfinished ? "unfinished" : mp_verdict_name(c->verdict));
        mp_html_kernel_note(b, c); /* report/crash.h */
        unverified_note(b, p);
        buf_adds(b, "</td><td data-l=\"MoE backend\">");
        esc(b, p ? (p->res.moe_backend ? p->res.moe_backend : "(not logged)") : NULL);
        buf_adds(b, "</td><td data-l=why>");
        why_cell(rep, c, b);
        char seq[96], conc[160];
        mp_rep_speed_cell(rep, c, true, seq, sizeof(seq));
        mp_rep_speed_cell(rep, c, false, conc, sizeof(conc));
        buf_printf(b, "</td><td class=n data-l=\"seq tok/s\">%s</td><td data-l=\"conc tok/s\">%s</td>",
                   seq, conc);
        unsigned long ok = 0, failed = 0;
        for (size_t j = 0; j < c->nattempts; j++)
            if (!c->attempts[j].launch_blocking) {
                ok += c->attempts[j].req_ok;
                failed += c->attempts[j].req_failed;
            }
        buf_printf(b, "<td class=n data-l=\"failed / requests\">%lu / %lu</td><td data-l=\"output check\">",
                   failed, ok + failed);
        const struct mp_qcand_out *q = i < rep->qc.n ? &rep->qc.c[i] : NULL;
        if (!q || q->status == MP_QC_NOT_RUN)
            buf_adds(b, "—");
        else
            buf_printf(b, "%s%zu/%zu%s", q->status == MP_QC_OK ? "" : "<span class=bad>", q->passed,
                       rep->qc.nprompts, q->status == MP_QC_OK ? "" : " garbage</span>");
        buf_adds(b, "</td><td data-l=knobs>");
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

/* What makes the numbers not comparable: the sentences of report.md's
 * section of the same name (mp_rep_comparability); nothing when none. */
static void comparability(const struct mp_report *rep, struct buf *b)
{
    struct mp_strv cmp = MP_STRV_INIT;
    mp_rep_comparability(rep, &cmp);
    if (cmp.n) {
        buf_adds(b, "<h2>Are the numbers comparable?</h2>\n<ul>");
        for (size_t i = 0; i < cmp.n; i++) {
            buf_adds(b, "<li>");
            esc(b, cmp.v[i]);
            buf_adds(b, "</li>");
        }
        buf_adds(b, "</ul>\n");
    }
    mp_strv_release(&cmp);
}

void mp_report_html(const struct mp_report *rep, struct buf *out)
{
    header(rep, out);
    incomplete_banner(rep, out);
    summary(rep, out);
    cand_table(rep, out);
    mp_rep_next_steps_html(rep, out);
    mp_html_throughput(rep, out);
    mp_html_workload(rep, out);
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
    char *noop_note = mp_rep_inherited_noop_note(rep);
    if (noop_note && !rep->nnoop) {
        buf_adds(out, "<h2>Knobs that changed nothing</h2><p class=note>");
        esc(out, noop_note);
        buf_adds(out, "</p>\n");
    }
    free(noop_note);
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
    mp_rep_correct_html(rep, out); /* report/correct.h */
    comparability(rep, out);
    buf_adds(out, "<h2>Per candidate</h2>\n");
    for (size_t i = 0; i < rep->n; i++)
        mp_html_cand_section(rep, i, out);
    buf_adds(out, "<footer>moeprobe ");
    esc(out, rep->moeprobe_version);
    buf_adds(out, " · machine-readable: report.json · run directory <code>");
    esc(out, rep->run_dir);
    buf_adds(out, "</code></footer>\n</main></body></html>\n");
}
