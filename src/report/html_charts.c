/* html_charts.c - the numbers of the HTML report: throughput per candidate
 * and phase and against concurrency, the workload, per-phase latency at
 * the report's percentiles and the TTFT/ITL distributions (from the phase
 * histograms, struct mp_phase_metrics), and normal vs CUDA_LAUNCH_BLOCKING=1
 * drawn from exactly the two rates the diagnosis' ratio divides. */
#include "report/html_int.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hist.h"
#include "report/internal.h"
#include "report/srvm.h"
#include "report/svg.h"
#include "verdict/diagnose.h"
#include "xalloc.h"

/* A phase's colour in the charts: the sequential phase and the default
 * concurrency steps (4, 8) their own, any other concurrency step one more,
 * the rest grey. */

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

static const char *const cand_colors[] = { "#3b7dd8", "#e67e22", "#16a085", "#8e44ad",
                                           "#c62828", "#6b7280", "#b45309", "#0e7490" };

/* Phases that measure the engine at a level of concurrency (not the
 * warm-up, the output check, the diagnosis' extension or long prefill). */
static bool load_phase(const char *name)
{
    return !strcmp(name, "sequential") || !strncmp(name, "concurrency-", 12) ||
           !strcmp(name, "soak");
}

static void bars_per_phase(const struct mp_report *rep, struct buf *b)
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
    if (n)
        mp_svg_hbars(b, "Aggregate output tok/s per candidate and phase (primary attempt)", "tok/s",
                     (const char *const *)labels.v, vals, colors, n, leg);
    mp_strv_release(&labels);
    free(vals);
    free(colors);
}

/* One line per candidate: aggregate output tok/s at each load phase's
 * concurrency (sequential = 1). */
static void against_concurrency(const struct mp_report *rep, struct buf *b)
{
    struct mp_svg_series *s = xcalloc(rep->n + 1, sizeof(*s));
    double *xy = xcalloc(2 * (rep->n + 1) * (MP_MAX_PHASES + 2), sizeof(*xy));
    size_t ns = 0;
    for (size_t i = 0; i < rep->n; i++) {
        const struct mp_attempt_result *p = mp_cand_primary(&rep->c[i]);
        if (!p)
            continue;
        double *x = xy + 2 * ns * (MP_MAX_PHASES + 2), *y = x + MP_MAX_PHASES + 2;
        size_t k = 0;
        for (size_t j = 0; j < p->nphases && k < MP_MAX_PHASES + 2; j++) {
            const struct mp_phase_result *ph = &p->phases[j];
            if (!load_phase(ph->name) || ph->ok <= 0 || ph->level < 1)
                continue;
            x[k] = ph->level;
            y[k++] = ph->tok_s;
        }
        if (!k)
            continue;
        s[ns] = (struct mp_svg_series){ rep->c[i].cand.name,
                                        cand_colors[i % MP_ARRAY_SIZE(cand_colors)], x, y, k };
        ns++;
    }
    if (ns)
        mp_svg_lines(b, "Aggregate output tok/s against concurrency, per candidate (primary attempt)",
                     "requests in flight (sequential = 1)", "tok/s", s, ns);
    free(xy);
    free(s);
}

void mp_html_throughput(const struct mp_report *rep, struct buf *b)
{
    struct buf tmp = BUF_INIT;
    bars_per_phase(rep, &tmp);
    against_concurrency(rep, &tmp);
    if (tmp.len) {
        buf_adds(b, "<h2>Throughput</h2>\n<div class=grid2>");
        buf_add(b, tmp.data, tmp.len);
        buf_adds(b, "</div>\n");
    }
    buf_release(&tmp);
}

