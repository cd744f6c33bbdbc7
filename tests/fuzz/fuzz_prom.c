/* fuzz_prom.c - the Prometheus text parser (http/prom.h) and the reading of
 * a /metrics body (observe/srvmetrics.h) under arbitrary input.
 *
 * The first byte picks a cut position (as a fraction of the rest); the rest
 * is the body. Invariants: names are valid metric names, strings are
 * NUL-terminated, the bounds hold, and the partial-input contract: parsing
 * the body cut anywhere yields a prefix of the samples of the whole body
 * (same names, labels and values), never a different number. */
#include "compat.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "http/prom.h"
#include "observe/srvmetrics.h"

static bool valid_name(const char *s)
{
    if (!*s)
        return false;
    for (const char *p = s; *p; p++) {
        bool ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_' || *p == ':' ||
                  (p > s && *p >= '0' && *p <= '9');
        if (!ok)
            return false;
    }
    return true;
}

static bool same_value(double a, double b)
{
    return (isnan(a) && isnan(b)) || a == b;
}

static bool same_sample(const struct mp_prom_sample *a, const struct mp_prom_sample *b)
{
    if (strcmp(a->name, b->name) || a->nlabels != b->nlabels || !same_value(a->value, b->value) ||
        a->has_ts != b->has_ts || a->ts_ms != b->ts_ms)
        return false;
    for (size_t i = 0; i < a->nlabels; i++)
        if (strcmp(a->labels[i].name, b->labels[i].name) ||
            strcmp(a->labels[i].value, b->labels[i].value))
            return false;
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
    if (n < 1)
        return 0;
    const char *s = (const char *)d + 1;
    size_t len = n - 1, cut = len * d[0] / 255;
    struct mp_prom whole, part;
    int rw = mp_prom_parse(&whole, s, len);
    int rp = mp_prom_parse(&part, s, cut);
    if ((rw != 0 && rw != MP_ELIMIT) || (rp != 0 && rp != MP_ELIMIT))
        abort();
    if (whole.n > MP_PROM_MAX_SERIES || whole.nfam > MP_PROM_MAX_TYPES ||
        whole.bad_lines > whole.lines || (whole.bad_lines > 0) != (whole.bad_line > 0))
        abort();
    for (size_t i = 0; i < whole.n; i++) {
        const struct mp_prom_sample *x = &whole.s[i];
        if (!valid_name(x->name) || x->nlabels > MP_PROM_MAX_LABELS)
            abort();
        for (size_t k = 0; k < x->nlabels; k++)
            if (!valid_name(x->labels[k].name) || strchr(x->labels[k].name, ':') ||
                strlen(x->labels[k].value) > len)
                abort();
    }
    for (size_t i = 0; i < whole.nfam; i++)
        if (!valid_name(whole.fam[i].name) || whole.fam[i].type > MP_PROM_SUMMARY)
            abort();
    if (rw == 0 && rp == 0) {
        if (part.n > whole.n)
            abort();
        for (size_t i = 0; i < part.n; i++)
            if (!same_sample(&part.s[i], &whole.s[i]))
                abort();
    }
    for (size_t i = 0; i < whole.n && i < 64; i++) {
        struct mp_prom_hist h;
        size_t bl = strlen(whole.s[i].name);
        char base[256];
        if (bl >= 7 && bl - 7 < sizeof(base) && !strcmp(whole.s[i].name + bl - 7, "_bucket")) {
            memcpy(base, whole.s[i].name, bl - 7);
            base[bl - 7] = '\0';
            int r = mp_prom_histogram(&whole, base, &h);
            if (r < 0 && r != MP_ELIMIT)
                abort();
            if (h.n > MP_PROM_MAX_BUCKETS)
                abort();
            for (size_t k = 1; k < h.n; k++)
                if (!(h.le[k - 1] < h.le[k]))
                    abort();
        }
    }
    mp_prom_free(&whole);
    mp_prom_free(&part);
    /* the reader on the same bytes: any result, never a crash */
    struct mp_srvm_snap a;
    char why[160];
    if (mp_srvm_snap_read(&a, s, len, why, sizeof(why)) == 0) {
        struct mp_server_metrics m;
        memset(&m, 0, sizeof(m));
        mp_srvm_observe(&m, &a);
        mp_srvm_delta(&m, &a, &a);
        if (m.preemptions > 0 || m.gen_tokens > 0 || m.ttft.n != 0)
            abort(); /* a snapshot against itself has no delta */
    }
    return 0;
}
