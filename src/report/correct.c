/* correct.c - the correctness sections of the reports (report/correct.h). */
#include "report/correct.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "escape.h"
#include "quality/agree.h"
#include "quality/quality.h"
#include "xalloc.h"

static cJSON *jnum(double v)
{
    return isfinite(v) ? cJSON_CreateNumber(round(v * 1e6) / 1e6) : cJSON_CreateNull();
}

static cJSON *jstr0(const char *s)
{
    return s ? cJSON_CreateString(s) : cJSON_CreateNull();
}

static bool any_measured(const struct mp_report *rep)
{
    for (size_t i = 0; i < rep->cor.n && i < rep->n; i++)
        if (rep->cor.c[i].measured)
            return true;
    return false;
}

/* A scored attempt's score (for what was asked: passages, greedy prompts,
 * problems); with plp, one whose prompt logprobs came back if any did. */
static const struct mp_score *a_score(const struct mp_report *rep, bool plp)
{
    const struct mp_score *any = NULL;
    for (size_t i = 0; i < rep->n; i++) {
        const struct mp_attempt_result *p = mp_cand_primary(&rep->c[i]);
        if (p && p->score && (!plp || p->score->plp == MP_SC_OK))
            return p->score;
        if (p && p->score && !any)
            any = p->score;
    }
    return any;
}

static cJSON *first_json(const struct mp_agreement *ag)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t k = 0; k < ag->nfirst; k++) {
        const struct mp_disagreement *d = &ag->first[k];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddNumberToObject(e, "passage", (double)d->passage + 1);
        cJSON_AddNumberToObject(e, "position", (double)d->pos + 1);
        cJSON_AddItemToObject(e, "context", jstr0(d->context));
        cJSON_AddItemToObject(e, "token", jstr0(d->token));
        cJSON_AddItemToObject(e, "this_top1", jstr0(d->this_top1));
        cJSON_AddItemToObject(e, "reference_top1", jstr0(d->ref_top1));
        cJSON_AddItemToObject(e, "this_logprob", jnum(d->this_lp));
        cJSON_AddItemToObject(e, "reference_logprob", jnum(d->ref_lp));
        cJSON_AddItemToArray(a, e);
    }
    return a;
}

static cJSON *agreement_json(const struct mp_agreement *ag)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "reference", jstr0(ag->reference));
    cJSON_AddNumberToObject(o, "positions", (double)ag->positions);
    bool lp = ag->positions > 0;
    cJSON_AddItemToObject(o, "mean_abs_delta", lp ? jnum(ag->mean_abs) : cJSON_CreateNull());
    cJSON_AddItemToObject(o, "p99_abs_delta", lp ? jnum(ag->p99_abs) : cJSON_CreateNull());
    cJSON_AddItemToObject(o, "top1_agreement", lp ? jnum(ag->top1) : cJSON_CreateNull());
    cJSON_AddItemToObject(o, "noise_floor",
                          ag->noise_floor >= 0 ? jnum(ag->noise_floor) : cJSON_CreateNull());
    cJSON_AddStringToObject(o, "result", mp_ag_result_name(ag->result));
    cJSON_AddItemToObject(o, "first_disagreements", first_json(ag));
    cJSON_AddNumberToObject(o, "others", (double)ag->others);
    cJSON_AddItemToObject(o, "repeat_abs_delta",
                          ag->repeat_abs >= 0 ? jnum(ag->repeat_abs) : cJSON_CreateNull());
    cJSON_AddItemToObject(o, "repeat_top1_agreement",
                          ag->repeat_top1 >= 0 ? jnum(ag->repeat_top1) : cJSON_CreateNull());
    cJSON_AddBoolToObject(o, "self_divergent", ag->self_div);
    cJSON *g = cJSON_AddObjectToObject(o, "greedy");
    cJSON_AddNumberToObject(g, "compared", (double)ag->greedy_compared);
    cJSON_AddNumberToObject(g, "failed", (double)ag->greedy_failed);
    cJSON_AddNumberToObject(g, "undecided", (double)ag->greedy_undecided);
    cJSON_AddNumberToObject(g, "others", (double)ag->greedy_others);
    cJSON_AddNumberToObject(g, "others_failed", (double)ag->greedy_others_failed);
    cJSON_AddItemToObject(g, "first_failure", jstr0(ag->greedy_first));
    cJSON_AddBoolToObject(g, "only", ag->greedy_only);
    cJSON_AddItemToObject(o, "note", jstr0(ag->note));
    return o;
}