void mp_html_workload(const struct mp_report *rep, struct buf *b)
{
    if (!rep->has_workload)
        return;
    const struct mp_workload *w = &rep->workload;
    buf_adds(b, "<h2>Workload</h2>\n<p>");
    buf_printf(b, "<code>%s</code>, ", w->chat ? "/v1/chat/completions" : "/v1/completions");
    if (w->input_tokens > 0)
        buf_printf(b, "prompts of about %d tokens, ", w->input_tokens);
    else
        buf_printf(b, "the fixed short prompts (%s tokens), ", mp_rep_fixed_prompt_cell(w));
    buf_printf(b, "%d output tokens a request%s, temperature %g; stall timeout %.0f s, "
                  "ready timeout %.0f s.</p>\n",
               w->max_tokens, w->ignore_eos ? " (EOS ignored)" : "", w->temperature,
               w->stall_timeout_s, w->ready_timeout_s);
    buf_adds(b, "<div class=scroll><table class=fit><thead><tr><th>phase</th><th>in flight</th>"
                "<th>requests</th><th>input tokens</th><th>output tokens</th><th>time limit</th>"
                "</tr></thead><tbody>\n");
    /* the phases report.md and report.json list: the workload's, the
     * diagnosis' continuation, the output check (mp_rep_workload_phases) */
    struct mp_rep_wphase wp[MP_MAX_PHASES + 2];
    size_t nwp = mp_rep_workload_phases(rep, wp, MP_ARRAY_SIZE(wp));
    for (size_t i = 0; i < nwp; i++) {
        const struct mp_rep_wphase *ph = &wp[i];
        bool quality = !strcmp(ph->name, "quality");
        buf_adds(b, "<tr><td>");
        mp_html_text(b, ph->name);
        if (ph->diagnosis_only)
            buf_adds(b, " (diagnosis run only)");
        buf_printf(b, "</td><td class=n>%d</td><td class=n>", ph->level);
        if (ph->requests >= 0 && ph->requests < INT_MAX)
            buf_printf(b, "%d", ph->requests);
        else if (ph->requests < 0)
            buf_adds(b, "until enough succeeded"); /* the diagnosis' continuation */
        else
            buf_adds(b, "until the time limit"); /* a soak's timed phase */
        if (quality)
            buf_adds(b, "</td><td class=n>quality prompts");
        else if (ph->input_tokens > 0)
            buf_printf(b, "</td><td class=n>%d", ph->input_tokens);
        else
            buf_printf(b, "</td><td class=n>%s", mp_rep_fixed_prompt_cell(&rep->workload));
        buf_printf(b, "</td><td class=n>%d%s</td><td class=n>", ph->max_tokens,
                   quality ? " (greedy, EOS honoured)" : ph->ignore_eos ? "" : " (EOS honoured)");
        if (ph->duration_s > 0)
            buf_printf(b, "%.0f s", ph->duration_s);
        else
            buf_adds(b, "—");
        buf_adds(b, "</td></tr>\n");
    }
    buf_adds(b, "</tbody></table></div>\n");
    if (w->min_total_ok)
        buf_printf(b, "<p class=note>A diagnosis run continues at the highest level until %lu "
                      "requests succeeded in total.</p>\n", w->min_total_ok);
}

static void pct_cells(struct buf *b, const struct mp_hist *h, const double *pct, size_t npct)
{
    for (size_t k = 0; k < npct; k++) {
        if (!h->n)
            buf_adds(b, "<td class=n>—</td>");
        else
            buf_printf(b, "<td class=n>%.1f</td>", mp_hist_percentile(h, pct[k]));
    }
}

/* A number cell with `decimals` decimals; "—" when unknown (< 0). */
static void num_td(struct buf *b, double v, int decimals)
{
    if (v < 0 || isnan(v))
        buf_adds(b, "<td class=n>—</td>");
    else
        buf_printf(b, "<td class=n>%.*f</td>", decimals, v);
}

/* Per phase: the means and standard deviations of the latencies and the
 * throughputs (report.json's mean_*, std_*, request_throughput, ...; the
 * same figures, docs/metrics.md). */
