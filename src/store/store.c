/* store.c - the SQLite evidence store: opening, locking, schema and its
 * migrations, and every write. Reading back is in load.c. */
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

#include "model/evidence.h"
#include "model/report.h"
#include "xalloc.h"

/* ---------- schema ---------- */

/* Version 1: the first schema. Never edit a migration once released; add
 * the next one instead. */
static const char schema_v1[] =
    "CREATE TABLE run("
    " id INTEGER PRIMARY KEY CHECK (id = 1),"
    " subcommand TEXT NOT NULL, argv TEXT NOT NULL, moeprobe_version TEXT NOT NULL,"
    " started TEXT, finished TEXT, interrupted INTEGER NOT NULL DEFAULT 0,"
    " resumes INTEGER NOT NULL DEFAULT 0, last_resumed TEXT);"
    "CREATE TABLE fingerprint("
    " id INTEGER PRIMARY KEY CHECK (id = 1),"
    " gpu TEXT, compute_capability TEXT, driver TEXT, cuda TEXT, engine TEXT,"
    " engine_version TEXT, model TEXT, host_arch TEXT);"
    "CREATE TABLE candidates("
    " id INTEGER PRIMARY KEY, pos INTEGER NOT NULL UNIQUE, name TEXT NOT NULL,"
    " env TEXT NOT NULL, args TEXT NOT NULL, done INTEGER NOT NULL DEFAULT 0);"
    "CREATE TABLE diagnoses("
    " candidate_id INTEGER PRIMARY KEY REFERENCES candidates(id) ON DELETE CASCADE,"
    " done INTEGER NOT NULL, launch_blocking TEXT, requests_clean INTEGER,"
    " requests_required INTEGER, confidence REAL, throughput_ratio REAL, pinned_site TEXT,"
    " reasoning TEXT, note TEXT);"
    "CREATE TABLE attempts("
    " id INTEGER PRIMARY KEY,"
    " candidate_id INTEGER NOT NULL REFERENCES candidates(id) ON DELETE CASCADE,"
    " idx INTEGER NOT NULL, launch_blocking INTEGER NOT NULL, dir TEXT NOT NULL,"
    " status TEXT NOT NULL DEFAULT 'running' CHECK (status IN ('running','done','interrupted')),"
    " pid INTEGER, pid_start INTEGER, marker TEXT, started TEXT, finished TEXT,"
    " outcome TEXT, command TEXT, moe_backend TEXT, moe_candidates TEXT, linear_kernel TEXT,"
    " attention_backend TEXT, engine_version TEXT, model TEXT, quantization TEXT,"
    " moe_backend_flag TEXT, unknown_env TEXT, moe_backend_line INTEGER,"
    " linear_kernel_line INTEGER, attention_backend_line INTEGER, unknown_env_line INTEGER,"
    " fail_class TEXT, fail_message TEXT, fail_line INTEGER, sites TEXT, engine_dead INTEGER,"
    " ok_before_failure INTEGER, fail_phase TEXT, exit_desc TEXT, req_ok INTEGER,"
    " req_failed INTEGER, ready_s REAL, workload_s REAL, teardown_s REAL, wall_s REAL,"
    " teardown_leftovers INTEGER, teardown_killed INTEGER, escapees_killed INTEGER,"
    " UNIQUE (candidate_id, idx, launch_blocking));"
    "CREATE TABLE phases("
    " attempt_id INTEGER NOT NULL REFERENCES attempts(id) ON DELETE CASCADE,"
    " pos INTEGER NOT NULL, name TEXT NOT NULL, level INTEGER, planned INTEGER, ok INTEGER,"
    " failed INTEGER, wall_s REAL, tokens INTEGER, tok_s REAL, req_tok_s_p50 REAL,"
    " PRIMARY KEY (attempt_id, pos));"
    "CREATE TABLE requests("
    " id INTEGER PRIMARY KEY,"
    " attempt_id INTEGER NOT NULL REFERENCES attempts(id) ON DELETE CASCADE,"
    " seq INTEGER NOT NULL, req_id INTEGER, phase TEXT NOT NULL, outcome TEXT NOT NULL, http_status INTEGER,"
    " start_s REAL, ttft_ms REAL, e2e_ms REAL, output_tokens INTEGER, chunks INTEGER,"
    " req_tok_s REAL, itl BLOB, error TEXT, UNIQUE (attempt_id, seq));"
    "CREATE TABLE texts("
    " attempt_id INTEGER NOT NULL REFERENCES attempts(id) ON DELETE CASCADE,"
    " kind TEXT NOT NULL, idx INTEGER NOT NULL, text TEXT NOT NULL,"
    " PRIMARY KEY (attempt_id, kind, idx));"
    "CREATE TABLE log_events("
    " id INTEGER PRIMARY KEY,"
    " attempt_id INTEGER NOT NULL REFERENCES attempts(id) ON DELETE CASCADE,"
    " signature TEXT NOT NULL, line_no INTEGER NOT NULL, text TEXT);"
    "CREATE INDEX requests_attempt ON requests(attempt_id);"
    "CREATE INDEX attempts_candidate ON attempts(candidate_id);";

