/* svg.h - small inline-SVG charts for the HTML report, drawn by moeprobe
 * itself (no scripts, no external resources). Every function appends one
 * <figure> with an <svg viewBox> that scales to the page width; every text
 * taken from input is escaped with mp_html_esc. Pure: buffer in, buffer out. */
#ifndef MP_SVG_H
#define MP_SVG_H

#include "compat.h"

#include "buf.h"

/* Append s as HTML/XML text: valid UTF-8, & < > " ' escaped, C0 control
 * characters except \n and \t shown as U+FFFD (\r dropped), DEL, C1 and
 * bidi controls as \x7f / \uNNNN text (mp_esc_hidden_at), at most max
 * bytes of s ("…" when cut; 0 = no limit). NULL appends "—". */
void mp_html_esc(struct buf *b, const char *s, size_t max);

/* Horizontal bars, one row per value (values < 0 are drawn as "n/a").
 * colors[i] may be NULL (default). legend: NULL-terminated pairs
 * {label, color, ...} or NULL. */
void mp_svg_hbars(struct buf *b, const char *title, const char *unit, const char *const *labels,
                  const double *values, const char *const *colors, size_t n,
                  const char *const *legend);

/* Distribution of samples (histogram over [min, max] with p50 and p99
 * marked). Nothing but a note when n == 0. */
void mp_svg_hist(struct buf *b, const char *title, const char *unit, const double *v, size_t n,
                 const char *color);

struct mp_svg_span {
    double t0, t1;   /* seconds */
    int lane;        /* row (>= 0) */
    bool failed;
};

/* Requests as bars over time; fail_at >= 0 draws the failure marker with
 * fail_label. Phase boundaries: marks[i] at seconds mark_t[i]. */
void mp_svg_timeline(struct buf *b, const char *title, const struct mp_svg_span *s, size_t n,
                     double fail_at, const char *fail_label, const double *mark_t,
                     const char *const *marks, size_t nmarks);

#endif
