/* schema.c - the evidence store's schema: every version's forward
 * migration (docs/store.md lists the tables) and mp_db_migrate. */
#include "store/internal.h"

#include <stdio.h>

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

/* Version 9: one bounded evidence path. Each phase's latency and rate
 * distributions as histogram buckets (only the non-empty ones) with their
 * exact summaries, instead of raw samples; the per-request inter-token gaps
 * (requests.itl) are no longer written, so the database grows with requests,
 * not with the events an engine sends. phases.hist = 1 marks a phase whose
 * histograms are stored; NULL (phases of older versions): load.c rebuilds
 * them from the raw request rows. And the workload the run sent (never the
 * API key). */
static const char schema_v9[] =
    "ALTER TABLE phases ADD COLUMN hist INTEGER;"
    "ALTER TABLE phases ADD COLUMN prompt_tokens INTEGER;" /* usage.prompt_tokens, summed */
    "ALTER TABLE phases ADD COLUMN prompt_n INTEGER;"      /* ... over this many requests */
    "CREATE TABLE metrics("
    " attempt_id INTEGER NOT NULL REFERENCES attempts(id) ON DELETE CASCADE,"
    " phase_pos INTEGER NOT NULL,"
    " metric TEXT NOT NULL CHECK (metric IN ('ttft_ms','tpot_ms','itl_ms','e2e_ms','req_tok_s')),"
    " n INTEGER NOT NULL, sum REAL NOT NULL, m2 REAL NOT NULL, min REAL NOT NULL,"
    " max REAL NOT NULL, PRIMARY KEY (attempt_id, phase_pos, metric));"
    "CREATE TABLE metric_buckets("
    " attempt_id INTEGER NOT NULL, phase_pos INTEGER NOT NULL, metric TEXT NOT NULL,"
    " bucket INTEGER NOT NULL CHECK (bucket >= 0), count INTEGER NOT NULL CHECK (count > 0),"
    " PRIMARY KEY (attempt_id, phase_pos, metric, bucket),"
    " FOREIGN KEY (attempt_id, phase_pos, metric)"
    "  REFERENCES metrics(attempt_id, phase_pos, metric) ON DELETE CASCADE) WITHOUT ROWID;"
    "CREATE TABLE workload("
    " id INTEGER PRIMARY KEY CHECK (id = 1), max_tokens INTEGER NOT NULL,"
    " input_tokens INTEGER NOT NULL, chat INTEGER NOT NULL, ignore_eos INTEGER NOT NULL,"
    " temperature REAL NOT NULL);"
    "CREATE TABLE workload_phases("
    " pos INTEGER PRIMARY KEY, name TEXT NOT NULL, level INTEGER NOT NULL,"
    " requests INTEGER NOT NULL, duration_s REAL NOT NULL, input_tokens INTEGER NOT NULL);";

/* Version 11: the report options the run was started with (--objective,
 * --percentiles), so that every report of the run - its own, `moeprobe
 * report`, a scale-out merge - ranks and summarises as the run asked,
 * whatever way the options were spelled. NULL: not given (the defaults). */
static const char schema_v11[] = "ALTER TABLE run ADD COLUMN objective TEXT;"
                                 "ALTER TABLE run ADD COLUMN percentiles TEXT;";

/* Version 12: what an attempt learned about a GPU fault beyond the
 * traceback (model/gpufault.h as JSON: core-dump kernels, Xids, why a
 * source could not be read). */
static const char schema_v12[] = "ALTER TABLE attempts ADD COLUMN gpu_fault TEXT;";

/* Version 14: observations in the store, decisions in verdict/ (#28): an
 * attempt's observations (JSON: what moeprobe saw, the engine's exit, the
 * log's crash and reasons) from which its failure is judged again, and the
 * diagnosis policy each candidate ran under, from which its diagnosis is
 * derived again (the diagnoses row's conclusions stay for older readers). */
static const char schema_v14[] = "ALTER TABLE attempts ADD COLUMN observations TEXT;"
                                 "ALTER TABLE diagnoses ADD COLUMN policy TEXT;";

/* Version 16: what the engine resolved beyond the target's MoE, dense and
 * attention selections - the speculative drafter's own MoE selection, the
 * other selection lines, the FlashInfer autotuner's failed tactics, the
 * device the log names, its fatal messages - as JSON (model/attempt.h). */
static const char schema_v16[] = "ALTER TABLE attempts ADD COLUMN resolved_more TEXT;";

/* Version 18: the run's own set-up (store/runinfo.c): what the candidates
 * inherited from the environment and --clean-env, the engine version the
 * preset was fitted to, why the run stopped early, a candidate's
 * not-applicable reason, the workload's timeouts. */
static const char schema_v18[] =
    "CREATE TABLE run_info("
    " id INTEGER PRIMARY KEY CHECK (id = 1), clean_env INTEGER NOT NULL DEFAULT 0,"
    " preset_version TEXT, stop_reason TEXT);"
    "CREATE TABLE inherited_env("
    " pos INTEGER PRIMARY KEY, name TEXT NOT NULL, value TEXT NOT NULL,"
    " passed INTEGER NOT NULL, acts INTEGER NOT NULL, affects TEXT, note TEXT);"
    "ALTER TABLE candidates ADD COLUMN not_applicable TEXT;"
    "ALTER TABLE workload ADD COLUMN ready_timeout_s REAL;"
    "ALTER TABLE workload ADD COLUMN stall_timeout_s REAL;";

static const char *const migrations[] = {schema_v1, schema_v2, schema_v3, schema_v4, schema_v5,
                                         schema_v6, schema_v7, schema_v8, schema_v9,
                                         mp_store_srvm_schema /* v10: store/srvmetrics.c */,
                                         schema_v11, schema_v12,
                                         mp_store_bisect_schema /* v13: store/bisect.c */,
                                         schema_v14,
                                         mp_store_procs_schema /* v15: store/resume.c */,
                                         schema_v16,
                                         mp_store_score_schema /* v17: store/correct.c */,
                                         schema_v18};

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

