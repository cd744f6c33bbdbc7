/* prom.c - see prom.h. The input is copied once; names and label values
 * are NUL-terminated and unescaped in that copy (an unescaped value is
 * never longer than its escaped form), so parsing allocates only the
 * arrays. */
#include "compat.h"

#include "http/prom.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "err.h"
#include "xalloc.h"

static bool name_start(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
}

static bool name_char(char c)
{
    return name_start(c) || (c >= '0' && c <= '9');
}

static bool is_ws(char c)
{
    return c == ' ' || c == '\t';
}

static char *skip_ws(char *s)
{
    while (is_ws(*s))
        s++;
    return s;
}

bool mp_prom_float(const char *s, size_t n, double *out)
{
    if (n == 0 || n > 64)
        return false;
    const char *w = s;
    size_t wn = n;
    int sign = 1;
    if (*w == '+' || *w == '-') {
        sign = *w == '-' ? -1 : 1;
        w++;
        wn--;
    }
    if (wn == 3 && !strncasecmp(w, "inf", 3)) {
        *out = sign * INFINITY;
        return true;
    }
    if (n == 3 && !strncasecmp(s, "nan", 3)) {
        *out = NAN;
        return true;
    }
    char tmp[72];
    bool digit = false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c >= '0' && c <= '9')
            digit = true;
        else if (c != '.' && c != 'e' && c != 'E' && c != '+' && c != '-')
            return false; /* no hex floats, no "infinity", no "nan(...)" */
        tmp[i] = c;
    }
    if (!digit)
        return false;
    tmp[n] = '\0';
    char *end;
    double v = strtod(tmp, &end);
    if (end != tmp + n)
        return false;
    *out = v;
    return true;
}

static bool parse_ts(const char *s, size_t n, long long *out)
{
    if (n == 0 || n > 20)
        return false;
    size_t i = (*s == '-' || *s == '+') ? 1 : 0;
    if (i == n)
        return false;
    for (size_t k = i; k < n; k++)
        if (s[k] < '0' || s[k] > '9')
            return false;
    char tmp[24];
    memcpy(tmp, s, n);
    tmp[n] = '\0';
    *out = strtoll(tmp, NULL, 10);
    return true;
}

struct pstate {
    struct mp_prom *p;
    size_t *lab0; /* per sample: index of its first label in p->lab */
    size_t caplab0;
    int rc;
};

static bool bad(struct pstate *st, const char *why)
{
    struct mp_prom *p = st->p;
    p->bad_lines++;
    if (!p->bad_line) {
        p->bad_line = p->lines;
        p->bad_why = why;
    }
    return false;
}

static struct mp_prom_family *fam_find(struct mp_prom *p, const char *name)
{
    for (size_t i = 0; i < p->nfam; i++)
        if (!strcmp(p->fam[i].name, name))
            return &p->fam[i];
    return NULL;
}

static struct mp_prom_family *fam_add(struct pstate *st, const char *name)
{
    struct mp_prom *p = st->p;
    if (p->nfam >= MP_PROM_MAX_TYPES) {
        p->limited = true;
        st->rc = MP_ELIMIT;
        return NULL;
    }
    if (p->nfam == p->capfam) {
        p->capfam = p->capfam ? p->capfam * 2 : 64;
        p->fam = xreallocarray(p->fam, p->capfam, sizeof(*p->fam));
    }
    struct mp_prom_family *f = &p->fam[p->nfam++];
    f->name = name;
    f->type = MP_PROM_UNTYPED;
    f->help = NULL;
    return f;
}

/* "# HELP name text" / "# TYPE name type"; other comments are ignored */
static void comment_line(struct pstate *st, char *s)
{
    s = skip_ws(s + 1);
    bool help = !strncmp(s, "HELP", 4) && is_ws(s[4]);
    bool type = !strncmp(s, "TYPE", 4) && is_ws(s[4]);
    if (!help && !type)
        return;
    s = skip_ws(s + 4);
    char *name = s;
    if (!name_start(*s)) {
        bad(st, "HELP/TYPE without a metric name");
        return;
    }
    while (name_char(*s))
        s++;
    if (*s && !is_ws(*s)) {
        bad(st, "bad character in a metric name");
        return;
    }
    char *rest = *s ? skip_ws(s + 1) : s;
    *s = '\0';
    struct mp_prom_family *f = fam_find(st->p, name);
    if (type) {
        static const char *const words[] = {"untyped", "counter", "gauge", "histogram", "summary"};
        char *e = rest;
        while (*e && !is_ws(*e))
            e++;
        if (*skip_ws(e)) {
            bad(st, "text after the TYPE");
            return;
        }
        *e = '\0';
        int t = -1;
        for (size_t i = 0; i < MP_ARRAY_SIZE(words); i++)
            if (!strcmp(rest, words[i]))
                t = (int)i;
        if (t < 0) {
            bad(st, "unknown metric type");
            return;
        }
        if (f && f->type != MP_PROM_UNTYPED) {
            bad(st, "a second TYPE line for a metric");
            return;
        }
        if (!f && !(f = fam_add(st, name)))
            return;
        f->type = (enum mp_prom_type)t;
        return;
    }
    /* HELP: unescape \\ and \n in place; another backslash stays as it is */
    char *w = rest;
    for (char *r = rest; *r; r++) {
        if (*r == '\\' && (r[1] == '\\' || r[1] == 'n')) {
            *w++ = r[1] == 'n' ? '\n' : '\\';
            r++;
        } else {
            *w++ = *r;
        }
    }
    *w = '\0';
    if (f && f->help) {
        bad(st, "a second HELP line for a metric");
        return;
    }
    if (!f && !(f = fam_add(st, name)))
        return;
    f->help = rest;
}