/* Version 2: fingerprint extras (quantization, GPU memory, where the GPU
 * facts came from, the checkpoint folder) and minimization tests. */
static const char schema_v2[] =
    "ALTER TABLE fingerprint ADD COLUMN quantization TEXT;"
    "ALTER TABLE fingerprint ADD COLUMN gpu_memory_mib INTEGER;"
    "ALTER TABLE fingerprint ADD COLUMN gpu_source TEXT;"
    "ALTER TABLE fingerprint ADD COLUMN model_dir TEXT;"
    "CREATE TABLE minimize_tests("
    " id INTEGER PRIMARY KEY, test_no INTEGER NOT NULL, knobs TEXT NOT NULL,"
    " candidate TEXT, passed INTEGER NOT NULL);";

/* Version 3: what `moeprobe inspect` found in the --model-dir checkpoint. */
static const char schema_v3[] = "ALTER TABLE fingerprint ADD COLUMN checkpoint_json TEXT;";

/* Version 4: what the log says beyond the NVFP4 MoE line: every dense
 * kernel by method, the unquantized MoE backend, the crash's launch site
 * (and the blocked run's, in the diagnosis). */
static const char schema_v4[] = "ALTER TABLE attempts ADD COLUMN linear_kernels TEXT;"
                                "ALTER TABLE attempts ADD COLUMN unquantized_moe_backend TEXT;"
                                "ALTER TABLE attempts ADD COLUMN launch_site TEXT;"
                                "ALTER TABLE diagnoses ADD COLUMN launch_site TEXT;";

/* Version 5: trust in verdicts - CUDA-fault evidence, engine death, the
 * first bad response, the announced port, knob delivery per attempt, and
 * where the run was started (resume from another directory). */
static const char schema_v5[] =
    "ALTER TABLE attempts ADD COLUMN cuda_fault INTEGER;"
    "ALTER TABLE attempts ADD COLUMN engine_died INTEGER;"
    "ALTER TABLE attempts ADD COLUMN fail_request_line INTEGER;"
    "ALTER TABLE attempts ADD COLUMN announced_port INTEGER;"
    "ALTER TABLE attempts ADD COLUMN dlv_knob TEXT;"
    "ALTER TABLE attempts ADD COLUMN dlv_status TEXT;"
    "ALTER TABLE attempts ADD COLUMN dlv_evidence TEXT;"
    "ALTER TABLE run ADD COLUMN cwd TEXT;";

/* Version 6: resolve first - an attempt stopped as the same configuration
 * as a candidate tested already, and why that is safe. */
static const char schema_v6[] = "ALTER TABLE attempts ADD COLUMN same_as TEXT;"
                                "ALTER TABLE attempts ADD COLUMN same_why TEXT;";

/* Version 7: knob delivery as a table of its own, one row per knob (what
 * the three parallel JSON lists of v5/v6 held is carried over). Those
 * columns stay (a migration never drops) and are no longer written. */
static const char schema_v7[] =
    "CREATE TABLE knob_delivery("
    " attempt_id INTEGER NOT NULL REFERENCES attempts(id) ON DELETE CASCADE,"
    " pos INTEGER NOT NULL, knob TEXT NOT NULL,"
    " status TEXT NOT NULL CHECK (status IN ('verified','missing','unverified')),"
    " evidence TEXT, PRIMARY KEY (attempt_id, pos));"
    "INSERT INTO knob_delivery(attempt_id, pos, knob, status, evidence)"
    " SELECT a.id, k.key, COALESCE(k.value, ''),"
    "  CASE json_extract(a.dlv_status, '$[' || k.key || ']')"
    "   WHEN 'verified' THEN 'verified' WHEN 'missing' THEN 'missing' ELSE 'unverified' END,"
    "  CASE WHEN json_valid(a.dlv_evidence)"
    "   THEN json_extract(a.dlv_evidence, '$[' || k.key || ']') END"
    " FROM attempts a, json_each(a.dlv_knob) k"
    " WHERE json_valid(a.dlv_knob) AND json_type(a.dlv_knob) = 'array'"
    "  AND (a.dlv_status IS NULL OR json_valid(a.dlv_status));";

