/* svg.c - inline SVG charts; see svg.h. */
#include "report/svg.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "escape.h"
#include "xalloc.h"

#define W 480          /* viewBox width; the figure scales to the page (max 760 px) */
#define ROW_H 22
#define DEFAULT_COLOR "#3b7dd8"

static void fig_open_w(struct buf *b, const char *title, int w, int h)
{
    buf_adds(b, "<figure class=chart><figcaption>");
    mp_html_esc(b, title, 200);
    buf_printf(b, "</figcaption><svg viewBox=\"0 0 %d %d\" role=img aria-label=\"", w, h);
    mp_html_esc(b, title, 200);
    buf_adds(b, "\" xmlns=\"http://www.w3.org/2000/svg\">");
}

static void fig_open(struct buf *b, const char *title, int h)
{
    fig_open_w(b, title, W, h);
}

static void fig_close(struct buf *b)
{
    buf_adds(b, "</svg></figure>\n");
}

static void fmt_num_s(char *out, size_t n, double v)
{
    snprintf(out, n, v >= 100 ? "%.0f" : v >= 10 ? "%.1f" : "%.2f", v);
}

static void fmt_num(struct buf *b, double v)
{
    char t[40];
    fmt_num_s(t, sizeof(t), v);
    buf_adds(b, t);
}

/* Width of s (at most max bytes, 0 = all) in viewBox units, generously:
 * the page enlarges chart text to 13 px on phones (html.c's style). */
static double text_w(const char *s, size_t max)
{
    size_t chars = 0;
    for (size_t i = 0; s && s[i] && (!max || i < max); i++)
        chars += ((unsigned char)s[i] & 0xC0) != 0x80;
    return 7.4 * (double)chars;
}

/* Text near x that stays inside [4, w - 4]: after x when it fits, else
 * before it, else against the nearer edge. */
static void text_near(struct buf *b, int w, double x, int y, const char *cls, const char *s,
                      size_t max)
{
    double tw = text_w(s, max);
    const char *anchor = "start";
    double at = x + 4;
    if (at + tw > w - 4) {
        anchor = "end";
        at = x - 4;
        if (at - tw < 4) {
            anchor = "start";
            at = MP_MAX(4.0, w - 4 - tw);
        }
    }
    buf_printf(b, "<text x=\"%.1f\" y=%d class=%s text-anchor=%s>", at, y, cls, anchor);
    mp_html_esc(b, s, max);
    buf_adds(b, "</text>");
}

/* A legend of {label, color} pairs from y0, wrapped into rows of width w;
 * returns the rows used. */
static int legend_rows(struct buf *b, const char *const *legend, size_t nleg, int w, int y0)
{
    double x = 8;
    int rows = nleg ? 1 : 0;
    for (size_t i = 0; i < nleg; i++) {
        double iw = 18 + text_w(legend[2 * i], 40);
        if (x > 8 && x + iw > w - 4) {
            x = 8;
            rows++;
        }
        int y = y0 + (rows - 1) * 18;
        buf_printf(b, "<rect x=\"%.1f\" y=%d width=12 height=12 fill=\"", x, y);
        mp_html_esc(b, legend[2 * i + 1], 32);
        buf_printf(b, "\"/><text x=\"%.1f\" y=%d class=lg>", x + 16, y + 10);
        mp_html_esc(b, legend[2 * i], 40);
        buf_adds(b, "</text>");
        x += iw + 12;
    }
    return rows;
}

/* Rows a legend needs (the same wrapping as legend_rows). */
static int legend_nrows(const char *const *legend, size_t nleg, int w)
{
    double x = 8;
    int rows = nleg ? 1 : 0;
    for (size_t i = 0; i < nleg; i++) {
        double iw = 18 + text_w(legend[2 * i], 40);
        if (x > 8 && x + iw > w - 4) {
            x = 8;
            rows++;
        }
        x += iw + 12;
    }
    return rows;
}

#define LABEL_MAX 26

