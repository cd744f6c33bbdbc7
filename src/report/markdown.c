/* markdown.c - report.md and the terminal summary: mp_report_markdown,
 * mp_report_summary, mp_report_resume_command. */
#include "report/report.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "escape.h"
#include "quality/quality.h"
#include "report/correct.h"
#include "secret.h"
#include "version.h"
#include "verdict/recommend.h"
#include "verdict/stats.h"
#include "xalloc.h"

#include "report/internal.h"
#include "report/srvm.h"

/* ---------- Markdown ---------- */

/* Outside text in Markdown (escape.h): table cells, list items, headings;
 * every field from the engine, the checkpoint or the store goes through it. */
static void md_cell(struct buf *b, const char *s, size_t max)
{
    mp_md_text(b, s, max, 0);
}

/* md_cell of each word of v, separated by ", ". */
static void md_list(struct buf *b, const struct mp_strv *v, size_t max)
{
    for (size_t k = 0; k < v->n; k++) {
        buf_adds(b, k ? ", " : "");
        md_cell(b, v->v[k], max);
    }
}

static void md_num(struct buf *b, double v)
{
    if (v < 0)
        buf_adds(b, "—");
    else
        buf_printf(b, "%.1f", v);
}

static const char *rel_dir(const struct mp_report *rep, const char *dir)
{
    size_t rl = strlen(rep->run_dir);
    if (!strncmp(dir, rep->run_dir, rl) && dir[rl] == '/')
        return dir + rl + 1;
    return dir;
}

static void md_output_check(const struct mp_report *rep, struct buf *out)
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
        md_cell(out, rep->c[q->ref].cand.name, 64);
    }
    buf_adds(out, ".");
    if (q->note) {
        buf_adds(out, " ");
        md_cell(out, q->note, 600);
        buf_adds(out, ".");
    }
    buf_adds(out, "\n\n| candidate | result | passed | identical to reference | first differing token |\n"
                  "|---|---|---:|---:|---|\n");
    for (size_t i = 0; i < q->n; i++) {
        const struct mp_qcand_out *c = &q->c[i];
        if (c->status == MP_QC_NOT_RUN)
            continue;
        buf_adds(out, "| ");
        md_cell(out, rep->c[i].cand.name, 64);
        buf_printf(out, " | %s | %zu/%zu | ", c->status == MP_QC_OK ? "pass" : "**garbage**",
                   c->passed, q->nprompts);
        if (c->ref >= 0)
            buf_printf(out, "%zu/%zu | ", c->identical, c->compared);
        else
            buf_adds(out, "(reference) | ");
        if (c->diff_prompt >= 0) {
            md_cell(out, set->p[c->diff_prompt].id, 40);
            buf_printf(out, " token %ld: ", c->diff_token);
            md_cell(out, c->diff_this, 60);
            buf_adds(out, " vs ");
            md_cell(out, c->diff_ref, 60);
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
        md_cell(out, rep->c[i].cand.name, 64);
        buf_adds(out, ": ");
        md_cell(out, c->why, 400);
        buf_adds(out, "\n");
    }
    buf_adds(out, "\n");
}

char *mp_report_resume_command(const struct mp_report *rep)
{
    const char *sub = rep->subcommand ? rep->subcommand : "qualify";
    if (strcmp(sub, "qualify") != 0 && strcmp(sub, "diagnose") != 0)
        return NULL;
    char *abs = realpath(rep->run_dir, NULL);
    struct buf b = BUF_INIT;
    buf_printf(&b, "moeprobe %s --resume ", sub);
    buf_add_shell_word(&b, abs ? abs : rep->run_dir);
    free(abs);
    return buf_detach(&b, NULL);
}

/* s as a Markdown code span (escape.h): a fence longer than any run of
 * backticks in it, control characters shown escaped. */
static void md_code(struct buf *b, const char *s)
{
    mp_md_code(b, s, SIZE_MAX, 0);
}

/* The banner of a run that did not finish: how it ended, the unfinished
 * candidates, and the command that continues it. */