/* Version 8: what the GPU did during each attempt (clocks, temperature,
 * power, memory, throttle reasons), as JSON. */
static const char schema_v8[] = "ALTER TABLE attempts ADD COLUMN gpu_telemetry TEXT;";

static const char *const migrations[] = {schema_v1, schema_v2, schema_v3, schema_v4,
                                         schema_v5, schema_v6, schema_v7, schema_v8};

int mp_db_migrate(sqlite3 *db, int target, struct mp_diag *d)
{
    sqlite3_stmt *st = NULL;
    int cur = 0;
    if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        cur = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    if (target < 1 || target > (int)MP_ARRAY_SIZE(migrations))
        return mp_diag_set(d, MP_EDB, 0, "no schema version %d", target);
    if (cur > (int)MP_ARRAY_SIZE(migrations))
        return mp_diag_set(d, MP_EDB, 0,
                           "the database has schema version %d, newer than this moeprobe "
                           "understands (%d)", cur, MP_STORE_SCHEMA_VERSION);
    if (cur >= target)
        return 0;
    char *err = NULL;
    if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, &err) != SQLITE_OK)
        goto fail;
    for (int v = cur; v < target; v++) {
        if (sqlite3_exec(db, migrations[v], NULL, NULL, &err) != SQLITE_OK) {
            sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
            goto fail;
        }
    }
    char sql[64];
    snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", target);
    if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK ||
        sqlite3_exec(db, "COMMIT", NULL, NULL, &err) != SQLITE_OK) {
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
        goto fail;
    }
    return 0;
fail:
    mp_diag_set(d, MP_EDB, 0, "schema migration %d -> %d failed: %s", cur, target,
                err ? err : sqlite3_errmsg(db));
    sqlite3_free(err);
    return MP_EDB;
}

/* ---------- open / close ---------- */

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

/* ---------- helpers ---------- */

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
static int step_done(struct mp_store *s, sqlite3_stmt *st, const char *what)
{
    int r = sqlite3_step(st);
    sqlite3_finalize(st);
    if (r != SQLITE_DONE)
        return mp_store_fail(s, what);
    return 0;
}

static int exec(struct mp_store *s, const char *sql)
{
    if (sqlite3_exec(s->db, sql, NULL, NULL, NULL) != SQLITE_OK)
        return mp_store_fail(s, sql);
    return 0;
}

static int begin(struct mp_store *s)
{
    if (s->failed || s->readonly)
        return MP_EDB;
    return exec(s, "BEGIN IMMEDIATE");
}

static int commit(struct mp_store *s, int rc)
{
    if (rc == 0 && exec(s, "COMMIT") == 0)
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

static char *argv_json(const struct mp_store_mask *m, char *const *argv, size_t argc)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; i < argc; i++) {
        char *w = mp_store_mask_apply(m, argv[i], strlen(argv[i]), true, NULL);
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
    if (begin(s) < 0)
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
        rc = step_done(s, st, "record the run");
    }
    return commit(s, rc);
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

int mp_store_run_finish(struct mp_store *s, const char *finished, bool interrupted)
{
    if (begin(s) < 0)
        return MP_EDB;
    sqlite3_stmt *st = NULL;
    int rc = mp_store_prep(s, &st, "UPDATE run SET finished = ?, interrupted = ? WHERE id = 1");
    if (rc == 0) {
        sqlite3_bind_text(st, 1, finished, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int(st, 2, interrupted);
        rc = step_done(s, st, "finish the run");
    }
    return commit(s, rc);
}

int mp_store_run_resumed(struct mp_store *s, const char *when)
{
    if (begin(s) < 0)
        return MP_EDB;
    sqlite3_stmt *st = NULL;
    int rc = mp_store_prep(s, &st,
                           "UPDATE run SET resumes = resumes + 1, last_resumed = ?, finished = NULL,"
                           " interrupted = 0 WHERE id = 1");
    if (rc == 0) {
        sqlite3_bind_text(st, 1, when, -1, SQLITE_TRANSIENT);
        rc = step_done(s, st, "record the resume");
    }
    return commit(s, rc);
}

int mp_store_set_fingerprint(struct mp_store *s, const struct mp_fingerprint *fp,
                             const struct mp_fp_extra *x)
{
    if (begin(s) < 0)
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
        rc = step_done(s, st, "record the fingerprint");
    }
    return commit(s, rc);
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
    if (begin(s) < 0)
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
        rc = step_done(s, st, "record a candidate");
    }
    rc = commit(s, rc);
    if (rc == 0 && cand_id(s, pos) <= 0)
        rc = MP_EDB;
    return rc;
}

