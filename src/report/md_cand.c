/* md_cand.c - report.md's per-candidate parts (report/md_int.h): the
 * "## Candidates" table, a row each, and "## Details", a section each (what
 * it resolved, knob delivery, its attempts, the diagnosis, its cost, the
 * GPU's clocks). */
#include "compat.h"

#include <stdlib.h>
#include <string.h>

#include "escape.h"

#include "report/crash.h"
#include "report/internal.h"
#include "report/md_int.h"
#include "report/overview.h"
#include "report/resolved.h"

/* " (knob delivery unverified: A, B)" after a verdict, when some knob's
 * delivery could not be checked. */
static void md_unverified_note(struct buf *out, const struct mp_attempt_result *p)
{
    bool any = false;
    for (size_t j = 0; p && j < p->ndlv; j++) {
        if (!mp_dlv_unverified_note(p, j))
            continue;
        buf_adds(out, any ? ", " : " (knob delivery unverified: ");
        mp_rmd_cell(out, p->dlv[j].knob, 80);
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
        mp_rmd_cell(out, p->dlv[j].knob, 200);
        buf_printf(out, "` **%s**: ", mp_dlv_status_name(p->dlv[j].status));
        mp_rmd_cell(out, p->dlv[j].evidence, 400);
        buf_adds(out, "\n");
    }
}

/* The candidates table's row of c: verdict, backend, the one-line reason
 * with its evidence (a link into the attempt's server.log), the speeds
 * measured over a whole phase (report/overview.h), failures, knobs. */
static void cand_row(const struct mp_report *rep, const struct mp_cand_report *c, struct buf *out)
{
    const struct mp_attempt_result *p = mp_cand_primary(c);
    buf_adds(out, "| ");
    mp_rmd_cell(out, c->cand.name, 64);
    buf_adds(out, " | ");
    mp_rmd_cell(out, mp_cand_verdict_label(c), 32);
    mp_rep_kernel_note_md(out, c, MP_MD_TABLE); /* in `KERNEL` (family), report/crash.h */
    md_unverified_note(out, p);
    buf_adds(out, " | ");
    mp_rmd_cell(out, p && p->res.moe_backend ? p->res.moe_backend : (p ? "(not logged)" : NULL), 64);
    buf_adds(out, " | ");
    char *why = mp_rep_reason_line(rep, c), *ev = mp_rep_evidence_ref(rep, c);
    mp_rmd_cell(out, why, 400);
    if (!c->verdict && mp_attempt_evidence_incomplete(p)) {
        buf_adds(out, " (evidence incomplete: ");
        mp_rmd_cell(out, mp_rmd_rel_dir(rep, p->dir), 200);
        buf_adds(out, ")");
    } else if (ev) {
        /* the link's target is the file; its text the line (run-relative paths of
         * moeprobe's own attempt directories: [A-Za-z0-9._-] names) */
        buf_adds(out, " ([");
        mp_rmd_cell(out, ev, 200);
        buf_adds(out, "](");
        buf_add(out, ev, strcspn(ev, ":"));
        buf_adds(out, "))");
    }
    free(why);
    free(ev);
    char seq[96], conc[160];
    mp_rep_speed_cell(rep, c, true, seq, sizeof(seq));
    mp_rep_speed_cell(rep, c, false, conc, sizeof(conc));
    buf_printf(out, " | %s | %s", seq, conc);
    unsigned long ok = 0, failed = 0;
    for (size_t j = 0; j < c->nattempts; j++) {
        if (!c->attempts[j].launch_blocking) {
            ok += c->attempts[j].req_ok;
            failed += c->attempts[j].req_failed;
        }
    }
    buf_printf(out, " | %lu/%lu | ", failed, ok + failed);
    char *knobs = mp_candidate_knobs_str(&c->cand);
    if (knobs[0])
        mp_md_code(out, knobs, 200, MP_MD_TABLE);
    else
        buf_adds(out, "(none)");
    buf_adds(out, " |\n");
    free(knobs);
}

void mp_rmd_cand_table(const struct mp_report *rep, struct buf *out)
{
    buf_adds(out, "## Candidates\n\n");
    buf_adds(out, "| candidate | verdict | resolved MoE backend | why (evidence) | seq tok/s | "
                  "conc tok/s | failures/requests | knobs |\n");
    buf_adds(out, "|---|---|---|---|---:|---|---:|---|\n");
    for (size_t i = 0; i < rep->n; i++)
        cand_row(rep, &rep->c[i], out);
    buf_adds(out, "\n");
}

/* "- resolved: ..." of the primary attempt p, the variables the engine did
 * not know, the knob delivery. */
static void details_resolved(struct buf *out, const struct mp_attempt_result *p)
{
    buf_adds(out, "- resolved: MoE ");
    mp_rmd_cell(out, p->res.moe_backend, 64);
    if (p->res.moe_kind) {
        buf_adds(out, " (");
        mp_rmd_cell(out, p->res.moe_kind, 32);
        buf_adds(out, ")");
    }
    if (p->res.moe_candidates.n) {
        buf_adds(out, " out of [");
        mp_rmd_list(out, &p->res.moe_candidates, 64);
        buf_adds(out, "]");
    }
    buf_adds(out, "; dense NVFP4 ");
    mp_rmd_cell(out, p->res.linear_kernel, 80);
    if (p->res.linear_kernels.n) {
        buf_adds(out, "; dense kernels [");
        mp_rmd_list(out, &p->res.linear_kernels, 80);
        buf_adds(out, "]");
    }
    if (p->res.unquantized_moe_backend) {
        buf_adds(out, "; unquantized MoE ");
        mp_rmd_cell(out, p->res.unquantized_moe_backend, 64);
    }
    buf_adds(out, "; attention ");
    mp_rmd_cell(out, p->res.attention_backend, 64);
    buf_adds(out, "\n");
    if (p->res.unknown_env.n) {
        buf_adds(out, "- the engine does not know: ");
        mp_rmd_list(out, &p->res.unknown_env, 80);
        buf_adds(out, "\n");
    }
    md_delivery(out, p);
}

