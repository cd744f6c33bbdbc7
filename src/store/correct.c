/* correct.c - the scoring pass in the store (docs/store.md, schema v17):
 * table scores (one row per scored attempt: what each part did), table
 * score_items (one row per passage, repeat, greedy prompt and task problem:
 * what the engine answered, as JSON text) and table score_run (the run's
 * --reference). Written once, when the pass ends; read back with the
 * attempt, so that every report of the run judges the same numbers. */
#include "store/internal.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/report.h"
#include "xalloc.h"

const char mp_store_score_schema[] =
    "CREATE TABLE scores("
    " attempt_id INTEGER PRIMARY KEY REFERENCES attempts(id) ON DELETE CASCADE,"
    " k INTEGER NOT NULL, plp TEXT NOT NULL, plp_note TEXT, greedy TEXT NOT NULL,"
    " greedy_k INTEGER NOT NULL, greedy_note TEXT, task TEXT NOT NULL, task_note TEXT,"
    " task_source TEXT, score_s REAL NOT NULL, task_s REAL NOT NULL);"
    "CREATE TABLE score_items("
    " attempt_id INTEGER NOT NULL REFERENCES attempts(id) ON DELETE CASCADE,"
    " kind TEXT NOT NULL CHECK (kind IN ('passage','repeat','greedy','task')),"
    " idx INTEGER NOT NULL, data TEXT NOT NULL, PRIMARY KEY (attempt_id, kind, idx));"
    "CREATE TABLE score_run(id INTEGER PRIMARY KEY CHECK (id = 1), reference TEXT);";

/* ---- to JSON ---- */

static char *lp_json(const struct mp_lp_seq *q)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; i < q->n; i++) {
        cJSON *e = cJSON_CreateArray();
        cJSON_AddItemToArray(e, cJSON_CreateString(q->p[i].token));
        cJSON_AddItemToArray(e, cJSON_CreateNumber(q->p[i].lp));
        cJSON_AddItemToArray(e, cJSON_CreateString(q->p[i].top1));
        cJSON_AddItemToArray(e, cJSON_CreateNumber(q->p[i].top1_lp));
        cJSON_AddItemToArray(a, e);
    }
    char *t = cJSON_PrintUnformatted(a);
    cJSON_Delete(a);
    return t;
}

static char *gen_json(const struct mp_gen_seq *q)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; i < q->n; i++) {
        cJSON *e = cJSON_CreateArray(), *top = cJSON_CreateArray();
        cJSON_AddItemToArray(e, cJSON_CreateString(q->t[i].token));
        cJSON_AddItemToArray(e, cJSON_CreateNumber(q->t[i].lp));
        for (size_t k = 0; k < q->t[i].ntop; k++) {
            cJSON *alt = cJSON_CreateArray();
            cJSON_AddItemToArray(alt, cJSON_CreateString(q->t[i].top[k].token));
            cJSON_AddItemToArray(alt, cJSON_CreateNumber(q->t[i].top[k].lp));
            cJSON_AddItemToArray(top, alt);
        }
        cJSON_AddItemToArray(e, top);
        cJSON_AddItemToArray(a, e);
    }
    char *t = cJSON_PrintUnformatted(a);
    cJSON_Delete(a);
    return t;
}

static char *ans_json(const struct mp_task_ans *x)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "expected", x->expected ? x->expected : "");
    if (x->got)
        cJSON_AddStringToObject(o, "got", x->got);
    cJSON_AddBoolToObject(o, "answered", x->answered);
    cJSON_AddBoolToObject(o, "right", x->right);
    if (x->reply)
        cJSON_AddStringToObject(o, "reply", x->reply);
    char *t = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return t;
}

