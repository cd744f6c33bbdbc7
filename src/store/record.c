/* record.c - what an attempt writes as it happens: one row per finished
 * request (never anything per token event), and at its end the summary,
 * phases with their metric histograms (metrics.c), knob delivery, texts
 * and the log lines behind its claims. */
#include "store/internal.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lines.h"
#include "xalloc.h"

int mp_store_add_request(struct mp_store *s, int64_t attempt, const struct mp_store_request *rq)
{
    if (s->failed || s->readonly)
        return MP_EDB;
    if (!s->ins_req &&
        mp_store_prep(s, &s->ins_req,
                      "INSERT INTO requests(attempt_id, req_id, phase, outcome, http_status, start_s,"
                      " ttft_ms, e2e_ms, output_tokens, chunks, req_tok_s, error, seq)"
                      " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)") < 0)
        return MP_EDB;
    sqlite3_stmt *st = s->ins_req;
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    sqlite3_bind_int64(st, 1, attempt);
    sqlite3_bind_int64(st, 2, rq->req_id);
    sqlite3_bind_text(st, 3, rq->phase, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 4, rq->outcome, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 5, rq->http_status);
    sqlite3_bind_double(st, 6, rq->start_s);
    sqlite3_bind_double(st, 7, rq->ttft_ms);
    sqlite3_bind_double(st, 8, rq->e2e_ms);
    sqlite3_bind_int(st, 9, rq->output_tokens);
    sqlite3_bind_int(st, 10, rq->chunks);
    if (rq->req_tok_s >= 0)
        sqlite3_bind_double(st, 11, rq->req_tok_s);
    mp_store_bind_text(s, st, 12, rq->error);
    sqlite3_bind_int64(st, 13, rq->seq);
    /* autocommit: one transaction per request */
    int r = sqlite3_step(st);
    sqlite3_reset(st);
    if (r != SQLITE_DONE)
        return mp_store_fail(s, "record a request");
    return 0;
}

#define LOG_LINE_MAX 4096 /* bytes of a server.log line kept as evidence */

struct want_lines {
    const long *want;
    size_t n;
    char **out;
    long no; /* lines seen */
};

static void on_log_line(void *ud, const char *line, size_t len, bool truncated)
{
    struct want_lines *w = ud;
    MP_UNUSED(truncated);
    w->no++;
    for (size_t i = 0; i < w->n; i++) {
        if (w->want[i] == w->no && !w->out[i])
            w->out[i] = xstrndup(line, len);
    }
}

/* Read the given server.log lines (sorted ascending not required), each
 * cut to its first LOG_LINE_MAX bytes. Through the bounded splitter: an
 * engine that prints a line of any length (no '\n' for 50 MB) costs one
 * LOG_LINE_MAX buffer and one read chunk, never the line's size. */
static void log_lines(const char *dir, const long *want, size_t n, char **out)
{
    char *path = xasprintf("%s/server.log", dir);
    FILE *f = fopen(path, "re");
    free(path);
    if (!f)
        return;
    long maxw = 0;
    for (size_t i = 0; i < n; i++)
        maxw = MP_MAX(maxw, want[i]);
    struct want_lines w = {want, n, out, 0};
    struct mp_lines l;
    mp_lines_init(&l, LOG_LINE_MAX);
    enum { CHUNK = 65536 };
    char *chunk = xmalloc(CHUNK);
    size_t got;
    while (w.no < maxw && (got = fread(chunk, 1, CHUNK, f)) > 0)
        mp_lines_feed(&l, chunk, got, on_log_line, &w);
    if (w.no < maxw)
        mp_lines_finish(&l, on_log_line, &w); /* a last line without '\n' */
    mp_lines_release(&l);
    free(chunk);
    fclose(f);
}

#define STRF(f) {#f, MP_COL_STR, offsetof(struct mp_attempt_result, f)}
#define LONGF(f) {#f, MP_COL_LONG, offsetof(struct mp_attempt_result, f)}
#define ULONGF(f) {#f, MP_COL_ULONG, offsetof(struct mp_attempt_result, f)}
#define INTF(f) {#f, MP_COL_INT, offsetof(struct mp_attempt_result, f)}
#define DBLF(f) {#f, MP_COL_DBL, offsetof(struct mp_attempt_result, f)}
#define BOOLF(f) {#f, MP_COL_BOOL, offsetof(struct mp_attempt_result, f)}
#define STRVF(f) {#f, MP_COL_STRV, offsetof(struct mp_attempt_result, f)}
/* the resolved backends: columns named like the fields of struct mp_resolved */
#define RSTRF(f) {#f, MP_COL_STR, offsetof(struct mp_attempt_result, res.f)}
#define RLONGF(f) {#f, MP_COL_LONG, offsetof(struct mp_attempt_result, res.f)}
#define RSTRVF(f) {#f, MP_COL_STRV, offsetof(struct mp_attempt_result, res.f)}

