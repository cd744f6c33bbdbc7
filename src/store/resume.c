/* resume.c - what the store keeps so that an interrupted run is continued
 * honestly: the engine processes moeprobe saw (ended by a later moeprobe
 * after a kill -9: store.h "engine processes"), and the engine starts an
 * interruption cut short (counted in the cost and in the diagnosis budget,
 * never results: internal.h). */
#include "store/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/report.h"
#include "vec.h"
#include "xalloc.h"

/* Version 15: the engine processes seen (pid + start time + boot id). */
const char mp_store_procs_schema[] =
    "CREATE TABLE engine_procs("
    " attempt_id INTEGER NOT NULL REFERENCES attempts(id) ON DELETE CASCADE,"
    " pid INTEGER NOT NULL, start INTEGER NOT NULL, boot_id TEXT, seen TEXT,"
    " PRIMARY KEY (attempt_id, pid, start));";

int mp_store_add_engine_procs(struct mp_store *s, int64_t attempt, const struct mp_store_proc *p,
                              size_t n)
{
    if (n == 0)
        return 0;
    if (mp_store_begin(s) < 0)
        return MP_EDB;
    char now[32];
    mp_store_now_iso(now, sizeof(now));
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        sqlite3_stmt *st = NULL;
        rc = mp_store_prep(s, &st, "INSERT OR IGNORE INTO engine_procs(attempt_id, pid, start,"
                                   " boot_id, seen) VALUES (?,?,?,?,?)");
        if (rc < 0)
            break;
        sqlite3_bind_int64(st, 1, attempt);
        sqlite3_bind_int64(st, 2, p[i].pid);
        sqlite3_bind_int64(st, 3, (sqlite3_int64)p[i].start);
        sqlite3_bind_text(st, 4, p[i].boot_id, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 5, now, -1, SQLITE_TRANSIENT);
        rc = mp_store_step_done(s, st, "record an engine process");
    }
    return mp_store_commit(s, rc);
}

int mp_store_engine_procs(struct mp_store *s, struct mp_store_proc **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    sqlite3_stmt *st = NULL;
    if (mp_store_prep(s, &st, "SELECT DISTINCT pid, start, boot_id FROM engine_procs") < 0)
        return MP_EDB;
    size_t cap = 0;
    int sr;
    while ((sr = sqlite3_step(st)) == SQLITE_ROW) {
        mp_grow(*out, cap, *n + 1);
        struct mp_store_proc *e = &(*out)[(*n)++];
        e->pid = (pid_t)sqlite3_column_int64(st, 0);
        e->start = (unsigned long long)sqlite3_column_int64(st, 1);
        const char *b = (const char *)sqlite3_column_text(st, 2);
        snprintf(e->boot_id, sizeof(e->boot_id), "%s", b ? b : "");
    }
    if (mp_store_read_end(s, st, sr, "read the engine processes") < 0) {
        free(*out);
        *out = NULL;
        *n = 0;
        return MP_EDB;
    }
    return 0;
}

/* The first normal-mode attempt among c's loaded ones (its index), or -1. */
static int first_normal(const struct mp_cand_report *c)
{
    int first = -1;
    for (size_t j = 0; j < c->nattempts; j++) {
        const struct mp_attempt_result *a = &c->attempts[j];
        if (!a->launch_blocking && (first < 0 || a->index < first))
            first = a->index;
    }
    return first;
}

int mp_store_load_cut(struct mp_store *s, int64_t cand_id, bool interrupted,
                      struct mp_cand_report *c)
{
    sqlite3_stmt *st = NULL;
    /* the complement of what mp_store_load takes as results */
    if (mp_store_prep(s, &st,
                      interrupted ? "SELECT idx, launch_blocking, wall_s FROM attempts WHERE"
                                    " candidate_id = ? AND status != 'done' AND NOT"
                                    " (status = 'interrupted' AND outcome IS NOT NULL)"
                                  : "SELECT idx, launch_blocking, wall_s FROM attempts WHERE"
                                    " candidate_id = ? AND status != 'done'") < 0)
        return MP_EDB;
    sqlite3_bind_int64(st, 1, cand_id);
    int first = first_normal(c);
    c->cut_starts = c->cut_reruns = 0;
    c->cut_engine_s = 0;
    int sr;
    while ((sr = sqlite3_step(st)) == SQLITE_ROW) {
        int idx = sqlite3_column_int(st, 0);
        bool blocking = sqlite3_column_int(st, 1) != 0;
        double wall = sqlite3_column_double(st, 2); /* NULL (killed before its summary): 0 */
        c->cut_starts++;
        c->cut_engine_s += wall > 0 ? wall : 0;
        if (!blocking && first >= 0 && idx > first)
            c->cut_reruns++;
    }
    return mp_store_read_end(s, st, sr, "read the interrupted attempts");
}

/* run.interrupted: 1 = a signal, 2 = an I/O error of the store */

/* Inside the transaction: the running attempts and the run. 0 or MP_EDB. */
static int stop_rows(struct mp_store *s, const char *why, const char *now)
{
    sqlite3_stmt *st = NULL;
    int rc = mp_store_prep(s, &st, "UPDATE attempts SET status = 'interrupted', outcome = 'interrupted',"
                                   " fail_class = 'io-error', fail_message = ?, finished = ?"
                                   " WHERE status = 'running'");
    if (rc == 0) {
        sqlite3_bind_text(st, 1, why, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 2, now, -1, SQLITE_TRANSIENT);
        rc = mp_store_step_done(s, st, "record the I/O error");
    }
    if (rc == 0)
        rc = mp_store_prep(s, &st, "UPDATE run SET interrupted = 2, finished = ? WHERE id = 1");
    if (rc == 0) {
        sqlite3_bind_text(st, 1, now, -1, SQLITE_TRANSIENT);
        rc = mp_store_step_done(s, st, "record the I/O error");
    }
    return rc;
}

int mp_store_record_io_stop(struct mp_store *s)
{
    if (!s || s->readonly || !s->failed)
        return 0;
    char why[640];
    snprintf(why, sizeof(why), "the evidence store could not be written: %s", s->err);
    s->failed = false; /* for this one transaction */
    sqlite3_wal_checkpoint_v2(s->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
    char now[32];
    mp_store_now_iso(now, sizeof(now));
    int rc = mp_store_begin(s);
    if (rc == 0) {
        rc = stop_rows(s, why, now);
        rc = mp_store_commit(s, rc);
    }
    s->failed = true;
    return rc;
}

int mp_store_io_stop(struct mp_store *s, char **why)
{
    *why = NULL;
    sqlite3_stmt *st = NULL;
    if (mp_store_prep(s, &st, "SELECT a.fail_message FROM run r JOIN attempts a ON"
                              " a.fail_class = 'io-error' WHERE r.id = 1 AND r.interrupted = 2"
                              " ORDER BY a.id DESC LIMIT 1") < 0)
        return MP_EDB;
    int sr = sqlite3_step(st);
    if (sr == SQLITE_ROW) {
        const char *m = (const char *)sqlite3_column_text(st, 0);
        *why = xstrdup(m ? m : "an I/O error");
        sr = SQLITE_DONE;
    }
    return mp_store_read_end(s, st, sr, "read why the run stopped");
}
