/* judge.c - judging greedy answers, alone and across candidates. */
#include "quality/quality.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "xalloc.h"

#define REPEAT_MAX_PERIOD 12  /* bytes: a token, not a phrase */
#define REPEAT_MIN_COUNT 5
#define WORDS_MIN 8
#define QUOTE_MAX 80

const char *mp_qres_name(enum mp_qres r)
{
    switch (r) {
    case MP_Q_PASS:
        return "pass";
    case MP_Q_WRONG:
        return "wrong";
    case MP_Q_DEGENERATE:
        return "degenerate";
    case MP_Q_MISSING:
        break;
    }
    return "missing";
}

static bool is_ws(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* Length of a valid UTF-8 sequence at s (n bytes left), 0 if invalid. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    size_t k;
    unsigned c = s[0];
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        k = 2;
    else if (c >= 0xE0 && c <= 0xEF)
        k = 3;
    else if (c >= 0xF0 && c <= 0xF4)
        k = 4;
    else
        return 0;
    if (k > n)
        return 0;
    for (size_t i = 1; i < k; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    if (k == 3 && ((c == 0xE0 && s[1] < 0xA0) || (c == 0xED && s[1] >= 0xA0)))
        return 0;
    if (k == 4 && ((c == 0xF0 && s[1] < 0x90) || (c == 0xF4 && s[1] >= 0x90)))
        return 0;
    return k;
}

/* One token repeated: a period of at most REPEAT_MAX_PERIOD bytes covering
 * the whole (trimmed) text at least REPEAT_MIN_COUNT times, or one
 * whitespace-separated word making up 3/4 of at least WORDS_MIN words. */
static bool repeated(const char *t, size_t n)
{
    for (size_t p = 1; p <= REPEAT_MAX_PERIOD && p * REPEAT_MIN_COUNT <= n; p++) {
        size_t i = p;
        while (i < n && t[i] == t[i - p])
            i++;
        if (i == n)
            return true;
    }
    /* word dominance */
    size_t nwords = 0, best = 0;
    const char *w[256];
    size_t wl[256];
    size_t cnt[256];
    size_t nuniq = 0;
    size_t i = 0;
    while (i < n && nwords < 256) {
        while (i < n && is_ws((unsigned char)t[i]))
            i++;
        if (i >= n)
            break;
        size_t s = i;
        while (i < n && !is_ws((unsigned char)t[i]))
            i++;
        nwords++;
        size_t u = 0;
        for (; u < nuniq; u++)
            if (wl[u] == i - s && !memcmp(w[u], t + s, i - s))
                break;
        if (u == nuniq) {
            w[u] = t + s;
            wl[u] = i - s;
            cnt[u] = 0;
            nuniq++;
        }
        cnt[u]++;
        best = MP_MAX(best, cnt[u]);
    }
    return nwords >= WORDS_MIN && best * 4 >= nwords * 3;
}

const char *mp_quality_degenerate(const char *text)
{
    if (!text)
        return "empty";
    size_t n = strlen(text);
    const char *t = text;
    while (n && is_ws((unsigned char)*t)) {
        t++;
        n--;
    }
    while (n && is_ws((unsigned char)t[n - 1]))
        n--;
    if (!n)
        return "empty";
    /* non-printable: control characters, invalid UTF-8, U+FFFD */
    size_t chars = 0, bad = 0, alnum = 0;
    const unsigned char *u = (const unsigned char *)t;
    for (size_t i = 0; i < n;) {
        size_t k = utf8_len(u + i, n - i);
        chars++;
        if (k == 0) {
            bad++;
            i++;
            continue;
        }
        if (k == 1 && (u[i] < 0x20 || u[i] == 0x7F) && !is_ws(u[i]))
            bad++;
        else if (k == 3 && u[i] == 0xEF && u[i + 1] == 0xBF && u[i + 2] == 0xBD)
            bad++;
        if (k > 1 || isalnum(u[i]))
            alnum++;
        i += k;
    }
    if (bad * 4 >= chars)
        return "non-printable";
    if (!alnum && chars >= REPEAT_MIN_COUNT)
        return "no letters or digits";
    if (repeated(t, n))
        return "one token repeated";
    return NULL;
}

static bool word_at(const char *hay, size_t hn, const char *needle)
{
    size_t nn = strlen(needle);
    for (size_t i = 0; i + nn <= hn; i++) {
        if (strncasecmp(hay + i, needle, nn) != 0)
            continue;
        bool left = i == 0 || !isalnum((unsigned char)hay[i - 1]);
        bool right = i + nn == hn || !isalnum((unsigned char)hay[i + nn]);
        if (left && right)
            return true;
    }
    return false;
}

enum mp_qres mp_quality_judge(const struct mp_sanity_prompt *p, const char *text, const char **why)
{
    const char *dummy;
    if (!why)
        why = &dummy;
    if (!text) {
        *why = "no answer";
        return MP_Q_MISSING;
    }
    const char *deg = mp_quality_degenerate(text);
    if (deg) {
        *why = deg;
        return MP_Q_DEGENERATE;
    }
    for (size_t k = 0; k < p->nexpect; k++) {
        if (word_at(text, strlen(text), p->expect[k])) {
            *why = "expected answer present";
            return MP_Q_PASS;
        }
    }
    *why = "expected answer absent";
    return MP_Q_WRONG;
}

/* Not one of base's escapers on purpose: this is a C-style quoted literal
 * of an answer excerpt, where '"' and '\\' are escaped so the excerpt's
 * ends are unambiguous, \n \t \r are shown as such, and invalid UTF-8 and
 * controls as \xNN so the reader sees the bytes the engine returned
 * (buf_add_json_str would turn them into U+FFFD, mp_term_esc neither quotes
 * nor escapes '"' and '\\'), with a cut that says the full length. Where it
 * lands (report.html, report.json), that format's escaper runs over it. */
char *mp_quality_quote(const char *text, size_t max)
{
    struct buf b = BUF_INIT;
    if (!text) {
        buf_adds(&b, "(none)");
        return buf_detach(&b, NULL);
    }
    size_t n = strlen(text);
    const unsigned char *u = (const unsigned char *)text;
    buf_addc(&b, '"');
    size_t i = 0;
    while (i < n && i < max) {
        size_t k = utf8_len(u + i, n - i);
        if (k > 1 && i + k > max)
            break;
        if (k > 1) {
            buf_add(&b, u + i, k);
            i += k;
            continue;
        }
        unsigned char c = u[i++];
        if (c == '"' || c == '\\') {
            buf_addc(&b, '\\');
            buf_addc(&b, (char)c);
        } else if (c == '\n') {
            buf_adds(&b, "\\n");
        } else if (c == '\t') {
            buf_adds(&b, "\\t");
        } else if (c == '\r') {
            buf_adds(&b, "\\r");
        } else if (k == 0 || c < 0x20 || c == 0x7F) {
            buf_printf(&b, "\\x%02x", c);
        } else {
            buf_addc(&b, (char)c);
        }
    }
    buf_addc(&b, '"');
    if (i < n)
        buf_printf(&b, "… (%zu bytes)", n);
    return buf_detach(&b, NULL);
}

/* Next token at *p: leading whitespace plus a non-space run. */
static bool next_tok(const char **p, const char **s, size_t *len)
{
    const char *q = *p;
    if (!*q)
        return false;
    *s = q;
    while (*q && is_ws((unsigned char)*q))
        q++;
    while (*q && !is_ws((unsigned char)*q))
        q++;
    *len = (size_t)(q - *s);
    *p = q;
    return true;
}

static char *quote_n(const char *s, size_t n)
{
    char *tmp = xstrndup(s, n);
    char *q = mp_quality_quote(tmp, 40);
    free(tmp);
    return q;
}

long mp_quality_first_diff(const char *a, const char *b, char **ta, char **tb)
{
    const char *pa = a ? a : "", *pb = b ? b : "";
    for (long i = 0;; i++) {
        const char *sa = NULL, *sb = NULL;
        size_t la = 0, lb = 0;
        bool ha = next_tok(&pa, &sa, &la), hb = next_tok(&pb, &sb, &lb);
        if (!ha && !hb)
            return -1;
        if (ha && hb && la == lb && !memcmp(sa, sb, la))
            continue;
        if (ta)
            *ta = ha ? quote_n(sa, la) : xstrdup("(end)");
        if (tb)
            *tb = hb ? quote_n(sb, lb) : xstrdup("(end)");
        return i;
    }
}

/* ---- across candidates ---- */

static void judge_all(const struct mp_sanity_set *s, const struct mp_qcand_in *in, size_t n,
                      struct mp_qcheck *q)
{
    for (size_t i = 0; i < n; i++) {
        struct mp_qcand_out *c = &q->c[i];
        c->ref = -1;
        c->diff_prompt = c->diff_token = -1;
        c->res = xcalloc(s->n + 1, sizeof(*c->res));
        c->res_why = xcalloc(s->n + 1, sizeof(*c->res_why));
        if (!in[i].ntexts)
            continue;
        c->status = MP_QC_OK;
        for (size_t k = 0; k < s->n; k++) {
            const char *t = k < in[i].ntexts ? in[i].texts[k] : NULL;
            c->res[k] = mp_quality_judge(&s->p[k], t, &c->res_why[k]);
            c->passed += c->res[k] == MP_Q_PASS;
            c->wrong += c->res[k] == MP_Q_WRONG;
            c->degenerate += c->res[k] == MP_Q_DEGENERATE;
            if (c->res[k] == MP_Q_PASS)
                q->answerable[k] = true;
        }
    }
}

static void decide(const struct mp_sanity_set *s, const struct mp_qcand_in *in, size_t n,
                   struct mp_qcheck *q)
{
    for (size_t i = 0; i < n; i++) {
        struct mp_qcand_out *c = &q->c[i];
        if (c->status == MP_QC_NOT_RUN)
            continue;
        for (size_t k = 0; k < s->n && c->status == MP_QC_OK; k++) {
            const char *t = k < in[i].ntexts ? in[i].texts[k] : NULL;
            if (c->res[k] == MP_Q_DEGENERATE) {
                char *qt = mp_quality_quote(t, QUOTE_MAX);
                c->status = MP_QC_GARBAGE;
                c->why = xasprintf("greedy output is degenerate (%s): prompt \"%s\" gave %s",
                                   c->res_why[k], s->p[k].prompt, qt);
                free(qt);
            } else if (c->res[k] == MP_Q_WRONG && q->answerable[k]) {
                const char *other = "another candidate";
                for (size_t j = 0; j < n; j++)
                    if (j != i && q->c[j].res[k] == MP_Q_PASS) {
                        other = in[j].name;
                        break;
                    }
                char *qt = mp_quality_quote(t, QUOTE_MAX);
                c->status = MP_QC_GARBAGE;
                c->why = xasprintf("greedy output fails the sanity prompt \"%s\" (expected \"%s\") that %s "
                                   "passes: it gave %s",
                                   s->p[k].prompt, s->p[k].expect[0], other, qt);
                free(qt);
            }
        }
    }
}

static void agreement(const struct mp_sanity_set *s, const struct mp_qcand_in *in, size_t n,
                      struct mp_qcheck *q)
{
    q->ref = -1;
    for (size_t i = 0; i < n; i++) {
        const struct mp_qcand_out *c = &q->c[i];
        if (c->status == MP_QC_OK && (q->ref < 0 || c->passed > q->c[q->ref].passed))
            q->ref = (long)i;
    }
    for (size_t i = 0; i < n && q->ref < 0; i++)
        if (q->c[i].status != MP_QC_NOT_RUN)
            q->ref = (long)i;
    if (q->ref < 0)
        return;
    const struct mp_qcand_in *r = &in[q->ref];
    for (size_t i = 0; i < n; i++) {
        struct mp_qcand_out *c = &q->c[i];
        if ((long)i == q->ref || c->status == MP_QC_NOT_RUN)
            continue;
        c->ref = q->ref;
        for (size_t k = 0; k < s->n; k++) {
            const char *a = k < in[i].ntexts ? in[i].texts[k] : NULL;
            const char *b = k < r->ntexts ? r->texts[k] : NULL;
            if (!a || !b)
                continue;
            c->compared++;
            char *ta = NULL, *tb = NULL;
            long d = mp_quality_first_diff(a, b, &ta, &tb);
            if (d < 0) {
                c->identical++;
            } else if (c->diff_prompt < 0) {
                c->diff_prompt = (long)k;
                c->diff_token = d;
                c->diff_this = ta;
                c->diff_ref = tb;
                ta = tb = NULL;
            }
            free(ta);
            free(tb);
        }
    }
}

void mp_qcheck_run(const struct mp_sanity_set *s, const struct mp_qcand_in *in, size_t n,
                   struct mp_qcheck *q)
{
    memset(q, 0, sizeof(*q));
    q->ref = -1;
    q->n = n;
    q->nprompts = s->n;
    q->c = xcalloc(n + 1, sizeof(*q->c));
    q->answerable = xcalloc(s->n + 1, sizeof(*q->answerable));
    judge_all(s, in, n, q);
    decide(s, in, n, q);
    agreement(s, in, n, q);

    size_t ran = 0, nans = 0;
    for (size_t i = 0; i < n; i++)
        ran += q->c[i].status != MP_QC_NOT_RUN;
    for (size_t k = 0; k < s->n; k++)
        nans += q->answerable[k];
    if (!ran) {
        q->status = "not-run";
        return;
    }
    if (!nans) {
        q->status = "inconclusive";
        q->note = xasprintf("no candidate answered any of the %zu sanity prompts correctly: the "
                            "comparison is inconclusive for this model (only degenerate output "
                            "counts against a candidate)", s->n);
        return;
    }
    if (nans < s->n) {
        struct buf b = BUF_INIT;
        for (size_t k = 0; k < s->n; k++)
            if (!q->answerable[k])
                buf_printf(&b, "%s\"%s\"", b.len ? ", " : "", s->p[k].prompt);
        q->status = "partly-inconclusive";
        q->note = xasprintf("no candidate answered %s correctly; %s not held against anyone",
                            b.data, nans + 1 < s->n ? "these prompts are" : "this prompt is");
        buf_release(&b);
        return;
    }
    q->status = "ok";
}