void mp_svg_hbars(struct buf *b, const char *title, const char *unit, const char *const *labels,
                  const double *values, const char *const *colors, size_t n,
                  const char *const *legend)
{
    size_t nleg = 0;
    while (legend && legend[2 * nleg])
        nleg++;
    int rows = legend_nrows(legend, nleg, W);
    int top = rows ? 6 + rows * 18 : 6;
    int h = top + (int)n * ROW_H + 8;
    double max = 0, lw = 40, vw = 24;
    char num[40];
    for (size_t i = 0; i < n; i++) {
        max = MP_MAX(max, values[i]);
        lw = MP_MAX(lw, text_w(labels[i], LABEL_MAX));
        fmt_num_s(num, sizeof(num), MP_MAX(values[i], 0));
        vw = MP_MAX(vw, text_w(num, 0) + text_w(unit, 20) + 8);
    }
    if (max <= 0)
        max = 1;
    double label_w = MP_MIN(lw + 10, W / 2.0);
    fig_open(b, title, h);
    legend_rows(b, legend, nleg, W, 6);
    double span = W - label_w - vw - 8;
    for (size_t i = 0; i < n; i++) {
        int y = top + (int)i * ROW_H;
        buf_printf(b, "<text x=\"%.1f\" y=%d class=lab text-anchor=end>", label_w - 6, y + 15);
        mp_html_esc(b, labels[i], LABEL_MAX);
        buf_adds(b, "</text>");
        if (values[i] < 0) {
            buf_printf(b, "<text x=\"%.1f\" y=%d class=na>n/a</text>", label_w + 4, y + 15);
            continue;
        }
        double w = MP_MAX(values[i] / max * span, 1.0);
        buf_printf(b, "<rect x=\"%.1f\" y=%d width=\"%.1f\" height=%d rx=2 data-v=\"%.6g\" fill=\"",
                   label_w, y + 3, w, ROW_H - 6, values[i]);
        mp_html_esc(b, colors && colors[i] ? colors[i] : DEFAULT_COLOR, 32);
        buf_printf(b, "\"/><text x=\"%.1f\" y=%d class=val>", label_w + w + 4, y + 15);
        fmt_num(b, values[i]);
        buf_adds(b, " ");
        mp_html_esc(b, unit, 20);
        buf_adds(b, "</text>");
    }
    fig_close(b);
}

void mp_svg_hist(struct buf *b, const char *title, const char *unit, const struct mp_hist *hs,
                 const char *color)
{
    if (!hs || !hs->n) {
        buf_adds(b, "<p class=note>");
        mp_html_esc(b, title, 200);
        buf_adds(b, ": no samples.</p>\n");
        return;
    }
    /* K evenly spaced quantiles stand for the samples (each for n/K of them) */
    enum { BINS = 30, K = 400, H = 110, PL = 40, PB = 36, PT = 32, HW = 400 };
    double p50 = mp_hist_percentile(hs, 50), p99 = mp_hist_percentile(hs, 99);
    double lo = hs->min, hi = hs->max;
    if (!(hi > lo))
        hi = lo + 1;
    unsigned cnt[BINS] = { 0 };
    unsigned cmax = 1;
    for (int q = 0; q < K; q++) {
        double v = mp_hist_percentile(hs, 100.0 * (q + 0.5) / K);
        int k = (int)((v - lo) / (hi - lo) * BINS);
        k = k < 0 ? 0 : k >= BINS ? BINS - 1 : k;
        cnt[k]++;
        cmax = MP_MAX(cmax, cnt[k]);
    }
    fig_open_w(b, title, HW, H + PB + PT);
    double pw = HW - PL - 10, bw = pw / BINS;
    buf_printf(b, "<line x1=%d y1=%d x2=%d y2=%d class=\"ax\"/>", PL, PT + H, HW - 10, PT + H);
    for (int k = 0; k < BINS; k++) {
        if (!cnt[k])
            continue;
        double hh = (double)cnt[k] / cmax * H;
        buf_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"", PL + k * bw,
                   PT + H - hh, MP_MAX(bw - 1, 1.0), hh);
        mp_html_esc(b, color ? color : DEFAULT_COLOR, 32);
        buf_adds(b, "\"/>");
    }
    /* the tallest bin's share of the samples */
    buf_printf(b, "<text x=%d y=%d class=lab text-anchor=end>%.0f</text>", PL - 4, PT + 10,
               ceil((double)cmax * (double)hs->n / K));
    buf_printf(b, "<text x=%d y=%d class=lab text-anchor=end>0</text>", PL - 4, PT + H);
    buf_printf(b, "<text x=%d y=%d class=lab>", PL, PT + H + 16);
    fmt_num(b, lo);
    buf_printf(b, "</text><text x=%d y=%d class=lab text-anchor=end>", HW - 10, PT + H + 16);
    fmt_num(b, hs->max);
    buf_adds(b, " ");
    mp_html_esc(b, unit, 20);
    buf_adds(b, "</text>");
    const double q[2] = { p50, p99 };
    const char *qn[2] = { "p50", "p99" };
    for (int i = 0; i < 2; i++) {
        double x = PL + (q[i] - lo) / (hi - lo) * pw;
        buf_printf(b, "<line x1=\"%.1f\" y1=%d x2=\"%.1f\" y2=%d class=\"%s\"/>", x,
                   PT - (i ? 4 : 16), x, PT + H, i ? "p99" : "p50");
        /* p50 on the upper row, p99 on the lower */
        char t[64], v[40];
        fmt_num_s(v, sizeof(v), q[i]);
        snprintf(t, sizeof(t), "%s %s", qn[i], v);
        text_near(b, HW, x, i ? PT - 6 : PT - 18, "lab", t, 0);
    }
    buf_printf(b, "<text x=%d y=%d class=lab>n = %llu</text>", PL + 4, PT + H + 28,
               (unsigned long long)hs->n);
    fig_close(b);
}

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