static cJSON *accuracy_json(const struct mp_report *rep, const struct mp_accuracy *a)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "n", (double)a->n);
    cJSON_AddNumberToObject(o, "right", (double)a->right);
    bool run = a->result != MP_ACC_NOT_RUN;
    cJSON_AddItemToObject(o, "low", run ? jnum(a->low) : cJSON_CreateNull());
    cJSON_AddItemToObject(o, "high", run ? jnum(a->high) : cJSON_CreateNull());
    cJSON_AddStringToObject(o, "result", mp_acc_result_name(a->result));
    cJSON_AddItemToObject(o, "interval", jstr0(run ? "wilson-95" : NULL));
    cJSON_AddItemToObject(o, "source", jstr0(a->source));
    cJSON_AddItemToObject(o, "best", jstr0(run && a->best >= 0 && (size_t)a->best < rep->n
                                                ? rep->c[a->best].cand.name
                                                : NULL));
    cJSON_AddItemToObject(o, "z", run ? jnum(a->z) : cJSON_CreateNull());
    cJSON_AddItemToObject(o, "note", jstr0(a->note));
    return o;
}

cJSON *mp_rep_correct_json(const struct mp_report *rep, size_t i)
{
    if (i >= rep->cor.n || !rep->cor.c[i].measured)
        return cJSON_CreateNull();
    const struct mp_correctness *k = &rep->cor.c[i];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "agreement", agreement_json(&k->ag));
    cJSON_AddItemToObject(o, "accuracy", accuracy_json(rep, &k->acc));
    cJSON_AddItemToObject(o, "class", jstr0(k->cls));
    cJSON_AddItemToObject(o, "shared_from",
                          jstr0(k->shared_from >= 0 ? rep->c[k->shared_from].cand.name : NULL));
    cJSON *cost = cJSON_AddObjectToObject(o, "cost");
    cJSON_AddItemToObject(cost, "scoring_seconds", jnum(k->score_s));
    cJSON_AddItemToObject(cost, "task_seconds", jnum(k->task_s));
    return o;
}

cJSON *mp_rep_correct_summary_json(const struct mp_report *rep)
{
    if (!any_measured(rep))
        return cJSON_CreateNull();
    const struct mp_correct *c = &rep->cor;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "reference", jstr0(c->reference ? c->reference : "consensus"));
    cJSON_AddNumberToObject(o, "configurations", (double)c->votes);
    cJSON_AddItemToObject(o, "noise_floor", c->noise_floor >= 0 ? jnum(c->noise_floor)
                                                                : cJSON_CreateNull());
    cJSON_AddItemToObject(o, "repeat_floor", c->repeat_floor >= 0 ? jnum(c->repeat_floor)
                                                                  : cJSON_CreateNull());
    cJSON_AddItemToObject(o, "spread_floor", c->spread_floor >= 0 ? jnum(c->spread_floor)
                                                                  : cJSON_CreateNull());
    cJSON *r = cJSON_AddObjectToObject(o, "rule");
    cJSON_AddNumberToObject(r, "floor_factor", MP_AG_FACTOR);
    cJSON_AddNumberToObject(r, "top1_min", MP_AG_TOP1_MIN);
    cJSON_AddStringToObject(r, "task_test", "two-proportion z, one-sided 95 %");
    cJSON_AddItemToObject(o, "note", jstr0(c->note));
    return o;
}

/* ---- Markdown ---- */

static void md_pct(struct buf *b, double v)
{
    buf_printf(b, "%.1f %%", 100 * v);
}

static const char *result_word(const struct mp_report *rep, size_t i)
{
    const struct mp_correctness *k = &rep->cor.c[i];
    return k->shared_from >= 0 ? "shared" : mp_ag_result_name(k->ag.result);
}

static void md_row(const struct mp_report *rep, size_t i, struct buf *out)
{
    const struct mp_correctness *k = &rep->cor.c[i];
    const struct mp_agreement *ag = &k->ag;
    buf_adds(out, "| ");
    mp_md_text(out, rep->c[i].cand.name, 60, 0);
    buf_printf(out, " | %s", result_word(rep, i));
    if (k->shared_from >= 0) {
        buf_adds(out, " (");
        mp_md_text(out, rep->c[k->shared_from].cand.name, 60, 0);
        buf_adds(out, ")");
    } else if (ag->reference && ag->result != MP_AG_NOT_MEASURED) {
        buf_adds(out, " (vs ");
        mp_md_text(out, ag->reference, 60, 0);
        buf_adds(out, ")");
    }
    if (ag->positions)
        buf_printf(out, " | %.3g | %.3g | ", ag->mean_abs, ag->p99_abs);
    else
        buf_adds(out, " | — | — | ");
    if (ag->positions)
        md_pct(out, ag->top1);
    else
        buf_adds(out, "—");
    if (ag->greedy_others)
        buf_printf(out, " | close to %zu of %zu", ag->greedy_others - ag->greedy_others_failed,
                   ag->greedy_others);
    else
        buf_adds(out, " | —");
    const struct mp_accuracy *a = &k->acc;
    if (a->result != MP_ACC_NOT_RUN)
        buf_printf(out, " | %zu/%zu (%.2f–%.2f)%s", a->right, a->n, a->low, a->high,
                   a->result == MP_ACC_LOW ? " **low**" : "");
    else
        buf_adds(out, " | —");
    buf_printf(out, " | %s |\n", k->cls ? k->cls : "—");
}

