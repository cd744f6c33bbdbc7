/* task.c - the task gate's problems, prompt and answers (quality/task.h). */
#include "quality/task.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "xalloc.h"

/* ---- the built-in generator ---- */

static uint64_t rng(uint64_t *st)
{
    uint64_t z = (*st += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* an integer in [lo, hi] */
static long pick(uint64_t *st, long lo, long hi)
{
    return lo + (long)(rng(st) % (uint64_t)(hi - lo + 1));
}

struct person {
    const char *name, *pro, *obj; /* "Mia", "She", "her" */
};
static const struct person people[] = {
    {"Mia", "She", "her"},   {"Leo", "He", "him"},   {"Ana", "She", "her"},
    {"Omar", "He", "him"},   {"Sara", "She", "her"}, {"Ben", "He", "him"},
    {"Lina", "She", "her"},  {"Tom", "He", "him"},   {"Maya", "She", "her"},
    {"Ravi", "He", "him"},   {"Emma", "She", "her"}, {"Noah", "He", "him"},
};
struct item {
    const char *plural, *box; /* "apples", "bag" */
};
static const struct item items[] = {
    {"apples", "bag"},   {"pencils", "box"},  {"stickers", "pack"}, {"marbles", "jar"},
    {"cookies", "tin"},  {"stamps", "sheet"}, {"shells", "bucket"}, {"cards", "deck"},
    {"oranges", "crate"}, {"beads", "bag"},   {"coins", "purse"},   {"books", "shelf"},
};
struct place {
    const char *where, *things; /* "A classroom", "desks" */
};
static const struct place places[] = {
    {"A classroom", "desks"}, {"A garden", "plants"}, {"A parking lot", "cars"},
    {"A theater", "seats"},   {"An orchard", "trees"}, {"A hall", "chairs"},
};

/* One step on a person's items; returns the new value. */
static long person_step(struct buf *q, uint64_t *st, const struct person *p,
                        const struct person *other, const struct item *it, long v)
{
    for (;;) {
        switch (pick(st, 0, 4)) {
        case 0: {
            long k = pick(st, 2, 5), m = pick(st, 2, 9);
            buf_printf(q, " %s buys %ld %ss of %s with %ld %s in each %s.", p->pro, k, it->box,
                       it->plural, m, it->plural, it->box);
            return v + k * m;
        }
        case 1:
            if (v < 4)
                continue;
            {
                long g = pick(st, 1, v / 2);
                buf_printf(q, " %s gives %ld %s to %s.", p->pro, g, it->plural, other->name);
                return v - g;
            }
        case 2: {
            long f = pick(st, 2, 20);
            buf_printf(q, " %s finds %ld more %s.", p->pro, f, it->plural);
            return v + f;
        }
        case 3:
            if (v < 3)
                continue;
            {
                long l = pick(st, 1, v - 1);
                buf_printf(q, " %s loses %ld %s.", p->pro, l, it->plural);
                return v - l;
            }
        default:
            if (v > 60)
                continue;
            buf_printf(q, " %s doubles the number of %s.", p->pro, it->plural);
            return v * 2;
        }
    }
}

/* A divisor of v in 2..6, or 0. */
static long divisor(uint64_t *st, long v)
{
    long d[5];
    int n = 0;
    for (long k = 2; k <= 6; k++)
        if (v % k == 0 && v / k >= 2)
            d[n++] = k;
    return n ? d[pick(st, 0, n - 1)] : 0;
}

static long person_problem(struct buf *q, uint64_t *st)
{
    const struct person *p = &people[pick(st, 0, MP_ARRAY_SIZE(people) - 1)];
    const struct person *o = p;
    while (o == p)
        o = &people[pick(st, 0, MP_ARRAY_SIZE(people) - 1)];
    const struct item *it = &items[pick(st, 0, MP_ARRAY_SIZE(items) - 1)];
    long v = pick(st, 3, 30);
    buf_printf(q, "%s has %ld %s.", p->name, v, it->plural);
    long steps = pick(st, 2, 3);
    for (long s = 0; s < steps; s++)
        v = person_step(q, st, p, o, it, v);
    long d = pick(st, 0, 3) == 0 ? divisor(st, v) : 0;
    if (d) {
        buf_printf(q, " %s puts the %s into %ld equal groups. How many %s are in each group?",
                   p->pro, it->plural, d, it->plural);
        return v / d;
    }
    buf_printf(q, " How many %s does %s have now?", it->plural, p->name);
    return v;
}

static long count_problem(struct buf *q, uint64_t *st)
{
    const struct place *pl = &places[pick(st, 0, MP_ARRAY_SIZE(places) - 1)];
    long r = pick(st, 2, 9), c = pick(st, 3, 12), v = r * c;
    buf_printf(q, "%s has %ld rows of %ld %s.", pl->where, r, c, pl->things);
    long steps = pick(st, 1, 2);
    for (long s = 0; s < steps; s++) {
        if (pick(st, 0, 1) == 0 && v > 4) {
            long x = pick(st, 1, v / 2);
            buf_printf(q, " %ld %s are taken away.", x, pl->things);
            v -= x;
        } else {
            long y = pick(st, 2, 15);
            buf_printf(q, " %ld more %s are added.", y, pl->things);
            v += y;
        }
    }
    buf_printf(q, " How many %s are there now?", pl->things);
    return v;
}

void mp_task_builtin(size_t n, struct mp_task_set *out)
{
    memset(out, 0, sizeof(*out));
    out->t = xcalloc(n + 1, sizeof(*out->t));
    out->n = n;
    out->source = xstrdup("built-in");
    out->max_tokens = MP_TASK_BUILTIN_MAX_TOKENS;
    for (size_t i = 0; i < n; i++) {
        uint64_t st = 0x6d6f6570726f6265ULL ^ ((uint64_t)(i + 1) * 0xd1b54a32d192ed03ULL);
        struct buf q = BUF_INIT;
        long v = i % 3 == 2 ? count_problem(&q, &st) : person_problem(&q, &st);
        out->t[i].question = buf_detach(&q, NULL);
        out->t[i].answer = xasprintf("%ld", v);
    }
}

void mp_task_set_release(struct mp_task_set *s)
{
    for (size_t i = 0; s->t && i < s->n; i++) {
        free(s->t[i].question);
        free(s->t[i].answer);
    }
    free(s->t);
    free(s->source);
    memset(s, 0, sizeof(*s));
}

/* ---- the prompt ---- */

static const char few_shot[] =
    "Question: Ana has 5 pencils. She buys 2 boxes of pencils with 3 pencils in each box. How "
    "many pencils does Ana have now?\n"
    "Answer: 2 boxes of 3 pencils is 2 * 3 = 6 pencils. 5 + 6 = 11. The answer is 11.\n\n"
    "Question: A hall has 4 rows of 5 chairs. 3 chairs are taken away. How many chairs are there "
    "now?\n"
    "Answer: 4 rows of 5 chairs is 4 * 5 = 20 chairs. 20 - 3 = 17. The answer is 17.\n\n"
    "Question: Tom has 9 marbles. He finds 6 more marbles. He gives 4 marbles to Mia. How many "
    "marbles does Tom have now?\n"
    "Answer: 9 + 6 = 15. 15 - 4 = 11. The answer is 11.\n\n"
    "Question: Lina has 7 shells. She doubles the number of shells. She puts the shells into 2 "
    "equal groups. How many shells are in each group?\n"
    "Answer: 7 * 2 = 14. 14 / 2 = 7. The answer is 7.\n\n";

char *mp_task_prompt(const char *q)
{
    return xasprintf("%sQuestion: %s\nAnswer:", few_shot, q);
}

const char *const *mp_task_stop(void)
{
    static const char *const stop[] = {"Question:", "\n\n\n", NULL};
    return stop;
}

/* ---- answers ---- */

/* The ',' at c separates thousands: exactly three digits follow it ("1,234",
 * "1,234,567"), so "3,4,5" is a list and "12,5" no 125. */
static bool thousands_comma(const char *c)
{
    return isdigit((unsigned char)c[1]) && isdigit((unsigned char)c[2]) &&
           isdigit((unsigned char)c[3]) && !isdigit((unsigned char)c[4]);
}

char *mp_task_norm_number(const char *s)
{
    while (*s == ' ' || *s == '\t' || *s == '$' || *s == '+')
        s++;
    bool neg = *s == '-';
    if (neg)
        s++;
    struct buf b = BUF_INIT;
    bool digits = false, dot = false;
    for (; *s; s++) {
        if (isdigit((unsigned char)*s)) {
            buf_addc(&b, *s);
            digits = true;
        } else if (*s == ',' && digits && !dot && thousands_comma(s)) {
            continue;
        } else if (*s == '.' && !dot && isdigit((unsigned char)s[1])) {
            buf_addc(&b, '.');
            dot = true;
        } else {
            break;
        }
    }
    char *d = buf_detach(&b, NULL);
    if (!digits) {
        free(d);
        return NULL;
    }
    if (dot) { /* "72.50" -> "72.5", "72.0" -> "72" */
        size_t l = strlen(d);
        while (l && d[l - 1] == '0')
            d[--l] = '\0';
        if (l && d[l - 1] == '.')
            d[--l] = '\0';
    }
    const char *p = d;
    while (p[0] == '0' && p[1] && p[1] != '.')
        p++;
    bool zero = strspn(p, "0.") == strlen(p);
    /* ".5" -> "0.5", ".0" -> "0" */
    char *out = xasprintf("%s%s%s", neg && !zero ? "-" : "", *p == '.' || !*p ? "0" : "", p);
    free(d);
    return out;
}

char *mp_task_last_number(const char *reply)
{
    if (!reply)
        return NULL;
    const char *end = strstr(reply, "Question:");
    size_t n = end ? (size_t)(end - reply) : strlen(reply);
    const char *last = NULL;
    for (size_t i = 0; i < n; i++) {
        bool start = isdigit((unsigned char)reply[i]) &&
                     (i == 0 || !(isdigit((unsigned char)reply[i - 1]) ||
                                  (reply[i - 1] == ',' && i > 1 &&
                                   isdigit((unsigned char)reply[i - 2]) &&
                                   thousands_comma(reply + i - 1)) ||
                                  (reply[i - 1] == '.' && i > 1 &&
                                   isalnum((unsigned char)reply[i - 2])) ||
                                  isalpha((unsigned char)reply[i - 1])));
        if (!start)
            continue;
        const char *at = reply + i;
        /* ".5" is a number; "v.5" and "12.5" (reached above) are not starts */
        if (i > 0 && reply[i - 1] == '.' && (i == 1 || !isalnum((unsigned char)reply[i - 2])))
            at = reply + i - 1;
        if (at > reply && at[-1] == '-' && (at - reply == 1 || !isalnum((unsigned char)at[-2])))
            at--;
        last = at;
    }
    if (!last)
        return NULL;
    size_t ln = n - (size_t)(last - reply);
    char *cut = xstrndup(last, ln);
    char *r = mp_task_norm_number(cut);
    free(cut);
    return r;
}

bool mp_task_same_number(const char *a, const char *b)
{
    if (!a || !b)
        return false;
    if (!strcmp(a, b))
        return true; /* also a number too long for a double */
    char *ea, *eb;
    double x = strtod(a, &ea), y = strtod(b, &eb);
    if (ea == a || eb == b || !isfinite(x) || !isfinite(y))
        return false;
    return fabs(x - y) <= 1e-9 * fmax(1.0, fabs(x));
}

/* ---- gsm8k JSON lines ---- */

static int line_err(struct mp_diag *d, const char *name, size_t line, const char *what)
{
    return mp_diag_set(d, MP_EPARSE, line, "%s:%zu: %s", name, line, what);
}

/* An answer key that goes on after its number in a way that makes the
 * number only part of it ("3/4", "10:30", "1 234"): read as a number it
 * would be "3", "10", "1", a wrong key that every candidate misses. */
static bool key_is_more(const char *k)
{
    while (*k == ' ' || *k == '\t' || *k == '$' || *k == '+' || *k == '-')
        k++;
    while (isdigit((unsigned char)*k) || *k == ',' || *k == '.')
        k++;
    return *k == '/' || *k == ':' || (*k == ' ' && isdigit((unsigned char)k[1]));
}

/* One line into *t; 0 or MP_EPARSE. */
static int task_line(const char *s, size_t n, const char *name, size_t line, struct mp_task *t,
                     struct mp_diag *d)
{
    cJSON *j = cJSON_ParseWithLength(s, n);
    const cJSON *q = cJSON_GetObjectItemCaseSensitive(j, "question");
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(j, "answer");
    int rc = 0;
    if (!cJSON_IsObject(j))
        rc = line_err(d, name, line, "not a JSON object");
    else if (!cJSON_IsString(q) || !q->valuestring[0])
        rc = line_err(d, name, line, "no \"question\" string");
    else if (!cJSON_IsString(a))
        rc = line_err(d, name, line, "no \"answer\" string");
    if (rc == 0) {
        const char *h = NULL;
        for (const char *p = strstr(a->valuestring, "####"); p; p = strstr(p + 4, "####"))
            h = p;
        char *num = h && !key_is_more(h + 4) ? mp_task_norm_number(h + 4) : NULL;
        if (!num) {
            rc = line_err(d, name, line, "the answer does not end in '#### NUMBER'");
        } else {
            t->question = xstrdup(q->valuestring);
            t->answer = num;
        }
    }
    cJSON_Delete(j);
    return rc;
}

int mp_task_parse_jsonl(const char *text, size_t len, const char *name, size_t max,
                        struct mp_task_set *out, struct mp_diag *d)
{
    memset(out, 0, sizeof(*out));
    size_t cap = 0, line = 0;
    if (max == 0 || max > MP_TASK_MAX_N)
        max = MP_TASK_MAX_N;
    int rc = 0;
    for (size_t off = 0; off < len && rc == 0 && out->n < max;) {
        const char *s = text + off;
        const char *nl = memchr(s, '\n', len - off);
        size_t n = nl ? (size_t)(nl - s) : len - off;
        off += n + (nl != NULL);
        line++;
        size_t blank = 0;
        while (blank < n && isspace((unsigned char)s[blank]))
            blank++;
        if (blank == n)
            continue;
        if (out->n == cap) {
            cap = cap ? cap * 2 : 64;
            out->t = xreallocarray(out->t, cap, sizeof(*out->t));
        }
        rc = task_line(s, n, name, line, &out->t[out->n], d);
        if (rc == 0)
            out->n++;
    }
    if (rc == 0 && out->n == 0)
        rc = mp_diag_set(d, MP_EPARSE, 0, "%s: no problem in the file", name);
    if (rc != 0) {
        mp_task_set_release(out);
        return rc;
    }
    out->source = xstrdup(name);
    out->max_tokens = MP_TASK_FILE_MAX_TOKENS;
    return 0;
}
