/* task.c - see task.h. */
#include "compat.h"

#include "task.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#define MAX_STEPS 16

struct step {
    long a, b, r;
    char op;
};

struct work {
    long v;
    struct step s[MAX_STEPS];
    size_t n;
};

/* The integers of a sentence, in order; returns how many (at most max). */
static size_t numbers(const char *s, size_t n, long *out, size_t max)
{
    size_t k = 0;
    for (size_t i = 0; i < n && k < max; i++) {
        if (!isdigit((unsigned char)s[i]) || (i && isdigit((unsigned char)s[i - 1])))
            continue;
        long v = 0;
        for (size_t j = i; j < n && isdigit((unsigned char)s[j]) && v < 100000000; j++)
            v = v * 10 + (s[j] - '0');
        out[k++] = v;
    }
    return k;
}

static bool has(const char *s, size_t n, const char *w)
{
    size_t l = strlen(w);
    for (size_t i = 0; i + l <= n; i++)
        if (!memcmp(s + i, w, l))
            return true;
    return false;
}

static bool op(struct work *w, long a, char o, long b)
{
    if (w->n >= MAX_STEPS || (o == '/' && (b == 0 || a % b)))
        return false;
    long r = o == '+' ? a + b : o == '-' ? a - b : o == '*' ? a * b : a / b;
    w->s[w->n++] = (struct step){a, b, r, o};
    w->v = r;
    return true;
}

/* One sentence of the problem; false when it cannot be read. */
static bool sentence(struct work *w, const char *s, size_t n, bool first)
{
    long x[4];
    size_t k = numbers(s, n, x, 4);
    if (has(s, n, "How many"))
        return true;
    if (first && has(s, n, " rows of ") && k >= 2)
        return op(w, x[0], '*', x[1]);
    if (first && has(s, n, " has ") && k >= 1) {
        w->v = x[0];
        return true;
    }
    if (first)
        return false;
    if (has(s, n, " buys ") && has(s, n, " in each ") && k >= 2) {
        long before = w->v;
        return op(w, x[0], '*', x[1]) && op(w, before, '+', w->v);
    }
    if ((has(s, n, " gives ") || has(s, n, " loses ") || has(s, n, " taken away")) && k >= 1)
        return op(w, w->v, '-', x[0]);
    if ((has(s, n, " finds ") || has(s, n, " added")) && k >= 1)
        return op(w, w->v, '+', x[0]);
    if (has(s, n, " doubles "))
        return op(w, w->v, '*', 2);
    if (has(s, n, " equal ") && k >= 1)
        return op(w, w->v, '/', x[0]);
    return false;
}

static bool work_out(const char *q, size_t n, struct work *w)
{
    memset(w, 0, sizeof(*w));
    w->v = -1;
    size_t start = 0, count = 0;
    for (size_t i = 0; i <= n; i++) {
        bool end = i == n || ((q[i] == '.' || q[i] == '?') && (i + 1 == n || q[i + 1] == ' '));
        if (!end)
            continue;
        while (start < i && q[start] == ' ')
            start++;
        if (i > start && !sentence(w, q + start, i - start, count++ == 0))
            return false;
        start = i + 1;
    }
    return w->v >= 0 && count >= 2;
}

bool re_task_solve(const char *q, size_t q_len, long *answer)
{
    struct work w;
    if (!work_out(q, q_len, &w))
        return false;
    *answer = w.v;
    return true;
}

/* The last question of a few-shot prompt ending in "Answer:". */
static bool last_question(const char *p, size_t n, const char **q, size_t *qn)
{
    while (n && (p[n - 1] == ' ' || p[n - 1] == '\n'))
        n--;
    static const char tail[] = "\nAnswer:", head[] = "Question: ";
    if (n < sizeof(tail) - 1 || memcmp(p + n - (sizeof(tail) - 1), tail, sizeof(tail) - 1))
        return false;
    size_t end = n - (sizeof(tail) - 1);
    for (size_t i = end; i-- > 0;) {
        if (i + sizeof(head) - 1 <= end && !memcmp(p + i, head, sizeof(head) - 1)) {
            *q = p + i + sizeof(head) - 1;
            *qn = end - (i + sizeof(head) - 1);
            return true;
        }
    }
    return false;
}

static uint64_t hash(const char *s, size_t n, uint64_t seed)
{
    uint64_t h = 0xcbf29ce484222325ULL ^ seed;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 0x100000001b3ULL;
    }
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    return h ^ (h >> 33);
}

bool re_task_reply(const char *prompt, size_t prompt_len, double accuracy, uint64_t salt,
                   char *out, size_t cap)
{
    const char *q;
    size_t qn;
    struct work w;
    if (!last_question(prompt, prompt_len, &q, &qn) || !work_out(q, qn, &w))
        return false;
    uint64_t h = hash(q, qn, salt);
    bool right = (double)(h >> 11) / 9007199254740992.0 < accuracy;
    long v = w.v;
    if (!right) {
        long d = 1 + (long)((h >> 3) % 9);
        v = v > d && (h & 1) ? v - d : v + d;
        if (w.n)
            w.s[w.n - 1].r = v;
    }
    size_t o = 0;
    for (size_t i = 0; i < w.n && o < cap; i++)
        o += (size_t)snprintf(out + o, cap - o, " %ld %c %ld = %ld.", w.s[i].a, w.s[i].op,
                              w.s[i].b, w.s[i].r);
    if (o < cap)
        snprintf(out + o, cap - o, " The answer is %ld.", v);
    return o < cap;
}
