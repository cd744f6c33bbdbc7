/* store.c - the SQLite evidence store: opening, locking, the run, the
 * fingerprint, candidates, the start of an attempt, minimization tests and
 * resume. The schema is in schema.c, what an attempt records in record.c
 * and metrics.c, reading back in load.c, the SQLite helpers all of them
 * use in db.c. */
#include "store/internal.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model/report.h"
#include "vec.h"
#include "xalloc.h"

/* ---------- open / close ---------- */

/* "file:" URI of path for sqlite3_open_v2(SQLITE_OPEN_URI): every byte
 * outside [A-Za-z0-9/._~-] percent-encoded (so '?', '#' and '%' in a
 * directory name stay part of the path), then "?query". Caller frees. */
static char *db_uri(const char *path, const char *query)
{
    static const char hex[] = "0123456789ABCDEF";
    struct buf b = BUF_INIT;
    buf_adds(&b, "file:");
    for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
            strchr("/._~-", *p)) {
            buf_addc(&b, (char)*p);
        } else {
            buf_addc(&b, '%');
            buf_addc(&b, hex[*p >> 4]);
            buf_addc(&b, hex[*p & 15]);
        }
    }
    buf_printf(&b, "?%s", query);
    return buf_detach(&b, NULL);
}

/* Read PRAGMA user_version: SQLITE_OK and *v, or the SQLite error. */
static int read_user_version(sqlite3 *db, int *v)
{
    sqlite3_stmt *st = NULL;
    int r = sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL);
    if (r == SQLITE_OK) {
        r = sqlite3_step(st);
        if (r == SQLITE_ROW) {
            *v = sqlite3_column_int(st, 0);
            r = SQLITE_OK;
        }
    }
    sqlite3_finalize(st);
    return r;
}

/* SQLite's message for db, with the system error behind it when there is one. */
static void db_errmsg(sqlite3 *db, char *out, size_t n)
{
    int e = db ? sqlite3_system_errno(db) : 0;
    if (e)
        snprintf(out, n, "%s (%s)", db ? sqlite3_errmsg(db) : "out of memory", strerror(e));
    else
        snprintf(out, n, "%s", db ? sqlite3_errmsg(db) : "out of memory");
}

/* A reader's open: read-only (mode=ro), and where SQLite cannot create the
 * -shm file a WAL database needs (read-only media: a mount, a directory
 * without write permission) immutable=1, which reads the main file only.
 * Then the schema version and PRAGMA integrity_check: a damaged database
 * is refused, never read as if it were empty. */
