/* evidence.h - what the HTML report shows of one attempt beyond its
 * summary, loaded from the evidence store (store/evidence.h): the
 * server.log lines its claims cite, with the lines around them, and a
 * timeline of its requests. Bounded whatever the attempt's size: at most
 * MP_EV_MAX_LINES lines of at most MP_EV_LINE_MAX bytes each (the store's
 * own cut) and the last MP_EV_MAX_REQS requests. Plain data. */
#ifndef MP_MODEL_EVIDENCE_H
#define MP_MODEL_EVIDENCE_H

#include "compat.h"

#define MP_EV_CONTEXT 2      /* lines of context stored on each side of a cited line */
#define MP_EV_MAX_LINES 64   /* lines kept per attempt */
#define MP_EV_LINE_MAX 4096  /* bytes of a stored log line */
#define MP_EV_MAX_REQS 4000  /* requests kept per attempt: the last ones */

/* One server.log line: its 1-based number, its text (owned, masked as
 * stored) and whether a claim of the attempt cites it (else it is context). */
struct mp_ev_line {
    long no;
    char *text;
    bool cited;
};

/* One finished request, as stored (times in seconds since the engine was
 * spawned; ttft_ms < 0: no token). */
struct mp_ev_req {
    long seq;              /* order of completion, 1-based */
    double start_s;
    double ttft_ms, e2e_ms;
    int output_tokens;
    char outcome[24];      /* "ok" or the failure class (cut to fit) */
    char phase[32];
};

struct mp_evidence {
    struct mp_ev_line *lines;   /* ascending by no, no duplicates */
    size_t nlines;
    struct mp_ev_req *reqs;     /* ascending by seq */
    size_t nreqs;
    size_t reqs_total;          /* requests of the attempt in the store; > nreqs: capped */
};

/* Append a line (text copied; NULL is ""), keeping the lines ascending and
 * unique (a second line of the same number keeps the first's text and
 * becomes cited if either is). Returns false when MP_EV_MAX_LINES are held
 * already (the line is dropped). */
bool mp_evidence_add_line(struct mp_evidence *ev, long no, const char *text, bool cited);
/* The line numbered no, or NULL. */
const struct mp_ev_line *mp_evidence_line(const struct mp_evidence *ev, long no);
/* Append a request (copied). Callers bound the count (MP_EV_MAX_REQS). */
void mp_evidence_add_req(struct mp_evidence *ev, const struct mp_ev_req *rq);

/* Free everything ev holds and ev itself (accepts NULL). */
void mp_evidence_free(struct mp_evidence *ev);

#endif
