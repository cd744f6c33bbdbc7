/* prom.h - a pure, bounded parser of the Prometheus text exposition format
 * (version 0.0.4, what vLLM's /metrics serves through prometheus_client).
 *
 *   struct mp_prom p;
 *   int rc = mp_prom_parse(&p, body, len);   0, or MP_ELIMIT (see below)
 *   ... mp_prom_sum(&p, "vllm:generation_tokens_total", &v) ...
 *   mp_prom_free(&p);
 *
 * Grammar (one line each, "\n"-terminated; a "\r" before it is dropped):
 *   "# HELP name text"   (text escapes \\ and \n)
 *   "# TYPE name type"   (counter gauge histogram summary untyped)
 *   "# anything else"    a comment, ignored; blank lines are ignored
 *   name[{l="v",...}] value [timestamp]
 * name: [a-zA-Z_:][a-zA-Z0-9_:]*; label names [a-zA-Z_][a-zA-Z0-9_]*; label
 * values are double-quoted with the escapes \\ \" \n (any other escape
 * makes the line bad); a trailing comma inside {} is allowed; spaces and
 * tabs separate tokens. value: a decimal or exponent float, "+Inf", "-Inf",
 * "Inf" or "NaN" (any case); timestamp: an integer (milliseconds).
 *
 * Partial input: only "\n"-terminated lines count. A last line without its
 * "\n" (a body cut by a size cap or a closed connection) is not parsed and
 * p->partial is set: a cut never yields a wrong number, only a missing one.
 * A malformed line is skipped and counted in p->bad_lines (the first one's
 * 1-based line number and why in bad_line / bad_why); the rest is parsed.
 *
 * Bounds: at most MP_PROM_MAX_INPUT bytes are read (the rest is ignored,
 * p->partial set), at most MP_PROM_MAX_SERIES samples, MP_PROM_MAX_LABELS
 * labels per sample and MP_PROM_MAX_TYPES TYPE lines are kept. Hitting any
 * bound makes mp_prom_parse return MP_ELIMIT; what was parsed before it is
 * valid. Memory: one copy of the input plus the sample arrays.
 *
 * Strings in the result (names, label names and values, HELP text) point
 * into p's own copy of the input, are NUL-terminated and unescaped, and
 * live until mp_prom_free. */
#ifndef MP_HTTP_PROM_H
#define MP_HTTP_PROM_H

#include "compat.h"

#include <stddef.h>

#define MP_PROM_MAX_INPUT ((size_t)8 << 20) /* 8 MiB */
#define MP_PROM_MAX_SERIES 50000
#define MP_PROM_MAX_LABELS 32
#define MP_PROM_MAX_TYPES 4096
#define MP_PROM_MAX_BUCKETS 64 /* per histogram, in mp_prom_histogram */

enum mp_prom_type {
    MP_PROM_UNTYPED = 0,
    MP_PROM_COUNTER,
    MP_PROM_GAUGE,
    MP_PROM_HISTOGRAM,
    MP_PROM_SUMMARY,
};

struct mp_prom_label {
    const char *name, *value;
};

struct mp_prom_sample {
    const char *name;
    const struct mp_prom_label *labels; /* nlabels entries, in input order */
    size_t nlabels;
    double value;
    bool has_ts;
    long long ts_ms;
};

struct mp_prom_family {
    const char *name;
    enum mp_prom_type type;
    const char *help; /* NULL when no HELP line */
};

struct mp_prom {
    struct mp_prom_sample *s;
    size_t n;
    struct mp_prom_family *fam; /* from TYPE and HELP lines */
    size_t nfam;
    size_t lines;       /* lines read */
    size_t bad_lines;   /* lines skipped as malformed */
    size_t bad_line;    /* 1-based number of the first, 0 = none */
    const char *bad_why;/* static text */
    bool partial;       /* the input ended inside a line, or was cut at the bound */
    bool limited;       /* a series/label/type bound dropped something */
    /* owned storage */
    char *text;
    struct mp_prom_label *lab;
    size_t nlab, caplab, caps, capfam;
};

/* Parse len bytes of text into *p (overwritten; free with mp_prom_free,
 * also after an error). Returns 0, or MP_ELIMIT when a bound cut the input
 * (the result holds what came before). Never fails on content. */
int mp_prom_parse(struct mp_prom *p, const char *text, size_t len);
void mp_prom_free(struct mp_prom *p); /* *p zeroed; accepts a zeroed p */

/* Value of a sample's label, or NULL. */
const char *mp_prom_label(const struct mp_prom_sample *s, const char *name);
/* The family a TYPE or HELP line declared with this name, or NULL. */
const struct mp_prom_family *mp_prom_family(const struct mp_prom *p, const char *name);
/* Sum / maximum of every sample named name (all label sets: vLLM labels
 * each engine of a data-parallel server). Returns the number of samples
 * (0: *out untouched). */
size_t mp_prom_sum(const struct mp_prom *p, const char *name, double *out);
size_t mp_prom_max(const struct mp_prom *p, const char *name, double *out);

/* A histogram summed over its label sets: base_bucket{le=...} cumulative
 * counts by upper bound (sorted, +Inf last when present), base_sum and
 * base_count. */
struct mp_prom_hist {
    double le[MP_PROM_MAX_BUCKETS];
    double cum[MP_PROM_MAX_BUCKETS];
    size_t n;
    double sum, count;
    bool has_sum, has_count;
};
/* Fill *h from the samples of histogram base. Returns the number of bucket
 * samples read (0 = no such histogram); MP_ELIMIT when it has more than
 * MP_PROM_MAX_BUCKETS distinct bounds (h holds the first ones). A bucket
 * whose le does not parse is ignored. */
int mp_prom_histogram(const struct mp_prom *p, const char *base, struct mp_prom_hist *h);

/* Parse a Prometheus float ("1.5e-3", "+Inf", "NaN", ...), the whole of
 * s[0..n). Returns false when it is not one. */
bool mp_prom_float(const char *s, size_t n, double *out);

#endif
