/* evidence.c - an attempt's cited log lines and request timeline; see
 * evidence.h. */
#include "model/evidence.h"

#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

bool mp_evidence_add_line(struct mp_evidence *ev, long no, const char *text, bool cited)
{
    size_t at = 0;
    while (at < ev->nlines && ev->lines[at].no < no)
        at++;
    if (at < ev->nlines && ev->lines[at].no == no) {
        ev->lines[at].cited = ev->lines[at].cited || cited;
        return true;
    }
    if (ev->nlines >= MP_EV_MAX_LINES)
        return false;
    ev->lines = xreallocarray(ev->lines, ev->nlines + 1, sizeof(*ev->lines));
    memmove(ev->lines + at + 1, ev->lines + at, (ev->nlines - at) * sizeof(*ev->lines));
    ev->lines[at] = (struct mp_ev_line){no, xstrndup(text ? text : "", MP_EV_LINE_MAX), cited};
    ev->nlines++;
    return true;
}

const struct mp_ev_line *mp_evidence_line(const struct mp_evidence *ev, long no)
{
    for (size_t i = 0; ev && i < ev->nlines; i++)
        if (ev->lines[i].no == no)
            return &ev->lines[i];
    return NULL;
}

void mp_evidence_add_req(struct mp_evidence *ev, const struct mp_ev_req *rq)
{
    /* capacity doubles at each power of two */
    size_t n = ev->nreqs;
    if (n < 16 ? n == 0 : !(n & (n - 1)))
        ev->reqs = xreallocarray(ev->reqs, n < 16 ? 16 : 2 * n, sizeof(*ev->reqs));
    ev->reqs[ev->nreqs++] = *rq;
}

void mp_evidence_free(struct mp_evidence *ev)
{
    if (!ev)
        return;
    for (size_t i = 0; i < ev->nlines; i++)
        free(ev->lines[i].text);
    free(ev->lines);
    free(ev->reqs);
    free(ev);
}