static int open_reader(struct mp_store *s, const char *path, struct mp_diag *d)
{
    char why[300];
    int v = 0, r = SQLITE_OK;
    for (int pass = 0; pass < 2; pass++) {
        char *uri = db_uri(path, pass ? "mode=ro&immutable=1" : "mode=ro");
        r = sqlite3_open_v2(uri, &s->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX,
                            NULL);
        free(uri);
        if (s->db) {
            sqlite3_extended_result_codes(s->db, 1);
            sqlite3_busy_timeout(s->db, 5000);
        }
        if (r == SQLITE_OK)
            r = read_user_version(s->db, &v);
        int pr = r & 0xff;
        if (pass == 0 && (pr == SQLITE_CANTOPEN || pr == SQLITE_READONLY ||
                          r == SQLITE_IOERR_SHMOPEN || r == SQLITE_IOERR_SHMSIZE ||
                          r == SQLITE_IOERR_SHMMAP)) {
            /* the main file may be readable while the -shm cannot be made */
            sqlite3_close(s->db);
            s->db = NULL;
            continue;
        }
        if (r == SQLITE_OK && pass == 1) {
            s->immutable = true;
            char *wal = xasprintf("%s-wal", path);
            struct stat sb;
            if (stat(wal, &sb) == 0 && sb.st_size > 0)
                snprintf(s->note, sizeof(s->note),
                         "'%s' is on read-only storage: its last transactions, %lld bytes in "
                         "'%s', cannot be read without creating '%s-shm'; the report shows the "
                         "database without them (copy the run directory to writable storage to "
                         "see everything)",
                         path, (long long)sb.st_size, wal, path);
            free(wal);
        }
        break;
    }
    if (r != SQLITE_OK) {
        db_errmsg(s->db, why, sizeof(why));
        if ((r & 0xff) == SQLITE_NOTADB)
            return mp_diag_set(d, MP_EDB, 0, "'%s' is not an SQLite database: %s", path, why);
        if ((r & 0xff) == SQLITE_CORRUPT)
            return mp_diag_set(d, MP_EDB, 0, "'%s' is damaged: %s", path, why);
        return mp_diag_set(d, MP_EDB, 0, "cannot read '%s': %s", path, why);
    }
    if (v < 1)
        return mp_diag_set(d, MP_EDB, 0,
                           "'%s' is not a moeprobe evidence store (an SQLite database without a "
                           "schema version)", path);
    if (v > MP_STORE_SCHEMA_VERSION)
        return mp_diag_set(d, MP_EDB, 0, "'%s' has schema version %d; this moeprobe reads 1..%d",
                           path, v, MP_STORE_SCHEMA_VERSION);
    s->version = v;
    /* every page, record and index: a damaged store is an error, not a
     * report with rows missing */
    sqlite3_stmt *st = NULL;
    r = sqlite3_prepare_v2(s->db, "PRAGMA integrity_check(1)", -1, &st, NULL);
    if (r == SQLITE_OK)
        r = sqlite3_step(st);
    if (r == SQLITE_ROW) {
        const char *res = (const char *)sqlite3_column_text(st, 0);
        if (res && strcmp(res, "ok") != 0) {
            /* one line: SQLite's report spans several */
            size_t k = 0;
            for (const char *p = res; *p && k + 3 < sizeof(why); p++) {
                if (*p == '\n') {
                    why[k++] = ';';
                    why[k++] = ' ';
                } else {
                    why[k++] = (unsigned char)*p < 0x20 ? ' ' : *p;
                }
            }
            why[k] = '\0';
            r = SQLITE_CORRUPT;
        } else {
            r = SQLITE_OK;
        }
    } else {
        db_errmsg(s->db, why, sizeof(why));
    }
    sqlite3_finalize(st);
    if (r != SQLITE_OK)
        return mp_diag_set(d, MP_EDB, 0, "'%s' is damaged (PRAGMA integrity_check: %s)", path, why);
    char *err = NULL;
    if (sqlite3_exec(s->db, "PRAGMA foreign_keys=ON; PRAGMA query_only=ON;", NULL, NULL, &err) != SQLITE_OK) {
        mp_diag_set(d, MP_EDB, 0, "cannot set up '%s': %s", path, err ? err : sqlite3_errmsg(s->db));
        sqlite3_free(err);
        return MP_EDB;
    }
    return 0;
}