const struct mp_store_col mp_store_attempt_cols[] = {
    STRF(command), RSTRF(moe_backend), RSTRVF(moe_candidates), RSTRF(linear_kernel),
    RSTRF(attention_backend), RSTRF(engine_version), RSTRF(model), RSTRF(quantization),
    RSTRF(moe_backend_flag), RSTRVF(unknown_env), RLONGF(moe_backend_line),
    RLONGF(linear_kernel_line), RLONGF(attention_backend_line), RLONGF(unknown_env_line),
    STRF(fail_class), STRF(fail_message), LONGF(fail_line), STRVF(sites), BOOLF(engine_dead),
    ULONGF(ok_before_failure), STRF(fail_phase), STRF(exit_desc), ULONGF(req_ok),
    ULONGF(req_failed), DBLF(ready_s), DBLF(workload_s), DBLF(teardown_s), DBLF(wall_s),
    INTF(teardown_leftovers), BOOLF(teardown_killed), INTF(escapees_killed),
    RSTRVF(linear_kernels), RSTRF(unquantized_moe_backend), STRF(launch_site),
    BOOLF(cuda_fault), BOOLF(engine_died), LONGF(fail_request_line), INTF(announced_port),
    STRF(same_as), STRF(same_why),
    {"gpu_telemetry", MP_COL_GPU, offsetof(struct mp_attempt_result, gpu)},
    {"gpu_fault", MP_COL_FAULT, offsetof(struct mp_attempt_result, fault)},
    {"observations", MP_COL_OBS, offsetof(struct mp_attempt_result, obs)},
    {"resolved_more", MP_COL_RESMORE, offsetof(struct mp_attempt_result, res)},
};
const size_t mp_store_nattempt_cols = MP_ARRAY_SIZE(mp_store_attempt_cols);

size_t mp_store_attempt_cols_in(int version)
{
    /* v7 added no attempts column (knob delivery is its own table; the
     * dlv_* columns of v5/v6 are read by load.c for those stores only) */
    if (version >= 16)
        return mp_store_nattempt_cols;
    if (version >= 14)
        return mp_store_nattempt_cols - 1;          /* v16: 1 more */
    if (version >= 12)
        return mp_store_nattempt_cols - 2;          /* v14: 1 more */
    if (version >= 8)
        return mp_store_nattempt_cols - 3;          /* v12: 1 more */
    if (version >= 6)
        return mp_store_nattempt_cols - 4;          /* v8: 1 more */
    if (version >= 5)
        return mp_store_nattempt_cols - 6;          /* v6: 2 more */
    return version >= 4 ? mp_store_nattempt_cols - 10  /* v5: 4 more */
                        : mp_store_nattempt_cols - 13; /* v4: 3 more */
}

