/* md_measure.c - report.md's measurement sections: the output check, the
 * workload every attempt sent, and the client latency and throughput table
 * (report/md_int.h). */
#include "compat.h"

#include <limits.h>
#include <string.h>

#include "escape.h"
#include "quality/quality.h"

#include "report/internal.h"
#include "report/md_int.h"

void mp_rmd_output_check(const struct mp_report *rep, struct buf *out)
{
    const struct mp_qcheck *q = &rep->qc;
    if (!q->status || !strcmp(q->status, "not-run"))
        return;
    const struct mp_sanity_set *set = mp_sanity_builtin();
    buf_adds(out, "## Output check\n\n");
    buf_printf(out, "Greedy answers to %zu sanity prompts (`data/sanity-prompts.json`), compared "
                    "across candidates", q->nprompts);
    if (q->ref >= 0) {
        buf_adds(out, "; agreement is measured against ");
        mp_rmd_cell(out, rep->c[q->ref].cand.name, 64);
    }
    buf_adds(out, ".");
    if (q->note) {
        buf_adds(out, " ");
        mp_rmd_cell(out, q->note, 600);
        buf_adds(out, ".");
    }
    buf_adds(out, "\n\n| candidate | result | passed | identical to reference | first differing token |\n"
                  "|---|---|---:|---:|---|\n");
    for (size_t i = 0; i < q->n; i++) {
        const struct mp_qcand_out *c = &q->c[i];
        if (c->status == MP_QC_NOT_RUN)
            continue;
        buf_adds(out, "| ");
        mp_rmd_cell(out, rep->c[i].cand.name, 64);
        buf_printf(out, " | %s | %zu/%zu | ", c->status == MP_QC_OK ? "pass" : "**garbage**",
                   c->passed, q->nprompts);
        if (c->ref >= 0)
            buf_printf(out, "%zu/%zu | ", c->identical, c->compared);
        else
            buf_adds(out, "(reference) | ");
        if (c->diff_prompt >= 0) {
            mp_rmd_cell(out, set->p[c->diff_prompt].id, 40);
            buf_printf(out, " token %ld: ", c->diff_token);
            mp_rmd_cell(out, c->diff_this, 60);
            buf_adds(out, " vs ");
            mp_rmd_cell(out, c->diff_ref, 60);
        } else {
            buf_adds(out, "—");
        }
        buf_adds(out, " |\n");
    }
    buf_adds(out, "\n");
    for (size_t i = 0; i < q->n; i++) {
        const struct mp_qcand_out *c = &q->c[i];
        if (c->status != MP_QC_GARBAGE)
            continue;
        buf_adds(out, "- ");
        mp_rmd_cell(out, rep->c[i].cand.name, 64);
        buf_adds(out, ": ");
        mp_rmd_cell(out, c->why, 400);
        buf_adds(out, "\n");
    }
    buf_adds(out, "\n");
}

/* "## Workload": what every attempt sent (report.json "workload"). */
void mp_rmd_workload(const struct mp_report *rep, struct buf *out)
{
    buf_adds(out, "## Workload\n\n");
    if (!rep->has_workload) {
        buf_adds(out, "The evidence store does not record the workload (a run by an older "
                      "moeprobe).\n\n");
        return;
    }
    const struct mp_workload *w = &rep->workload;
    buf_printf(out, "API `%s` (`%s`), at most %d output tokens a request%s, temperature %g; "
                    "prompts: ",
               w->chat ? "chat" : "completions", w->chat ? "/v1/chat/completions" : "/v1/completions",
               w->max_tokens, w->ignore_eos ? " (`ignore_eos`: exactly that many)" : "",
               w->temperature);
    if (w->input_tokens > 0)
        buf_printf(out, "about %d tokens each (the engine's count is in report.json "
                        "`total_input_tokens`).\n\n", w->input_tokens);
    else
        buf_printf(out, "the eight fixed ~15-token prompts%s.\n\n",
                   w->chat ? " (plus the chat template's tokens)" : "");
    buf_adds(out, "| phase | concurrency | requests | duration | input tokens | output tokens |\n"
                  "|---|---:|---:|---:|---:|---:|\n");
    /* every phase an attempt ran: the workload's, the diagnosis' continuation, the output check */
    struct mp_rep_wphase wp[MP_MAX_PHASES + 2];
    size_t nwp = mp_rep_workload_phases(rep, wp, MP_ARRAY_SIZE(wp));
    for (size_t i = 0; i < nwp; i++) {
        const struct mp_rep_wphase *s = &wp[i];
        buf_adds(out, "| ");
        mp_rmd_cell(out, s->name, 32);
        if (s->diagnosis_only)
            buf_adds(out, " (diagnosis run only)");
        buf_printf(out, " | %d | ", s->level);
        if (s->requests >= 0 && s->requests < INT_MAX)
            buf_printf(out, "%d | ", s->requests);
        else if (s->requests < 0)
            buf_adds(out, "until enough succeeded | "); /* the diagnosis' continuation */
        else
            buf_adds(out, "until the duration | "); /* a soak's timed phase */
        if (s->duration_s > 0)
            buf_printf(out, "%.0f s", s->duration_s);
        else
            buf_adds(out, "—");
        if (!strcmp(s->name, "quality"))
            buf_adds(out, " | quality prompts");
        else if (s->input_tokens > 0)
            buf_printf(out, " | %d", s->input_tokens);
        else
            buf_printf(out, " | %s", mp_rep_fixed_prompt_cell(w));
        buf_printf(out, " | %d%s |\n", s->max_tokens,
                   !strcmp(s->name, "quality") ? " (greedy, EOS honoured)"
                   : s->ignore_eos            ? ""
                                              : " (EOS honoured)");
    }
    char dg[512];
    mp_rep_diagnosis_phases(rep, dg, sizeof(dg));
    if (dg[0]) {
        buf_adds(out, "\nThe diagnosis' run (`CUDA_LAUNCH_BLOCKING=1`) ran: ");
        mp_rmd_cell(out, dg, 512);
        buf_adds(out, ".\n");
    }
    buf_adds(out, "\n");
}

