/* runinfo.c - what a run records about its own set-up beyond the
 * fingerprint (schema v18): the environment the candidates inherited and
 * --clean-env, the engine version the preset was expressed for, a
 * candidate that does not apply to that version (with its era's knobs),
 * the reason a run stopped early, and the workload's timeouts. */
#include "store/internal.h"
#include "store/runinfo.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/report.h"
#include "xalloc.h"

static bool has_runinfo(const struct mp_store *s)
{
    return s->version >= MP_STORE_RUNINFO_VERSION;
}

/* run_info's row, created on first use; one column set (inside the
 * caller's transaction). */
static int put_info(struct mp_store *s, const char *col, const char *text, int num, bool is_text)
{
    char sql[160];
    snprintf(sql, sizeof(sql),
             "INSERT INTO run_info(id, %s) VALUES (1, ?) ON CONFLICT(id) DO UPDATE SET %s = "
             "excluded.%s",
             col, col, col);
    sqlite3_stmt *st = NULL;
    int rc = mp_store_prep(s, &st, sql);
    if (rc == 0) {
        if (is_text)
            mp_store_bind_text(s, st, 1, text);
        else
            sqlite3_bind_int(st, 1, num);
        rc = mp_store_step_done(s, st, "record the run's set-up");
    }
    return rc;
}

static int set_info(struct mp_store *s, const char *col, const char *text, int num, bool is_text)
{
    if (!has_runinfo(s))
        return 0;
    if (mp_store_begin(s) < 0)
        return MP_EDB;
    return mp_store_commit(s, put_info(s, col, text, num, is_text));
}

int mp_store_set_inherited(struct mp_store *s, const struct mp_inherited *in)
{
    if (!has_runinfo(s))
        return 0;
    if (mp_store_begin(s) < 0)
        return MP_EDB;
    int rc = mp_store_exec(s, "DELETE FROM inherited_env");
    for (size_t i = 0; rc == 0 && i < in->n; i++) {
        const struct mp_inh_var *v = &in->v[i];
        sqlite3_stmt *st = NULL;
        if ((rc = mp_store_prep(s, &st, "INSERT INTO inherited_env(pos, name, value, passed,"
                                        " acts, affects, note) VALUES (?,?,?,?,?,?,?)")) < 0)
            break;
        sqlite3_bind_int64(st, 1, (sqlite3_int64)i);
        mp_store_bind_text(s, st, 2, v->name);
        mp_store_bind_text(s, st, 3, v->value);
        sqlite3_bind_int(st, 4, v->passed);
        sqlite3_bind_int(st, 5, v->acts);
        mp_store_bind_text(s, st, 6, v->affects);
        mp_store_bind_text(s, st, 7, v->note);
        rc = mp_store_step_done(s, st, "record the inherited environment");
    }
    if (rc == 0)
        rc = put_info(s, "clean_env", NULL, in->clean_env, false);
    return mp_store_commit(s, rc);
}

int mp_store_set_preset_version(struct mp_store *s, const char *version)
{
    return set_info(s, "preset_version", version, 0, true);
}

int mp_store_set_stop_reason(struct mp_store *s, const char *why)
{
    return set_info(s, "stop_reason", why, 0, true);
}

int mp_store_candidate_update(struct mp_store *s, size_t pos, const struct mp_candidate *c,
                              const char *not_applicable)
{
    if (mp_store_candidate(s, pos, c) < 0)
        return MP_EDB;
    if (!has_runinfo(s))
        return 0;
    if (mp_store_begin(s) < 0)
        return MP_EDB;
    sqlite3_stmt *st = NULL;
    int rc = mp_store_prep(s, &st, "UPDATE candidates SET env = ?, args = ?, not_applicable = ?"
                                   " WHERE pos = ?");
    if (rc == 0) {
        char *e = mp_store_strv_json(&c->env), *a = mp_store_strv_json(&c->args);
        mp_store_bind_text(s, st, 1, e);
        mp_store_bind_text(s, st, 2, a);
        mp_store_bind_text(s, st, 3, not_applicable);
        sqlite3_bind_int64(st, 4, (sqlite3_int64)pos);
        free(e);
        free(a);
        rc = mp_store_step_done(s, st, "record a candidate's era");
    }
    return mp_store_commit(s, rc);
}