static bool add_label(struct pstate *st, const char *name, const char *value, size_t first)
{
    struct mp_prom *p = st->p;
    if (p->nlab - first >= MP_PROM_MAX_LABELS) {
        p->limited = true;
        st->rc = MP_ELIMIT;
        return bad(st, "too many labels");
    }
    for (size_t i = first; i < p->nlab; i++)
        if (!strcmp(p->lab[i].name, name))
            return bad(st, "a label given twice");
    if (p->nlab == p->caplab) {
        p->caplab = p->caplab ? p->caplab * 2 : 256;
        p->lab = xreallocarray(p->lab, p->caplab, sizeof(*p->lab));
    }
    p->lab[p->nlab].name = name;
    p->lab[p->nlab].value = value;
    p->nlab++;
    return true;
}

/* {l="v",...}: s points after '{'. Returns the position after '}', or NULL
 * (line bad). */
static char *labels(struct pstate *st, char *s, size_t first)
{
    for (;;) {
        s = skip_ws(s);
        if (*s == '}')
            return s + 1;
        char *ln = s;
        if (!name_start(*s) || *s == ':') {
            bad(st, "bad label name");
            return NULL;
        }
        while (name_char(*s) && *s != ':')
            s++;
        char *lend = s;
        s = skip_ws(s);
        if (*s != '=') {
            bad(st, "label without '='");
            return NULL;
        }
        s = skip_ws(s + 1);
        if (*s != '"') {
            bad(st, "label value not quoted");
            return NULL;
        }
        *lend = '\0'; /* consumed: it held '=' or a blank */
        char *v = ++s, *w = s;
        for (;;) {
            if (!*s) {
                bad(st, "unterminated label value");
                return NULL;
            }
            if (*s == '"')
                break;
            if (*s == '\\') {
                char e = s[1];
                if (e != '\\' && e != '"' && e != 'n') {
                    bad(st, "bad escape in a label value");
                    return NULL;
                }
                *w++ = e == 'n' ? '\n' : e;
                s += 2;
            } else {
                *w++ = *s++;
            }
        }
        s++;    /* past the closing quote */
        *w = '\0'; /* w <= the quote's position: consumed */
        if (!add_label(st, ln, v, first))
            return NULL;
        s = skip_ws(s);
        if (*s == ',') {
            s++;
            continue;
        }
        if (*s == '}')
            return s + 1;
        bad(st, "expected ',' or '}' after a label");
        return NULL;
    }
}

static void sample_line(struct pstate *st, char *s)
{
    struct mp_prom *p = st->p;
    if (p->n >= MP_PROM_MAX_SERIES) {
        p->limited = true;
        st->rc = MP_ELIMIT;
        return;
    }
    char *name = s;
    if (!name_start(*s)) {
        bad(st, "line does not start with a metric name");
        return;
    }
    while (name_char(*s))
        s++;
    size_t first = p->nlab;
    if (*s && !is_ws(*s) && *s != '{') {
        bad(st, "bad character in a metric name");
        return;
    }
    char *name_end = s;
    s = skip_ws(s); /* blanks may stand between the name and its labels */
    if (*s == '{') {
        *name_end = '\0';
        s = labels(st, s + 1, first);
        if (!s) {
            p->nlab = first;
            return;
        }
        if (!is_ws(*s)) {
            p->nlab = first;
            bad(st, *s ? "no blank before the value" : "sample without a value");
            return;
        }
    } else if (s == name_end) {
        bad(st, "sample without a value");
        return;
    } else {
        *name_end = '\0';
    }
    s = skip_ws(s);
    char *v = s;
    while (*s && !is_ws(*s))
        s++;
    double val;
    if (!mp_prom_float(v, (size_t)(s - v), &val)) {
        p->nlab = first;
        bad(st, "bad sample value");
        return;
    }
    s = skip_ws(s);
    char *t = s;
    while (*s && !is_ws(*s))
        s++;
    long long ts = 0;
    bool has_ts = s > t;
    if ((has_ts && !parse_ts(t, (size_t)(s - t), &ts)) || *skip_ws(s)) {
        p->nlab = first;
        bad(st, "bad timestamp or text after the value");
        return;
    }
    if (p->n == p->caps) {
        p->caps = p->caps ? p->caps * 2 : 256;
        p->s = xreallocarray(p->s, p->caps, sizeof(*p->s));
        st->lab0 = xreallocarray(st->lab0, p->caps, sizeof(*st->lab0));
    }
    st->lab0[p->n] = first;
    p->s[p->n++] = (struct mp_prom_sample){.name = name, .nlabels = p->nlab - first, .value = val,
                                           .has_ts = has_ts, .ts_ms = ts};
}

