/* markdown.c - report.md: mp_report_markdown puts the sections in their
 * order; the page's own parts are here (title, run banner, fingerprint,
 * recommendation, groups, no-op knobs, comparability), the per-candidate
 * ones in md_cand.c, the measurement ones in md_measure.c, the server's view
 * in srvm.c (report/md_int.h). Also mp_report_resume_command. */
#include "report/report.h"

#include <stdlib.h>
#include <string.h>

#include "escape.h"

#include "report/internal.h"
#include "report/correct.h"
#include "report/md_int.h"
#include "report/overview.h"
#include "report/srvm.h"

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
    if (rep->stop_reason) { /* it stopped on purpose: why, and no resume */
        mp_rep_stop_md(rep, out);
        return;
    }
    if (!mp_report_incomplete(rep))
        return;
    size_t nunf = mp_report_nunfinished(rep);
    if (rep->interrupted && rep->stopped_by) {
        buf_adds(out, "> **This run was stopped by an I/O error** before it finished (");
        mp_md_text(out, rep->stopped_by, 400, 0);
        buf_adds(out, ")");
    } else {
        buf_adds(out, rep->interrupted ? "> **This run was interrupted** (by a signal) before it "
                                         "finished"
                                       : "> **This run did not finish** (moeprobe was killed, or "
                                         "the run is still going)");
    }
    if (nunf) {
        buf_printf(out, ": %zu of %zu candidate%s unfinished: ", nunf, rep->n,
                   rep->n == 1 ? " is" : "s are");
        bool first = true;
        for (size_t i = 0; i < rep->n; i++) {
            if (!rep->c[i].unfinished)
                continue;
            buf_adds(out, first ? "" : ", ");
            mp_rmd_cell(out, rep->c[i].cand.name, 64);
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
        mp_rmd_cell(out, rep->subcommand, 32);
        buf_adds(out, " run cannot be resumed: start it again with a new `--out DIR`.\n\n");
    }
    free(cmd);
}

/* The fingerprint table (GPU, engine, model, host, moeprobe, the run's
 * cost, the checkpoint) and what the checkpoint decides. */
static void md_fingerprint(const struct mp_report *rep, struct buf *out)
{
    buf_adds(out, "| | |\n|---|---|\n");
    buf_adds(out, "| GPU | ");
    mp_rmd_cell(out, rep->fp.gpu, 120);
    if (rep->fp.compute_capability) {
        buf_adds(out, " (compute capability ");
        mp_rmd_cell(out, rep->fp.compute_capability, 16);
        buf_adds(out, ")");
    }
    buf_adds(out, " |\n| engine | ");
    mp_rmd_cell(out, rep->fp.engine, 40);
    buf_adds(out, " ");
    mp_rmd_cell(out, rep->fp.engine_version, 60);
    buf_adds(out, " |\n| model | ");
    mp_rmd_cell(out, rep->fp.model, 200);
    buf_adds(out, " |\n| host | ");
    mp_rmd_cell(out, rep->fp.host_arch, 120);
    buf_adds(out, " |\n| moeprobe | ");
    mp_rmd_cell(out, rep->moeprobe_version, 40);
    buf_adds(out, " |\n");
    struct mp_rep_cost all;
    memset(&all, 0, sizeof(all));
    for (size_t i = 0; i < rep->n; i++) {
        struct mp_rep_cost k = mp_rep_cand_cost(&rep->c[i]);
        mp_rep_cost_add(&all, &k);
    }
    size_t starts = all.starts;
    double wall = mp_rep_iso_span(rep->started, rep->finished);
    char rw[64];
    if (wall >= 0)
        buf_printf(out, "| run | %.0f s wall time, %zu engine start%s%s%s |\n", wall, starts,
                   starts == 1 ? "" : "s", rep->resumes > 0 ? ", " : "",
                   rep->resumes > 0 ? mp_rep_resumed_words(rep->resumes, rw, sizeof(rw)) : "");
    else if (rep->resumes > 0)
        buf_printf(out, "| run | %zu engine start%s, %s |\n", starts, starts == 1 ? "" : "s",
                   mp_rep_resumed_words(rep->resumes, rw, sizeof(rw)));
    if (starts)
        buf_printf(out, "| cost | %zu stopped at their selection lines; engine start-up %.1f s, "
                        "requests %.1f s, moeprobe's own %.1f s |\n",
                   all.stops, all.startup_s, all.request_s, all.overhead_s);
    if (rep->engine_kernels_summary) {
        buf_adds(out, "| engine kernels | ");
        mp_rmd_cell(out, rep->engine_kernels_summary, 600);
        buf_adds(out, " |\n");
    }
    if (rep->checkpoint_summary) {
        buf_adds(out, "| checkpoint | ");
        mp_rmd_cell(out, rep->checkpoint_summary, 400);
        buf_adds(out, " |\n");
    }
    buf_adds(out, "\n");
    if (rep->checkpoint_notes.n) {
        buf_adds(out, "What the checkpoint decides (`moeprobe inspect`):\n\n");
        for (size_t i = 0; i < rep->checkpoint_notes.n; i++) {
            buf_adds(out, "- ");
            mp_rmd_cell(out, rep->checkpoint_notes.v[i], 600);
            buf_adds(out, "\n");
        }
        buf_adds(out, "\n");
    }
}