int mp_store_candidate_done(struct mp_store *s, size_t pos, const struct mp_diagnosis *dg)
{
    int64_t id = cand_id(s, pos);
    if (id <= 0 || begin(s) < 0)
        return MP_EDB;
    sqlite3_stmt *st = NULL;
    int rc = mp_store_prep(s, &st, "UPDATE candidates SET done = 1 WHERE id = ?");
    if (rc == 0) {
        sqlite3_bind_int64(st, 1, id);
        rc = step_done(s, st, "finish a candidate");
    }
    if (rc == 0 && dg) {
        rc = mp_store_prep(s, &st,
                           "INSERT OR REPLACE INTO diagnoses(candidate_id, done, launch_blocking,"
                           " requests_clean, requests_required, confidence, throughput_ratio,"
                           " pinned_site, reasoning, note, launch_site)"
                           " VALUES (?,?,?,?,?,?,?,?,?,?,?)");
        if (rc == 0) {
            sqlite3_bind_int64(st, 1, id);
            sqlite3_bind_int(st, 2, dg->done);
            mp_store_bind_text(s, st, 3, dg->launch_blocking);
            sqlite3_bind_int64(st, 4, (sqlite3_int64)dg->requests_clean);
            sqlite3_bind_int64(st, 5, (sqlite3_int64)dg->requests_required);
            sqlite3_bind_double(st, 6, dg->confidence);
            sqlite3_bind_double(st, 7, dg->throughput_ratio);
            mp_store_bind_text(s, st, 8, dg->pinned_site);
            mp_store_bind_text(s, st, 9, dg->reasoning);
            mp_store_bind_text(s, st, 10, dg->note);
            mp_store_bind_text(s, st, 11, dg->launch_site);
            rc = step_done(s, st, "record a diagnosis");
        }
    }
    return commit(s, rc);
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

static void now_iso(char *out, size_t n)
{
    mp_iso8601(mp_wall_ns(), out, n);
}

int mp_store_attempt_begin(struct mp_store *s, size_t pos, int index, bool blocking,
                           const char *dir, int64_t *id)
{
    int64_t cid = cand_id(s, pos);
    if (cid <= 0 || begin(s) < 0)
        return MP_EDB;
    sqlite3_stmt *st = NULL;
    char iso[32];
    now_iso(iso, sizeof(iso));
    int rc = mp_store_prep(s, &st,
                           "INSERT INTO attempts(candidate_id, idx, launch_blocking, dir, started)"
                           " VALUES (?, ?, ?, ?, ?)");
    if (rc == 0) {
        sqlite3_bind_int64(st, 1, cid);
        sqlite3_bind_int(st, 2, index);
        sqlite3_bind_int(st, 3, blocking);
        sqlite3_bind_text(st, 4, dir, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 5, iso, -1, SQLITE_TRANSIENT);
        rc = step_done(s, st, "record an attempt");
        *id = sqlite3_last_insert_rowid(s->db);
    }
    return commit(s, rc);
}

int mp_store_attempt_spawned(struct mp_store *s, int64_t id, const char *command, pid_t pid,
                             unsigned long long pid_start, const char *marker)
{
    if (begin(s) < 0)
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
        rc = step_done(s, st, "record the engine's pid");
    }
    return commit(s, rc);
}

int mp_store_add_request(struct mp_store *s, int64_t attempt, const struct mp_store_request *rq)
{
    if (s->failed || s->readonly)
        return MP_EDB;
    if (!s->ins_req &&
        mp_store_prep(s, &s->ins_req,
                      "INSERT INTO requests(attempt_id, req_id, phase, outcome, http_status, start_s,"
                      " ttft_ms, e2e_ms, output_tokens, chunks, req_tok_s, itl, error, seq)"
                      " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)") < 0)
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
    if (rq->nitl)
        sqlite3_bind_blob64(st, 12, rq->itl_ms, rq->nitl * sizeof(double), SQLITE_TRANSIENT);
    mp_store_bind_text(s, st, 13, rq->error);
    sqlite3_bind_int64(st, 14, rq->seq);
    /* autocommit: one transaction per request */
    int r = sqlite3_step(st);
    sqlite3_reset(st);
    if (r != SQLITE_DONE)
        return mp_store_fail(s, "record a request");
    return 0;
}

