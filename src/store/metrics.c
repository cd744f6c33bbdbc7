/* metrics.c - the bounded half of the evidence: each phase's metric
 * histograms as their non-empty buckets (tables metrics, metric_buckets,
 * schema v9), their rebuilding from the raw request rows of older stores,
 * and the workload the run sent (tables workload, workload_phases). */
#include "store/internal.h"
#include "store/runinfo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hist.h"
#include "model/report.h"
#include "xalloc.h"

/* the stored names of struct mp_phase_metrics' histograms */
static const struct {
    const char *name;
    size_t off;
} metric_cols[] = {
    {"ttft_ms", offsetof(struct mp_phase_metrics, ttft_ms)},
    {"tpot_ms", offsetof(struct mp_phase_metrics, tpot_ms)},
    {"itl_ms", offsetof(struct mp_phase_metrics, itl_ms)},
    {"e2e_ms", offsetof(struct mp_phase_metrics, e2e_ms)},
    {"req_tok_s", offsetof(struct mp_phase_metrics, req_tok_s)},
};

static struct mp_hist *metric_of(struct mp_phase_metrics *m, const char *name)
{
    for (size_t i = 0; name && i < MP_ARRAY_SIZE(metric_cols); i++)
        if (!strcmp(metric_cols[i].name, name))
            return (struct mp_hist *)(void *)((char *)m + metric_cols[i].off);
    return NULL;
}

int mp_store_clear_metrics(struct mp_store *s, int64_t attempt)
{
    sqlite3_stmt *st = NULL;
    static const char *const sql[] = {"DELETE FROM metric_buckets WHERE attempt_id = ?",
                                      "DELETE FROM metrics WHERE attempt_id = ?"};
    for (size_t i = 0; i < MP_ARRAY_SIZE(sql); i++) {
        if (mp_store_prep(s, &st, sql[i]) < 0)
            return MP_EDB;
        sqlite3_bind_int64(st, 1, attempt);
        if (mp_store_step_done(s, st, "replace an attempt's metrics") < 0)
            return MP_EDB;
    }
    return 0;
}

int mp_store_put_metrics(struct mp_store *s, int64_t attempt, size_t pos,
                         const struct mp_phase_metrics *m)
{
    sqlite3_stmt *sum = NULL, *bk = NULL;
    int rc = 0;
    for (size_t k = 0; rc == 0 && k < MP_ARRAY_SIZE(metric_cols); k++) {
        const struct mp_hist *h =
            (const struct mp_hist *)(const void *)((const char *)m + metric_cols[k].off);
        if (!h->n)
            continue; /* an empty histogram has no row */
        if (mp_store_prep(s, &sum, "INSERT INTO metrics(attempt_id, phase_pos, metric, n, sum,"
                                   " m2, min, max) VALUES (?,?,?,?,?,?,?,?)") < 0)
            return MP_EDB;
        sqlite3_bind_int64(sum, 1, attempt);
        sqlite3_bind_int64(sum, 2, (sqlite3_int64)pos);
        sqlite3_bind_text(sum, 3, metric_cols[k].name, -1, SQLITE_STATIC);
        sqlite3_bind_int64(sum, 4, (sqlite3_int64)h->n);
        sqlite3_bind_double(sum, 5, h->sum);
        sqlite3_bind_double(sum, 6, h->m2);
        sqlite3_bind_double(sum, 7, h->min);
        sqlite3_bind_double(sum, 8, h->max);
        if ((rc = mp_store_step_done(s, sum, "record a metric")) < 0)
            break;
        if (mp_store_prep(s, &bk, "INSERT INTO metric_buckets(attempt_id, phase_pos, metric,"
                                  " bucket, count) VALUES (?,?,?,?,?)") < 0)
            return MP_EDB;
        uint64_t c;
        for (unsigned i = 0; rc == 0 && mp_hist_next_bucket(h, &i, &c); i++) {
            sqlite3_reset(bk);
            sqlite3_bind_int64(bk, 1, attempt);
            sqlite3_bind_int64(bk, 2, (sqlite3_int64)pos);
            sqlite3_bind_text(bk, 3, metric_cols[k].name, -1, SQLITE_STATIC);
            sqlite3_bind_int64(bk, 4, (sqlite3_int64)i);
            sqlite3_bind_int64(bk, 5, (sqlite3_int64)c);
            if (sqlite3_step(bk) != SQLITE_DONE)
                rc = mp_store_fail(s, "record a metric bucket");
        }
        sqlite3_finalize(bk);
    }
    return rc;
}