static void md_incomplete_banner(const struct mp_report *rep, struct buf *out)
{
    if (!mp_report_incomplete(rep))
        return;
    size_t nunf = mp_report_nunfinished(rep);
    buf_adds(out, rep->interrupted ? "> **This run was interrupted** (by a signal) before it "
                                     "finished"
                                   : "> **This run did not finish** (moeprobe was killed, or "
                                     "the run is still going)");
    if (nunf) {
        buf_printf(out, ": %zu of %zu candidate%s unfinished: ", nunf, rep->n,
                   rep->n == 1 ? " is" : "s are");
        bool first = true;
        for (size_t i = 0; i < rep->n; i++) {
            if (!rep->c[i].unfinished)
                continue;
            buf_adds(out, first ? "" : ", ");
            md_cell(out, rep->c[i].cand.name, 64);
            first = false;
        }
        buf_adds(out, " (no verdict yet; not counted below)");
    }
    buf_adds(out, ".\n>\n");
    char *cmd = mp_report_resume_command(rep);
    if (cmd) {
        buf_adds(out, "> Continue it with ");
        md_code(out, cmd);
        buf_adds(out, " (finished candidates are kept).\n\n");
    } else {
        buf_adds(out, "> A ");
        md_cell(out, rep->subcommand, 32);
        buf_adds(out, " run cannot be resumed: start it again with a new `--out DIR`.\n\n");
    }
    free(cmd);
}

/* " (knob delivery unverified: A, B)" after a verdict, when some knob's
 * delivery could not be checked. */
static void md_unverified_note(struct buf *out, const struct mp_attempt_result *p)
{
    bool any = false;
    for (size_t j = 0; p && j < p->ndlv; j++) {
        if (!mp_dlv_unverified_note(p, j))
            continue;
        buf_adds(out, any ? ", " : " (knob delivery unverified: ");
        md_cell(out, p->dlv[j].knob, 80);
        any = true;
    }
    if (any)
        buf_adds(out, ")");
}

/* The knob delivery lines of a candidate's details. */
static void md_delivery(struct buf *out, const struct mp_attempt_result *p)
{
    if (!p->ndlv)
        return;
    buf_adds(out, "- knob delivery:\n");
    for (size_t j = 0; j < p->ndlv; j++) {
        buf_adds(out, "  - `");
        md_cell(out, p->dlv[j].knob, 200);
        buf_printf(out, "` **%s**: ", mp_dlv_status_name(p->dlv[j].status));
        md_cell(out, p->dlv[j].evidence, 400);
        buf_adds(out, "\n");
    }
}

/* A latency or rate in a table: 3 significant figures or so. */
static void md_fig(struct buf *b, double v)
{
    buf_printf(b, v < 10 ? "%.2f" : v < 100 ? "%.1f" : "%.0f", v);
}

/* "## Workload": what every attempt sent (report.json "workload"). */
static void md_workload(const struct mp_report *rep, struct buf *out)
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
        md_cell(out, s->name, 32);
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
        md_cell(out, dg, 512);
        buf_adds(out, ".\n");
    }
    buf_adds(out, "\n");
}

/* "## Latency and throughput": per candidate and phase, the client metrics
 * at the report's percentiles (docs/metrics.md); nothing when no candidate
 * ran a phase. */
static void md_latency(const struct mp_report *rep, struct buf *out)
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
            md_cell(out, c->cand.name, 64);
            if (np != mp_cand_primary(c))
                buf_adds(out, " (shared)");
            buf_adds(out, " | ");
            md_cell(out, ph->name, 32);
            buf_printf(out, " | %d | %d |", ph->level, ph->ok);
            for (int m = MP_REP_TTFT; m <= MP_REP_E2EL; m++) {
                struct mp_rep_dist d;
                mp_rep_dist(rep, mp_rep_metric_hist(ph, (enum mp_rep_metric)m), &d);
                buf_addc(out, ' ');
                for (size_t q = 0; d.n && q < npc; q++) {
                    buf_adds(out, q ? " / " : "");
                    md_fig(out, d.pct[q]);
                }
                buf_adds(out, d.n ? " |" : "— |");
            }
            struct mp_rep_rates r;
            mp_rep_phase_rates(ph, &r);
            const double rates[] = {r.req_s, r.out_tok_s, r.total_tok_s};
            for (size_t q = 0; q < MP_ARRAY_SIZE(rates); q++) {
                buf_addc(out, ' ');
                if (rates[q] >= 0)
                    md_fig(out, rates[q]);
                else
                    buf_adds(out, "—");
                buf_adds(out, " |");
            }
            buf_adds(out, "\n");
        }
    }
    buf_adds(out, "\n");
}