void mp_svg_lines(struct buf *b, const char *title, const char *xunit, const char *yunit,
                  const struct mp_svg_series *s, size_t ns)
{
    enum { MAXX = 16, PL = 46, PR = 16, PH = 150, PB = 40 };
    double xs[MAXX], ymax = 0;
    size_t nx = 0, npts = 0;
    for (size_t i = 0; i < ns; i++)
        for (size_t k = 0; k < s[i].n; k++) {
            if (s[i].y[k] < 0)
                continue;
            npts++;
            ymax = MP_MAX(ymax, s[i].y[k]);
            bool seen = false;
            for (size_t j = 0; j < nx; j++)
                seen = seen || xs[j] == s[i].x[k];
            if (!seen && nx < MAXX)
                xs[nx++] = s[i].x[k];
        }
    if (!npts) {
        buf_adds(b, "<p class=note>");
        mp_html_esc(b, title, 200);
        buf_adds(b, ": no data.</p>\n");
        return;
    }
    qsort(xs, nx, sizeof(*xs), cmp_dbl);
    if (!(ymax > 0))
        ymax = 1;
    const char **leg = xcalloc(2 * ns + 1, sizeof(*leg));
    for (size_t i = 0; i < ns; i++) {
        leg[2 * i] = s[i].name ? s[i].name : "?";
        leg[2 * i + 1] = s[i].color ? s[i].color : DEFAULT_COLOR;
    }
    int rows = legend_nrows(leg, ns, W);
    int pt = 6 + rows * 18 + 20; /* legend, then the y unit above the axis */
    fig_open(b, title, pt + PH + PB);
    legend_rows(b, leg, ns, W, 6);
    double pw = W - PL - PR;
#define XP(j) (PL + (nx > 1 ? (double)(j) * pw / (double)(nx - 1) : pw / 2))
#define YP(v) (pt + PH - (v) / ymax * PH)
    buf_printf(b, "<line x1=%d y1=%d x2=%d y2=%d class=\"ax\"/>", PL, pt + PH, W - PR, pt + PH);
    buf_printf(b, "<line x1=%d y1=%d x2=%d y2=%d class=\"ax\"/>", PL, pt, PL, pt + PH);
    for (int t = 0; t <= 2; t++) {
        double v = ymax * t / 2;
        buf_printf(b, "<text x=%d y=\"%.1f\" class=lab text-anchor=end>", PL - 4, YP(v) + 4);
        if (t)
            fmt_num(b, v);
        else
            buf_addc(b, '0');
        buf_adds(b, "</text>");
    }
    for (size_t j = 0; j < nx; j++) {
        buf_printf(b, "<text x=\"%.1f\" y=%d class=lab text-anchor=middle>%g</text>", XP(j),
                   pt + PH + 15, xs[j]);
    }
    buf_printf(b, "<text x=%d y=%d class=lab text-anchor=middle>", PL + (int)pw / 2, pt + PH + 33);
    mp_html_esc(b, xunit, 60);
    buf_printf(b, "</text><text x=4 y=%d class=lab>", pt - 10);
    mp_html_esc(b, yunit, 20);
    buf_adds(b, "</text>");
    for (size_t i = 0; i < ns; i++) {
        const char *col = leg[2 * i + 1];
        struct buf pts = BUF_INIT;
        for (size_t j = 0; j < nx; j++)
            for (size_t k = 0; k < s[i].n; k++)
                if (s[i].x[k] == xs[j] && s[i].y[k] >= 0) {
                    buf_printf(&pts, "%s%.1f,%.1f", pts.len ? " " : "", XP(j), YP(s[i].y[k]));
                    break;
                }
        buf_adds(b, "<polyline fill=none stroke-width=2 stroke=\"");
        mp_html_esc(b, col, 32);
        buf_printf(b, "\" points=\"%s\"/>", pts.data ? pts.data : "");
        buf_release(&pts);
        for (size_t j = 0; j < nx; j++)
            for (size_t k = 0; k < s[i].n; k++) {
                if (s[i].x[k] != xs[j] || s[i].y[k] < 0)
                    continue;
                buf_printf(b, "<circle class=pt cx=\"%.1f\" cy=\"%.1f\" r=3.5 data-x=\"%g\" "
                              "data-y=\"%.6g\" fill=\"", XP(j), YP(s[i].y[k]), xs[j], s[i].y[k]);
                mp_html_esc(b, col, 32);
                buf_adds(b, "\"><title>");
                mp_html_esc(b, leg[2 * i], 60);
                buf_adds(b, ": ");
                fmt_num(b, s[i].y[k]);
                buf_adds(b, " ");
                mp_html_esc(b, yunit, 20);
                buf_printf(b, " at %g</title></circle>", xs[j]);
                break;
            }
    }
#undef XP
#undef YP
    free(leg);
    fig_close(b);
}