/* One item, masked like every text the store writes. */
static int put_item(struct mp_store *s, int64_t id, const char *kind, size_t idx, char *json)
{
    if (!json)
        return 0;
    char *m = mp_store_mask_apply(&s->mask, json, strlen(json), false, NULL);
    free(json);
    sqlite3_stmt *st = NULL;
    int rc = mp_store_prep(s, &st, "INSERT OR REPLACE INTO score_items(attempt_id, kind, idx, data)"
                                   " VALUES (?,?,?,?)");
    if (rc == 0) {
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_text(st, 2, kind, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 3, (sqlite3_int64)idx);
        sqlite3_bind_text(st, 4, m, -1, SQLITE_TRANSIENT);
        rc = mp_store_step_done(s, st, "record a score item");
    }
    free(m);
    return rc;
}

static int put_row(struct mp_store *s, int64_t id, const struct mp_score *x)
{
    sqlite3_stmt *st = NULL;
    if (mp_store_prep(s, &st, "INSERT OR REPLACE INTO scores(attempt_id, k, plp, plp_note, greedy,"
                              " greedy_k, greedy_note, task, task_note, task_source, score_s,"
                              " task_s) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)") < 0)
        return MP_EDB;
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_int(st, 2, x->k);
    sqlite3_bind_text(st, 3, mp_sc_status_name(x->plp), -1, SQLITE_STATIC);
    mp_store_bind_text(s, st, 4, x->plp_note);
    sqlite3_bind_text(st, 5, mp_sc_status_name(x->greedy), -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 6, x->greedy_k);
    mp_store_bind_text(s, st, 7, x->greedy_note);
    sqlite3_bind_text(st, 8, mp_sc_status_name(x->task), -1, SQLITE_STATIC);
    mp_store_bind_text(s, st, 9, x->task_note);
    mp_store_bind_text(s, st, 10, x->task_source);
    sqlite3_bind_double(st, 11, x->score_s);
    sqlite3_bind_double(st, 12, x->task_s);
    return mp_store_step_done(s, st, "record a score");
}

int mp_store_score_write(struct mp_store *s, int64_t attempt, const struct mp_score *x)
{
    if (!x || s->version < MP_STORE_SCORE_VERSION)
        return 0;
    int rc = mp_store_begin(s);
    if (rc < 0)
        return rc;
    rc = put_row(s, attempt, x);
    for (size_t i = 0; rc == 0 && i < x->npass; i++) {
        if (x->pass && x->pass[i].n)
            rc = put_item(s, attempt, "passage", i, lp_json(&x->pass[i]));
        if (rc == 0 && x->repeat && x->repeat[i].n)
            rc = put_item(s, attempt, "repeat", i, lp_json(&x->repeat[i]));
    }
    for (size_t i = 0; rc == 0 && i < x->ngen; i++)
        if (x->gen[i].n)
            rc = put_item(s, attempt, "greedy", i, gen_json(&x->gen[i]));
    for (size_t i = 0; rc == 0 && i < x->nans; i++)
        rc = put_item(s, attempt, "task", i, ans_json(&x->ans[i]));
    return mp_store_commit(s, rc);
}

int mp_store_set_reference(struct mp_store *s, const char *name)
{
    if (s->version < MP_STORE_SCORE_VERSION)
        return 0;
    sqlite3_stmt *st = NULL;
    if (mp_store_prep(s, &st, "INSERT OR REPLACE INTO score_run(id, reference) VALUES (1, ?)") < 0)
        return MP_EDB;
    mp_store_bind_text(s, st, 1, name);
    return mp_store_step_done(s, st, "record the reference");
}

/* ---- reading back (a damaged item is left out, never a crash) ---- */

static char *str_of(const cJSON *v)
{
    return cJSON_IsString(v) ? xstrdup(v->valuestring) : xstrdup("");
}

static double num_of(const cJSON *v)
{
    return cJSON_IsNumber(v) ? v->valuedouble : -9999.0;
}

