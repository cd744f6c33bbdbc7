/* db.c - the SQLite helpers every file of the store uses (internal.h): a
 * failure kept with its message, prepare / bind (masked) / step / finalize,
 * transactions, the end of a read loop, JSON lists and timestamps; the
 * store's accessors. Under store.c, schema.c, record.c, metrics.c, load.c
 * and the rest, it uses none of them (only mask.c's mask). */
#include "store/internal.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

int mp_store_fail(struct mp_store *s, const char *what)
{
    if (!s->failed) {
        snprintf(s->err, sizeof(s->err), "%s: %s", what, sqlite3_errmsg(s->db));
        s->failed = true;
    }
    return MP_EDB;
}

const char *mp_store_errmsg(const struct mp_store *s)
{
    return s ? s->err : "";
}

const char *mp_store_note(const struct mp_store *s)
{
    return s ? s->note : "";
}

struct mp_store_mask *mp_store_mask(struct mp_store *s)
{
    return &s->mask;
}

int mp_store_prep(struct mp_store *s, sqlite3_stmt **st, const char *sql)
{
    if (sqlite3_prepare_v2(s->db, sql, -1, st, NULL) != SQLITE_OK)
        return mp_store_fail(s, "prepare");
    return 0;
}

/* Bind a text masked (NULL binds NULL). */
void mp_store_bind_text(struct mp_store *s, sqlite3_stmt *st, int i, const char *v)
{
    if (!v) {
        sqlite3_bind_null(st, i);
        return;
    }
    char *m = mp_store_mask_apply(&s->mask, v, strlen(v), false, NULL);
    sqlite3_bind_text(st, i, m, -1, free);
}

/* Step a write statement to completion and finalize it. */
int mp_store_step_done(struct mp_store *s, sqlite3_stmt *st, const char *what)
{
    int r = sqlite3_step(st);
    sqlite3_finalize(st);
    if (r != SQLITE_DONE)
        return mp_store_fail(s, what);
    return 0;
}

int mp_store_exec(struct mp_store *s, const char *sql)
{
    if (sqlite3_exec(s->db, sql, NULL, NULL, NULL) != SQLITE_OK)
        return mp_store_fail(s, sql);
    return 0;
}

int mp_store_begin(struct mp_store *s)
{
    if (s->failed || s->readonly)
        return MP_EDB;
    return mp_store_exec(s, "BEGIN IMMEDIATE");
}

int mp_store_commit(struct mp_store *s, int rc)
{
    if (rc == 0 && mp_store_exec(s, "COMMIT") == 0)
        return 0;
    sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    return MP_EDB;
}

char *mp_store_strv_json(const struct mp_strv *v)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; i < v->n; i++)
        cJSON_AddItemToArray(a, cJSON_CreateString(v->v[i]));
    char *t = cJSON_PrintUnformatted(a);
    cJSON_Delete(a);
    char *r = xstrdup(t ? t : "[]");
    cJSON_free(t);
    return r;
}

/* The end of a read loop: the last sqlite3_step result must be SQLITE_DONE;
 * anything else (SQLITE_CORRUPT, SQLITE_IOERR...) is an error, never the
 * end of the data. Finalizes st. 0 or MP_EDB (message in the store). */
int mp_store_read_end(struct mp_store *s, sqlite3_stmt *st, int r, const char *what)
{
    if (r != SQLITE_DONE && r != SQLITE_ROW) {
        mp_store_fail(s, what);
        sqlite3_finalize(st);
        return MP_EDB;
    }
    sqlite3_finalize(st);
    return 0;
}

void mp_store_now_iso(char *out, size_t n)
{
    mp_iso8601(mp_wall_ns(), out, n);
}
