/* evidence.c - an attempt's cited log lines and request timeline, read back
 * from the store; see evidence.h. */
#include "store/evidence.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/internal.h"
#include "xalloc.h"

static int load_lines(struct mp_store *s, int64_t attempt, struct mp_evidence *ev)
{
    sqlite3_stmt *st = NULL;
    if (mp_store_prep(s, &st, "SELECT signature, line_no, text FROM log_events"
                              " WHERE attempt_id = ? AND line_no > 0 AND text IS NOT NULL"
                              " ORDER BY line_no, id") < 0)
        return MP_EDB;
    sqlite3_bind_int64(st, 1, attempt);
    int sr;
    while ((sr = sqlite3_step(st)) == SQLITE_ROW) {
        const char *sig = (const char *)sqlite3_column_text(st, 0);
        mp_evidence_add_line(ev, (long)sqlite3_column_int64(st, 1),
                             (const char *)sqlite3_column_text(st, 2),
                             !sig || strcmp(sig, "context") != 0);
    }
    return mp_store_read_end(s, st, sr, "read the log events");
}

static void copy_text(char *dst, size_t n, const unsigned char *t)
{
    snprintf(dst, n, "%s", t ? (const char *)t : "?");
}

static int load_reqs(struct mp_store *s, int64_t attempt, struct mp_evidence *ev)
{
    sqlite3_stmt *st = NULL;
    if (mp_store_prep(s, &st, "SELECT count(*) FROM requests WHERE attempt_id = ?") < 0)
        return MP_EDB;
    sqlite3_bind_int64(st, 1, attempt);
    int sr = sqlite3_step(st);
    if (sr == SQLITE_ROW) {
        ev->reqs_total = (size_t)sqlite3_column_int64(st, 0);
        sr = sqlite3_step(st);
    }
    if (mp_store_read_end(s, st, sr, "count the requests") < 0)
        return MP_EDB;
    /* the last ones: the failure is at the end */
    if (mp_store_prep(s, &st, "SELECT seq, phase, outcome, start_s, ttft_ms, e2e_ms, output_tokens"
                              " FROM requests WHERE attempt_id = ? ORDER BY seq DESC LIMIT ?") < 0)
        return MP_EDB;
    sqlite3_bind_int64(st, 1, attempt);
    sqlite3_bind_int(st, 2, MP_EV_MAX_REQS);
    while ((sr = sqlite3_step(st)) == SQLITE_ROW) {
        struct mp_ev_req rq;
        memset(&rq, 0, sizeof(rq));
        rq.seq = (long)sqlite3_column_int64(st, 0);
        copy_text(rq.phase, sizeof(rq.phase), sqlite3_column_text(st, 1));
        copy_text(rq.outcome, sizeof(rq.outcome), sqlite3_column_text(st, 2));
        rq.start_s = sqlite3_column_double(st, 3);
        rq.ttft_ms = sqlite3_column_type(st, 4) == SQLITE_NULL ? -1 : sqlite3_column_double(st, 4);
        rq.e2e_ms = sqlite3_column_double(st, 5);
        rq.output_tokens = sqlite3_column_int(st, 6);
        mp_evidence_add_req(ev, &rq);
    }
    if (mp_store_read_end(s, st, sr, "read the requests") < 0)
        return MP_EDB;
    /* completion order */
    for (size_t i = 0, j = ev->nreqs; i + 1 < j; i++, j--) {
        struct mp_ev_req t = ev->reqs[i];
        ev->reqs[i] = ev->reqs[j - 1];
        ev->reqs[j - 1] = t;
    }
    return 0;
}

int mp_store_load_evidence(struct mp_store *s, int64_t attempt, struct mp_attempt_result *r)
{
    mp_evidence_free(r->evidence);
    struct mp_evidence *ev = xcalloc(1, sizeof(*ev));
    int rc = load_lines(s, attempt, ev);
    if (rc == 0)
        rc = load_reqs(s, attempt, ev);
    if (rc < 0) {
        mp_evidence_free(ev);
        ev = NULL;
    }
    r->evidence = ev;
    return rc;
}