/* The stored histograms of the phases marked hist = 1. */
static int load_hists(struct mp_store *s, int64_t attempt, struct mp_attempt_result *r)
{
    sqlite3_stmt *st = NULL;
    if (mp_store_prep(s, &st, "SELECT phase_pos, metric, n, sum, m2, min, max FROM metrics"
                              " WHERE attempt_id = ?") < 0)
        return MP_EDB;
    sqlite3_bind_int64(st, 1, attempt);
    int sr;
    while ((sr = sqlite3_step(st)) == SQLITE_ROW) {
        sqlite3_int64 pos = sqlite3_column_int64(st, 0);
        if (pos < 0 || (size_t)pos >= r->nphases)
            continue;
        struct mp_hist *h =
            metric_of(&r->phases[pos].m, (const char *)sqlite3_column_text(st, 1));
        if (!h)
            continue;
        sqlite3_int64 n = sqlite3_column_int64(st, 2);
        h->n = n > 0 ? (uint64_t)n : 0;
        h->sum = sqlite3_column_double(st, 3);
        h->m2 = sqlite3_column_double(st, 4);
        h->min = sqlite3_column_double(st, 5);
        h->max = sqlite3_column_double(st, 6);
    }
    if (mp_store_read_end(s, st, sr, "read the metrics") < 0)
        return MP_EDB;
    if (mp_store_prep(s, &st, "SELECT phase_pos, metric, bucket, count FROM metric_buckets"
                              " WHERE attempt_id = ?") < 0)
        return MP_EDB;
    sqlite3_bind_int64(st, 1, attempt);
    while ((sr = sqlite3_step(st)) == SQLITE_ROW) {
        sqlite3_int64 pos = sqlite3_column_int64(st, 0);
        sqlite3_int64 b = sqlite3_column_int64(st, 2), c = sqlite3_column_int64(st, 3);
        if (pos < 0 || (size_t)pos >= r->nphases || b < 0 || b >= MP_HIST_NBUCKETS || c <= 0)
            continue; /* a damaged row is not evidence */
        struct mp_hist *h =
            metric_of(&r->phases[pos].m, (const char *)sqlite3_column_text(st, 1));
        if (h)
            mp_hist_add_bucket(h, (unsigned)b, (uint64_t)c);
    }
    return mp_store_read_end(s, st, sr, "read the metric buckets");
}

/* A phase written before schema v9 (no stored histograms): its
 * histograms from the raw rows of its OK requests, with the definitions
 * those rows were written under (e2e_ms to the end of the response, the
 * decode rate over it; docs/store.md). Bounded: one row at a time. */
static int rebuild_from_requests(struct mp_store *s, int64_t attempt,
                                 struct mp_attempt_result *r, const bool *legacy)
{
    sqlite3_stmt *st = NULL;
    if (mp_store_prep(s, &st, "SELECT phase, ttft_ms, e2e_ms, req_tok_s, output_tokens, itl"
                              " FROM requests WHERE attempt_id = ? AND outcome = 'ok'"
                              " ORDER BY id") < 0)
        return MP_EDB;
    sqlite3_bind_int64(st, 1, attempt);
    int sr;
    while ((sr = sqlite3_step(st)) == SQLITE_ROW) {
        const char *phase = (const char *)sqlite3_column_text(st, 0);
        struct mp_phase_metrics *m = NULL;
        for (size_t k = 0; phase && k < r->nphases && !m; k++)
            if (legacy[k] && !strcmp(r->phases[k].name, phase))
                m = &r->phases[k].m;
        if (!m)
            continue;
        double t = sqlite3_column_double(st, 1), e = sqlite3_column_double(st, 2);
        int tokens = sqlite3_column_int(st, 4);
        if (t >= 0)
            mp_hist_add(&m->ttft_ms, t);
        mp_hist_add(&m->e2e_ms, e);
        if (t >= 0 && tokens > 1)
            mp_hist_add(&m->tpot_ms, (e - t) / (double)(tokens - 1));
        if (sqlite3_column_type(st, 3) != SQLITE_NULL)
            mp_hist_add(&m->req_tok_s, sqlite3_column_double(st, 3));
        int nb = sqlite3_column_bytes(st, 5);
        const void *blob = sqlite3_column_blob(st, 5);
        for (int k = 0; blob && k + (int)sizeof(double) <= nb; k += (int)sizeof(double)) {
            double g;
            memcpy(&g, (const char *)blob + k, sizeof(g));
            mp_hist_add(&m->itl_ms, g);
        }
    }
    return mp_store_read_end(s, st, sr, "read the requests");
}