int mp_store_open(const char *run_dir, unsigned flags, struct mp_store **out, struct mp_diag *d)
{
    *out = NULL;
    struct mp_store *s = xcalloc(1, sizeof(*s));
    s->lock_fd = -1;
    s->readonly = flags & MP_STORE_READONLY;
    int rc = 0;
    char *path = xasprintf("%s/%s", run_dir, MP_STORE_DB_NAME);
    if ((flags & MP_STORE_CREATE) && mkdir(run_dir, 0777) != 0 && errno != EEXIST) {
        rc = -errno;
        mp_diag_set(d, rc, 0, "cannot create run directory '%s': %s", run_dir, strerror(errno));
        goto out;
    }
    if (flags & MP_STORE_LOCK) {
        char *lp = xasprintf("%s/lock", run_dir);
        s->lock_fd = open(lp, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (s->lock_fd < 0) {
            rc = -errno;
            mp_diag_set(d, rc, 0, "cannot open '%s': %s", lp, strerror(errno));
            free(lp);
            goto out;
        }
        if (flock(s->lock_fd, LOCK_EX | LOCK_NB) != 0) {
            rc = errno == EWOULDBLOCK ? MP_ESTATE : -errno;
            mp_diag_set(d, rc, 0, "run directory '%s' is in use by another moeprobe (lock held on '%s')",
                        run_dir, lp);
            free(lp);
            goto out;
        }
        free(lp);
    }
    if (!(flags & MP_STORE_CREATE) && access(path, F_OK) != 0) {
        rc = -ENOENT;
        mp_diag_set(d, rc, 0, "'%s' has no evidence store (%s)", run_dir, MP_STORE_DB_NAME);
        goto out;
    }
    if (s->readonly) {
        rc = open_reader(s, path, d);
        if (rc < 0)
            goto out;
    } else {
        /* never write through a link planted in the run directory */
        if (sqlite3_open_v2(path, &s->db,
                            SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOFOLLOW |
                                SQLITE_OPEN_NOMUTEX,
                            NULL) != SQLITE_OK) {
            rc = MP_EDB;
            mp_diag_set(d, rc, 0, "cannot open '%s': %s", path,
                        s->db ? sqlite3_errmsg(s->db) : "out of memory");
            goto out;
        }
        sqlite3_busy_timeout(s->db, 5000);
        sqlite3_extended_result_codes(s->db, 1);
        char *err = NULL;
        if (sqlite3_exec(s->db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;",
                         NULL, NULL, &err) != SQLITE_OK) {
            rc = MP_EDB;
            mp_diag_set(d, rc, 0, "cannot set up '%s': %s", path, err ? err : sqlite3_errmsg(s->db));
            sqlite3_free(err);
            goto out;
        }
        rc = mp_db_migrate(s->db, MP_STORE_SCHEMA_VERSION, d);
        if (rc < 0)
            goto out;
    }
    if (!s->readonly)
        s->version = MP_STORE_SCHEMA_VERSION;
out:
    free(path);
    if (rc < 0) {
        mp_store_close(s);
        return rc;
    }
    *out = s;
    return 0;
}

void mp_store_close(struct mp_store *s)
{
    if (!s)
        return;
    sqlite3_finalize(s->ins_req);
    if (s->db)
        sqlite3_close(s->db);
    if (s->lock_fd >= 0)
        close(s->lock_fd); /* releases the flock */
    free(s->cand_ids);
    mp_store_mask_release(&s->mask);
    free(s);
}

static char *argv_json(const struct mp_store_mask *m, char *const *argv, size_t argc)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; i < argc; i++) {
        /* --api-key-env=NAME names a variable: its value is no secret (the
         * key itself is a known value, masked wherever it appears) */
        bool words = strncmp(argv[i], "--api-key-env=", 14) != 0;
        char *w = mp_store_mask_apply(m, argv[i], strlen(argv[i]), words, NULL);
        cJSON_AddItemToArray(a, cJSON_CreateString(w));
        free(w);
    }
    char *t = cJSON_PrintUnformatted(a);
    cJSON_Delete(a);
    char *r = xstrdup(t ? t : "[]");
    cJSON_free(t);
    return r;
}

/* ---------- the run ---------- */

int mp_store_run_begin(struct mp_store *s, const char *subcommand, char *const *argv, size_t argc,
                       const char *version, const char *started)
{
    if (mp_store_begin(s) < 0)
        return MP_EDB;
    sqlite3_stmt *st = NULL;
    int rc = mp_store_prep(s, &st,
                           "INSERT OR IGNORE INTO run(id, subcommand, argv, moeprobe_version, started,"
                           " cwd) VALUES (1, ?, ?, ?, ?, ?)");
    if (rc == 0) {
        char cwd[4096];
        sqlite3_bind_text(st, 1, subcommand, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 2, argv_json(&s->mask, argv, argc), -1, free);
        sqlite3_bind_text(st, 3, version, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 4, started, -1, SQLITE_TRANSIENT);
        if (getcwd(cwd, sizeof(cwd)))
            sqlite3_bind_text(st, 5, cwd, -1, SQLITE_TRANSIENT);
        else
            sqlite3_bind_null(st, 5);
        rc = mp_store_step_done(s, st, "record the run");
    }
    return mp_store_commit(s, rc);
}