/* "## Latency and throughput": per candidate and phase, the client metrics
 * at the report's percentiles (docs/metrics.md); nothing when no candidate
 * ran a phase. */
void mp_rmd_latency(const struct mp_report *rep, struct buf *out)
{
    bool any = false;
    for (size_t i = 0; i < rep->n && !any; i++) {
        const struct mp_attempt_result *np = mp_rep_numbers_attempt(rep, &rep->c[i]);
        any = np && np->nphases > 0;
    }
    if (!any)
        return;
    const double *p;
    size_t npc = mp_rep_percentiles(rep, &p);
    struct buf pw = BUF_INIT; /* "p50 / p90 / p99" */
    for (size_t k = 0; k < npc; k++) {
        char w[24];
        mp_rep_pct_word(p[k], w, sizeof(w));
        buf_printf(&pw, "%s%s", k ? " / " : "", w);
    }
    buf_adds(out, "## Latency and throughput\n\n");
    buf_printf(out, "Client-side, per candidate and phase, with `vllm bench serve`'s definitions "
                    "(docs/metrics.md); latencies in ms at %s (histograms: within 1 %%). "
                    "report.json has the mean and standard deviation too.\n\n", pw.data);
    buf_adds(out, "| candidate | phase | concurrency | ok |");
    for (int m = MP_REP_TTFT; m <= MP_REP_E2EL; m++)
        buf_printf(out, " %s ms (%s) |", mp_rep_metrics[m].label, pw.data);
    buf_adds(out, " req/s | output tok/s | total tok/s |\n|---|---|---:|---:|");
    for (int m = MP_REP_TTFT; m <= MP_REP_E2EL + 3; m++)
        buf_adds(out, "---:|");
    buf_adds(out, "\n");
    buf_release(&pw);
    for (size_t i = 0; i < rep->n; i++) {
        const struct mp_cand_report *c = &rep->c[i];
        const struct mp_attempt_result *np = mp_rep_numbers_attempt(rep, c);
        for (size_t k = 0; np && k < np->nphases; k++) {
            const struct mp_phase_result *ph = &np->phases[k];
            buf_adds(out, "| ");
            mp_rmd_cell(out, c->cand.name, 64);
            if (np != mp_cand_primary(c))
                buf_adds(out, " (shared)");
            buf_adds(out, " | ");
            mp_rmd_cell(out, ph->name, 32);
            buf_printf(out, " | %d | %d |", ph->level, ph->ok);
            for (int m = MP_REP_TTFT; m <= MP_REP_E2EL; m++) {
                struct mp_rep_dist d;
                mp_rep_dist(rep, mp_rep_metric_hist(ph, (enum mp_rep_metric)m), &d);
                buf_addc(out, ' ');
                for (size_t q = 0; d.n && q < npc; q++) {
                    buf_adds(out, q ? " / " : "");
                    mp_rmd_fig(out, d.pct[q]);
                }
                buf_adds(out, d.n ? " |" : "— |");
            }
            struct mp_rep_rates r;
            mp_rep_phase_rates(ph, &r);
            const double rates[] = {r.req_s, r.out_tok_s, r.total_tok_s};
            for (size_t q = 0; q < MP_ARRAY_SIZE(rates); q++) {
                buf_addc(out, ' ');
                if (rates[q] >= 0)
                    mp_rmd_fig(out, rates[q]);
                else
                    buf_adds(out, "—");
                buf_adds(out, " |");
            }
            buf_adds(out, "\n");
        }
    }
    buf_adds(out, "\n");
}
