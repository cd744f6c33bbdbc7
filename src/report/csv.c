/* csv.c - `moeprobe report --format csv`: one row per candidate and phase
 * with the client metrics of report.json (docs/metrics.md "CSV"), for
 * people who plot in a spreadsheet. RFC 4180: CRLF line ends, a cell in
 * double quotes when it holds a comma, a quote or a line break, quotes
 * doubled. Text cells are outside text (candidate names and knobs from the
 * command line, backend names from the engine's log): controls are shown
 * escaped as on the terminal (escape.h), and a cell that would start with
 * = + - @ (or a tab or CR) gets a leading ' so that a spreadsheet shows it
 * as text instead of running it as a formula. The last columns say which
 * candidate's numbers a shared result shows (shared_with) and what every
 * row is a result of (the run, its start, the fingerprint). */
#include "report/report.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "escape.h"

#include "report/internal.h"

/* s as one text cell (NULL: empty). */
static void csv_text(struct buf *out, const char *s)
{
    if (!s || !*s)
        return;
    struct buf t = BUF_INIT;
    mp_term_esc(&t, s, strlen(s), 0);
    const char *v = t.data ? t.data : "";
    bool guard = strchr("=+-@\t\r", v[0]) != NULL && v[0];
    bool quote = strpbrk(v, ",\"\r\n") != NULL;
    if (quote)
        buf_addc(out, '"');
    if (guard)
        buf_addc(out, '\'');
    for (const char *p = v; *p; p++) {
        if (*p == '"')
            buf_addc(out, '"');
        buf_addc(out, *p);
    }
    if (quote)
        buf_addc(out, '"');
    buf_release(&t);
}

/* A count cell; v < 0 (unknown) is empty. */
static void csv_count(struct buf *out, double v)
{
    if (v >= 0 && isfinite(v))
        buf_printf(out, "%.0f", v);
}

/* A number cell; v < 0 (unknown) is empty. */
static void csv_num(struct buf *out, double v)
{
    if (v >= 0 && isfinite(v))
        buf_printf(out, "%.3f", v);
}

static void csv_header(const struct mp_report *rep, struct buf *out)
{
    buf_adds(out, "candidate,knobs,verdict,moe_backend,phase,concurrency,planned,completed,failed,"
                  "duration_s,total_input_tokens,total_output_tokens,request_throughput,"
                  "output_throughput,total_token_throughput");
    const double *p;
    size_t np = mp_rep_percentiles(rep, &p);
    for (int m = 0; m < MP_REP_NMETRICS; m++) {
        const char *k = mp_rep_metrics[m].key;
        buf_printf(out, ",mean_%s,median_%s,std_%s", k, k, k);
        for (size_t i = 0; i < np; i++) {
            char w[24];
            mp_rep_pct_word(p[i], w, sizeof(w));
            buf_printf(out, ",%s_%s", w, k);
        }
    }
    /* which candidate's numbers a shared result shows, and what they are a
     * result of: the run and its fingerprint (added at the end: the columns
     * before keep their places) */
    buf_adds(out, ",shared_with,run,run_started,gpu,compute_capability,driver,cuda,engine,"
                  "engine_version,model\r\n");
}

/* The cells after the metrics: the candidate whose numbers a shared result
 * shows, the run and its fingerprint. */
static void csv_run(const struct mp_report *rep, const struct mp_cand_report *c, struct buf *out)
{
    const struct mp_attempt_result *p = mp_cand_primary(c);
    const char *cells[] = {p && p->outcome == MP_OUT_SAME_CONFIG ? p->same_as : NULL,
                           rep->run_dir, rep->started, rep->fp.gpu, rep->fp.compute_capability,
                           rep->fp.driver, rep->fp.cuda, rep->fp.engine, rep->fp.engine_version,
                           rep->fp.model};
    for (size_t i = 0; i < MP_ARRAY_SIZE(cells); i++) {
        buf_addc(out, ',');
        csv_text(out, cells[i]);
    }
}

/* The phase part of a row: its cells, each after a comma; ph NULL: empty. */
static void csv_phase(const struct mp_report *rep, const struct mp_phase_result *ph, struct buf *out)
{
    const double *p;
    size_t np = mp_rep_percentiles(rep, &p);
    if (!ph) {
        size_t cells = 11 + MP_REP_NMETRICS * (3 + np);
        for (size_t i = 0; i < cells; i++)
            buf_addc(out, ',');
        return;
    }
    struct mp_rep_rates r;
    mp_rep_phase_rates(ph, &r);
    buf_addc(out, ',');
    csv_text(out, ph->name);
    buf_printf(out, ",%d,%d,%d,%d,", ph->level, ph->planned, ph->ok, ph->failed);
    csv_num(out, ph->wall_s);
    buf_addc(out, ',');
    csv_count(out, r.input_tokens);
    buf_addc(out, ',');
    csv_count(out, ph->ok > 0 ? (double)ph->tokens : -1);
    const double rates[] = {r.req_s, r.out_tok_s, r.total_tok_s};
    for (size_t i = 0; i < MP_ARRAY_SIZE(rates); i++) {
        buf_addc(out, ',');
        csv_num(out, rates[i]);
    }
    for (int m = 0; m < MP_REP_NMETRICS; m++) {
        struct mp_rep_dist d;
        mp_rep_dist(rep, mp_rep_metric_hist(ph, (enum mp_rep_metric)m), &d);
        const double fixed[] = {d.mean, d.median, d.std};
        for (size_t i = 0; i < MP_ARRAY_SIZE(fixed); i++) {
            buf_addc(out, ',');
            csv_num(out, d.n ? fixed[i] : -1);
        }
        for (size_t i = 0; i < np; i++) {
            buf_addc(out, ',');
            csv_num(out, d.n ? d.pct[i] : -1);
        }
    }
}

void mp_report_csv(const struct mp_report *rep, struct buf *out)
{
    csv_header(rep, out);
    for (size_t i = 0; i < rep->n; i++) {
        const struct mp_cand_report *c = &rep->c[i];
        const struct mp_attempt_result *p = mp_cand_primary(c);
        /* a shared result shows its representative's numbers, as report.json does */
        const struct mp_attempt_result *np = mp_rep_numbers_attempt(rep, c);
        char *knobs = mp_candidate_knobs_str(&c->cand);
        size_t rows = np && np->nphases ? np->nphases : 1;
        for (size_t k = 0; k < rows; k++) {
            csv_text(out, c->cand.name);
            buf_addc(out, ',');
            csv_text(out, knobs);
            buf_addc(out, ',');
            csv_text(out, mp_cand_verdict_label(c));
            buf_addc(out, ',');
            csv_text(out, p ? p->res.moe_backend : NULL);
            csv_phase(rep, np && np->nphases ? &np->phases[k] : NULL, out);
            csv_run(rep, c, out);
            buf_adds(out, "\r\n");
        }
        free(knobs);
    }
}