/* "## Recommendation" (or "## Resolution only" for a resolve run). */
static void md_recommendation(const struct mp_report *rep, bool resolve_map, struct buf *out)
{
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
        mp_rmd_cell(out, c->cand.name, 64);
        buf_adds(out, "**");
        if (knobs[0]) {
            buf_adds(out, " (");
            mp_md_code(out, knobs, 400, 0);
            buf_adds(out, ")");
        }
        buf_adds(out, ": ");
        mp_rmd_cell(out, rep->recommendation_why, 400);
        buf_adds(out, ".\n\n");
        free(knobs);
    } else {
        buf_adds(out, mp_report_nunfinished(rep) ? "No finished candidate qualified"
                                                 : "No candidate qualified");
        for (size_t i = 0; i < rep->learned.n; i++) {
            buf_adds(out, i ? "; " : ": ");
            mp_rmd_cell(out, rep->learned.v[i], 300);
        }
        buf_adds(out, ".\n\n");
    }
}

/* "## Same destination, different road" and "## Knobs that changed
 * nothing", when there are any. */
static void md_groups_noop(const struct mp_report *rep, struct buf *out)
{
    if (rep->ngroups) {
        buf_adds(out, "## Same destination, different road\n\n");
        for (size_t i = 0; i < rep->ngroups; i++) {
            const struct mp_group *g = &rep->groups[i];
            buf_adds(out, "- ");
            mp_rmd_cell(out, g->moe_backend, 64);
            buf_adds(out, ": ");
            mp_rmd_list(out, &g->candidates, 64);
            buf_adds(out, "\n");
        }
        buf_adds(out, "\n");
    }
    char *noop_note = mp_rep_inherited_noop_note(rep);
    if (noop_note && !rep->nnoop) {
        buf_adds(out, "## Knobs that changed nothing\n\n");
        mp_rmd_cell(out, noop_note, 800);
        buf_adds(out, "\n\n");
    }
    free(noop_note);
    if (rep->nnoop) {
        buf_adds(out, "## Knobs that changed nothing\n\n");
        for (size_t i = 0; i < rep->nnoop; i++) {
            const struct mp_noop *k = &rep->noop[i];
            buf_adds(out, "- ");
            mp_md_code(out, k->knob, 200, 0);
            buf_adds(out, " (candidate ");
            mp_rmd_cell(out, k->candidate, 64);
            buf_adds(out, ") resolved exactly like ");
            mp_rmd_cell(out, k->resolved_like, 64);
            if (k->engine_warning) {
                buf_adds(out, "; the engine said: \"");
                mp_rmd_cell(out, k->engine_warning, 200);
                buf_adds(out, "\"");
            }
            if (k->delivery && strcmp(k->delivery, "verified") != 0) {
                buf_adds(out, "; its delivery to the engine is ");
                mp_rmd_cell(out, k->delivery, 16);
                if (k->delivery_evidence) {
                    buf_adds(out, " (");
                    mp_rmd_cell(out, k->delivery_evidence, 300);
                    buf_adds(out, ")");
                }
            }
            buf_adds(out, "\n");
        }
        buf_adds(out, "\n");
    }
}

/* "## Are the numbers comparable?", when something says they are not. */
static void md_comparability(const struct mp_report *rep, struct buf *out)
{
    struct mp_strv cmp = MP_STRV_INIT;
    mp_rep_comparability(rep, &cmp);
    if (cmp.n) {
        buf_adds(out, "## Are the numbers comparable?\n\n");
        for (size_t i = 0; i < cmp.n; i++) {
            buf_adds(out, "- ");
            mp_rmd_cell(out, cmp.v[i], 400);
            buf_adds(out, "\n");
        }
        buf_adds(out, "\n");
    }
    mp_strv_release(&cmp);
}

void mp_report_markdown(const struct mp_report *rep, struct buf *out)
{
    bool resolve_map = mp_report_is_resolve_map(rep);
    buf_printf(out, "# %s\n\n", mp_rep_title(rep));
    md_incomplete_banner(rep, out);
    md_fingerprint(rep, out);
    mp_rep_inherited_md(rep, out); /* report/overview.h: the first screen's shared parts */
    md_recommendation(rep, resolve_map, out);
    mp_rmd_cand_table(rep, out);
    mp_rep_next_steps_md(rep, out);
    md_groups_noop(rep, out);
    mp_rmd_output_check(rep, out);
    mp_rep_correct_md(rep, out); /* report/correct.h */
    if (!resolve_map)
        mp_rmd_workload(rep, out);
    mp_rmd_latency(rep, out);
    mp_rep_srvm_markdown(rep, out); /* the engine's own view, beside it (report/srvm.c) */
    md_comparability(rep, out);
    mp_rmd_details(rep, out);
}
