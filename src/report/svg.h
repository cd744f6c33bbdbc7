/* svg.h - small inline-SVG charts for the HTML report, drawn by moeprobe
 * itself (no scripts, no external resources). Every function appends one
 * <figure> with an <svg viewBox> that scales to the page width; every text
 * taken from input is escaped with mp_html_esc. Pure: buffer in, buffer out. */
#ifndef MP_SVG_H
#define MP_SVG_H

#include "compat.h"

#include "buf.h"
#include "escape.h" /* mp_html_esc */
#include "hist.h"


/* Horizontal bars, one row per value (values < 0 are drawn as "n/a"; each
 * bar carries its exact value in data-v). colors[i] may be NULL (default).
 * legend: NULL-terminated pairs {label, color, ...} or NULL (wraps into
 * rows). Labels are cut at 26 bytes; the label column fits the longest. */
void mp_svg_hbars(struct buf *b, const char *title, const char *unit, const char *const *labels,
                  const double *values, const char *const *colors, size_t n,
                  const char *const *legend);

/* Distribution of a histogram's samples over [min, max] (30 bins, drawn
 * from its percentiles, so bin heights are within the histogram's 1 %),
 * with p50 and p99 marked and n. Nothing but a note when h is empty. */
void mp_svg_hist(struct buf *b, const char *title, const char *unit, const struct mp_hist *h,
                 const char *color);

/* One line per series over ordinal x positions (the distinct x values of
 * all series, ascending), y from 0. Points carry data-x / data-y and a
 * <title>. Nothing but a note when no series has a point. */
struct mp_svg_series {
    const char *name, *color;
    const double *x, *y;
    size_t n;
};
void mp_svg_lines(struct buf *b, const char *title, const char *xunit, const char *yunit,
                  const struct mp_svg_series *s, size_t ns);

struct mp_svg_span {
    double t0, t1;   /* seconds */
    int lane;        /* row (>= 0) */
    bool failed;
};

/* What a request timeline shows besides its requests. */
struct mp_svg_tl {
    const double *mark_t;      /* phase boundaries: marks[i] at seconds mark_t[i] */
    const char *const *marks;
    size_t nmarks;
    double fail_at;            /* >= 0: the failure marker (class fail) with fail_label */
    const char *fail_label;
    double quiet_from;         /* >= 0 (a hang): the last token, a marker (class stop) and
                                * the silent span up to fail_at (class stall) with quiet_label */
    const char *quiet_label;
};

/* Requests as bars over time (lanes by s[i].lane, red when failed); the
 * axis is labelled with the first and last time as given (seconds on the
 * requests' clock). Labels are kept short and inside the chart; put long
 * words beside it. */
void mp_svg_timeline(struct buf *b, const char *title, const struct mp_svg_span *s, size_t n,
                     const struct mp_svg_tl *t);

#endif
