/* bisect_html.c - the bisect report as one self-contained HTML page: the
 * answer, the difference (side by side for two builds) and the probes.
 * Everything from logs, builds and names goes through mp_html_esc. */
#include "report/bisect.h"

#include <stdio.h>
#include <string.h>

#include "escape.h"
#include "report/report.h"

static void cell(struct buf *b, const char *tag, const char *s)
{
    buf_printf(b, "<%s>", tag);
    mp_html_esc(b, s ? s : "-", 600);
    buf_printf(b, "</%s>", tag);
}

static void num(struct buf *b, double v, int decimals)
{
    char t[48] = "-";
    if (v >= 0)
        snprintf(t, sizeof(t), "%.*f", decimals, v);
    cell(b, "td", t);
}

static void probes(struct buf *b, const struct mp_bisect_model *m)
{
    buf_adds(b, "<h2>Probes</h2><table><tr><th>step</th><th>build</th><th>outcome</th>"
                "<th>verdict</th><th>MoE backend</th><th>engine</th><th>seq tok/s</th>"
                "<th>ok / failed</th><th>failure rate &le; (95 %)</th><th>why</th></tr>\n");
    for (size_t i = 0; i < m->npv; i++) {
        const struct mp_bisect_probe_view *pv = &m->pv[i];
        char req[48];
        const char *o = pv->finished ? mp_probe_outcome_name(pv->outcome) : "unfinished";
        buf_printf(b, "<tr class=\"%s\"><td>%ld</td>", o, pv->sp->step);
        cell(b, "td", pv->sp->build);
        cell(b, "td", o);
        cell(b, "td", mp_verdict_name(pv->obs.verdict));
        cell(b, "td", pv->obs.moe_backend);
        cell(b, "td", pv->engine_version);
        num(b, pv->obs.tok_s, 1);
        snprintf(req, sizeof(req), "%lu / %lu", pv->obs.req_ok, pv->obs.req_failed);
        cell(b, "td", req);
        num(b, pv->upper95, 3);
        cell(b, "td", pv->finished ? pv->why : "the run stopped in this probe");
        buf_adds(b, "</tr>\n");
    }
    buf_adds(b, "</table>\n");
}

/* The last good and first bad probes field by field (rows that differ
 * marked), from the Markdown's own table rows. */
static void difference(struct buf *b, const struct mp_report *rep, const struct mp_bisect_model *m)
{
    if (m->last_good < 0 || m->first_bad < 0)
        return;
    const struct mp_bisect_probe_view *x = &m->pv[m->last_good], *y = &m->pv[m->first_bad];
    buf_adds(b, m->two_builds ? "<h2>Side by side</h2>" : "<h2>The difference</h2>");
    buf_adds(b, "<table><tr><th></th>");
    cell(b, "th", x->sp->build);
    cell(b, "th", y->sp->build);
    buf_adds(b, "</tr>\n");
    const char *rows[][3] = {
        {"engine version", x->engine_version, y->engine_version},
        {"MoE backend", x->obs.moe_backend, y->obs.moe_backend},
        {"dense kernel", x->obs.linear_kernel, y->obs.linear_kernel},
        {"attention", x->attention, y->attention},
        {"verdict", mp_verdict_name(x->obs.verdict), mp_verdict_name(y->obs.verdict)},
        {"error class", x->fail_class, y->fail_class},
    };
    for (size_t i = 0; i < MP_ARRAY_SIZE(rows); i++) {
        const char *a = rows[i][1] ? rows[i][1] : "-", *c = rows[i][2] ? rows[i][2] : "-";
        buf_printf(b, "<tr%s><th>%s</th>", strcmp(a, c) ? " class=\"differs\"" : "", rows[i][0]);
        cell(b, "td", a);
        cell(b, "td", c);
        buf_adds(b, "</tr>\n");
    }
    buf_adds(b, "<tr><th>sequential tok/s</th>");
    num(b, x->obs.tok_s, 1);
    num(b, y->obs.tok_s, 1);
    buf_adds(b, "</tr></table>\n");
    (void)rep;
}

void mp_bisect_html(const struct mp_report *rep, const struct mp_bisect_model *m,
                    struct buf *out)
{
    buf_adds(out, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                  "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
                  "<title>moeprobe bisect</title><style>"
                  "body{font-family:system-ui,sans-serif;margin:1.5em;max-width:70em}"
                  "table{border-collapse:collapse;margin:.5em 0;display:block;overflow-x:auto}"
                  "td,th{border:1px solid #ccc;padding:.25em .5em;text-align:left;vertical-align:top}"
                  "tr.bad td{background:#fde8e8}tr.good td{background:#e8f6e8}"
                  "tr.differs td,tr.differs th{font-weight:bold;background:#fff4d6}"
                  "</style></head><body>\n");
    buf_adds(out, m->two_builds ? "<h1>moeprobe: two builds compared</h1>\n"
                                : "<h1>moeprobe bisect</h1>\n");
    if (mp_report_incomplete(rep) || !m->step.done)
        buf_adds(out, "<p><strong>This run did not finish</strong>; <code>moeprobe bisect "
                      "--resume RUNDIR</code> continues it.</p>\n");
    buf_adds(out, "<p><strong>");
    mp_html_esc(out, m->summary ? m->summary : "", 600);
    buf_adds(out, "</strong>");
    if (m->confidence_known)
        buf_printf(out, " (confidence %.3f)", m->confidence);
    buf_adds(out, "</p>\n<p>");
    mp_html_esc(out, m->confidence_why, 600);
    buf_printf(out, "</p>\n<p>Same as good: --by %s. Requests per probe: ",
               mp_bisect_by_name(m->cfg.by));
    mp_html_esc(out, m->sb.required_why ? m->sb.required_why : "not known yet", 600);
    buf_adds(out, "</p>\n");
    difference(out, rep, m);
    probes(out, m);
    buf_adds(out, "</body></html>\n");
}