void mp_report_markdown(const struct mp_report *rep, struct buf *out)
{
    bool resolve_map = mp_report_is_resolve_map(rep);
    buf_adds(out, resolve_map ? "# moeprobe resolve report: which road leads where\n\n"
                   : rep->subcommand && !strcmp(rep->subcommand, "soak") ? "# moeprobe soak report\n\n" : "# moeprobe qualify report\n\n");
    md_incomplete_banner(rep, out);
    buf_adds(out, "| | |\n|---|---|\n");
    buf_adds(out, "| GPU | ");
    md_cell(out, rep->fp.gpu, 120);
    if (rep->fp.compute_capability) {
        buf_adds(out, " (compute capability ");
        md_cell(out, rep->fp.compute_capability, 16);
        buf_adds(out, ")");
    }
    buf_adds(out, " |\n| engine | ");
    md_cell(out, rep->fp.engine, 40);
    buf_adds(out, " ");
    md_cell(out, rep->fp.engine_version, 60);
    buf_adds(out, " |\n| model | ");
    md_cell(out, rep->fp.model, 200);
    buf_adds(out, " |\n| host | ");
    md_cell(out, rep->fp.host_arch, 120);
    buf_adds(out, " |\n| moeprobe | ");
    md_cell(out, rep->moeprobe_version, 40);
    buf_adds(out, " |\n");
    size_t starts = 0;
    for (size_t i = 0; i < rep->n; i++)
        starts += mp_rep_cand_cost(&rep->c[i]).starts;
    double wall = mp_rep_iso_span(rep->started, rep->finished);
    if (wall >= 0)
        buf_printf(out, "| run | %.0f s wall time, %zu engine start%s |\n", wall, starts,
                   starts == 1 ? "" : "s");
    if (rep->checkpoint_summary) {
        buf_adds(out, "| checkpoint | ");
        md_cell(out, rep->checkpoint_summary, 400);
        buf_adds(out, " |\n");
    }
    buf_adds(out, "\n");
    if (rep->checkpoint_notes.n) {
        buf_adds(out, "What the checkpoint decides (`moeprobe inspect`):\n\n");
        for (size_t i = 0; i < rep->checkpoint_notes.n; i++) {
            buf_adds(out, "- ");
            md_cell(out, rep->checkpoint_notes.v[i], 600);
            buf_adds(out, "\n");
        }
        buf_adds(out, "\n");
    }

    buf_adds(out, resolve_map ? "## Resolution only\n\n" : "## Recommendation\n\n");
    if (resolve_map) {
        buf_adds(out, "Each candidate's engine was started and stopped as soon as its kernel "
                      "selections were in the log (`moeprobe resolve`): no load was driven, so "
                      "nothing is recommended. Knob sets that lead to the same kernels are under "
                      "\"Same destination, different road\"; start-up failures are in the table.\n\n");
    } else if (rep->recommended >= 0) {
        const struct mp_cand_report *c = &rep->c[rep->recommended];
        char *knobs = mp_candidate_knobs_str(&c->cand);
        buf_adds(out, "**");
        md_cell(out, c->cand.name, 64);
        buf_adds(out, "**");
        if (knobs[0]) {
            buf_adds(out, " (");
            mp_md_code(out, knobs, 400, 0);
            buf_adds(out, ")");
        }
        buf_adds(out, ": ");
        md_cell(out, rep->recommendation_why, 400);
        buf_adds(out, ".\n\n");
        free(knobs);
    } else {
        buf_adds(out, mp_report_nunfinished(rep) ? "No finished candidate qualified"
                                                 : "No candidate qualified");
        for (size_t i = 0; i < rep->learned.n; i++) {
            buf_adds(out, i ? "; " : ": ");
            md_cell(out, rep->learned.v[i], 300);
        }
        buf_adds(out, ".\n\n");
    }

    buf_adds(out, "## Candidates\n\n");
    buf_adds(out, "| candidate | knobs | resolved MoE backend | verdict | seq tok/s | conc tok/s | "
                  "failures/requests | evidence |\n");
    buf_adds(out, "|---|---|---|---|---:|---|---:|---|\n");
    for (size_t i = 0; i < rep->n; i++) {
        const struct mp_cand_report *c = &rep->c[i];
        const struct mp_attempt_result *p = mp_cand_primary(c);
        char *knobs = mp_candidate_knobs_str(&c->cand);
        buf_adds(out, "| ");
        md_cell(out, c->cand.name, 64);
        buf_adds(out, " | ");
        if (knobs[0]) {
            mp_md_code(out, knobs, 200, MP_MD_TABLE);
        } else {
            buf_adds(out, "(none)");
        }
        buf_adds(out, " | ");
        md_cell(out, p && p->res.moe_backend ? p->res.moe_backend : (p ? "(not logged)" : NULL), 64);
        buf_adds(out, " | ");
        md_cell(out, mp_cand_verdict_label(c), 32);
        md_unverified_note(out, p);
        buf_adds(out, " | ");
        const struct mp_attempt_result *np = mp_rep_numbers_attempt(rep, c);
        md_num(out, mp_rep_seq_tok_s(np));
        if (np && np != p)
            buf_adds(out, " (shared)");
        buf_adds(out, " | ");
        bool any = false;
        for (size_t k = 0; np && k < np->nphases; k++) {
            if ((!strncmp(np->phases[k].name, "concurrency-", 12) || !strcmp(np->phases[k].name, "soak")) && np->phases[k].ok > 0) {
                buf_printf(out, "%s%d: %.1f", any ? ", " : "", np->phases[k].level,
                           np->phases[k].tok_s);
                any = true;
            }
        }
        if (!any)
            buf_adds(out, "—");
        unsigned long ok = 0, failed = 0;
        for (size_t j = 0; j < c->nattempts; j++) {
            if (!c->attempts[j].launch_blocking) {
                ok += c->attempts[j].req_ok;
                failed += c->attempts[j].req_failed;
            }
        }
        buf_printf(out, " | %lu/%lu | ", failed, ok + failed);
        const struct mp_attempt_result *ev = p;
        long line = p ? (p->fail_line ? p->fail_line : p->res.moe_backend_line) : 0;
        if (p && !c->verdict && p->fail_class && !strcmp(p->fail_class, MP_FAIL_EVIDENCE)) {
            md_cell(out, rel_dir(rep, ev->dir), 200);
            buf_adds(out, " (incomplete)");
        } else if (ev && line > 0) {
            md_cell(out, rel_dir(rep, ev->dir), 200);
            buf_printf(out, "/server.log:%ld", line);
        } else {
            buf_adds(out, "—");
        }
        buf_adds(out, " |\n");
        free(knobs);
    }
    buf_adds(out, "\n");

    if (rep->ngroups) {
        buf_adds(out, "## Same destination, different road\n\n");
        for (size_t i = 0; i < rep->ngroups; i++) {
            const struct mp_group *g = &rep->groups[i];
            buf_adds(out, "- ");
            md_cell(out, g->moe_backend, 64);
            buf_adds(out, ": ");
            md_list(out, &g->candidates, 64);
            buf_adds(out, "\n");
        }
        buf_adds(out, "\n");
    }
    if (rep->nnoop) {
        buf_adds(out, "## Knobs that changed nothing\n\n");
        for (size_t i = 0; i < rep->nnoop; i++) {
            const struct mp_noop *k = &rep->noop[i];
            buf_adds(out, "- ");
            mp_md_code(out, k->knob, 200, 0);
            buf_adds(out, " (candidate ");
            md_cell(out, k->candidate, 64);
            buf_adds(out, ") resolved exactly like ");
            md_cell(out, k->resolved_like, 64);
            if (k->engine_warning) {
                buf_adds(out, "; the engine said: \"");
                md_cell(out, k->engine_warning, 200);
                buf_adds(out, "\"");
            }
            if (k->delivery && strcmp(k->delivery, "verified") != 0) {
                buf_adds(out, "; its delivery to the engine is ");
                md_cell(out, k->delivery, 16);
                if (k->delivery_evidence) {
                    buf_adds(out, " (");
                    md_cell(out, k->delivery_evidence, 300);
                    buf_adds(out, ")");
                }
            }
            buf_adds(out, "\n");
        }
        buf_adds(out, "\n");
    }

    md_output_check(rep, out);
    mp_rep_correct_md(rep, out); /* report/correct.h */
    if (!resolve_map)
        md_workload(rep, out);
    md_latency(rep, out);
    mp_rep_srvm_markdown(rep, out); /* the engine's own view, beside it (report/srvm.c) */

    struct mp_strv cmp = MP_STRV_INIT;
    mp_rep_comparability(rep, &cmp);
    if (cmp.n) {
        buf_adds(out, "## Are the numbers comparable?\n\n");
        for (size_t i = 0; i < cmp.n; i++) {
            buf_adds(out, "- ");
            md_cell(out, cmp.v[i], 400);
            buf_adds(out, "\n");
        }
        buf_adds(out, "\n");
    }
    mp_strv_release(&cmp);

    buf_adds(out, "## Details\n\n");
    for (size_t i = 0; i < rep->n; i++) {
        const struct mp_cand_report *c = &rep->c[i];
        buf_adds(out, "### ");
        md_cell(out, c->cand.name, 64);
        buf_adds(out, ": ");
        md_cell(out, mp_cand_verdict_label(c), 32);
        buf_adds(out, "\n\n");
        mp_md_text(out, c->why, 1000, MP_MD_START);
        buf_adds(out, "\n\n");
        const struct mp_attempt_result *p = mp_cand_primary(c);
        if (p) {
            buf_adds(out, "- resolved: MoE ");
            md_cell(out, p->res.moe_backend, 64);
            if (p->res.moe_candidates.n) {
                buf_adds(out, " out of [");
                md_list(out, &p->res.moe_candidates, 64);
                buf_adds(out, "]");
            }
            buf_adds(out, "; dense NVFP4 ");
            md_cell(out, p->res.linear_kernel, 80);
            if (p->res.linear_kernels.n) {
                buf_adds(out, "; dense kernels [");
                md_list(out, &p->res.linear_kernels, 80);
                buf_adds(out, "]");
            }
            if (p->res.unquantized_moe_backend) {
                buf_adds(out, "; unquantized MoE ");
                md_cell(out, p->res.unquantized_moe_backend, 64);
            }
            buf_adds(out, "; attention ");
            md_cell(out, p->res.attention_backend, 64);
            buf_adds(out, "\n");
            if (p->res.unknown_env.n) {
                buf_adds(out, "- the engine does not know: ");
                md_list(out, &p->res.unknown_env, 80);
                buf_adds(out, "\n");
            }
            md_delivery(out, p);
        }
        for (size_t j = 0; j < c->nattempts; j++) {
            const struct mp_attempt_result *a = &c->attempts[j];
            if (a->outcome == MP_OUT_RESOLVED) {
                buf_adds(out, "- attempt ");
                mp_md_code(out, rel_dir(rep, a->dir), 200, 0);
                buf_printf(out, ": stopped after %.1f s, once resolved (no load)", a->ready_s);
            } else if (a->outcome == MP_OUT_SAME_CONFIG) {
                buf_adds(out, "- attempt ");
                mp_md_code(out, rel_dir(rep, a->dir), 200, 0);
                buf_printf(out, ": stopped after %.1f s, once resolved: the same configuration as ",
                           a->ready_s);
                mp_md_code(out, a->same_as ? a->same_as : "?", 64, 0);
                buf_adds(out, " (shared result)");
            } else {
                buf_adds(out, "- attempt ");
                mp_md_code(out, rel_dir(rep, a->dir), 200, 0);
                buf_printf(out, "%s: %s, %lu ok / %lu failed, ready in %.1f s",
                           a->launch_blocking ? " (CUDA_LAUNCH_BLOCKING=1)" : "",
                           mp_outcome_name(a->outcome), a->req_ok, a->req_failed, a->ready_s);
            }
            if (a->fail_class) {
                buf_adds(out, "; ");
                md_cell(out, a->fail_class, 40);
                if (a->fail_message) {
                    buf_adds(out, ": ");
                    md_cell(out, a->fail_message, 300);
                }
                if (a->fail_line > 0)
                    buf_printf(out, " (`server.log:%ld`)", a->fail_line);
            }
            if (a->sites.n) {
                buf_adds(out, "; sites: ");
                md_list(out, &a->sites, 120);
            }
            buf_adds(out, "\n");
        }
        if (c->diag.done && c->diag.reasoning) {
            buf_adds(out, "- diagnosis: ");
            md_cell(out, c->diag.reasoning, 600);
            buf_adds(out, "\n");
        }
        struct mp_rep_cost k = mp_rep_cand_cost(c);
        buf_printf(out, "- cost: %zu engine start%s, %.1f s of engine time, %.1f s driving load\n",
                   k.starts, k.starts == 1 ? "" : "s", k.engine_s, k.workload_s);
        const struct mp_attempt_result *gp = mp_cand_primary(c);
        if (gp && gp->gpu.samples && gp->gpu.sm_clock_mhz.n) {
            const struct mp_gpu_telemetry *g = &gp->gpu;
            buf_printf(out, "- GPU (first attempt, %zu samples): SM clock median %.0f MHz (%.0f-%.0f)",
                       g->samples, g->sm_clock_mhz.median, g->sm_clock_mhz.min, g->sm_clock_mhz.max);
            if (g->temperature_c.n)
                buf_printf(out, ", %.0f-%.0f °C", g->temperature_c.min, g->temperature_c.max);
            if (g->power_w.n)
                buf_printf(out, ", power median %.0f W", g->power_w.median);
            if (g->throttle_reasons) {
                char words[256];
                mp_gpu_reasons_str(g->throttle_reasons, words, sizeof(words));
                buf_printf(out, "; throttled: %s", words);
            }
            buf_adds(out, "\n");
        } else if (gp && gp->workload_s > 0) {
            buf_adds(out, "- GPU: not sampled (no NVML)\n");
        }
        buf_adds(out, "\n");
    }
}

