/* bisect.c - `moeprobe bisect` in the store (schema v13): the search's
 * settings (table bisect, one row) and each probe (table bisect_probes,
 * one row per build probed, pointing at the candidate row whose attempts
 * are its evidence), and the engine's kernel coverage that joins the
 * fingerprint (table engine_kernels, `inspect --engine`'s JSON). */
#include "store/internal.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

/* The migration that adds them (MP_STORE_BISECT_VERSION). */
const char mp_store_bisect_schema[] =
    "CREATE TABLE bisect("
    " id INTEGER PRIMARY KEY CHECK (id = 1), good TEXT NOT NULL, bad TEXT NOT NULL,"
    " builds TEXT NOT NULL, by TEXT NOT NULL, pct REAL, candidate TEXT NOT NULL,"
    " probe_requests INTEGER NOT NULL, required INTEGER, required_why TEXT, p_bad REAL);"
    "CREATE TABLE bisect_probes("
    " step INTEGER PRIMARY KEY, build TEXT NOT NULL, pos INTEGER NOT NULL,"
    " candidate_pos INTEGER NOT NULL,"
    " outcome TEXT CHECK (outcome IN ('good','bad','skip')), why TEXT, required INTEGER);"
    "CREATE TABLE engine_kernels(id INTEGER PRIMARY KEY CHECK (id = 1), json TEXT NOT NULL);";

void mp_store_bisect_release(struct mp_store_bisect *b)
{
    free(b->good);
    free(b->bad);
    free(b->by);
    free(b->candidate);
    free(b->required_why);
    mp_strv_release(&b->builds);
    for (size_t i = 0; i < b->nprobes; i++) {
        free(b->probes[i].build);
        free(b->probes[i].why);
    }
    free(b->probes);
    memset(b, 0, sizeof(*b));
}

static int need_version(struct mp_store *s)
{
    if (s->version >= MP_STORE_BISECT_VERSION)
        return 0;
    snprintf(s->err, sizeof(s->err), "the store has schema version %d, before bisect (%d)",
             s->version, MP_STORE_BISECT_VERSION);
    return -ENOENT;
}

int mp_store_bisect_begin(struct mp_store *s, const struct mp_store_bisect *b)
{
    int rc = need_version(s);
    if (rc)
        return rc;
    sqlite3_stmt *st = NULL;
    if (mp_store_prep(s, &st, "INSERT OR REPLACE INTO bisect(id, good, bad, builds, by, pct,"
                              " candidate, probe_requests) VALUES (1,?,?,?,?,?,?,?)") < 0)
        return MP_EDB;
    mp_store_bind_text(s, st, 1, b->good);
    mp_store_bind_text(s, st, 2, b->bad);
    char *builds = mp_store_strv_json(&b->builds);
    mp_store_bind_text(s, st, 3, builds);
    free(builds);
    sqlite3_bind_text(st, 4, b->by, -1, SQLITE_TRANSIENT);
    sqlite3_bind_double(st, 5, b->pct);
    mp_store_bind_text(s, st, 6, b->candidate);
    sqlite3_bind_int64(st, 7, (sqlite3_int64)b->probe_requests);
    return mp_store_step_done(s, st, "record the bisection");
}

int mp_store_bisect_set_required(struct mp_store *s, unsigned long required, double p_bad,
                                 const char *why)
{
    sqlite3_stmt *st = NULL;
    if (mp_store_prep(s, &st, "UPDATE bisect SET required = ?, p_bad = ?, required_why = ?"
                              " WHERE id = 1") < 0)
        return MP_EDB;
    sqlite3_bind_int64(st, 1, (sqlite3_int64)required);
    sqlite3_bind_double(st, 2, p_bad);
    mp_store_bind_text(s, st, 3, why);
    return mp_store_step_done(s, st, "record the probe size");
}

int mp_store_bisect_probe(struct mp_store *s, const struct mp_store_probe *p)
{
    sqlite3_stmt *st = NULL;
    if (mp_store_prep(s, &st, "INSERT OR REPLACE INTO bisect_probes(step, build, pos,"
                              " candidate_pos, outcome, why, required) VALUES (?,?,?,?,?,?,?)") < 0)
        return MP_EDB;
    sqlite3_bind_int64(st, 1, p->step);
    mp_store_bind_text(s, st, 2, p->build);
    sqlite3_bind_int64(st, 3, p->pos);
    sqlite3_bind_int64(st, 4, p->cand_pos);
    if (p->outcome == MP_STORE_PROBE_OPEN)
        sqlite3_bind_null(st, 5);
    else
        sqlite3_bind_text(st, 5, p->outcome == MP_STORE_PROBE_GOOD ? "good"
                                 : p->outcome == MP_STORE_PROBE_BAD ? "bad" : "skip",
                          -1, SQLITE_STATIC);
    mp_store_bind_text(s, st, 6, p->why);
    sqlite3_bind_int64(st, 7, (sqlite3_int64)p->required);
    return mp_store_step_done(s, st, "record a probe");
}