static void md_first(const struct mp_report *rep, struct buf *out)
{
    bool head = false;
    for (size_t i = 0; i < rep->n; i++) {
        const struct mp_correctness *k = &rep->cor.c[i];
        if (!k->measured || k->shared_from >= 0 ||
            (k->ag.result != MP_AG_DIVERGENT && k->ag.result != MP_AG_DISAGREE_PAIR))
            continue;
        if (!head)
            buf_adds(out, "\nFirst disagreements (this candidate's most likely token | the "
                          "reference's; the logprob each gives the passage's own token):\n\n");
        head = true;
        for (size_t d = 0; d < k->ag.nfirst; d++) {
            const struct mp_disagreement *x = &k->ag.first[d];
            buf_adds(out, "- **");
            mp_md_text(out, rep->c[i].cand.name, 60, 0);
            buf_printf(out, "**, passage %zu token %zu, after ", x->passage + 1, x->pos + 1);
            mp_md_code(out, x->context, 80, 0);
            buf_adds(out, ": ");
            mp_md_code(out, x->this_top1, 40, 0);
            buf_adds(out, " | ");
            mp_md_code(out, x->ref_top1, 40, 0);
            buf_adds(out, "; passage token ");
            mp_md_code(out, x->token, 40, 0);
            buf_printf(out, " %.3g | %.3g\n", x->this_lp, x->ref_lp);
        }
        if (k->ag.greedy_first) {
            buf_adds(out, "- **");
            mp_md_text(out, rep->c[i].cand.name, 60, 0);
            buf_adds(out, "**: ");
            mp_md_text(out, k->ag.greedy_first, 300, 0);
            buf_adds(out, "\n");
        }
    }
}

typedef void (*esc_fn)(struct buf *b, const char *s, size_t max);

static void md_esc(struct buf *b, const char *s, size_t max)
{
    mp_md_text(b, s, max, 0);
}

/* The section's opening sentences; names escaped with esc. */
static void intro(const struct mp_report *rep, struct buf *out, esc_fn esc)
{
    const struct mp_correct *c = &rep->cor;
    const struct mp_score *s = a_score(rep, true);
    if (s && s->plp == MP_SC_OK) {
        buf_printf(out, "Teacher-forced logprobs of %zu reference passages (top %d) and %zu "
                        "greedy continuations, compared with ",
                   s->npass, s->k, s->ngen);
    } else {
        buf_printf(out, "No teacher-forced logprobs (prompt_logprobs %s",
                   s ? mp_sc_status_name(s->plp) : "not run");
        if (s && s->plp_note) {
            buf_adds(out, ": ");
            esc(out, s->plp_note, 300);
        }
        buf_printf(out, "): %zu greedy continuations only, compared with ", s ? s->ngen : 0);
    }
    if (c->reference)
        esc(out, c->reference, 60);
    else
        buf_printf(out, "the consensus (median, one vote per configuration: %zu scored)", c->votes);
    if (c->noise_floor >= 0)
        buf_printf(out, "; measured noise floor %.3g nats (run-to-run %.3g, spread %.3g)",
                   c->noise_floor, fmax(0.0, c->repeat_floor), fmax(0.0, c->spread_floor));
    buf_printf(out, ". Divergent: mean |Δ| above %.0f× the floor and top-1 agreement below %.0f %%; "
                    "two configurations that disagree are a pair (nobody is blamed).",
               MP_AG_FACTOR, 100 * MP_AG_TOP1_MIN);
    if (s && s->nans) {
        buf_printf(out, " Task gate: %zu problems (", s->nans);
        esc(out, s->task_source, 80);
        buf_adds(out, "), greedy; accuracy with its Wilson 95 % interval; below the best by a "
                      "one-sided two-proportion z test at 95 % fails.");
    }
    if (c->note) {
        buf_adds(out, " ");
        esc(out, c->note, 400);
        buf_adds(out, ".");
    }
    buf_adds(out, "\n\n");
}

void mp_rep_correct_md(const struct mp_report *rep, struct buf *out)
{
    if (!any_measured(rep))
        return;
    buf_adds(out, "## Correctness\n\n");
    intro(rep, out, md_esc);
    buf_adds(out, "| candidate | logprobs | mean \\|Δ\\| | p99 \\|Δ\\| | top-1 | greedy | task "
                  "answers (95 %) | class |\n|---|---|---:|---:|---:|---|---|---|\n");
    for (size_t i = 0; i < rep->n; i++)
        if (rep->cor.c[i].measured)
            md_row(rep, i, out);
    md_first(rep, out);
    buf_adds(out, "\n");
}

