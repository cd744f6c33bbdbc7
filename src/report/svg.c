/* svg.c - inline SVG charts; see svg.h. */
#include "report/svg.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "escape.h"
#include "verdict/stats.h"
#include "xalloc.h"

#define W 480          /* viewBox width; the figure scales to the page (max 760 px) */
#define ROW_H 22
#define LABEL_W 150
#define DEFAULT_COLOR "#3b7dd8"

void mp_html_esc(struct buf *b, const char *s, size_t max)
{
    if (!s) {
        buf_adds(b, "—");
        return;
    }
    size_t n = strlen(s);
    bool cut = max && n > max;
    if (cut) {
        n = max;
        while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
            n--;
    }
    char *clean = mp_utf8_clean(s, n);
    size_t left = strlen(clean);
    for (const char *p = clean; *p; p++, left--) {
        unsigned char c = (unsigned char)*p;
        /* DEL, C1 and bidi controls (a right-to-left override reorders
         * what the reader sees even as an entity): shown as text */
        size_t h = mp_esc_hidden_at(b, p, left);
        if (h) {
            p += h - 1;
            left -= h - 1;
            continue;
        }
        switch (c) {
        case '&':
            buf_adds(b, "&amp;");
            break;
        case '<':
            buf_adds(b, "&lt;");
            break;
        case '>':
            buf_adds(b, "&gt;");
            break;
        case '"':
            buf_adds(b, "&quot;");
            break;
        case '\'':
            buf_adds(b, "&#39;");
            break;
        default:
            if (c >= 0x20 || c == '\n' || c == '\t')
                buf_addc(b, (char)c);
            else if (c == '\r')
                break;
            else
                buf_adds(b, "\xEF\xBF\xBD"); /* visible, not executable */
        }
    }
    free(clean);
    if (cut)
        buf_adds(b, "…");
}

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

static void fmt_num(struct buf *b, double v)
{
    if (v >= 100)
        buf_printf(b, "%.0f", v);
    else if (v >= 10)
        buf_printf(b, "%.1f", v);
    else
        buf_printf(b, "%.2f", v);
}

void mp_svg_hbars(struct buf *b, const char *title, const char *unit, const char *const *labels,
                  const double *values, const char *const *colors, size_t n,
                  const char *const *legend)
{
    size_t nleg = 0;
    while (legend && legend[2 * nleg])
        nleg++;
    int top = nleg ? 24 : 6;
    int h = top + (int)n * ROW_H + 8;
    fig_open(b, title, h);
    double max = 0;
    for (size_t i = 0; i < n; i++)
        max = MP_MAX(max, values[i]);
    if (max <= 0)
        max = 1;
    int x = 8;
    for (size_t i = 0; i < nleg; i++) {
        buf_printf(b, "<rect x=%d y=6 width=12 height=12 fill=\"", x);
        mp_html_esc(b, legend[2 * i + 1], 32);
        buf_printf(b, "\"/><text x=%d y=16 class=lg>", x + 16);
        mp_html_esc(b, legend[2 * i], 40);
        buf_adds(b, "</text>");
        x += 28 + 8 * (int)strlen(legend[2 * i]);
    }
    double span = W - LABEL_W - 95;
    for (size_t i = 0; i < n; i++) {
        int y = top + (int)i * ROW_H;
        buf_printf(b, "<text x=%d y=%d class=lab text-anchor=end>", LABEL_W - 6, y + 15);
        mp_html_esc(b, labels[i], 26);
        buf_adds(b, "</text>");
        if (values[i] < 0) {
            buf_printf(b, "<text x=%d y=%d class=na>n/a</text>", LABEL_W + 4, y + 15);
            continue;
        }
        double w = values[i] / max * span;
        buf_printf(b, "<rect x=%d y=%d width=\"%.1f\" height=%d rx=2 fill=\"", LABEL_W, y + 3,
                   MP_MAX(w, 1.0), ROW_H - 6);
        mp_html_esc(b, colors && colors[i] ? colors[i] : DEFAULT_COLOR, 32);
        buf_printf(b, "\"/><text x=\"%.1f\" y=%d class=val>", LABEL_W + MP_MAX(w, 1.0) + 4, y + 15);
        fmt_num(b, values[i]);
        buf_adds(b, " ");
        mp_html_esc(b, unit, 20);
        buf_adds(b, "</text>");
    }
    fig_close(b);
}

