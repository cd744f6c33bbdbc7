/* html_evidence.c - an attempt's evidence in the HTML report, rendered from
 * the store (model/evidence.h, loaded by store/evidence.c): the server.log
 * lines its claims cite, with their context, and its request timeline with
 * the failure marked; for a hang, the last token and the silent time up to
 * the stall. Nothing here reads the attempt's files. */
#include "report/html_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/evidence.h"
#include "report/svg.h"
#include "xalloc.h"

#define EXCERPT_LINE_MAX 2000 /* bytes of a line shown (the store keeps 4096) */

void mp_html_excerpt(struct buf *b, const struct mp_report *rep, const struct mp_attempt_result *a)
{
    const long claim[] = { a->res.moe_backend_line, a->res.unknown_env_line,
                           a->res.linear_kernel_line, a->fail_line };
    bool any = false;
    for (size_t i = 0; i < MP_ARRAY_SIZE(claim); i++)
        any = any || claim[i] > 0;
    if (!any)
        return;
    const struct mp_evidence *ev = a->evidence;
    buf_adds(b, "<p class=note>Evidence: <code>");
    mp_html_text(b, mp_html_rel(rep, a->dir));
    buf_adds(b, "/server.log</code>, lines ");
    bool first = true;
    for (size_t i = 0; ev && i < ev->nlines; i++) {
        if (!ev->lines[i].cited)
            continue;
        buf_printf(b, "%s%ld", first ? "" : ", ", ev->lines[i].no);
        first = false;
    }
    /* the claims' lines the store does not hold (an older store, a file cut short) */
    for (size_t i = 0; i < MP_ARRAY_SIZE(claim); i++) {
        if (claim[i] > 0 && !mp_evidence_line(ev, claim[i])) {
            buf_printf(b, "%s%ld (not stored)", first ? "" : ", ", claim[i]);
            first = false;
        }
    }
    buf_adds(b, " (highlighted)</p><pre class=log>");
    long last = 0;
    for (size_t i = 0; ev && i < ev->nlines; i++) {
        const struct mp_ev_line *l = &ev->lines[i];
        if (last && l->no != last + 1)
            buf_adds(b, "<span class=ln>   …</span>\n");
        buf_printf(b, "%s<span class=ln>%5ld </span>", l->cited ? "<span class=hl>" : "", l->no);
        mp_html_esc(b, l->text, EXCERPT_LINE_MAX);
        buf_adds(b, l->cited ? "</span>\n" : "\n");
        last = l->no;
    }
    if (!ev || !ev->nlines)
        buf_adds(b, "(the store holds no server.log lines of this attempt)");
    buf_adds(b, "</pre>\n");
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

static int by_start(const void *x, const void *y)
{
    const struct mp_svg_span *a = x, *b = y;
    return a->t0 < b->t0 ? -1 : a->t0 > b->t0;
}

static double req_end(const struct mp_ev_req *r)
{
    return r->start_s + (r->e2e_ms > 0 ? r->e2e_ms / 1e3 : 0);
}

/* The failure's moment, in seconds since the engine was spawned (the
 * requests' clock): the end of the attempt's first failed request
 * (fail_request_line when stored, else the first in completion order), or
 * the end of its workload, when moeprobe saw the failure (a hang's
 * requests never finish, so none is stored). <0 when unknown. */
static double failure_time(const struct mp_attempt_result *a, const struct mp_evidence *ev)
{
    double first = -1;
    for (size_t i = 0; a->outcome != MP_OUT_HANG && i < ev->nreqs; i++) {
        const struct mp_ev_req *r = &ev->reqs[i];
        if (!strcmp(r->outcome, "ok"))
            continue;
        if (a->fail_request_line > 0 && r->seq == a->fail_request_line)
            return req_end(r);
        if (first < 0)
            first = req_end(r);
    }
    if (first < 0 && a->workload_s > 0)
        first = a->ready_s + a->workload_s;
    return first;
}

/* A hang: the last token the client saw before fail_at - the end of an OK
 * request, or the first token of a request that then stalled (their later
 * tokens are not stored). <0 when no token came at all. */
static double last_token(const struct mp_evidence *ev, double fail_at)
{
    double t = -1;
    for (size_t i = 0; i < ev->nreqs; i++) {
        const struct mp_ev_req *r = &ev->reqs[i];
        double e = !strcmp(r->outcome, "ok") ? req_end(r)
                   : r->ttft_ms >= 0           ? r->start_s + r->ttft_ms / 1e3
                                               : -1;
        if (e >= 0 && e <= fail_at)
            t = MP_MAX(t, e);
    }
    return t;
}

void mp_html_timeline(struct buf *b, const struct mp_report *rep, const struct mp_attempt_result *a)
{
    const struct mp_evidence *ev = a->evidence;
    if (!ev || !ev->nreqs)
        return;
    struct mp_svg_span *s = xcalloc(ev->nreqs, sizeof(*s));
    double mark_t[16];
    const char *marks[16];
    size_t nmarks = 0;
    const char *last_phase = "";
    for (size_t i = 0; i < ev->nreqs; i++) {
        const struct mp_ev_req *r = &ev->reqs[i];
        s[i] = (struct mp_svg_span){ r->start_s, req_end(r), 0, strcmp(r->outcome, "ok") != 0 };
        if (strcmp(r->phase, last_phase) != 0 && nmarks < MP_ARRAY_SIZE(marks)) {
            mark_t[nmarks] = r->start_s;
            marks[nmarks++] = r->phase;
        }
        last_phase = r->phase;
    }
    qsort(s, ev->nreqs, sizeof(*s), by_start);
    assign_lanes(s, ev->nreqs);
    struct mp_svg_tl t = { mark_t, marks, nmarks, -1, NULL, -1, NULL };
    char *flabel = NULL, *qlabel = NULL;
    if (a->outcome == MP_OUT_CRASH || a->outcome == MP_OUT_HANG)
        t.fail_at = failure_time(a, ev);
    if (t.fail_at >= 0 && a->outcome == MP_OUT_HANG) {
        t.quiet_from = last_token(ev, t.fail_at);
        if (t.quiet_from >= 0) {
            qlabel = xasprintf("last token at %.2f s", t.quiet_from);
            flabel = xasprintf("hang: %.1f s without a token", t.fail_at - t.quiet_from);
        } else {
            flabel = xstrdup("hang: no token at all");
        }
    } else if (t.fail_at >= 0) {
        flabel = a->fail_line > 0 ? xasprintf("%.30s (server.log:%ld)",
                                              a->fail_class ? a->fail_class : "failure", a->fail_line)
                                  : xasprintf("%.40s", a->fail_class ? a->fail_class : "failure");
    }
    t.fail_label = flabel;
    t.quiet_label = qlabel;
    char *title = xasprintf("Requests over time, attempt %d%s (seconds since the engine was started; "
                            "one bar per request; red = failed)",
                            a->index, a->launch_blocking ? ", CUDA_LAUNCH_BLOCKING=1" : "");
    mp_svg_timeline(b, title, s, ev->nreqs, &t);
    /* what the short labels in the chart stand for */
    buf_adds(b, "<p class=note>");
    if (ev->reqs_total > ev->nreqs)
        buf_printf(b, "The last %zu of the attempt's %zu requests. ", ev->nreqs, ev->reqs_total);
    else
        buf_printf(b, "%zu request%s. ", ev->nreqs, ev->nreqs == 1 ? "" : "s");
    if (a->outcome == MP_OUT_HANG && t.fail_at >= 0) {
        buf_printf(b, "<span class=bad>Hang</span>: ");
        if (t.quiet_from >= 0)
            buf_printf(b, "the last token arrived at %.2f s (dotted line); ", t.quiet_from);
        buf_printf(b, "moeprobe declared the hang at %.2f s (red line)", t.fail_at);
        if (rep->has_workload && rep->workload.stall_timeout_s > 0)
            buf_printf(b, ", its stall timeout (%.0f s without token progress) passed",
                       rep->workload.stall_timeout_s);
        buf_adds(b, "; shaded: no token arrived. Requests still in flight then never finished "
                    "and have no bar.");
    } else if (t.fail_at >= 0) {
        buf_printf(b, "The red line is where the first failed request ended (%.2f s)", t.fail_at);
        if (a->fail_line > 0)
            buf_printf(b, "; the engine's evidence is server.log line %ld", a->fail_line);
        buf_adds(b, ".");
    }
    buf_adds(b, "</p>\n");
    free(title);
    free(flabel);
    free(qlabel);
    free(s);
}