int mp_store_put_timeouts(struct mp_store *s, const struct mp_workload *w)
{
    if (!has_runinfo(s))
        return 0;
    sqlite3_stmt *st = NULL;
    int rc = mp_store_prep(s, &st, "UPDATE workload SET ready_timeout_s = ?, stall_timeout_s = ?"
                                   " WHERE id = 1");
    if (rc == 0) {
        sqlite3_bind_double(st, 1, w->ready_timeout_s);
        sqlite3_bind_double(st, 2, w->stall_timeout_s);
        rc = mp_store_step_done(s, st, "record the workload's timeouts");
    }
    return rc;
}

static char *col(sqlite3_stmt *st, int i)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    return t ? xstrdup((const char *)t) : NULL;
}

static int load_inherited(struct mp_store *s, struct mp_report *rep)
{
    sqlite3_stmt *st = NULL;
    if (mp_store_prep(s, &st, "SELECT name, value, passed, acts, affects, note FROM inherited_env"
                              " ORDER BY pos") < 0)
        return MP_EDB;
    int sr;
    while ((sr = sqlite3_step(st)) == SQLITE_ROW) {
        const unsigned char *n = sqlite3_column_text(st, 0), *v = sqlite3_column_text(st, 1);
        mp_inherited_add(&rep->inherited, n ? (const char *)n : "", v ? (const char *)v : "",
                         sqlite3_column_int(st, 2) != 0);
        struct mp_inh_var *x = &rep->inherited.v[rep->inherited.n - 1];
        x->acts = sqlite3_column_int(st, 3);
        x->affects = col(st, 4);
        x->note = col(st, 5);
    }
    if (mp_store_read_end(s, st, sr, "read the inherited environment") < 0)
        return MP_EDB;
    if (mp_store_prep(s, &st, "SELECT clean_env, preset_version, stop_reason FROM run_info"
                              " WHERE id = 1") < 0)
        return MP_EDB;
    if ((sr = sqlite3_step(st)) == SQLITE_ROW) {
        rep->inherited.clean_env = sqlite3_column_int(st, 0) != 0;
        rep->preset_version = col(st, 1);
        rep->stop_reason = col(st, 2);
    }
    return mp_store_read_end(s, st, sr, "read the run's set-up");
}

static int load_not_applicable(struct mp_store *s, struct mp_report *rep)
{
    sqlite3_stmt *st = NULL;
    if (mp_store_prep(s, &st, "SELECT pos, not_applicable FROM candidates"
                              " WHERE not_applicable IS NOT NULL") < 0)
        return MP_EDB;
    int sr;
    while ((sr = sqlite3_step(st)) == SQLITE_ROW) {
        sqlite3_int64 pos = sqlite3_column_int64(st, 0);
        if (pos >= 0 && (size_t)pos < rep->n) {
            free(rep->c[pos].not_applicable);
            rep->c[pos].not_applicable = col(st, 1);
        }
    }
    return mp_store_read_end(s, st, sr, "read the candidates' eras");
}

static int load_timeouts(struct mp_store *s, struct mp_report *rep)
{
    sqlite3_stmt *st = NULL;
    if (mp_store_prep(s, &st, "SELECT ready_timeout_s, stall_timeout_s FROM workload"
                              " WHERE id = 1") < 0)
        return MP_EDB;
    int sr = sqlite3_step(st);
    if (sr == SQLITE_ROW) {
        rep->workload.ready_timeout_s = sqlite3_column_double(st, 0);
        rep->workload.stall_timeout_s = sqlite3_column_double(st, 1);
    }
    return mp_store_read_end(s, st, sr, "read the workload's timeouts");
}

/* The server command: the stored arguments after "--". */
static int load_server_cmd(struct mp_store *s, struct mp_report *rep)
{
    char *sub = NULL;
    struct mp_strv argv = MP_STRV_INIT;
    int rc = mp_store_run_argv(s, &sub, &argv);
    size_t k = 0;
    while (rc == 0 && k < argv.n && strcmp(argv.v[k], "--") != 0)
        k++;
    mp_strv_release(&rep->server_cmd);
    for (size_t i = k + 1; rc == 0 && i < argv.n; i++)
        mp_strv_push(&rep->server_cmd, argv.v[i]);
    free(sub);
    mp_strv_release(&argv);
    return rc == -ENOENT ? 0 : rc;
}

int mp_store_load_runinfo(struct mp_store *s, struct mp_report *rep)
{
    if (load_server_cmd(s, rep) < 0)
        return MP_EDB;
    if (!has_runinfo(s))
        return 0;
    if (load_inherited(s, rep) < 0 || load_not_applicable(s, rep) < 0)
        return MP_EDB;
    return rep->has_workload ? load_timeouts(s, rep) : 0;
}