void mp_svg_hist(struct buf *b, const char *title, const char *unit, const double *v, size_t n,
                 const char *color)
{
    if (!n) {
        buf_adds(b, "<p class=note>");
        mp_html_esc(b, title, 200);
        buf_adds(b, ": no samples.</p>\n");
        return;
    }
    enum { BINS = 30, H = 110, PL = 34, PB = 30, PT = 26, HW = 400 };
    double p50 = mp_stats_percentile(v, n, 50), p99 = mp_stats_percentile(v, n, 99);
    double lo = v[0], hi = v[0];
    for (size_t i = 0; i < n; i++) {
        lo = MP_MIN(lo, v[i]);
        hi = MP_MAX(hi, v[i]);
    }
    if (!(hi > lo))
        hi = lo + 1;
    unsigned cnt[BINS] = { 0 };
    unsigned cmax = 1;
    for (size_t i = 0; i < n; i++) {
        int k = (int)((v[i] - lo) / (hi - lo) * BINS);
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
    buf_printf(b, "<text x=%d y=%d class=lab text-anchor=end>%u</text>", PL - 4, PT + 10, cmax);
    buf_printf(b, "<text x=%d y=%d class=lab text-anchor=end>0</text>", PL - 4, PT + H);
    buf_printf(b, "<text x=%d y=%d class=lab>", PL, PT + H + 16);
    fmt_num(b, lo);
    buf_printf(b, "</text><text x=%d y=%d class=lab text-anchor=end>", HW - 10, PT + H + 16);
    fmt_num(b, hi);
    buf_adds(b, " ");
    mp_html_esc(b, unit, 20);
    buf_adds(b, "</text>");
    const double q[2] = { p50, p99 };
    const char *qn[2] = { "p50", "p99" };
    for (int i = 0; i < 2; i++) {
        double x = PL + (q[i] - lo) / (hi - lo) * pw;
        buf_printf(b, "<line x1=\"%.1f\" y1=%d x2=\"%.1f\" y2=%d class=\"%s\"/>", x,
                   PT - (i ? 4 : 16), x, PT + H, i ? "p99" : "p50");
        /* p50 on the upper row, p99 on the lower; anchored away from the edges */
        bool right = x > HW / 2;
        buf_printf(b, "<text x=\"%.1f\" y=%d class=lab text-anchor=%s>%s ", x + (right ? -3 : 3),
                   i ? PT - 6 : PT - 18, right ? "end" : "start", qn[i]);
        fmt_num(b, q[i]);
        buf_adds(b, "</text>");
    }
    buf_printf(b, "<text x=%d y=%d class=lab>n = %zu</text>", PL + 4, PT + H + 28, n);
    fig_close(b);
}

void mp_svg_timeline(struct buf *b, const char *title, const struct mp_svg_span *s, size_t n,
                     double fail_at, const char *fail_label, const double *mark_t,
                     const char *const *marks, size_t nmarks)
{
    if (!n) {
        buf_adds(b, "<p class=note>");
        mp_html_esc(b, title, 200);
        buf_adds(b, ": no requests.</p>\n");
        return;
    }
    enum { PL = 10, PT = 30, PB = 22, LANE = 6 };
    double t0 = s[0].t0, t1 = s[0].t1;
    int lanes = 1;
    for (size_t i = 0; i < n; i++) {
        t0 = MP_MIN(t0, s[i].t0);
        t1 = MP_MAX(t1, MP_MAX(s[i].t1, s[i].t0));
        lanes = MP_MAX(lanes, s[i].lane + 1);
    }
    if (fail_at >= 0)
        t1 = MP_MAX(t1, fail_at);
    if (!(t1 > t0))
        t1 = t0 + 1e-3;
    lanes = MP_MIN(lanes, 64);
    int h = PT + lanes * LANE + PB + (fail_at >= 0 ? 16 : 0);
    double pw = W - PL - 10;
    fig_open(b, title, h);
#define TX(t) (PL + ((t) - t0) / (t1 - t0) * pw)
    for (size_t i = 0; i < nmarks; i++) {
        double x = TX(mark_t[i]);
        buf_printf(b, "<line x1=\"%.1f\" y1=%d x2=\"%.1f\" y2=%d class=\"ph\"/>", x, PT - 4, x,
                   PT + lanes * LANE);
        buf_printf(b, "<text x=\"%.1f\" y=%d class=phl>", x + 2, PT - 6 - (int)(i % 2) * 10);
        mp_html_esc(b, marks[i], 24);
        buf_adds(b, "</text>");
    }
    for (size_t i = 0; i < n; i++) {
        int lane = MP_MIN(s[i].lane, lanes - 1);
        double x0 = TX(s[i].t0), x1 = TX(MP_MAX(s[i].t1, s[i].t0));
        buf_printf(b, "<rect x=\"%.1f\" y=%d width=\"%.1f\" height=%d class=\"%s\"/>", x0,
                   PT + lane * LANE, MP_MAX(x1 - x0, 1.0), LANE - 1, s[i].failed ? "rf" : "ro");
    }
    if (fail_at >= 0) {
        double x = TX(fail_at);
        buf_printf(b, "<line x1=\"%.1f\" y1=%d x2=\"%.1f\" y2=%d class=\"fail\"/>", x, PT - 4, x,
                   PT + lanes * LANE + 4);
        buf_printf(b, "<text x=\"%.1f\" y=%d class=failt text-anchor=%s>", x + (x > W / 2 ? -4 : 4),
                   PT + lanes * LANE + 16, x > W / 2 ? "end" : "start");
        mp_html_esc(b, fail_label ? fail_label : "failure", 60);
        buf_adds(b, "</text>");
    }
    buf_printf(b, "<text x=%d y=%d class=lab>%.2f s</text>", PL, h - 4, 0.0);
    buf_printf(b, "<text x=%d y=%d class=lab text-anchor=end>%.2f s</text>", W - 10, h - 4, t1 - t0);
#undef TX
    fig_close(b);
}