static void bind_col(struct mp_store *s, sqlite3_stmt *st, int i, const struct mp_store_col *c,
                     const void *base)
{
    const char *p = (const char *)base + c->off;
    switch (c->type) {
    case MP_COL_STR:
        mp_store_bind_text(s, st, i, *(char *const *)p);
        break;
    case MP_COL_LONG:
        sqlite3_bind_int64(st, i, *(const long *)p);
        break;
    case MP_COL_ULONG:
        sqlite3_bind_int64(st, i, (sqlite3_int64) * (const unsigned long *)p);
        break;
    case MP_COL_INT:
        sqlite3_bind_int(st, i, *(const int *)p);
        break;
    case MP_COL_BOOL:
        sqlite3_bind_int(st, i, *(const bool *)p);
        break;
    case MP_COL_DBL:
        sqlite3_bind_double(st, i, *(const double *)p);
        break;
    case MP_COL_STRV: {
        char *j = mp_store_strv_json((const struct mp_strv *)(const void *)p);
        mp_store_bind_text(s, st, i, j);
        free(j);
        break;
    }
    case MP_COL_GPU: {
        const struct mp_gpu_telemetry *g = (const void *)p;
        if (!g->samples) {
            sqlite3_bind_null(st, i);
            break;
        }
        const struct mp_gpu_stat *m[4] = {&g->sm_clock_mhz, &g->temperature_c, &g->power_w,
                                          &g->memory_used_mib};
        struct buf b = BUF_INIT;
        buf_printf(&b, "{\"samples\":%zu,\"throttle\":%llu,\"stats\":[", g->samples,
                   g->throttle_reasons);
        for (int k = 0; k < 4; k++)
            buf_printf(&b, "%s[%.17g,%.17g,%.17g,%zu]", k ? "," : "", m[k]->min, m[k]->median,
                       m[k]->max, m[k]->n);
        buf_adds(&b, "]}");
        sqlite3_bind_text(st, i, b.data, (int)b.len, SQLITE_TRANSIENT);
        buf_release(&b);
        break;
    }
    case MP_COL_FAULT: {
        const struct mp_gpu_fault *g = (const void *)p;
        if (mp_gpu_fault_empty(g)) {
            sqlite3_bind_null(st, i);
            break;
        }
        cJSON *j = mp_gpu_fault_to_json(g, NULL);
        char *t = cJSON_PrintUnformatted(j);
        mp_store_bind_text(s, st, i, t);
        cJSON_free(t);
        cJSON_Delete(j);
        break;
    }
    case MP_COL_RESMORE: {
        char *t = mp_resolved_more_to_json((const struct mp_resolved *)p);
        if (t)
            mp_store_bind_text(s, st, i, t);
        else
            sqlite3_bind_null(st, i);
        free(t);
        break;
    }
    case MP_COL_OBS: {
        char *t = mp_store_obs_json(&s->mask, (const struct mp_attempt_obs *)(const void *)p);
        if (t)
            sqlite3_bind_text(st, i, t, -1, free); /* masked string by string */
        else
            sqlite3_bind_null(st, i);
        break;
    }
    }
}

static int add_text(struct mp_store *s, int64_t id, const char *kind, size_t idx, const char *t)
{
    sqlite3_stmt *st = NULL;
    if (mp_store_prep(s, &st, "INSERT OR REPLACE INTO texts(attempt_id, kind, idx, text) VALUES (?,?,?,?)") < 0)
        return MP_EDB;
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_text(st, 2, kind, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, (sqlite3_int64)idx);
    mp_store_bind_text(s, st, 4, t);
    return mp_store_step_done(s, st, "record a text");
}