int mp_store_run_argv(struct mp_store *s, char **subcommand, struct mp_strv *argv)
{
    sqlite3_stmt *st = NULL;
    if (mp_store_prep(s, &st, "SELECT subcommand, argv FROM run WHERE id = 1") < 0)
        return MP_EDB;
    int rc = -ENOENT;
    if (sqlite3_step(st) == SQLITE_ROW) {
        *subcommand = xstrdup((const char *)sqlite3_column_text(st, 0));
        cJSON *a = cJSON_Parse((const char *)sqlite3_column_text(st, 1));
        cJSON *it;
        cJSON_ArrayForEach(it, a)
        {
            if (cJSON_IsString(it))
                mp_strv_push(argv, it->valuestring);
        }
        cJSON_Delete(a);
        rc = 0;
    }
    sqlite3_finalize(st);
    return rc;
}

int mp_store_run_cwd(struct mp_store *s, char **cwd)
{
    *cwd = NULL;
    if (s->version < 5)
        return 0;
    sqlite3_stmt *st = NULL;
    if (mp_store_prep(s, &st, "SELECT cwd FROM run WHERE id = 1") < 0)
        return MP_EDB;
    int rc = -ENOENT;
    if (sqlite3_step(st) == SQLITE_ROW) {
        const char *t = (const char *)sqlite3_column_text(st, 0);
        *cwd = t ? xstrdup(t) : NULL;
        rc = 0;
    }
    sqlite3_finalize(st);
    return rc;
}

int mp_store_set_report_opts(struct mp_store *s, enum mp_objective obj, const double *pct,
                             size_t npct)
{
    if (mp_store_begin(s) < 0)
        return MP_EDB;
    sqlite3_stmt *st = NULL;
    int rc = mp_store_prep(s, &st, "UPDATE run SET objective = ?, percentiles = ? WHERE id = 1");
    if (rc == 0) {
        struct buf b = BUF_INIT;
        for (size_t i = 0; i < npct; i++)
            buf_printf(&b, "%s%g", i ? "," : "", pct[i]); /* mp_percentiles_parse reads it */
        sqlite3_bind_text(st, 1, mp_objective_name(obj), -1, SQLITE_STATIC);
        if (npct)
            sqlite3_bind_text(st, 2, b.data, (int)b.len, SQLITE_TRANSIENT);
        buf_release(&b);
        rc = mp_store_step_done(s, st, "record the report options");
    }
    return mp_store_commit(s, rc);
}

