/* qcheck.c - release of the output-check result (model/qcheck.h). */
#include "model/qcheck.h"

#include <stdlib.h>
#include <string.h>

void mp_qcheck_release(struct mp_qcheck *q)
{
    for (size_t i = 0; i < q->n; i++) {
        struct mp_qcand_out *c = &q->c[i];
        free(c->res);
        free(c->res_why);
        free(c->why);
        free(c->diff_this);
        free(c->diff_ref);
    }
    free(q->c);
    free(q->answerable);
    free(q->note);
    memset(q, 0, sizeof(*q));
    q->ref = -1;
}