int mp_store_attempt_finish(struct mp_store *s, int64_t id, const struct mp_attempt_result *r)
{
    if (mp_store_begin(s) < 0)
        return MP_EDB;
    struct buf sql = BUF_INIT;
    /* an attempt cut short by a signal stays "interrupted": evidence for the
     * interrupted run's own report only, redone by a resume */
    buf_printf(&sql, "UPDATE attempts SET status = '%s', finished = ?, outcome = ?",
               r->outcome == MP_OUT_INTERRUPTED ? "interrupted" : "done");
    for (size_t i = 0; i < mp_store_nattempt_cols; i++)
        buf_printf(&sql, ", %s = ?", mp_store_attempt_cols[i].name);
    buf_adds(&sql, " WHERE id = ?");
    sqlite3_stmt *st = NULL;
    int rc = mp_store_clear_metrics(s, id); /* a rewrite replaces them */
    if (rc == 0)
        rc = mp_store_prep(s, &st, sql.data);
    buf_release(&sql);
    if (rc == 0) {
        char iso[32];
        mp_store_now_iso(iso, sizeof(iso));
        sqlite3_bind_text(st, 1, iso, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 2, mp_outcome_name(r->outcome), -1, SQLITE_STATIC);
        int i = 3;
        for (size_t k = 0; k < mp_store_nattempt_cols; k++)
            bind_col(s, st, i++, &mp_store_attempt_cols[k], r);
        sqlite3_bind_int64(st, i, id);
        rc = mp_store_step_done(s, st, "finish an attempt");
    }
    for (size_t k = 0; rc == 0 && k < r->nphases; k++) {
        const struct mp_phase_result *ph = &r->phases[k];
        rc = mp_store_prep(s, &st,
                           "INSERT OR REPLACE INTO phases(attempt_id, pos, name, level, planned, ok,"
                           " failed, wall_s, tokens, tok_s, req_tok_s_p50, hist, prompt_tokens,"
                           " prompt_n) VALUES (?,?,?,?,?,?,?,?,?,?,?,1,?,?)");
        if (rc < 0)
            break;
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_int64(st, 2, (sqlite3_int64)k);
        sqlite3_bind_text(st, 3, ph->name, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int(st, 4, ph->level);
        sqlite3_bind_int(st, 5, ph->planned);
        sqlite3_bind_int(st, 6, ph->ok);
        sqlite3_bind_int(st, 7, ph->failed);
        sqlite3_bind_double(st, 8, ph->wall_s);
        sqlite3_bind_int64(st, 9, ph->tokens);
        sqlite3_bind_double(st, 10, ph->tok_s);
        sqlite3_bind_double(st, 11, ph->req_tok_s_p50);
        sqlite3_bind_int64(st, 12, ph->prompt_tokens);
        sqlite3_bind_int(st, 13, ph->prompt_n);
        rc = mp_store_step_done(s, st, "record a phase");
        if (rc == 0)
            rc = mp_store_put_metrics(s, id, k, &ph->m);
    }
    if (rc == 0)
        rc = mp_store_srvm_write(s, id, r); /* the phases' server metrics */
    for (size_t k = 0; rc == 0 && k < r->ndlv; k++) {
        rc = mp_store_prep(s, &st,
                           "INSERT OR REPLACE INTO knob_delivery(attempt_id, pos, knob, status,"
                           " evidence) VALUES (?,?,?,?,?)");
        if (rc < 0)
            break;
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_int64(st, 2, (sqlite3_int64)k);
        mp_store_bind_text(s, st, 3, r->dlv[k].knob);
        sqlite3_bind_text(st, 4, mp_dlv_status_name(r->dlv[k].status), -1, SQLITE_STATIC);
        mp_store_bind_text(s, st, 5, r->dlv[k].evidence);
        rc = mp_store_step_done(s, st, "record a knob delivery");
    }
    for (size_t k = 0; rc == 0 && k < r->ntexts; k++) {
        if (r->texts[k])
            rc = add_text(s, id, "workload", k, r->texts[k]);
    }
    for (size_t k = 0; rc == 0 && k < r->nquality; k++) {
        if (r->quality_texts[k])
            rc = add_text(s, id, "quality", k, r->quality_texts[k]);
    }
    /* log events: the lines behind each claim, and MP_EV_CONTEXT lines on
     * each side of them ("context": the report's excerpts) */
    static const char *const sig[] = {"moe_backend", "linear_kernel", "attention_backend",
                                      "unknown_env", "failure"};
    enum { NW = 5 + 5 * 2 * MP_EV_CONTEXT };
    long want[NW] = {r->res.moe_backend_line, r->res.linear_kernel_line, r->res.attention_backend_line,
                     r->res.unknown_env_line, r->fail_line};
    for (size_t k = 0, w = 5; k < 5; k++)
        for (long d = -MP_EV_CONTEXT; d <= MP_EV_CONTEXT; d++)
            if (d)
                want[w++] = want[k] > 0 && want[k] + d > 0 ? want[k] + d : 0;
    char *text[NW] = {NULL};
    if (rc == 0 && r->dir)
        log_lines(r->dir, want, NW, text);
    for (size_t k = 0; k < NW; k++) {
        bool skip = want[k] <= 0;
        for (size_t j = 0; !skip && k >= 5 && j < k; j++) /* context: once, never a cited line */
            skip = want[j] == want[k];
        if (rc == 0 && !skip) {
            rc = mp_store_prep(s, &st,
                               "INSERT INTO log_events(attempt_id, signature, line_no, text)"
                               " VALUES (?,?,?,?)");
            if (rc == 0) {
                sqlite3_bind_int64(st, 1, id);
                sqlite3_bind_text(st, 2, k < 5 ? sig[k] : "context", -1, SQLITE_STATIC);
                sqlite3_bind_int64(st, 3, want[k]);
                mp_store_bind_text(s, st, 4, text[k]);
                rc = mp_store_step_done(s, st, "record a log event");
            }
        }
        free(text[k]);
    }
    return mp_store_commit(s, rc);
}