/* Read the given server.log lines (sorted ascending not required). */
static void log_lines(const char *dir, const long *want, size_t n, char **out)
{
    char *path = xasprintf("%s/server.log", dir);
    FILE *f = fopen(path, "re");
    free(path);
    if (!f)
        return;
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    long no = 0;
    long maxw = 0;
    for (size_t i = 0; i < n; i++)
        maxw = MP_MAX(maxw, want[i]);
    while (no < maxw && (len = getline(&line, &cap, f)) >= 0) {
        no++;
        if (len > 0 && line[len - 1] == '\n')
            line[--len] = '\0';
        for (size_t i = 0; i < n; i++) {
            if (want[i] == no && !out[i])
                out[i] = xstrndup(line, len > 4096 ? 4096 : (size_t)len);
        }
    }
    free(line);
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
};
const size_t mp_store_nattempt_cols = MP_ARRAY_SIZE(mp_store_attempt_cols);

size_t mp_store_attempt_cols_in(int version)
{
    /* v7 added no attempts column (knob delivery is its own table; the
     * dlv_* columns of v5/v6 are read by load.c for those stores only) */
    if (version >= 8)
        return mp_store_nattempt_cols;
    if (version >= 6)
        return mp_store_nattempt_cols - 1;          /* v8: 1 more */
    if (version >= 5)
        return mp_store_nattempt_cols - 3;          /* v6: 2 more */
    return version >= 4 ? mp_store_nattempt_cols - 7  /* v5: 4 more */
                        : mp_store_nattempt_cols - 10; /* v4: 3 more */
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
    return step_done(s, st, "record a text");
}

int mp_store_attempt_finish(struct mp_store *s, int64_t id, const struct mp_attempt_result *r)
{
    if (begin(s) < 0)
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
    int rc = mp_store_prep(s, &st, sql.data);
    buf_release(&sql);
    if (rc == 0) {
        char iso[32];
        now_iso(iso, sizeof(iso));
        sqlite3_bind_text(st, 1, iso, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 2, mp_outcome_name(r->outcome), -1, SQLITE_STATIC);
        int i = 3;
        for (size_t k = 0; k < mp_store_nattempt_cols; k++)
            bind_col(s, st, i++, &mp_store_attempt_cols[k], r);
        sqlite3_bind_int64(st, i, id);
        rc = step_done(s, st, "finish an attempt");
    }
    for (size_t k = 0; rc == 0 && k < r->nphases; k++) {
        const struct mp_phase_result *ph = &r->phases[k];
        rc = mp_store_prep(s, &st,
                           "INSERT OR REPLACE INTO phases(attempt_id, pos, name, level, planned, ok,"
                           " failed, wall_s, tokens, tok_s, req_tok_s_p50)"
                           " VALUES (?,?,?,?,?,?,?,?,?,?,?)");
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
        rc = step_done(s, st, "record a phase");
    }
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
        rc = step_done(s, st, "record a knob delivery");
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
                rc = step_done(s, st, "record a log event");
            }
        }
        free(text[k]);
    }
    return commit(s, rc);
}

int mp_store_add_minimize_test(struct mp_store *s, unsigned test_no, const char *knobs,
                               const char *candidate, bool passed)
{
    if (begin(s) < 0)
        return MP_EDB;
    sqlite3_stmt *st = NULL;
    int rc = mp_store_prep(s, &st,
                           "INSERT INTO minimize_tests(test_no, knobs, candidate, passed) VALUES (?,?,?,?)");
    if (rc == 0) {
        sqlite3_bind_int(st, 1, (int)test_no);
        mp_store_bind_text(s, st, 2, knobs);
        mp_store_bind_text(s, st, 3, candidate);
        sqlite3_bind_int(st, 4, passed);
        rc = step_done(s, st, "record a minimization test");
    }
    return commit(s, rc);
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
        if (*n == cap) {
            cap = cap ? cap * 2 : 8;
            *out = xreallocarray(*out, cap, sizeof(**out));
        }
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
    if (begin(s) < 0)
        return MP_EDB;
    return commit(s, exec(s, "UPDATE attempts SET status = 'interrupted' WHERE status = 'running'"));
}