/* Append s for the terminal (escape.h): controls shown, not sent. */
static void term_add(struct buf *b, const char *s)
{
    if (s)
        mp_term_esc(b, s, strlen(s), 0);
}

/* term_add padded with spaces to width bytes. */
static void term_pad(struct buf *b, const char *s, size_t width)
{
    size_t before = b->len;
    term_add(b, s);
    for (size_t n = b->len - before; n < width; n++)
        buf_addc(b, ' ');
}

void mp_report_summary(const struct mp_report *rep, struct buf *out)
{
    for (size_t i = 0; i < rep->n; i++) {
        const struct mp_cand_report *c = &rep->c[i];
        const struct mp_attempt_result *p = mp_cand_primary(c);
        buf_adds(out, "  ");
        term_pad(out, c->cand.name, 20);
        buf_addc(out, ' ');
        term_pad(out, mp_cand_verdict_label(c), 16);
        buf_addc(out, ' ');
        term_pad(out, p && p->res.moe_backend ? p->res.moe_backend : "-", 20);
        buf_addc(out, ' ');
        double s = mp_rep_seq_tok_s(p);
        if (p && p->outcome == MP_OUT_SAME_CONFIG) {
            buf_adds(out, "shared with ");
            term_add(out, p->same_as ? p->same_as : "?");
        } else if (s >= 0) {
            buf_printf(out, "%8.1f tok/s seq", s);
        }
        buf_adds(out, "\n");
    }
    if (rep->recommended >= 0) {
        char *knobs = mp_candidate_knobs_str(&rep->c[rep->recommended].cand);
        buf_adds(out, "recommendation: ");
        term_add(out, rep->c[rep->recommended].cand.name);
        if (knobs[0]) {
            buf_adds(out, " (");
            term_add(out, knobs);
            buf_adds(out, ")");
        }
        buf_printf(out, ", by %s (--objective %s)\n", mp_verdict_objective_label(rep->objective),
                   mp_objective_name(rep->objective));
        free(knobs);
    } else if (mp_report_is_resolve_map(rep)) {
        buf_adds(out, "resolution only: no load was driven, nothing is recommended\n");
    } else {
        buf_adds(out, mp_report_nunfinished(rep) ? "no finished candidate qualified"
                                                 : "no candidate qualified");
        for (size_t i = 0; i < rep->learned.n; i++) {
            buf_adds(out, i ? "; " : ": ");
            term_add(out, rep->learned.v[i]);
        }
        buf_adds(out, "\n");
    }
    if (mp_report_incomplete(rep)) {
        char *cmd = mp_report_resume_command(rep);
        buf_printf(out, "%s; %s %s\n",
                   rep->interrupted ? "the run was interrupted" : "the run did not finish",
                   cmd ? "continue it with:" : "it cannot be resumed:",
                   cmd ? cmd : "start it again with a new --out DIR");
        free(cmd);
    }
}