int mp_store_load_metrics(struct mp_store *s, int64_t attempt, struct mp_attempt_result *r,
                          const bool *legacy)
{
    bool any_legacy = false, any_stored = false;
    for (size_t k = 0; k < r->nphases; k++) {
        any_legacy = any_legacy || legacy[k];
        any_stored = any_stored || !legacy[k];
    }
    if (any_stored && load_hists(s, attempt, r) < 0)
        return MP_EDB;
    if (any_legacy)
        return rebuild_from_requests(s, attempt, r, legacy);
    return 0;
}

/* ---- the workload ---- */

int mp_store_set_workload(struct mp_store *s, const struct mp_workload *w)
{
    if (s->workload_set && !s->failed)
        return 0;
    if (mp_store_begin(s) < 0)
        return MP_EDB;
    int rc = mp_store_exec(s, "DELETE FROM workload_phases");
    sqlite3_stmt *st = NULL;
    if (rc == 0)
        rc = mp_store_prep(s, &st, "INSERT OR REPLACE INTO workload(id, max_tokens, input_tokens,"
                                   " chat, ignore_eos, temperature) VALUES (1,?,?,?,?,?)");
    if (rc == 0) {
        sqlite3_bind_int(st, 1, w->max_tokens);
        sqlite3_bind_int(st, 2, w->input_tokens);
        sqlite3_bind_int(st, 3, w->chat);
        sqlite3_bind_int(st, 4, w->ignore_eos);
        sqlite3_bind_double(st, 5, w->temperature);
        rc = mp_store_step_done(s, st, "record the workload");
    }
    for (size_t i = 0; rc == 0 && i < w->nphases && i < MP_MAX_PHASES; i++) {
        const struct mp_phase_spec *p = &w->phases[i];
        if ((rc = mp_store_prep(s, &st, "INSERT INTO workload_phases(pos, name, level, requests,"
                                        " duration_s, input_tokens) VALUES (?,?,?,?,?,?)")) < 0)
            break;
        sqlite3_bind_int64(st, 1, (sqlite3_int64)i);
        mp_store_bind_text(s, st, 2, p->name);
        sqlite3_bind_int(st, 3, p->level);
        sqlite3_bind_int(st, 4, p->requests);
        sqlite3_bind_double(st, 5, p->duration_s);
        sqlite3_bind_int(st, 6, p->input_tokens);
        rc = mp_store_step_done(s, st, "record a workload phase");
    }
    if (rc == 0)
        rc = mp_store_put_timeouts(s, w);
    rc = mp_store_commit(s, rc);
    if (rc == 0)
        s->workload_set = true;
    return rc;
}

int mp_store_load_workload(struct mp_store *s, struct mp_report *rep)
{
    memset(&rep->workload, 0, sizeof(rep->workload));
    rep->has_workload = false;
    if (s->version < 9)
        return 0;
    sqlite3_stmt *st = NULL;
    if (mp_store_prep(s, &st, "SELECT max_tokens, input_tokens, chat, ignore_eos, temperature"
                              " FROM workload WHERE id = 1") < 0)
        return MP_EDB;
    int sr = sqlite3_step(st);
    struct mp_workload *w = &rep->workload;
    if (sr == SQLITE_ROW) {
        rep->has_workload = true;
        w->max_tokens = sqlite3_column_int(st, 0);
        w->input_tokens = sqlite3_column_int(st, 1);
        w->chat = sqlite3_column_int(st, 2) != 0;
        w->ignore_eos = sqlite3_column_int(st, 3) != 0;
        w->temperature = sqlite3_column_double(st, 4);
    }
    if (mp_store_read_end(s, st, sr, "read the workload") < 0 || !rep->has_workload)
        return rep->has_workload ? MP_EDB : 0;
    if (mp_store_prep(s, &st, "SELECT name, level, requests, duration_s, input_tokens"
                              " FROM workload_phases ORDER BY pos") < 0)
        return MP_EDB;
    while ((sr = sqlite3_step(st)) == SQLITE_ROW && w->nphases < MP_MAX_PHASES) {
        struct mp_phase_spec *p = &w->phases[w->nphases++];
        const unsigned char *name = sqlite3_column_text(st, 0);
        snprintf(p->name, sizeof(p->name), "%s", name ? (const char *)name : "");
        p->level = sqlite3_column_int(st, 1);
        p->requests = sqlite3_column_int(st, 2);
        p->duration_s = sqlite3_column_double(st, 3);
        p->input_tokens = sqlite3_column_int(st, 4);
    }
    return mp_store_read_end(s, st, sr, "read the workload phases");
}