void mp_svg_timeline(struct buf *b, const char *title, const struct mp_svg_span *s, size_t n,
                     const struct mp_svg_tl *t)
{
    if (!n) {
        buf_adds(b, "<p class=note>");
        mp_html_esc(b, title, 200);
        buf_adds(b, ": no requests.</p>\n");
        return;
    }
    static const struct mp_svg_tl none = { NULL, NULL, 0, -1, NULL, -1, NULL };
    if (!t)
        t = &none;
    enum { PL = 10, PT = 30, PB = 22, LANE = 6 };
    double t0 = s[0].t0, t1 = s[0].t1;
    int lanes = 1;
    for (size_t i = 0; i < n; i++) {
        t0 = MP_MIN(t0, s[i].t0);
        t1 = MP_MAX(t1, MP_MAX(s[i].t1, s[i].t0));
        lanes = MP_MAX(lanes, s[i].lane + 1);
    }
    bool fail = t->fail_at >= 0, quiet = fail && t->quiet_from >= 0;
    if (fail)
        t1 = MP_MAX(t1, t->fail_at);
    if (quiet)
        t0 = MP_MIN(t0, t->quiet_from);
    if (!(t1 > t0))
        t1 = t0 + 1e-3;
    lanes = MP_MIN(lanes, 64);
    int base = PT + lanes * LANE;
    int h = base + PB + (fail ? 16 : 0) + (quiet ? 16 : 0);
    double pw = W - PL - 10;
    fig_open(b, title, h);
#define TX(v) (PL + ((v) - t0) / (t1 - t0) * pw)
    if (quiet) {
        double x0 = TX(t->quiet_from), x1 = TX(t->fail_at);
        buf_printf(b, "<rect class=\"stall\" x=\"%.1f\" y=%d width=\"%.1f\" height=\"%d\"/>", x0, PT - 4,
                   MP_MAX(x1 - x0, 1.0), lanes * LANE + 8);
    }
    for (size_t i = 0; i < t->nmarks; i++) {
        double x = TX(t->mark_t[i]);
        buf_printf(b, "<line x1=\"%.1f\" y1=%d x2=\"%.1f\" y2=%d class=\"ph\"/>", x, PT - 4, x, base);
        text_near(b, W, x - 2, PT - 6 - (int)(i % 2) * 10, "phl", t->marks[i], 24);
    }
    for (size_t i = 0; i < n; i++) {
        int lane = MP_MIN(s[i].lane, lanes - 1);
        double x0 = TX(s[i].t0), x1 = TX(MP_MAX(s[i].t1, s[i].t0));
        buf_printf(b, "<rect x=\"%.1f\" y=%d width=\"%.1f\" height=%d class=\"%s\"/>", x0,
                   PT + lane * LANE, MP_MAX(x1 - x0, 1.0), LANE - 1, s[i].failed ? "rf" : "ro");
    }
    int y = base + 16;
    if (quiet) {
        double x = TX(t->quiet_from);
        buf_printf(b, "<line x1=\"%.1f\" y1=%d x2=\"%.1f\" y2=%d class=\"stop\"/>", x, PT - 4, x,
                   base + 4);
        text_near(b, W, x, y, "stopt", t->quiet_label ? t->quiet_label : "last token", 48);
        y += 16;
    }
    if (fail) {
        double x = TX(t->fail_at);
        buf_printf(b, "<line x1=\"%.1f\" y1=%d x2=\"%.1f\" y2=%d class=\"fail\"/>", x, PT - 4, x,
                   base + 4);
        text_near(b, W, x, y, "failt", t->fail_label ? t->fail_label : "failure", 48);
    }
    /* the requests' clock: seconds since the engine was started */
    buf_printf(b, "<text x=%d y=%d class=lab>%.2f s</text>", PL, h - 4, t0);
    buf_printf(b, "<text x=%d y=%d class=lab text-anchor=end>%.2f s</text>", W - 10, h - 4, t1);
#undef TX
    fig_close(b);
}