/* ---- HTML ---- */

static void html_row(const struct mp_report *rep, size_t i, struct buf *b)
{
    const struct mp_correctness *k = &rep->cor.c[i];
    const struct mp_agreement *ag = &k->ag;
    buf_adds(b, "<tr><td>");
    mp_html_esc(b, rep->c[i].cand.name, 200);
    bool bad = ag->result == MP_AG_DIVERGENT || ag->result == MP_AG_DISAGREE_PAIR;
    buf_printf(b, "</td><td%s>%s", bad ? " class=bad" : "", result_word(rep, i));
    const char *vs = k->shared_from >= 0 ? rep->c[k->shared_from].cand.name
                     : ag->result != MP_AG_NOT_MEASURED ? ag->reference : NULL;
    if (vs) {
        buf_adds(b, k->shared_from >= 0 ? " (" : " (vs ");
        mp_html_esc(b, vs, 200);
        buf_adds(b, ")");
    }
    if (ag->positions)
        buf_printf(b, "</td><td class=n>%.3g</td><td class=n>%.3g</td><td class=n>%.1f %%",
                   ag->mean_abs, ag->p99_abs, 100 * ag->top1);
    else
        buf_adds(b, "</td><td class=n>—</td><td class=n>—</td><td class=n>—");
    if (ag->greedy_others)
        buf_printf(b, "</td><td>close to %zu of %zu</td>",
                   ag->greedy_others - ag->greedy_others_failed, ag->greedy_others);
    else
        buf_adds(b, "</td><td>—</td>");
    const struct mp_accuracy *a = &k->acc;
    if (a->result != MP_ACC_NOT_RUN)
        buf_printf(b, "<td%s>%zu/%zu (%.2f–%.2f)</td>", a->result == MP_ACC_LOW ? " class=bad" : "",
                   a->right, a->n, a->low, a->high);
    else
        buf_adds(b, "<td>—</td>");
    buf_printf(b, "<td>%s</td></tr>\n", k->cls ? k->cls : "—");
}

static void html_first(const struct mp_report *rep, struct buf *b)
{
    buf_adds(b, "<ul class=note>");
    for (size_t i = 0; i < rep->n; i++) {
        const struct mp_correctness *k = &rep->cor.c[i];
        if (!k->measured || k->shared_from >= 0 ||
            (k->ag.result != MP_AG_DIVERGENT && k->ag.result != MP_AG_DISAGREE_PAIR))
            continue;
        for (size_t d = 0; d < k->ag.nfirst; d++) {
            const struct mp_disagreement *x = &k->ag.first[d];
            buf_adds(b, "<li><b>");
            mp_html_esc(b, rep->c[i].cand.name, 200);
            buf_printf(b, "</b>, passage %zu token %zu, after <code>", x->passage + 1, x->pos + 1);
            mp_html_esc(b, x->context, 120);
            buf_adds(b, "</code>: <code class=bad>");
            mp_html_esc(b, x->this_top1, 60);
            buf_adds(b, "</code> here, <code>");
            mp_html_esc(b, x->ref_top1, 60);
            buf_adds(b, "</code> in the reference (passage token <code>");
            mp_html_esc(b, x->token, 60);
            buf_printf(b, "</code>: %.3g vs %.3g)</li>", x->this_lp, x->ref_lp);
        }
        if (k->ag.greedy_first) {
            buf_adds(b, "<li><b>");
            mp_html_esc(b, rep->c[i].cand.name, 200);
            buf_adds(b, "</b>: ");
            mp_html_esc(b, k->ag.greedy_first, 400);
            buf_adds(b, "</li>");
        }
    }
    buf_adds(b, "</ul>\n");
}

void mp_rep_correct_html(const struct mp_report *rep, struct buf *out)
{
    if (!any_measured(rep))
        return;
    buf_adds(out, "<h2>Correctness</h2>\n<p>");
    intro(rep, out, mp_html_esc);
    buf_adds(out, "</p>\n<div class=scroll><table><thead><tr><th>candidate</th><th>logprobs</th>"
                  "<th>mean |Δ|</th><th>p99 |Δ|</th><th>top-1</th><th>greedy</th>"
                  "<th>task answers (95 %)</th><th>class</th></tr></thead><tbody>\n");
    for (size_t i = 0; i < rep->n; i++)
        if (rep->cor.c[i].measured)
            html_row(rep, i, out);
    buf_adds(out, "</tbody></table></div>\n");
    html_first(rep, out);
}
