/* srvmetrics.c - the engine's /metrics per load phase (struct
 * mp_server_metrics) in the store: table phase_server_metrics, one row
 * per attempt and phase that was scraped, the numbers as JSON text. */
#include "store/internal.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The migration that adds the table (MP_STORE_SRVM_VERSION). */
const char mp_store_srvm_schema[] =
    "CREATE TABLE phase_server_metrics("
    " attempt_id INTEGER NOT NULL REFERENCES attempts(id) ON DELETE CASCADE,"
    " pos INTEGER NOT NULL,"
    " state TEXT NOT NULL CHECK (state IN ('ok','unreadable')),"
    " metrics TEXT NOT NULL, PRIMARY KEY (attempt_id, pos));";

static void add_num(cJSON *o, const char *k, double v)
{
    if (isfinite(v))
        cJSON_AddNumberToObject(o, k, v);
}

static void add_lat(cJSON *o, const char *k, const struct mp_srvm_lat *l)
{
    cJSON *j = cJSON_AddObjectToObject(o, k);
    add_num(j, "n", l->n);
    add_num(j, "mean_ms", l->mean_ms);
    add_num(j, "p50_ms", l->p50_ms);
    add_num(j, "p99_ms", l->p99_ms);
}

static char *to_json(const struct mp_server_metrics *m)
{
    cJSON *o = cJSON_CreateObject();
    if (m->state == MP_SRVM_UNREADABLE) {
        cJSON_AddStringToObject(o, "reason", m->reason);
    } else {
        cJSON_AddNumberToObject(o, "scrapes", m->scrapes);
        add_lat(o, "ttft", &m->ttft);
        add_lat(o, "itl", &m->itl);
        add_num(o, "gen_tokens", m->gen_tokens);
        add_num(o, "prompt_tokens", m->prompt_tokens);
        add_num(o, "preemptions", m->preemptions);
        add_num(o, "kv_usage_max", m->kv_usage_max);
        add_num(o, "waiting_max", m->waiting_max);
        add_num(o, "running_max", m->running_max);
        if (m->waiting_counted)
            cJSON_AddNumberToObject(o, "waiting_scrapes", m->waiting_scrapes);
        cJSON_AddStringToObject(o, "itl_metric", m->itl_metric);
        cJSON_AddStringToObject(o, "kv_metric", m->kv_metric);
        cJSON_AddStringToObject(o, "preempt_metric", m->preempt_metric);
    }
    char *t = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return t;
}

int mp_store_srvm_write(struct mp_store *s, int64_t attempt_id, const struct mp_attempt_result *r)
{
    if (s->version < MP_STORE_SRVM_VERSION)
        return 0;
    for (size_t k = 0; k < r->nphases; k++) {
        const struct mp_server_metrics *m = &r->phases[k].srv;
        if (m->state == MP_SRVM_NONE)
            continue;
        sqlite3_stmt *st = NULL;
        if (mp_store_prep(s, &st,
                          "INSERT OR REPLACE INTO phase_server_metrics(attempt_id, pos, state,"
                          " metrics) VALUES (?,?,?,?)") < 0)
            return MP_EDB;
        /* the reason may quote the engine: it is masked; the numbers and the
         * JSON around them are not text anyone typed (masking the whole JSON
         * turned "gen_tokens" into "gen_***" for a key "tokens") */
        struct mp_server_metrics shown = *m;
        char *reason = mp_store_mask_apply(&s->mask, m->reason, strlen(m->reason), false, NULL);
        snprintf(shown.reason, sizeof(shown.reason), "%s", reason);
        free(reason);
        char *j = to_json(&shown);
        sqlite3_bind_int64(st, 1, attempt_id);
        sqlite3_bind_int64(st, 2, (sqlite3_int64)k);
        sqlite3_bind_text(st, 3, m->state == MP_SRVM_OK ? "ok" : "unreadable", -1, SQLITE_STATIC);
        if (j)
            sqlite3_bind_text(st, 4, j, -1, free);
        else
            sqlite3_bind_text(st, 4, "{}", -1, SQLITE_STATIC);
        int rc = sqlite3_step(st);
        sqlite3_finalize(st);
        if (rc != SQLITE_DONE)
            return mp_store_fail(s, "record a phase's server metrics");
    }
    return 0;
}