int mp_prom_parse(struct mp_prom *p, const char *text, size_t len)
{
    memset(p, 0, sizeof(*p));
    struct pstate st = {.p = p};
    if (len > MP_PROM_MAX_INPUT) {
        len = MP_PROM_MAX_INPUT;
        p->partial = true;
        st.rc = MP_ELIMIT;
    }
    p->text = xmalloc(len + 1);
    if (len)
        memcpy(p->text, text, len);
    p->text[len] = '\0';
    char *s = p->text, *end = p->text + len;
    while (s < end) {
        char *nl = memchr(s, '\n', (size_t)(end - s));
        if (!nl) {
            p->partial = true; /* a line without its end: not trusted */
            break;
        }
        size_t ll = (size_t)(nl - s);
        *nl = '\0';
        if (ll && s[ll - 1] == '\r')
            s[--ll] = '\0';
        p->lines++;
        if (memchr(s, '\0', ll)) {
            bad(&st, "NUL byte in a line"); /* the rest of the line would be unseen */
        } else {
            char *l = skip_ws(s);
            if (*l == '#')
                comment_line(&st, l);
            else if (*l)
                sample_line(&st, l);
        }
        s = nl + 1;
    }
    for (size_t i = 0; i < p->n; i++)
        p->s[i].labels = p->s[i].nlabels ? &p->lab[st.lab0[i]] : NULL;
    free(st.lab0);
    return st.rc;
}

void mp_prom_free(struct mp_prom *p)
{
    free(p->s);
    free(p->fam);
    free(p->text);
    free(p->lab);
    memset(p, 0, sizeof(*p));
}

const char *mp_prom_label(const struct mp_prom_sample *s, const char *name)
{
    for (size_t i = 0; i < s->nlabels; i++)
        if (!strcmp(s->labels[i].name, name))
            return s->labels[i].value;
    return NULL;
}

const struct mp_prom_family *mp_prom_family(const struct mp_prom *p, const char *name)
{
    for (size_t i = 0; i < p->nfam; i++)
        if (!strcmp(p->fam[i].name, name))
            return &p->fam[i];
    return NULL;
}

size_t mp_prom_sum(const struct mp_prom *p, const char *name, double *out)
{
    size_t k = 0;
    double v = 0;
    for (size_t i = 0; i < p->n; i++)
        if (!strcmp(p->s[i].name, name)) {
            v += p->s[i].value;
            k++;
        }
    if (k)
        *out = v;
    return k;
}

size_t mp_prom_max(const struct mp_prom *p, const char *name, double *out)
{
    size_t k = 0;
    double v = 0;
    for (size_t i = 0; i < p->n; i++)
        if (!strcmp(p->s[i].name, name)) {
            if (!k || p->s[i].value > v)
                v = p->s[i].value;
            k++;
        }
    if (k)
        *out = v;
    return k;
}

int mp_prom_histogram(const struct mp_prom *p, const char *base, struct mp_prom_hist *h)
{
    memset(h, 0, sizeof(*h));
    size_t bl = strlen(base);
    int k = 0, rc = 0;
    for (size_t i = 0; i < p->n; i++) {
        const struct mp_prom_sample *s = &p->s[i];
        if (strncmp(s->name, base, bl) != 0)
            continue;
        const char *suf = s->name + bl;
        if (!strcmp(suf, "_sum")) {
            h->sum += s->value;
            h->has_sum = true;
        } else if (!strcmp(suf, "_count")) {
            h->count += s->value;
            h->has_count = true;
        } else if (!strcmp(suf, "_bucket")) {
            const char *le = mp_prom_label(s, "le");
            double b;
            if (!le || !mp_prom_float(le, strlen(le), &b) || isnan(b))
                continue;
            k++;
            size_t j = 0;
            while (j < h->n && h->le[j] < b)
                j++;
            if (j < h->n && h->le[j] == b) {
                h->cum[j] += s->value;
                continue;
            }
            if (h->n >= MP_PROM_MAX_BUCKETS) {
                rc = MP_ELIMIT;
                continue;
            }
            memmove(&h->le[j + 1], &h->le[j], (h->n - j) * sizeof(h->le[0]));
            memmove(&h->cum[j + 1], &h->cum[j], (h->n - j) * sizeof(h->cum[0]));
            h->le[j] = b;
            h->cum[j] = s->value;
            h->n++;
        }
    }
    return rc ? rc : k;
}