static char *col_str(sqlite3_stmt *st, int i)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    return t ? xstrdup((const char *)t) : NULL;
}

static void builds_from_json(const char *json, struct mp_strv *out)
{
    cJSON *a = json ? cJSON_Parse(json) : NULL;
    const cJSON *it;
    cJSON_ArrayForEach(it, a) {
        if (cJSON_IsString(it))
            mp_strv_push(out, it->valuestring);
    }
    cJSON_Delete(a);
}

static int load_probes(struct mp_store *s, struct mp_store_bisect *b)
{
    sqlite3_stmt *st = NULL;
    if (mp_store_prep(s, &st, "SELECT step, build, pos, candidate_pos, outcome, why, required"
                              " FROM bisect_probes ORDER BY step") < 0)
        return MP_EDB;
    int r;
    size_t cap = 0;
    while ((r = sqlite3_step(st)) == SQLITE_ROW) {
        if (b->nprobes == cap) {
            cap = cap ? cap * 2 : 8;
            b->probes = xreallocarray(b->probes, cap, sizeof(*b->probes));
        }
        struct mp_store_probe *p = &b->probes[b->nprobes++];
        memset(p, 0, sizeof(*p));
        p->step = sqlite3_column_int64(st, 0);
        p->build = col_str(st, 1);
        p->pos = sqlite3_column_int64(st, 2);
        p->cand_pos = sqlite3_column_int64(st, 3);
        const char *o = (const char *)sqlite3_column_text(st, 4);
        p->outcome = !o ? MP_STORE_PROBE_OPEN
                     : !strcmp(o, "good") ? MP_STORE_PROBE_GOOD
                     : !strcmp(o, "bad")  ? MP_STORE_PROBE_BAD
                                          : MP_STORE_PROBE_SKIP;
        p->why = col_str(st, 5);
        p->required = (unsigned long)sqlite3_column_int64(st, 6);
    }
    return mp_store_read_end(s, st, r, "read the probes");
}

int mp_store_bisect_load(struct mp_store *s, struct mp_store_bisect *b)
{
    memset(b, 0, sizeof(*b));
    if (s->version < MP_STORE_BISECT_VERSION)
        return -ENOENT;
    sqlite3_stmt *st = NULL;
    if (mp_store_prep(s, &st, "SELECT good, bad, builds, by, pct, candidate, probe_requests,"
                              " required, required_why, p_bad FROM bisect WHERE id = 1") < 0)
        return MP_EDB;
    int r = sqlite3_step(st);
    if (r == SQLITE_ROW) {
        b->good = col_str(st, 0);
        b->bad = col_str(st, 1);
        const char *bj = (const char *)sqlite3_column_text(st, 2);
        builds_from_json(bj, &b->builds);
        b->by = col_str(st, 3);
        b->pct = sqlite3_column_double(st, 4);
        b->candidate = col_str(st, 5);
        b->probe_requests = (unsigned long)sqlite3_column_int64(st, 6);
        b->required = (unsigned long)sqlite3_column_int64(st, 7);
        b->required_set = sqlite3_column_type(st, 7) != SQLITE_NULL;
        b->required_why = col_str(st, 8);
        b->p_bad = sqlite3_column_double(st, 9);
        r = sqlite3_step(st);
    } else if (r == SQLITE_DONE) {
        sqlite3_finalize(st);
        return -ENOENT;
    }
    int rc = mp_store_read_end(s, st, r, "read the bisection");
    if (rc == 0)
        rc = load_probes(s, b);
    if (rc)
        mp_store_bisect_release(b);
    return rc;
}

int mp_store_set_engine_kernels(struct mp_store *s, const char *json)
{
    if (s->version < MP_STORE_BISECT_VERSION)
        return 0;
    sqlite3_stmt *st = NULL;
    if (mp_store_prep(s, &st, json ? "INSERT OR REPLACE INTO engine_kernels(id, json) VALUES (1, ?)"
                                   : "DELETE FROM engine_kernels WHERE ?1 IS NULL") < 0)
        return MP_EDB;
    mp_store_bind_text(s, st, 1, json);
    return mp_store_step_done(s, st, "record the engine's kernels");
}

int mp_store_load_engine_kernels(struct mp_store *s, char **json)
{
    *json = NULL;
    if (s->version < MP_STORE_BISECT_VERSION)
        return 0;
    sqlite3_stmt *st = NULL;
    if (mp_store_prep(s, &st, "SELECT json FROM engine_kernels WHERE id = 1") < 0)
        return MP_EDB;
    int r = sqlite3_step(st);
    if (r == SQLITE_ROW) {
        *json = col_str(st, 0);
        r = sqlite3_step(st);
    }
    int rc = mp_store_read_end(s, st, r, "read the engine's kernels");
    if (rc) {
        free(*json);
        *json = NULL;
    }
    return rc;
}