static double num(const cJSON *o, const char *k, double dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

static void str(const cJSON *o, const char *k, char *out, size_t n)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    snprintf(out, n, "%s", cJSON_IsString(v) ? v->valuestring : "");
}

static void lat_from(const cJSON *o, const char *k, struct mp_srvm_lat *l)
{
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(o, k);
    l->n = num(j, "n", 0);
    l->mean_ms = num(j, "mean_ms", 0);
    l->p50_ms = num(j, "p50_ms", 0);
    l->p99_ms = num(j, "p99_ms", 0);
}

/* One row back into m; damaged JSON makes the phase unreadable, never a
 * failed load. */
static void from_json(struct mp_server_metrics *m, bool ok, const char *text)
{
    memset(m, 0, sizeof(*m));
    cJSON *o = text ? cJSON_Parse(text) : NULL;
    if (!ok || !cJSON_IsObject(o)) {
        m->state = MP_SRVM_UNREADABLE;
        str(o, "reason", m->reason, sizeof(m->reason));
        if (!m->reason[0])
            snprintf(m->reason, sizeof(m->reason), "stored server metrics are damaged");
        cJSON_Delete(o);
        return;
    }
    m->state = MP_SRVM_OK;
    m->scrapes = (int)num(o, "scrapes", 0);
    lat_from(o, "ttft", &m->ttft);
    lat_from(o, "itl", &m->itl);
    m->gen_tokens = num(o, "gen_tokens", -1);
    m->prompt_tokens = num(o, "prompt_tokens", -1);
    m->preemptions = num(o, "preemptions", -1);
    m->kv_usage_max = num(o, "kv_usage_max", -1);
    m->waiting_max = num(o, "waiting_max", -1);
    m->running_max = num(o, "running_max", -1);
    double ws = num(o, "waiting_scrapes", -1);
    m->waiting_counted = ws >= 0 && ws <= 1e9;
    m->waiting_scrapes = m->waiting_counted ? (int)ws : 0;
    str(o, "itl_metric", m->itl_metric, sizeof(m->itl_metric));
    str(o, "kv_metric", m->kv_metric, sizeof(m->kv_metric));
    str(o, "preempt_metric", m->preempt_metric, sizeof(m->preempt_metric));
    mp_srvm_set_flags(m);
    cJSON_Delete(o);
}

int mp_store_srvm_load(struct mp_store *s, int64_t attempt_id, struct mp_attempt_result *r)
{
    if (s->version < MP_STORE_SRVM_VERSION)
        return 0; /* older runs: every phase stays "not scraped" */
    sqlite3_stmt *st = NULL;
    if (mp_store_prep(s, &st,
                      "SELECT pos, state, metrics FROM phase_server_metrics WHERE attempt_id = ?"
                      " ORDER BY pos") < 0)
        return MP_EDB;
    sqlite3_bind_int64(st, 1, attempt_id);
    int sr;
    while ((sr = sqlite3_step(st)) == SQLITE_ROW) {
        sqlite3_int64 pos = sqlite3_column_int64(st, 0);
        if (pos < 0 || (size_t)pos >= r->nphases)
            continue;
        const char *state = (const char *)sqlite3_column_text(st, 1);
        from_json(&r->phases[pos].srv, state && !strcmp(state, "ok"),
                  (const char *)sqlite3_column_text(st, 2));
    }
    sqlite3_finalize(st);
    if (sr != SQLITE_DONE)
        return mp_store_fail(s, "read the phases' server metrics");
    return 0;
}