int mp_store_run_finish(struct mp_store *s, const char *finished, bool interrupted)
{
    if (mp_store_begin(s) < 0)
        return MP_EDB;
    sqlite3_stmt *st = NULL;
    int rc = mp_store_prep(s, &st, "UPDATE run SET finished = ?, interrupted = ? WHERE id = 1");
    if (rc == 0) {
        sqlite3_bind_text(st, 1, finished, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int(st, 2, interrupted);
        rc = mp_store_step_done(s, st, "finish the run");
    }
    return mp_store_commit(s, rc);
}

int mp_store_run_resumed(struct mp_store *s, const char *when)
{
    if (mp_store_begin(s) < 0)
        return MP_EDB;
    sqlite3_stmt *st = NULL;
    int rc = mp_store_prep(s, &st,
                           "UPDATE run SET resumes = resumes + 1, last_resumed = ?, finished = NULL,"
                           " interrupted = 0 WHERE id = 1");
    if (rc == 0) {
        sqlite3_bind_text(st, 1, when, -1, SQLITE_TRANSIENT);
        rc = mp_store_step_done(s, st, "record the resume");
    }
    return mp_store_commit(s, rc);
}

int mp_store_set_fingerprint(struct mp_store *s, const struct mp_fingerprint *fp,
                             const struct mp_fp_extra *x)
{
    if (mp_store_begin(s) < 0)
        return MP_EDB;
    sqlite3_stmt *st = NULL;
    int rc = mp_store_prep(s, &st,
                           "INSERT OR REPLACE INTO fingerprint(id, gpu, compute_capability, driver,"
                           " cuda, engine, engine_version, model, host_arch, quantization,"
                           " gpu_memory_mib, gpu_source, model_dir, checkpoint_json)"
                           " VALUES (1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    if (rc == 0) {
        const char *v[] = {fp->gpu, fp->compute_capability, fp->driver, fp->cuda, fp->engine,
                           fp->engine_version, fp->model, fp->host_arch};
        for (int i = 0; i < 8; i++)
            mp_store_bind_text(s, st, i + 1, v[i]);
        mp_store_bind_text(s, st, 9, x ? x->quantization : NULL);
        if (x && x->gpu_memory_mib >= 0)
            sqlite3_bind_int64(st, 10, x->gpu_memory_mib);
        else
            sqlite3_bind_null(st, 10);
        mp_store_bind_text(s, st, 11, x ? x->gpu_source : NULL);
        mp_store_bind_text(s, st, 12, x ? x->model_dir : NULL);
        mp_store_bind_text(s, st, 13, x ? x->checkpoint_json : NULL);
        rc = mp_store_step_done(s, st, "record the fingerprint");
    }
    return mp_store_commit(s, rc);
}

/* ---------- candidates ---------- */

static int64_t cand_id(struct mp_store *s, size_t pos)
{
    if (pos < s->ncand_ids && s->cand_ids[pos] > 0)
        return s->cand_ids[pos];
    sqlite3_stmt *st = NULL;
    int64_t id = 0;
    if (mp_store_prep(s, &st, "SELECT id FROM candidates WHERE pos = ?") < 0)
        return 0;
    sqlite3_bind_int64(st, 1, (sqlite3_int64)pos);
    if (sqlite3_step(st) == SQLITE_ROW)
        id = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    if (id > 0) {
        if (pos >= s->ncand_ids) {
            s->cand_ids = xreallocarray(s->cand_ids, pos + 1, sizeof(*s->cand_ids));
            memset(s->cand_ids + s->ncand_ids, 0, (pos + 1 - s->ncand_ids) * sizeof(*s->cand_ids));
            s->ncand_ids = pos + 1;
        }
        s->cand_ids[pos] = id;
    }
    return id;
}

int mp_store_candidate(struct mp_store *s, size_t pos, const struct mp_candidate *c)
{
    if (s->failed)
        return MP_EDB;
    if (cand_id(s, pos) > 0)
        return 0;
    if (mp_store_begin(s) < 0)
        return MP_EDB;
    sqlite3_stmt *st = NULL;
    int rc = mp_store_prep(s, &st, "INSERT INTO candidates(pos, name, env, args) VALUES (?, ?, ?, ?)");
    if (rc == 0) {
        sqlite3_bind_int64(st, 1, (sqlite3_int64)pos);
        sqlite3_bind_text(st, 2, c->name, -1, SQLITE_TRANSIENT);
        char *e = mp_store_strv_json(&c->env), *a = mp_store_strv_json(&c->args);
        char *em = mp_store_mask_apply(&s->mask, e, strlen(e), true, NULL);
        sqlite3_bind_text(st, 3, em, -1, free);
        mp_store_bind_text(s, st, 4, a);
        free(e);
        free(a);
        rc = mp_store_step_done(s, st, "record a candidate");
    }
    rc = mp_store_commit(s, rc);
    if (rc == 0 && cand_id(s, pos) <= 0)
        rc = MP_EDB;
    return rc;
}

/* The policy as diagnoses.policy's JSON (v14), or NULL. */
static char *policy_json(const struct mp_diag_policy *p)
{
    if (!p || !p->recorded)
        return NULL;
    return xasprintf("{\"diagnose\":%s,\"skipped\":%s,\"notes\":%s,\"cap\":%lu,"
                     "\"budget_s\":%.17g,\"concurrency\":%d,\"lead\":%lu,\"blocked_lead\":%lu}",
                     p->diagnose ? "true" : "false", p->skipped ? "true" : "false",
                     p->notes ? "true" : "false", p->cap, p->budget_s, p->concurrency, p->lead,
                     p->blocked_lead);
}

int mp_store_candidate_done(struct mp_store *s, size_t pos, const struct mp_diagnosis *dg,
                            const struct mp_diag_policy *pol)
{
    int64_t id = cand_id(s, pos);
    if (id <= 0 || mp_store_begin(s) < 0)
        return MP_EDB;
    sqlite3_stmt *st = NULL;
    int rc = mp_store_prep(s, &st, "UPDATE candidates SET done = 1 WHERE id = ?");
    if (rc == 0) {
        sqlite3_bind_int64(st, 1, id);
        rc = mp_store_step_done(s, st, "finish a candidate");
    }
    if (rc == 0 && dg) {
        rc = mp_store_prep(s, &st,
                           "INSERT OR REPLACE INTO diagnoses(candidate_id, done, launch_blocking,"
                           " requests_clean, requests_required, confidence, throughput_ratio,"
                           " pinned_site, reasoning, note, launch_site, policy)"
                           " VALUES (?,?,?,?,?,?,?,?,?,?,?,?)");
        if (rc == 0) {
            sqlite3_bind_int64(st, 1, id);
            sqlite3_bind_int(st, 2, dg->done);
            mp_store_bind_text(s, st, 3, mp_lb_name(dg->launch_blocking));
            sqlite3_bind_int64(st, 4, (sqlite3_int64)dg->requests_clean);
            sqlite3_bind_int64(st, 5, (sqlite3_int64)dg->requests_required);
            sqlite3_bind_double(st, 6, dg->confidence);
            sqlite3_bind_double(st, 7, dg->throughput_ratio);
            mp_store_bind_text(s, st, 8, dg->pinned_site);
            mp_store_bind_text(s, st, 9, dg->reasoning);
            mp_store_bind_text(s, st, 10, dg->note);
            mp_store_bind_text(s, st, 11, dg->launch_site);
            char *pj = policy_json(pol);
            mp_store_bind_text(s, st, 12, pj);
            free(pj);
            rc = mp_store_step_done(s, st, "record a diagnosis");
        }
    }
    return mp_store_commit(s, rc);
}

int mp_store_next_index(struct mp_store *s, size_t pos, int *index)
{
    int64_t id = cand_id(s, pos);
    *index = 1;
    if (id <= 0)
        return MP_EDB;
    sqlite3_stmt *st = NULL;
    if (mp_store_prep(s, &st, "SELECT COALESCE(MAX(idx), 0) FROM attempts WHERE candidate_id = ?") < 0)
        return MP_EDB;
    sqlite3_bind_int64(st, 1, id);
    if (sqlite3_step(st) == SQLITE_ROW)
        *index = sqlite3_column_int(st, 0) + 1;
    sqlite3_finalize(st);
    return 0;
}

/* ---------- attempts ---------- */

int mp_store_attempt_begin(struct mp_store *s, size_t pos, int index, bool blocking,
                           const char *dir, int64_t *id)
{
    int64_t cid = cand_id(s, pos);
    if (cid <= 0 || mp_store_begin(s) < 0)
        return MP_EDB;
    sqlite3_stmt *st = NULL;
    char iso[32];
    mp_store_now_iso(iso, sizeof(iso));
    int rc = mp_store_prep(s, &st,
                           "INSERT INTO attempts(candidate_id, idx, launch_blocking, dir, started)"
                           " VALUES (?, ?, ?, ?, ?)");
    if (rc == 0) {
        sqlite3_bind_int64(st, 1, cid);
        sqlite3_bind_int(st, 2, index);
        sqlite3_bind_int(st, 3, blocking);
        sqlite3_bind_text(st, 4, dir, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 5, iso, -1, SQLITE_TRANSIENT);
        rc = mp_store_step_done(s, st, "record an attempt");
        *id = sqlite3_last_insert_rowid(s->db);
    }
    return mp_store_commit(s, rc);
}

int mp_store_attempt_spawned(struct mp_store *s, int64_t id, const char *command, pid_t pid,
                             unsigned long long pid_start, const char *marker)
{
    if (mp_store_begin(s) < 0)
        return MP_EDB;
    sqlite3_stmt *st = NULL;
    int rc = mp_store_prep(s, &st,
                           "UPDATE attempts SET command = ?, pid = ?, pid_start = ?, marker = ?"
                           " WHERE id = ?");
    if (rc == 0) {
        sqlite3_bind_text(st, 1, command ? mp_store_mask_apply(&s->mask, command, strlen(command), true, NULL) : NULL, -1, free);
        sqlite3_bind_int64(st, 2, pid);
        sqlite3_bind_int64(st, 3, (sqlite3_int64)pid_start);
        sqlite3_bind_text(st, 4, marker, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(st, 5, id);
        rc = mp_store_step_done(s, st, "record the engine's pid");
    }
    return mp_store_commit(s, rc);
}

int mp_store_add_minimize_test(struct mp_store *s, unsigned test_no, const char *knobs,
                               const char *candidate, bool passed)
{
    if (mp_store_begin(s) < 0)
        return MP_EDB;
    sqlite3_stmt *st = NULL;
    int rc = mp_store_prep(s, &st,
                           "INSERT INTO minimize_tests(test_no, knobs, candidate, passed) VALUES (?,?,?,?)");
    if (rc == 0) {
        sqlite3_bind_int(st, 1, (int)test_no);
        mp_store_bind_text(s, st, 2, knobs);
        mp_store_bind_text(s, st, 3, candidate);
        sqlite3_bind_int(st, 4, passed);
        rc = mp_store_step_done(s, st, "record a minimization test");
    }
    return mp_store_commit(s, rc);
}

/* ---------- resume ---------- */

int mp_store_running_attempts(struct mp_store *s, struct mp_store_leftover **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    sqlite3_stmt *st = NULL;
    if (mp_store_prep(s, &st, "SELECT pid, pid_start, marker FROM attempts WHERE status = 'running'") < 0)
        return MP_EDB;
    size_t cap = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        mp_grow(*out, cap, *n + 1);
        struct mp_store_leftover *l = &(*out)[(*n)++];
        l->pid = (pid_t)sqlite3_column_int64(st, 0);
        l->start = (unsigned long long)sqlite3_column_int64(st, 1);
        const char *marker = (const char *)sqlite3_column_text(st, 2);
        l->marker = xstrdup(marker ? marker : "");
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        mp_store_leftovers_free(*out, *n);
        *out = NULL;
        *n = 0;
        return mp_store_fail(s, "read the running attempts");
    }
    return 0;
}

void mp_store_leftovers_free(struct mp_store_leftover *l, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(l[i].marker);
    free(l);
}

int mp_store_mark_interrupted(struct mp_store *s)
{
    if (mp_store_begin(s) < 0)
        return MP_EDB;
    return mp_store_commit(s, mp_store_exec(s, "UPDATE attempts SET status = 'interrupted' WHERE status = 'running'"));
}
