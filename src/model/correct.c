/* correct.c - release and names of the correctness results (model/correct.h). */
#include "model/correct.h"

#include <stdlib.h>
#include <string.h>

static const char *const ag_names[] = {"not-measured", "agrees", "divergent", "disagree-pair",
                                       "no-consensus"};
static const char *const acc_names[] = {"not-run", "pass", "low-accuracy"};

const char *mp_ag_result_name(enum mp_ag_result r)
{
    return (unsigned)r < MP_ARRAY_SIZE(ag_names) ? ag_names[r] : "not-measured";
}

const char *mp_acc_result_name(enum mp_acc_result r)
{
    return (unsigned)r < MP_ARRAY_SIZE(acc_names) ? acc_names[r] : "not-run";
}

void mp_agreement_release(struct mp_agreement *a)
{
    for (size_t i = 0; i < a->nfirst; i++) {
        free(a->first[i].context);
        free(a->first[i].token);
        free(a->first[i].this_top1);
        free(a->first[i].ref_top1);
    }
    free(a->reference);
    free(a->greedy_first);
    free(a->note);
    memset(a, 0, sizeof(*a));
}

void mp_correct_release(struct mp_correct *c)
{
    for (size_t i = 0; c->c && i < c->n; i++) {
        mp_agreement_release(&c->c[i].ag);
        free(c->c[i].acc.source);
        free(c->c[i].acc.note);
    }
    free(c->c);
    free(c->reference);
    free(c->note);
    memset(c, 0, sizeof(*c));
}
