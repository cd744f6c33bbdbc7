/* score.c - the scoring pass's plain data (model/score.h). */
#include "model/score.h"

#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

static const char *const status_names[] = {"not-run", "ok", "refused", "failed"};

const char *mp_sc_status_name(enum mp_sc_status s)
{
    return (unsigned)s < MP_ARRAY_SIZE(status_names) ? status_names[s] : "not-run";
}

enum mp_sc_status mp_sc_status_from_name(const char *s)
{
    for (size_t i = 0; s && i < MP_ARRAY_SIZE(status_names); i++)
        if (!strcmp(s, status_names[i]))
            return (enum mp_sc_status)i;
    return MP_SC_NOT_RUN;
}

struct mp_score *mp_score_new(void)
{
    return xcalloc(1, sizeof(struct mp_score));
}

void mp_lp_seq_release(struct mp_lp_seq *q)
{
    for (size_t i = 0; i < q->n; i++) {
        free(q->p[i].token);
        free(q->p[i].top1);
    }
    free(q->p);
    memset(q, 0, sizeof(*q));
}

void mp_gen_seq_release(struct mp_gen_seq *q)
{
    for (size_t i = 0; i < q->n; i++) {
        free(q->t[i].token);
        for (size_t k = 0; k < q->t[i].ntop; k++)
            free(q->t[i].top[k].token);
        free(q->t[i].top);
    }
    free(q->t);
    memset(q, 0, sizeof(*q));
}

void mp_score_free(struct mp_score *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->npass; i++) {
        if (s->pass)
            mp_lp_seq_release(&s->pass[i]);
        if (s->repeat)
            mp_lp_seq_release(&s->repeat[i]);
    }
    free(s->pass);
    free(s->repeat);
    for (size_t i = 0; i < s->ngen; i++)
        mp_gen_seq_release(&s->gen[i]);
    free(s->gen);
    for (size_t i = 0; i < s->nans; i++) {
        free(s->ans[i].expected);
        free(s->ans[i].got);
        free(s->ans[i].reply);
    }
    free(s->ans);
    free(s->plp_note);
    free(s->greedy_note);
    free(s->task_note);
    free(s->task_source);
    free(s);
}

static char *dup0(const char *s)
{
    return s ? xstrdup(s) : NULL;
}

static void lp_copy(struct mp_lp_seq *d, const struct mp_lp_seq *s)
{
    d->n = s->n;
    d->p = s->n ? xcalloc(s->n, sizeof(*d->p)) : NULL;
    for (size_t i = 0; i < s->n; i++) {
        d->p[i] = s->p[i];
        d->p[i].token = dup0(s->p[i].token);
        d->p[i].top1 = dup0(s->p[i].top1);
    }
}

static void gen_copy(struct mp_gen_seq *d, const struct mp_gen_seq *s)
{
    d->n = s->n;
    d->t = s->n ? xcalloc(s->n, sizeof(*d->t)) : NULL;
    for (size_t i = 0; i < s->n; i++) {
        const struct mp_gen_tok *a = &s->t[i];
        struct mp_gen_tok *b = &d->t[i];
        b->token = dup0(a->token);
        b->lp = a->lp;
        b->ntop = a->ntop;
        b->top = a->ntop ? xcalloc(a->ntop, sizeof(*b->top)) : NULL;
        for (size_t k = 0; k < a->ntop; k++) {
            b->top[k].token = dup0(a->top[k].token);
            b->top[k].lp = a->top[k].lp;
        }
    }
}

struct mp_score *mp_score_dup(const struct mp_score *s)
{
    if (!s)
        return NULL;
    struct mp_score *d = mp_score_new();
    *d = *s;
    d->plp_note = dup0(s->plp_note);
    d->greedy_note = dup0(s->greedy_note);
    d->task_note = dup0(s->task_note);
    d->task_source = dup0(s->task_source);
    d->pass = s->pass ? xcalloc(s->npass + 1, sizeof(*d->pass)) : NULL;
    d->repeat = s->repeat ? xcalloc(s->npass + 1, sizeof(*d->repeat)) : NULL;
    for (size_t i = 0; i < s->npass; i++) {
        if (s->pass)
            lp_copy(&d->pass[i], &s->pass[i]);
        if (s->repeat)
            lp_copy(&d->repeat[i], &s->repeat[i]);
    }
    d->gen = s->ngen ? xcalloc(s->ngen, sizeof(*d->gen)) : NULL;
    for (size_t i = 0; i < s->ngen; i++)
        gen_copy(&d->gen[i], &s->gen[i]);
    d->ans = s->nans ? xcalloc(s->nans, sizeof(*d->ans)) : NULL;
    for (size_t i = 0; i < s->nans; i++) {
        d->ans[i] = s->ans[i];
        d->ans[i].expected = dup0(s->ans[i].expected);
        d->ans[i].got = dup0(s->ans[i].got);
        d->ans[i].reply = dup0(s->ans[i].reply);
    }
    return d;
}

void mp_score_task_counts(const struct mp_score *s, size_t *answered, size_t *right)
{
    *answered = *right = 0;
    for (size_t i = 0; s && i < s->nans; i++) {
        *answered += s->ans[i].answered;
        *right += s->ans[i].answered && s->ans[i].right;
    }
}