static void throughput_table(struct buf *b, const struct mp_report *rep,
                             const struct mp_attempt_result *a)
{
    buf_printf(b, "<h4>Means and throughput per phase, attempt %d</h4>\n<div class=scroll>"
                  "<table class=lat><thead><tr><th rowspan=2>phase</th>"
                  "<th colspan=4>mean ± std (ms)</th><th rowspan=2>decode tok/s (median)</th>"
                  "<th rowspan=2>req/s</th><th rowspan=2>output tok/s</th>"
                  "<th rowspan=2>total tok/s</th></tr><tr><th>TTFT</th><th>TPOT</th><th>ITL</th>"
                  "<th>E2E</th></tr></thead><tbody>\n", a->index);
    for (size_t i = 0; i < a->nphases; i++) {
        const struct mp_phase_result *ph = &a->phases[i];
        const struct mp_phase_metrics *m = &ph->m;
        if (!m->ttft_ms.n && !m->e2e_ms.n)
            continue;
        buf_adds(b, "<tr><td>");
        mp_html_text(b, ph->name);
        buf_adds(b, "</td>");
        const struct mp_hist *lat[] = {&m->ttft_ms, &m->tpot_ms, &m->itl_ms, &m->e2e_ms};
        for (size_t k = 0; k < MP_ARRAY_SIZE(lat); k++) {
            struct mp_rep_dist d;
            mp_rep_dist(rep, lat[k], &d);
            if (!d.n)
                buf_adds(b, "<td class=n>—</td>");
            else
                buf_printf(b, "<td class=n>%.1f ± %.1f</td>", d.mean, d.std);
        }
        struct mp_rep_dist dr;
        mp_rep_dist(rep, &m->req_tok_s, &dr);
        num_td(b, dr.n ? dr.median : -1, 1);
        struct mp_rep_rates r;
        mp_rep_phase_rates(ph, &r);
        num_td(b, r.req_s, 2);
        num_td(b, r.out_tok_s, 1);
        num_td(b, r.total_tok_s, 1);
        buf_adds(b, "</tr>\n");
    }
    buf_adds(b, "</tbody></table></div>\n");
}

void mp_html_latency_table(struct buf *b, const struct mp_report *rep,
                           const struct mp_attempt_result *a)
{
    const double *pct;
    size_t npct = mp_rep_percentiles(rep, &pct);
    bool any = false;
    for (size_t i = 0; i < a->nphases; i++)
        any = any || a->phases[i].m.ttft_ms.n || a->phases[i].m.e2e_ms.n;
    if (!any) {
        buf_adds(b, "<p class=note>Latency per phase: no samples in the store.</p>\n");
        return;
    }
    static const char *const metric[] = { "TTFT", "TPOT", "ITL", "E2E latency" };
    buf_printf(b, "<h4>Latency per phase, attempt %d (ms)</h4>\n<div class=scroll><table class=lat>"
                  "<thead><tr><th rowspan=2>phase</th><th rowspan=2>requests</th>", a->index);
    for (size_t m = 0; m < MP_ARRAY_SIZE(metric); m++)
        buf_printf(b, "<th colspan=%zu>%s</th>", npct, metric[m]);
    buf_adds(b, "</tr><tr>");
    for (size_t m = 0; m < MP_ARRAY_SIZE(metric); m++)
        for (size_t k = 0; k < npct; k++)
            buf_printf(b, "<th>p%g</th>", pct[k]);
    buf_adds(b, "</tr></thead><tbody>\n");
    for (size_t i = 0; i < a->nphases; i++) {
        const struct mp_phase_result *ph = &a->phases[i];
        const struct mp_phase_metrics *m = &ph->m;
        if (!m->ttft_ms.n && !m->e2e_ms.n)
            continue;
        buf_adds(b, "<tr><td>");
        mp_html_text(b, ph->name);
        buf_printf(b, "</td><td class=n>%llu</td>",
                   (unsigned long long)MP_MAX(m->e2e_ms.n, m->ttft_ms.n));
        pct_cells(b, &m->ttft_ms, pct, npct);
        pct_cells(b, &m->tpot_ms, pct, npct);
        pct_cells(b, &m->itl_ms, pct, npct);
        pct_cells(b, &m->e2e_ms, pct, npct);
        buf_adds(b, "</tr>\n");
    }
    buf_adds(b, "</tbody></table></div>\n");
    throughput_table(b, rep, a);
}