/* "- MTP drafter: ...", other selections, the autotuner, the known issues
 * (report/resolved.h). */
static void details_more(const struct mp_report *rep, const struct mp_cand_report *c, struct buf *out)
{
    struct mp_strv labels = MP_STRV_INIT, texts = MP_STRV_INIT;
    mp_rep_resolved_more_text(rep, c, &labels, &texts);
    for (size_t i = 0; i < labels.n; i++) {
        buf_printf(out, "- %s: ", labels.v[i]);
        mp_rmd_cell(out, texts.v[i], 1200);
        buf_adds(out, "\n");
    }
    mp_strv_release(&labels);
    mp_strv_release(&texts);
}

/* "- attempt DIR: ..." of attempt a: how it ended, its failure, the sites. */
static void details_attempt(const struct mp_report *rep, const struct mp_attempt_result *a,
                            struct buf *out)
{
    if (a->outcome == MP_OUT_RESOLVED) {
        buf_adds(out, "- attempt ");
        mp_md_code(out, mp_rmd_rel_dir(rep, a->dir), 200, 0);
        buf_printf(out, ": stopped after %.1f s, once resolved (no load)", a->ready_s);
    } else if (a->outcome == MP_OUT_SAME_CONFIG) {
        buf_adds(out, "- attempt ");
        mp_md_code(out, mp_rmd_rel_dir(rep, a->dir), 200, 0);
        buf_printf(out, ": stopped after %.1f s, once resolved: the same configuration as ",
                   a->ready_s);
        mp_md_code(out, a->same_as ? a->same_as : "?", 64, 0);
        buf_adds(out, " (shared result)");
    } else {
        buf_adds(out, "- attempt ");
        mp_md_code(out, mp_rmd_rel_dir(rep, a->dir), 200, 0);
        buf_printf(out, "%s: %s, %lu ok / %lu failed, ready in %.1f s",
                   a->launch_blocking ? " (CUDA_LAUNCH_BLOCKING=1)" : "",
                   mp_outcome_name(a->outcome), a->req_ok, a->req_failed, a->ready_s);
    }
    if (a->fail_class) {
        buf_adds(out, "; ");
        mp_rmd_cell(out, a->fail_class, 40);
        if (a->fail_message) {
            buf_adds(out, ": ");
            mp_rmd_cell(out, a->fail_message, 300);
        }
        if (a->fail_line > 0)
            buf_printf(out, " (`server.log:%ld`)", a->fail_line);
    }
    if (a->sites.n) {
        buf_adds(out, "; sites: ");
        mp_rmd_list(out, &a->sites, 120);
    }
    buf_adds(out, "\n");
}

/* "- GPU ...": the first attempt's telemetry, or that there was none. */
static void details_gpu(const struct mp_cand_report *c, struct buf *out)
{
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
}

/* "### NAME: VERDICT" and everything under it. */
static void details_cand(const struct mp_report *rep, const struct mp_cand_report *c, struct buf *out)
{
    buf_adds(out, "### ");
    mp_rmd_cell(out, c->cand.name, 64);
    buf_adds(out, ": ");
    mp_rmd_cell(out, mp_cand_verdict_label(c), 32);
    mp_rep_kernel_note_md(out, c, 0);
    buf_adds(out, "\n\n");
    mp_md_text(out, c->why, 1000, MP_MD_START);
    buf_adds(out, "\n\n");
    const struct mp_attempt_result *p = mp_cand_primary(c);
    if (p)
        details_resolved(out, p);
    details_more(rep, c, out);
    mp_rep_crash_details_md(out, rep, c); /* kernel, Xids, kernel log, dumps (report/crash.h) */
    for (size_t j = 0; j < c->nattempts; j++)
        details_attempt(rep, &c->attempts[j], out);
    if (c->diag.done && c->diag.reasoning) {
        buf_adds(out, "- diagnosis: ");
        mp_rmd_cell(out, c->diag.reasoning, 600);
        buf_adds(out, "\n");
    }
    struct mp_rep_cost k = mp_rep_cand_cost(c);
    buf_printf(out, "- cost: %zu engine start%s", k.starts, k.starts == 1 ? "" : "s");
    if (k.cut)
        buf_printf(out, " (%zu cut short by the interruption)", k.cut);
    buf_printf(out, ", %.1f s of engine time, %.1f s driving load (engine start-up %.1f s, "
                    "requests %.1f s, moeprobe's own %.1f s)\n",
               k.engine_s, k.workload_s, k.startup_s, k.request_s, k.overhead_s);
    details_gpu(c, out);
    buf_adds(out, "\n");
}

void mp_rmd_details(const struct mp_report *rep, struct buf *out)
{
    buf_adds(out, "## Details\n\n");
    for (size_t i = 0; i < rep->n; i++)
        details_cand(rep, &rep->c[i], out);
}