static void lp_from(const cJSON *a, struct mp_lp_seq *q)
{
    size_t n = cJSON_IsArray(a) ? (size_t)cJSON_GetArraySize(a) : 0;
    q->p = xcalloc(n + 1, sizeof(*q->p));
    for (const cJSON *e = n ? a->child : NULL; e; e = e->next) {
        struct mp_lp_pos *p = &q->p[q->n++];
        p->token = str_of(cJSON_GetArrayItem(e, 0));
        p->lp = num_of(cJSON_GetArrayItem(e, 1));
        p->top1 = str_of(cJSON_GetArrayItem(e, 2));
        p->top1_lp = num_of(cJSON_GetArrayItem(e, 3));
    }
}

static void gen_from(const cJSON *a, struct mp_gen_seq *q)
{
    size_t n = cJSON_IsArray(a) ? (size_t)cJSON_GetArraySize(a) : 0;
    q->t = xcalloc(n + 1, sizeof(*q->t));
    for (const cJSON *e = n ? a->child : NULL; e; e = e->next) {
        struct mp_gen_tok *t = &q->t[q->n++];
        t->token = str_of(cJSON_GetArrayItem(e, 0));
        t->lp = num_of(cJSON_GetArrayItem(e, 1));
        const cJSON *top = cJSON_GetArrayItem(e, 2);
        size_t nt = cJSON_IsArray(top) ? (size_t)cJSON_GetArraySize(top) : 0;
        t->top = nt ? xcalloc(nt, sizeof(*t->top)) : NULL;
        for (const cJSON *alt = nt ? top->child : NULL; alt; alt = alt->next) {
            t->top[t->ntop].token = str_of(cJSON_GetArrayItem(alt, 0));
            t->top[t->ntop++].lp = num_of(cJSON_GetArrayItem(alt, 1));
        }
    }
}

static void ans_from(const cJSON *o, struct mp_task_ans *x)
{
    x->expected = str_of(cJSON_GetObjectItemCaseSensitive(o, "expected"));
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(o, "got");
    x->got = cJSON_IsString(g) ? xstrdup(g->valuestring) : NULL;
    x->answered = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "answered"));
    x->right = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "right"));
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(o, "reply");
    x->reply = cJSON_IsString(r) ? xstrdup(r->valuestring) : NULL;
}

/* Grow an item array to hold index idx (n entries, zeroed). */
static void *grow(void *v, size_t *n, size_t idx, size_t size)
{
    if (idx < *n)
        return v;
    v = xreallocarray(v, idx + 1, size);
    memset((char *)v + *n * size, 0, (idx + 1 - *n) * size);
    *n = idx + 1;
    return v;
}

/* Room for passage idx (and its repeat when rep). */
static void ensure_pass(struct mp_score *x, size_t idx, bool rep)
{
    if (idx >= x->npass) {
        size_t n = idx + 1, sz = sizeof(*x->pass);
        x->pass = xreallocarray(x->pass, n, sz);
        memset(x->pass + x->npass, 0, (n - x->npass) * sz);
        if (x->repeat) {
            x->repeat = xreallocarray(x->repeat, n, sz);
            memset(x->repeat + x->npass, 0, (n - x->npass) * sz);
        }
        x->npass = n;
    }
    if (rep && !x->repeat)
        x->repeat = xcalloc(x->npass, sizeof(*x->repeat));
}

static void item_into(struct mp_score *x, const char *kind, size_t idx, const cJSON *j)
{
    bool rep = !strcmp(kind, "repeat");
    if (rep || !strcmp(kind, "passage")) {
        ensure_pass(x, idx, rep);
        struct mp_lp_seq *q = rep ? &x->repeat[idx] : &x->pass[idx];
        mp_lp_seq_release(q);
        lp_from(j, q);
    } else if (!strcmp(kind, "greedy")) {
        x->gen = grow(x->gen, &x->ngen, idx, sizeof(*x->gen));
        mp_gen_seq_release(&x->gen[idx]);
        gen_from(j, &x->gen[idx]);
    } else if (!strcmp(kind, "task") && cJSON_IsObject(j)) {
        x->ans = grow(x->ans, &x->nans, idx, sizeof(*x->ans));
        if (!x->ans[idx].expected)
            ans_from(j, &x->ans[idx]);
    }
}

