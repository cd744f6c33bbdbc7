/* html_cand.c - a candidate's section of the HTML report: verdict and
 * reason, knobs, resolved backends, command, knob delivery, every attempt,
 * the diagnosis; then the primary attempt's evidence (html_evidence.c) and
 * numbers (html_charts.c). */
#include "report/crash.h"
#include "report/html_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/resolved.h"
#include "report/svg.h"
#include "xalloc.h"

/* The knob delivery of the primary attempt, one line per knob. */
static void delivery_dd(struct buf *b, const struct mp_attempt_result *p)
{
    if (!p->ndlv)
        return;
    buf_adds(b, "<dt>knob delivery</dt><dd><ul>");
    for (size_t j = 0; j < p->ndlv; j++) {
        const struct mp_knob_dlv *d = &p->dlv[j];
        buf_adds(b, "<li><code>");
        mp_html_text(b, d->knob);
        buf_printf(b, "</code> <span class=\"dlv dlv-%s%s\">%s</span>: ",
                   mp_dlv_status_name(d->status), d->status == MP_DLV_MISSING ? " bad" : "",
                   mp_dlv_status_name(d->status));
        mp_html_text(b, d->evidence);
        buf_adds(b, "</li>");
    }
    buf_adds(b, "</ul></dd>");
}

/* The drafter, other selections, the autotuner and the known issues
 * (report/resolved.h), one <dt>/<dd> each. */
static void more_dd(struct buf *b, const struct mp_report *rep, const struct mp_cand_report *c)
{
    struct mp_strv labels = MP_STRV_INIT, texts = MP_STRV_INIT;
    mp_rep_resolved_more_text(rep, c, &labels, &texts);
    for (size_t i = 0; i < labels.n; i++) {
        buf_adds(b, "<dt>");
        mp_html_text(b, labels.v[i]);
        buf_adds(b, "</dt><dd>");
        mp_html_text(b, texts.v[i]);
        buf_adds(b, "</dd>");
    }
    mp_strv_release(&labels);
    mp_strv_release(&texts);
}

void mp_html_cand_section(const struct mp_report *rep, size_t i, struct buf *b)
{
    const struct mp_cand_report *c = &rep->c[i];
    const struct mp_attempt_result *p = mp_cand_primary(c);
    buf_adds(b, "<section class=cand id=\"");
    mp_html_anchor(b, c->cand.name);
    buf_adds(b, "\"><h3>");
    mp_html_text(b, c->cand.name);
    buf_adds(b, " ");
    mp_html_badge(b, c->unfinished ? "unfinished" : mp_verdict_name(c->verdict));
    mp_html_kernel_note(b, c);
    buf_adds(b, "</h3>\n<p>");
    mp_html_text(b, c->why);
    buf_adds(b, "</p>\n");
    mp_html_crash_details(rep, c, b);
    buf_adds(b, "<dl class=kv>");
    char *knobs = mp_candidate_knobs_str(&c->cand);
    buf_adds(b, "<dt>knobs</dt><dd>");
    if (knobs[0]) {
        buf_adds(b, "<code>");
        mp_html_text(b, knobs);
        buf_adds(b, "</code>");
    } else {
        buf_adds(b, "(none)");
    }
    buf_adds(b, "</dd>");
    free(knobs);
    if (p) {
        buf_adds(b, "<dt>MoE backend</dt><dd>");
        mp_html_text(b, p->res.moe_backend);
        if (p->res.moe_candidates.n) {
            buf_adds(b, " <span class=note>out of ");
            mp_html_list(b, &p->res.moe_candidates);
            buf_adds(b, "</span>");
        }
        if (p->res.moe_kind) {
            buf_adds(b, " <span class=note>(");
            mp_html_text(b, p->res.moe_kind);
            buf_adds(b, ")</span>");
        }
        buf_adds(b, "</dd><dt>dense NVFP4</dt><dd>");
        mp_html_text(b, p->res.linear_kernel);
        if (p->res.linear_kernels.n) {
            buf_adds(b, "</dd><dt>dense kernels</dt><dd>");
            mp_html_list(b, &p->res.linear_kernels);
        }
        if (p->res.unquantized_moe_backend) {
            buf_adds(b, "</dd><dt>unquantized MoE</dt><dd>");
            mp_html_text(b, p->res.unquantized_moe_backend);
        }
        buf_adds(b, "</dd><dt>attention</dt><dd>");
        mp_html_text(b, p->res.attention_backend);
        buf_adds(b, "</dd>");
        if (p->res.unknown_env.n) {
            buf_adds(b, "<dt>unknown to the engine</dt><dd>");
            mp_html_list(b, &p->res.unknown_env);
            buf_adds(b, "</dd>");
        }
        more_dd(b, rep, c);
        buf_adds(b, "<dt>command</dt><dd><code>");
        mp_html_text(b, p->command);
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
            mp_html_text(b, a->same_as ? a->same_as : "?");
            buf_adds(b, "</code> (shared result)");
        } else {
            buf_printf(b, "%s, %lu ok / %lu failed, ready in %.1f s", mp_outcome_name(a->outcome),
                       a->req_ok, a->req_failed, a->ready_s);
        }
        if (a->fail_class) {
            buf_adds(b, "; <span class=bad>");
            mp_html_text(b, a->fail_class);
            buf_adds(b, "</span>");
            if (a->fail_message) {
                buf_adds(b, ": ");
                mp_html_esc(b, a->fail_message, 2000);
            }
        }
        if (a->sites.n) {
            buf_adds(b, "; sites: ");
            mp_html_list(b, &a->sites);
        }
        buf_adds(b, "</dd>");
    }
    if (c->diag.done && c->diag.reasoning) {
        buf_adds(b, "<dt>diagnosis</dt><dd>");
        mp_html_text(b, c->diag.reasoning);
        buf_adds(b, "</dd>");
    }
    buf_adds(b, "</dl>\n");
    /* evidence: primary attempt, and the first failing blocked one */
    if (p)
        mp_html_excerpt(b, rep, p);
    for (size_t j = 0; j < c->nattempts; j++) {
        const struct mp_attempt_result *a = &c->attempts[j];
        if (a->launch_blocking && a->fail_line > 0) {
            mp_html_excerpt(b, rep, a);
            break;
        }
    }
    if (p) {
        mp_html_timeline(b, rep, p);
        mp_html_latency_table(b, rep, p);
        mp_html_srvm_table(b, p, c->cand.name);
        mp_html_distributions(b, c, p);
    }
    mp_html_blocking_chart(b, c);
    buf_adds(b, "</section>\n");
}
