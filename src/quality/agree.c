/* agree.c - agreement of teacher-forced logprobs and greedy continuations
 * across candidates (quality/agree.h). */
#include "quality/agree.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "quality/quality.h"
#include "xalloc.h"

enum mode { M_NONE, M_REF, M_PAIR, M_CONS };

/* One kind of evidence (teacher-forced, greedy): who has it, their groups. */
struct side {
    bool *ok;        /* per candidate: usable */
    int *grp;        /* per candidate: dense group index, -1 unusable */
    long *rep;       /* per group: its representative (first member) */
    size_t ngroups;
    enum mode mode;
};

struct ctx {
    const struct mp_ag_in *in;
    size_t n;
    long ref;
    struct side lp, gen;
};

bool mp_agree_divergent(double mean_abs, double top1, double floor)
{
    return mean_abs > MP_AG_FACTOR * floor && top1 < MP_AG_TOP1_MIN;
}

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of v[0..n) (sorted in place); the lower middle when lower. */
static double median(double *v, size_t n, bool lower)
{
    qsort(v, n, sizeof(*v), cmp_dbl);
    if (n % 2 || lower)
        return v[(n - 1) / 2];
    return (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void side_init(struct ctx *x, struct side *sd, bool gen)
{
    sd->ok = xcalloc(x->n + 1, sizeof(*sd->ok));
    sd->grp = xcalloc(x->n + 1, sizeof(*sd->grp));
    sd->rep = xcalloc(x->n + 1, sizeof(*sd->rep));
    for (size_t i = 0; i < x->n; i++) {
        const struct mp_score *s = x->in[i].s;
        sd->ok[i] = s && (gen ? s->greedy == MP_SC_OK && s->ngen && s->gen
                              : s->plp == MP_SC_OK && s->npass && s->pass);
        sd->grp[i] = -1;
        if (!sd->ok[i])
            continue;
        for (size_t g = 0; g < sd->ngroups && sd->grp[i] < 0; g++)
            if (x->in[sd->rep[g]].group == x->in[i].group)
                sd->grp[i] = (int)g;
        if (sd->grp[i] < 0) {
            sd->rep[sd->ngroups] = (long)i;
            sd->grp[i] = (int)sd->ngroups++;
        }
    }
    if (x->ref >= 0 && (size_t)x->ref < x->n && sd->ok[x->ref] && sd->ngroups >= 2)
        sd->mode = M_REF;
    else if (sd->ngroups == 2 && x->ref < 0)
        sd->mode = M_PAIR;
    else if (sd->ngroups >= 3 && x->ref < 0)
        sd->mode = M_CONS;
    else
        sd->mode = M_NONE;
}

static void side_free(struct side *sd)
{
    free(sd->ok);
    free(sd->grp);
    free(sd->rep);
}

/* The other group's representative in a pair. */
static long pair_other(const struct side *sd, size_t c)
{
    return sd->rep[sd->grp[c] == 0 ? 1 : 0];
}

/* The next byte of a token's text with the tokenizer's spelling undone:
 * builds of vLLM spell a token differently in `decoded_token` and in the
 * keys of `top_logprobs` (0.8's V1 wrote the tokenizer's pieces, "Ġthe",
 * "▁the", "<0x0A>": vLLM issue 16838, PR 19209; V0 and later builds the
 * text, " the"). Byte-level BPE's stand-ins for ASCII control bytes and the
 * space (U+0100..U+0121, "Ġ" = ' ', "Ċ" = '\n'), SentencePiece's "▁" and
 * its byte pieces "<0xNN>" below 0x80 read as the byte; anything else as
 * itself. -1 at the end. */
static int tok_byte(const unsigned char **sp)
{
    const unsigned char *s = *sp;
    if (!*s)
        return -1;
    if (s[0] == 0xC4 && s[1] >= 0x80 && s[1] <= 0xA1) { /* U+0100..U+0121 */
        *sp += 2;
        return s[1] == 0xA1 ? 0x7F : s[1] - 0x80;
    }
    if (s[0] == 0xE2 && s[1] == 0x96 && s[2] == 0x81) { /* U+2581 */
        *sp += 3;
        return ' ';
    }
    if (s[0] == '<' && s[1] == '0' && s[2] == 'x' && isxdigit(s[3]) && isxdigit(s[4]) &&
        s[5] == '>' && s[3] < '8') {
        *sp += 6;
        return (int)strtol((const char[]){(char)s[3], (char)s[4], 0}, NULL, 16);
    }
    *sp += 1;
    return s[0];
}

/* Two spellings of one token (tok_byte); a leading space may be missing on
 * one side only (SentencePiece's decode of a single piece drops it). */
static bool same_tok(const char *a, const char *b)
{
    if (!strcmp(a, b))
        return true;
    const unsigned char *x = (const unsigned char *)a, *y = (const unsigned char *)b;
    int cx = tok_byte(&x), cy = tok_byte(&y);
    if (cx != cy && cx == ' ' && cy >= 0)
        cx = tok_byte(&x);
    else if (cx != cy && cy == ' ' && cx >= 0)
        cy = tok_byte(&y);
    while (cx == cy && cx >= 0) {
        cx = tok_byte(&x);
        cy = tok_byte(&y);
    }
    return cx == cy;
}

/* Candidate c's entry at (j, p), or NULL when its passage j has not the n
 * positions of the one it is compared with: a passage tokenized otherwise
 * (a BOS added or not, a prompt truncated) is shifted, and its positions
 * name other contexts even where a token text happens to match. */
static const struct mp_lp_pos *pos_of(const struct ctx *x, long c, size_t j, size_t p, size_t n)
{
    const struct mp_score *s = x->in[c].s;
    return j < s->npass && s->pass[j].n == n && p < n ? &s->pass[j].p[p] : NULL;
}

/* What position (j, p) is compared with for a candidate whose own entry is
 * me: the reference's logprob, its top-1 and whether me agrees on top-1.
 * False when there is nothing to compare with there. */
static bool ref_at(const struct ctx *x, size_t c, size_t j, size_t p, const struct mp_lp_pos *me,
                   double *refv, const char **reftop, bool *agrees)
{
    const struct side *sd = &x->lp;
    size_t n = x->in[c].s->pass[j].n;
    if (sd->mode == M_REF || sd->mode == M_PAIR) {
        long r = sd->mode == M_REF ? x->ref : pair_other(sd, c);
        const struct mp_lp_pos *o = pos_of(x, r, j, p, n);
        if (!o || !same_tok(o->token, me->token))
            return false;
        *refv = o->lp;
        *reftop = o->top1;
        *agrees = same_tok(o->top1, me->top1);
        return true;
    }
    double v[64];
    const char *tops[64];
    size_t nv = 0;
    for (size_t g = 0; g < sd->ngroups && nv < MP_ARRAY_SIZE(v); g++) {
        const struct mp_lp_pos *o = pos_of(x, sd->rep[g], j, p, n);
        if (o && same_tok(o->token, me->token)) {
            tops[nv] = o->top1;
            v[nv++] = o->lp;
        }
    }
    if (nv < 2)
        return false;
    size_t mine = 0, best = 0, bestn = 0;
    for (size_t a = 0; a < nv; a++) {
        size_t cnt = 0;
        for (size_t b = 0; b < nv; b++)
            cnt += same_tok(tops[a], tops[b]);
        if (same_tok(tops[a], me->top1))
            mine = cnt;
        else if (cnt > bestn)
            bestn = cnt, best = a;
    }
    *agrees = mine > bestn;
    *reftop = bestn ? tops[best] : me->top1;
    if (*agrees)
        *reftop = me->top1;
    *refv = median(v, nv, false);
    return true;
}

static char *context_of(const struct mp_lp_seq *q, size_t p)
{
    struct buf b = BUF_INIT;
    for (size_t k = p > 6 ? p - 6 : 0; k < p; k++)
        buf_adds(&b, q->p[k].token ? q->p[k].token : "");
    return b.data ? buf_detach(&b, NULL) : xstrdup("");
}

static void note_first(struct mp_agreement *ag, const struct mp_lp_seq *q, size_t j, size_t p,
                       const char *reftop, double refv)
{
    if (ag->nfirst >= MP_AG_FIRST)
        return;
    struct mp_disagreement *d = &ag->first[ag->nfirst++];
    d->passage = j;
    d->pos = p;
    d->context = context_of(q, p);
    d->token = xstrdup(q->p[p].token);
    d->this_top1 = xstrdup(q->p[p].top1);
    d->ref_top1 = xstrdup(reftop);
    d->this_lp = q->p[p].lp;
    d->ref_lp = refv;
}

/* Candidate c's teacher-forced figures against the reference. */
static void lp_compare(const struct ctx *x, size_t c, struct mp_agreement *ag)
{
    const struct mp_score *s = x->in[c].s;
    size_t cap = 0, nd = 0, agree = 0;
    for (size_t j = 0; j < s->npass; j++)
        cap += s->pass[j].n;
    double *d = xcalloc(cap + 1, sizeof(*d));
    for (size_t j = 0; j < s->npass; j++) {
        for (size_t p = 0; p < s->pass[j].n; p++) {
            const struct mp_lp_pos *me = &s->pass[j].p[p];
            double refv;
            const char *reftop;
            bool ok;
            if (!ref_at(x, c, j, p, me, &refv, &reftop, &ok))
                continue;
            d[nd++] = fabs(me->lp - refv);
            agree += ok;
            if (!ok)
                note_first(ag, &s->pass[j], j, p, reftop, refv);
        }
    }
    ag->positions = nd;
    if (nd) {
        double sum = 0;
        for (size_t i = 0; i < nd; i++)
            sum += d[i];
        ag->mean_abs = sum / (double)nd;
        qsort(d, nd, sizeof(*d), cmp_dbl);
        size_t k = (size_t)ceil(0.99 * (double)nd);
        ag->p99_abs = d[k ? k - 1 : 0];
        ag->top1 = (double)agree / (double)nd;
    }
    free(d);
}

/* Run-to-run: mean |delta| between a candidate's two scorings, <0 none;
 * *top1: the share of those positions whose most likely token is the same
 * both times (<0 none). */
static double repeat_abs(const struct mp_score *s, double *top1)
{
    *top1 = -1;
    if (!s || !s->repeat)
        return -1;
    double sum = 0;
    size_t n = 0, same = 0;
    for (size_t j = 0; j < s->npass; j++)
        for (size_t p = 0; p < s->pass[j].n && p < s->repeat[j].n; p++) {
            const struct mp_lp_pos *a = &s->pass[j].p[p], *b = &s->repeat[j].p[p];
            if (!strcmp(a->token, b->token)) {
                sum += fabs(a->lp - b->lp);
                same += a->top1 && b->top1 && same_tok(a->top1, b->top1);
                n++;
            }
        }
    if (n)
        *top1 = (double)same / (double)n;
    return n ? sum / (double)n : -1;
}

/* Alternatives besides the token itself: only with them can a difference be
 * judged (logprobs 0 or 1 list the chosen token alone). */
static bool has_alts(const struct mp_gen_tok *t)
{
    for (size_t k = 0; k < t->ntop; k++)
        if (strcmp(t->top[k].token, t->token))
            return true;
    return false;
}

static bool in_top(const struct mp_gen_tok *t, const char *tok)
{
    for (size_t k = 0; k < t->ntop; k++)
        if (same_tok(t->top[k].token, tok))
            return true;
    return false;
}

int mp_agree_logprobs_close(const struct mp_gen_seq *a, const struct mp_gen_seq *b, long *at)
{
    size_t n = a->n < b->n ? a->n : b->n;
    *at = -1;
    for (size_t t = 0; t < n; t++) {
        const struct mp_gen_tok *x = &a->t[t], *y = &b->t[t];
        if (same_tok(x->token, y->token))
            continue;
        *at = (long)t;
        if (!has_alts(x) || !has_alts(y))
            return -1;
        return in_top(y, x->token) && in_top(x, y->token) ? 1 : 0;
    }
    return 1;
}

/* The first failing greedy comparison, in words. */
static char *greedy_why(const struct ctx *x, size_t c, long r, size_t i, long at)
{
    const struct mp_gen_tok *me = &x->in[c].s->gen[i].t[at];
    const struct mp_gen_tok *o = &x->in[r].s->gen[i].t[at];
    char *a = mp_quality_quote(me->token, 40), *b = mp_quality_quote(o->token, 40);
    char *w = xasprintf("greedy prompt %zu, token %ld: %s here, %s in '%s', neither in the "
                        "other's top %zu",
                        i + 1, at + 1, a, b, x->in[r].name, me->ntop < o->ntop ? me->ntop : o->ntop);
    free(a);
    free(b);
    return w;
}

/* c's greedy continuations against candidate r's; true when one fails. */
static bool gen_against(const struct ctx *x, size_t c, long r, struct mp_agreement *ag)
{
    const struct mp_score *a = x->in[c].s, *b = x->in[r].s;
    bool failed = false;
    for (size_t i = 0; i < a->ngen && i < b->ngen; i++) {
        long at;
        int v = mp_agree_logprobs_close(&a->gen[i], &b->gen[i], &at);
        ag->greedy_compared++;
        ag->greedy_undecided += v < 0;
        if (v == 0) {
            ag->greedy_failed++;
            if (!ag->greedy_first)
                ag->greedy_first = greedy_why(x, c, r, i, at);
            failed = true;
        }
    }
    return failed;
}

/* Candidate c's greedy continuations against the other configurations. */
static void gen_compare(const struct ctx *x, size_t c, struct mp_agreement *ag)
{
    const struct side *sd = &x->gen;
    if (sd->mode == M_REF || sd->mode == M_PAIR) {
        if ((long)c == x->ref)
            return;
        ag->greedy_div = gen_against(x, c, sd->mode == M_REF ? x->ref : pair_other(sd, c), ag);
        ag->greedy_others = 1;
        ag->greedy_others_failed = ag->greedy_div;
        return;
    }
    size_t nother = 0, nfail = 0;
    for (size_t g = 0; g < sd->ngroups; g++) {
        if ((int)g == sd->grp[c])
            continue;
        nfail += gen_against(x, c, sd->rep[g], ag);
        nother++;
    }
    ag->greedy_div = nother && nfail * 2 > nother;
    ag->greedy_others = nother;
    ag->greedy_others_failed = nfail;
}

static const char *name_or(const struct ctx *x, long i, const char *dflt)
{
    return i >= 0 ? x->in[i].name : dflt;
}

/* The noise floor: run-to-run (candidates scored twice) and the spread of
 * the configurations around the reference. */
static void floors(const struct ctx *x, struct mp_correct *out)
{
    double *v = xcalloc(x->n + 1, sizeof(*v));
    size_t nv = 0;
    for (size_t i = 0; i < x->n; i++) {
        out->c[i].ag.repeat_top1 = -1;
        if (x->lp.ok[i])
            out->c[i].ag.repeat_abs = repeat_abs(x->in[i].s, &out->c[i].ag.repeat_top1);
        else
            out->c[i].ag.repeat_abs = -1;
        if (out->c[i].ag.repeat_abs >= 0)
            v[nv++] = out->c[i].ag.repeat_abs;
    }
    /* the lower median: a kernel that is wrong differently on every run
     * (a race) has a large run-to-run figure of its own, which must not
     * raise the floor it is judged against (in a pair the plain median
     * would be half of it) */
    out->repeat_floor = nv ? median(v, nv, true) : -1;
    nv = 0;
    const struct side *sd = &x->lp;
    for (size_t g = 0; g < sd->ngroups; g++) {
        long r = sd->rep[g];
        if (sd->mode == M_REF && x->in[r].group == x->in[x->ref].group)
            continue;
        /* the spread among the configurations that agree on top-1 */
        if (out->c[r].ag.positions && out->c[r].ag.top1 >= MP_AG_TOP1_MIN)
            v[nv++] = out->c[r].ag.mean_abs;
    }
    bool spread = (sd->mode == M_CONS || sd->mode == M_REF) && nv >= 2;
    out->spread_floor = spread ? median(v, nv, true) : -1;
    free(v);
    out->noise_floor = fmax(0.0, fmax(out->repeat_floor, out->spread_floor));
    if (out->repeat_floor < 0 && out->spread_floor < 0)
        out->noise_floor = -1;
}

static char *why_not(const struct ctx *x, size_t c)
{
    const struct mp_score *s = x->in[c].s;
    if (!s)
        return xstrdup("the scoring pass did not run");
    if (s->plp != MP_SC_OK && s->greedy != MP_SC_OK)
        return xasprintf("no logprobs: prompt_logprobs %s%s%s; greedy logprobs %s%s%s",
                         mp_sc_status_name(s->plp), s->plp_note ? " (" : "",
                         s->plp_note ? s->plp_note : "", mp_sc_status_name(s->greedy),
                         s->greedy_note ? " (" : "", s->greedy_note ? s->greedy_note : "");
    return xstrdup("the only configuration scored: nothing to compare it with");
}

/* The candidate compared with, for the report. */
static char *reference_of(const struct ctx *x, const struct side *sd, size_t c)
{
    if (sd->mode == M_REF)
        return xstrdup(name_or(x, x->ref, "?"));
    if (sd->mode == M_PAIR)
        return xstrdup(name_or(x, pair_other(sd, c), "?"));
    return xstrdup("consensus");
}

/* Did at least half of candidate c's teacher-forced positions find their
 * counterpart (the same token at the same place in a passage of the same
 * length)? When not, the figures describe a few coincidences, not the
 * candidate: 0 positions compared would read as "agrees". The reference
 * compares nothing and lines up by definition. */
static bool lp_lines_up(const struct ctx *x, size_t c, const struct mp_agreement *ag)
{
    if ((long)c == x->ref || !x->lp.ok[c])
        return true;
    size_t own = 0;
    for (size_t j = 0; j < x->in[c].s->npass; j++)
        own += x->in[c].s->pass[j].n;
    return own && ag->positions * 2 >= own;
}

/* The note of a candidate whose positions do not line up. */
static char *misaligned_note(const struct ctx *x, size_t c, const struct mp_agreement *ag,
                             bool has_gen)
{
    size_t own = 0;
    for (size_t j = 0; j < x->in[c].s->npass; j++)
        own += x->in[c].s->pass[j].n;
    return xasprintf("prompt logprobs not comparable: %zu of its %zu positions line up with the "
                     "other configurations' (same passage length, same token; a different "
                     "tokenization or detokenization of the passages)%s",
                     ag->positions, own,
                     has_gen ? ": greedy continuations compared only" : "");
}

/* Candidate c's result from its figures (no majority check yet); true when
 * it is divergent by a consensus. */
static bool result_of(const struct ctx *x, size_t c, struct mp_agreement *ag)
{
    bool has_lp = x->lp.ok[c] && x->lp.mode != M_NONE;
    bool has_gen = x->gen.ok[c] && x->gen.mode != M_NONE;
    bool aligned = !has_lp || lp_lines_up(x, c, ag);
    has_lp = has_lp && aligned;
    /* greedy alone tells something only where a comparison was decided */
    if (!has_lp && has_gen && ag->greedy_failed + ag->greedy_undecided == ag->greedy_compared &&
        !ag->greedy_failed) {
        ag->result = MP_AG_NOT_MEASURED;
        ag->note = xstrdup("the greedy continuations differ only where the engine listed no "
                           "alternatives (logprobs it allows: 0 or 1): no comparison could be "
                           "decided");
        ag->greedy_only = true;
        return false;
    }
    if (!has_lp && !has_gen) {
        ag->result = MP_AG_NOT_MEASURED;
        ag->note = aligned ? why_not(x, c) : misaligned_note(x, c, ag, false);
        return false;
    }
    const struct side *sd = has_lp ? &x->lp : &x->gen;
    ag->reference = reference_of(x, sd, c);
    ag->others = sd->mode == M_REF ? 1 : sd->ngroups - 1;
    ag->greedy_only = !has_lp;
    if (!has_lp && !aligned) {
        ag->note = misaligned_note(x, c, ag, true);
    } else if (!has_lp) {
        const struct mp_score *s = x->in[c].s;
        ag->note = xasprintf("prompt_logprobs %s%s%s: greedy continuations compared only",
                             mp_sc_status_name(s->plp), s->plp_note ? " (" : "",
                             s->plp_note ? s->plp_note : "");
    }
    bool strong = (has_lp && x->lp.mode != M_PAIR && ag->lp_div) ||
                  (has_gen && x->gen.mode != M_PAIR && ag->greedy_div);
    bool pair = (has_lp && x->lp.mode == M_PAIR && ag->lp_div) ||
                (has_gen && x->gen.mode == M_PAIR && ag->greedy_div);
    if ((long)c == x->ref)
        strong = pair = false; /* the reference agrees with itself */
    ag->result = strong ? MP_AG_DIVERGENT : pair ? MP_AG_DISAGREE_PAIR : MP_AG_AGREES;
    return strong && sd->mode == M_CONS;
}

/* The side whose consensus decided (teacher-forced, else greedy), NULL when
 * neither had one. */
static const struct side *cons_side(const struct ctx *x)
{
    const struct side *sd = x->lp.mode == M_CONS ? &x->lp : &x->gen;
    return sd->mode == M_CONS ? sd : NULL;
}

/* Has group g of sd a member divergent by the consensus? */
static bool group_divergent(const struct ctx *x, const struct side *sd, const bool *cons_div,
                            size_t g)
{
    for (size_t i = 0; i < x->n; i++)
        if (sd->grp[i] == (int)g && cons_div[i])
            return true;
    return false;
}

/* With a consensus, half or more configurations divergent means none. */
static void majority(const struct ctx *x, const bool *cons_div, struct mp_correct *out)
{
    const struct side *sd = cons_side(x);
    if (!sd)
        return;
    size_t d = 0;
    for (size_t g = 0; g < sd->ngroups; g++)
        d += group_divergent(x, sd, cons_div, g);
    if (d == 0 || d * 2 < sd->ngroups)
        return;
    for (size_t i = 0; i < x->n; i++) {
        struct mp_agreement *ag = &out->c[i].ag;
        if (ag->result == MP_AG_DIVERGENT || ag->result == MP_AG_AGREES)
            ag->result = MP_AG_NO_CONSENSUS;
    }
}

const char *const mp_ag_kern_name[MP_AG_NKERN] = {"MoE backend", "dense kernel",
                                                   "attention backend"};

/* The kernel of kind k that every agreeing configuration (a group of sd
 * none of whose members is divergent) uses, NULL when they differ, one is
 * not logged, or none agrees. */
static const char *shared_kernel(const struct ctx *x, const struct side *sd, const bool *cons_div,
                                 int k)
{
    const char *v = NULL;
    for (size_t g = 0; g < sd->ngroups; g++) {
        if (group_divergent(x, sd, cons_div, g))
            continue;
        const char *kv = x->in[sd->rep[g]].kern[k];
        if (!kv || (v && strcmp(v, kv)))
            return NULL;
        v = kv;
    }
    return v;
}

/* The independence rule (agree.h): a divergent configuration whose accusers
 * all share a kernel it does not use leaves no consensus. */
static void independence(const struct ctx *x, const bool *cons_div, struct mp_correct *out)
{
    const struct side *sd = cons_side(x);
    if (!sd)
        return;
    long who = -1;
    int kind = -1;
    const char *theirs = NULL;
    for (size_t c = 0; c < x->n && who < 0; c++) {
        if (!cons_div[c] || out->c[c].ag.result != MP_AG_DIVERGENT)
            continue;
        for (int k = 0; k < MP_AG_NKERN && who < 0; k++) {
            const char *v = shared_kernel(x, sd, cons_div, k);
            if (v && x->in[c].kern[k] && strcmp(v, x->in[c].kern[k])) {
                who = (long)c;
                kind = k;
                theirs = v;
            }
        }
    }
    if (who < 0)
        return;
    for (size_t i = 0; i < x->n; i++) {
        struct mp_agreement *ag = &out->c[i].ag;
        if (ag->result != MP_AG_DIVERGENT && ag->result != MP_AG_AGREES)
            continue;
        ag->result = MP_AG_NO_CONSENSUS;
        free(ag->note);
        ag->note = xasprintf("the configurations that agree all use the %s %s and '%s', which "
                             "disagrees with them, uses %s: their agreement is one %s's word "
                             "against another's, so the logprobs cannot tell which is wrong",
                             mp_ag_kern_name[kind], theirs, x->in[who].name,
                             x->in[who].kern[kind], mp_ag_kern_name[kind]);
    }
}

void mp_agree_run(const struct mp_ag_in *in, size_t n, long ref, struct mp_correct *out)
{
    struct ctx x = {.in = in, .n = n, .ref = ref >= 0 && (size_t)ref < n ? ref : -1};
    side_init(&x, &x.lp, false);
    side_init(&x, &x.gen, true);
    out->votes = x.lp.ngroups;
    for (size_t c = 0; c < n; c++) {
        struct mp_agreement *ag = &out->c[c].ag;
        if (x.lp.ok[c] && x.lp.mode != M_NONE && (long)c != x.ref)
            lp_compare(&x, c, ag);
        if (x.gen.ok[c] && x.gen.mode != M_NONE)
            gen_compare(&x, c, ag);
    }
    floors(&x, out);
    bool *cons_div = xcalloc(n + 1, sizeof(*cons_div));
    for (size_t c = 0; c < n; c++) {
        struct mp_agreement *ag = &out->c[c].ag;
        ag->noise_floor = out->noise_floor;
        ag->lp_div = ag->positions > 0 && lp_lines_up(&x, c, ag) &&
                     mp_agree_divergent(ag->mean_abs, ag->top1, fmax(0.0, out->noise_floor));
        cons_div[c] = result_of(&x, c, ag);
    }
    majority(&x, cons_div, out);
    independence(&x, cons_div, out);
    /* a candidate that disagrees with itself is wrong once, whoever agrees */
    for (size_t c = 0; c < n; c++) {
        struct mp_agreement *ag = &out->c[c].ag;
        ag->self_div = ag->repeat_abs >= 0 && ag->repeat_top1 >= 0 &&
                       mp_agree_divergent(ag->repeat_abs, ag->repeat_top1,
                                          fmax(0.0, out->noise_floor));
        if (ag->self_div)
            ag->result = MP_AG_DIVERGENT;
    }
    free(cons_div);
    side_free(&x.lp);
    side_free(&x.gen);
}