static int load_items(struct mp_store *s, int64_t attempt, struct mp_score *x)
{
    sqlite3_stmt *st = NULL;
    if (mp_store_prep(s, &st, "SELECT kind, idx, data FROM score_items WHERE attempt_id = ?"
                              " AND idx >= 0 AND idx < 100000 ORDER BY kind, idx") < 0)
        return MP_EDB;
    sqlite3_bind_int64(st, 1, attempt);
    int sr;
    while ((sr = sqlite3_step(st)) == SQLITE_ROW) {
        const char *kind = (const char *)sqlite3_column_text(st, 0);
        const char *data = (const char *)sqlite3_column_text(st, 2);
        cJSON *j = data ? cJSON_Parse(data) : NULL;
        if (kind && j)
            item_into(x, kind, (size_t)sqlite3_column_int64(st, 1), j);
        cJSON_Delete(j);
    }
    return mp_store_read_end(s, st, sr, "read the score items");
}

int mp_store_score_load(struct mp_store *s, int64_t attempt, struct mp_attempt_result *r)
{
    if (s->version < MP_STORE_SCORE_VERSION)
        return 0;
    sqlite3_stmt *st = NULL;
    if (mp_store_prep(s, &st, "SELECT k, plp, plp_note, greedy, greedy_k, greedy_note, task,"
                              " task_note, task_source, score_s, task_s FROM scores"
                              " WHERE attempt_id = ?") < 0)
        return MP_EDB;
    sqlite3_bind_int64(st, 1, attempt);
    int sr = sqlite3_step(st);
    struct mp_score *x = NULL;
    if (sr == SQLITE_ROW) {
        x = mp_score_new();
        x->k = sqlite3_column_int(st, 0);
        x->plp = mp_sc_status_from_name((const char *)sqlite3_column_text(st, 1));
        const unsigned char *t;
        x->plp_note = (t = sqlite3_column_text(st, 2)) ? xstrdup((const char *)t) : NULL;
        x->greedy = mp_sc_status_from_name((const char *)sqlite3_column_text(st, 3));
        x->greedy_k = sqlite3_column_int(st, 4);
        x->greedy_note = (t = sqlite3_column_text(st, 5)) ? xstrdup((const char *)t) : NULL;
        x->task = mp_sc_status_from_name((const char *)sqlite3_column_text(st, 6));
        x->task_note = (t = sqlite3_column_text(st, 7)) ? xstrdup((const char *)t) : NULL;
        x->task_source = (t = sqlite3_column_text(st, 8)) ? xstrdup((const char *)t) : NULL;
        x->score_s = sqlite3_column_double(st, 9);
        x->task_s = sqlite3_column_double(st, 10);
    }
    if (mp_store_read_end(s, st, sr, "read the score") < 0) {
        mp_score_free(x);
        return MP_EDB;
    }
    if (!x)
        return 0;
    int rc = load_items(s, attempt, x);
    mp_score_free(r->score);
    r->score = x;
    return rc;
}

int mp_store_load_reference(struct mp_store *s, struct mp_report *rep)
{
    if (s->version < MP_STORE_SCORE_VERSION)
        return 0;
    sqlite3_stmt *st = NULL;
    if (mp_store_prep(s, &st, "SELECT reference FROM score_run WHERE id = 1") < 0)
        return MP_EDB;
    int sr = sqlite3_step(st);
    if (sr == SQLITE_ROW && sqlite3_column_text(st, 0)) {
        free(rep->cor.reference);
        rep->cor.reference = xstrdup((const char *)sqlite3_column_text(st, 0));
    }
    return mp_store_read_end(s, st, sr, "read the reference");
}