void mp_html_srvm_table(struct buf *b, const struct mp_attempt_result *a, const char *cand)
{
    struct buf rows = BUF_INIT;
    for (size_t i = 0; i < a->nphases; i++) {
        struct mp_srvm_row r;
        if (!mp_rep_srvm_row(&a->phases[i], &r))
            continue;
        buf_adds(&rows, r.flag ? "<tr class=bad><td>" : "<tr><td>");
        mp_html_text(&rows, a->phases[i].name);
        buf_adds(&rows, "</td>");
        for (int col = 0; col < MP_SRVM_NCOLS; col++)
            buf_printf(&rows, "<td class=n>%s</td>", r.cell[col]);
        if (r.flag)
            buf_printf(&rows, "<td><b>%s</b></td></tr>\n", r.flag);
        else
            buf_adds(&rows, "<td>—</td></tr>\n");
    }
    if (rows.len) {
        buf_printf(b, "<h4>Server's view per phase, attempt %d (the engine's /metrics; ms)</h4>\n"
                      "<div class=scroll><table class=lat><thead><tr><th rowspan=2>phase</th>"
                      "<th colspan=3>engine TTFT</th><th>client TTFT</th><th colspan=2>ITL mean</th>"
                      "<th colspan=2>output tokens</th><th colspan=3>engine</th>"
                      "<th rowspan=2>flag</th></tr><tr><th>mean</th><th>p50</th><th>p99</th>"
                      "<th>p50</th><th>engine</th><th>client</th><th>engine</th><th>client</th>"
                      "<th>preemptions</th><th>max waiting</th><th>max KV cache %%</th></tr></thead><tbody>\n", a->index);
        buf_add(b, rows.data, rows.len);
        buf_adds(b, "</tbody></table></div>\n");
    }
    buf_release(&rows);
    struct mp_strv why = MP_STRV_INIT;
    mp_rep_srvm_unreadable(cand, a, &why);
    for (size_t i = 0; i < why.n; i++) {
        buf_adds(b, "<p class=note>");
        mp_html_text(b, why.v[i]);
        buf_adds(b, ".</p>\n");
    }
    mp_strv_release(&why);
}

void mp_html_distributions(struct buf *b, const struct mp_cand_report *c,
                           const struct mp_attempt_result *a)
{
    struct mp_hist ttft = MP_HIST_INIT, itl = MP_HIST_INIT;
    for (size_t i = 0; i < a->nphases; i++) {
        if (!strcmp(a->phases[i].name, "warmup") || !strcmp(a->phases[i].name, "quality"))
            continue;
        mp_hist_merge(&ttft, &a->phases[i].m.ttft_ms);
        mp_hist_merge(&itl, &a->phases[i].m.itl_ms);
    }
    buf_adds(b, "<div class=grid2>");
    char *t1 = xasprintf("Time to first token, %s", c->cand.name);
    char *t2 = xasprintf("Inter-token latency, %s", c->cand.name);
    mp_svg_hist(b, t1, "ms", &ttft, "#3b7dd8");
    mp_svg_hist(b, t2, "ms", &itl, "#16a085");
    free(t1);
    free(t2);
    buf_adds(b, "</div>\n");
    mp_hist_free(&ttft);
    mp_hist_free(&itl);
}

void mp_html_blocking_chart(struct buf *b, const struct mp_cand_report *c)
{
    bool blocked = false;
    for (size_t j = 0; j < c->nattempts; j++)
        blocked = blocked || c->attempts[j].launch_blocking;
    if (!blocked)
        return;
    struct mp_diag_rates dr; /* the rates the diagnosis divides (verdict/diagnose.h) */
    if (!mp_verdict_diag_rates(c, &dr)) {
        buf_adds(b, "<p class=note>Normal vs launch-blocking: no phase served requests on both "
                    "sides, so no decode rates to compare.</p>\n");
        return;
    }
    double rn = dr.normal, rb = dr.blocked;
    const char *phase = dr.phase;
    char *l0 = xasprintf("normal (attempt %d)", dr.normal_attempt);
    char *l1 = xasprintf("blocking (attempt %d)", dr.blocked_attempt);
    const char *labels[] = { l0, l1 };
    const double vals[] = { rn, rb };
    const char *colors[] = { "#3b7dd8", "#b45309" };
    static const char *const leg[] = { "normal", "#3b7dd8", "CUDA_LAUNCH_BLOCKING=1", "#b45309",
                                       NULL };
    double stored = c->diag.throughput_ratio;
    char *title = xasprintf("Per-request decode rate, normal vs launch-blocking (median of the %s "
                            "phase; ratio %.2fx)", phase, stored > 0 ? stored : rb / rn);
    buf_adds(b, "<div class=blocking>");
    mp_svg_hbars(b, title, "tok/s", labels, vals, colors, 2, leg);
    buf_printf(b, "<p class=note>The diagnosis divides these two: %.1f / %.1f tok/s = %.2fx", rb,
               rn, rb / rn);
    if (stored > 0 && fabs(stored - rb / rn) > 1e-6 * stored)
        buf_printf(b, " (<span class=bad>the stored ratio is %.2fx</span>)", stored);
    buf_adds(b, ".</p></div>\n");
    free(title);
    free(l0);
    free(l1);
}
