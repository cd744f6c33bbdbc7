/* internal.h - shared between the store's files; not for other modules. */
#ifndef MP_STORE_INTERNAL_H
#define MP_STORE_INTERNAL_H

#include "compat.h"

#include <sqlite3.h>
#include <stddef.h>

#include "buf.h"
#include "clock.h"
#include "model/attempt.h"
#include "model/workload.h"
#include "store/store.h"

struct mp_cand_report;

struct mp_store {
    sqlite3 *db;
    int lock_fd;
    bool readonly, failed;
    bool immutable;            /* reader on read-only media (immutable=1) */
    int version;
    char err[512];
    char note[1024];           /* what a reader should know (mp_store_note) */
    struct mp_store_mask mask;
    sqlite3_stmt *ins_req;     /* cached request insert */
    bool workload_set;         /* mp_store_set_workload ran in this session */
    int64_t *cand_ids;         /* report position -> candidates.id */
    size_t ncand_ids;
};

enum mp_store_coltype { MP_COL_STR, MP_COL_LONG, MP_COL_ULONG, MP_COL_INT, MP_COL_DBL, MP_COL_BOOL, MP_COL_STRV,
                           MP_COL_GPU /* struct mp_gpu_telemetry as JSON text */,
                           MP_COL_FAULT /* struct mp_gpu_fault as JSON text (model/gpufault.h) */,
                           MP_COL_OBS /* struct mp_attempt_obs as JSON text (obs.c) */,
                           MP_COL_RESMORE /* struct mp_resolved's drafter, other selections,
                                             tallies... as JSON text (model/attempt.h) */ };
struct mp_store_col {
    const char *name;
    enum mp_store_coltype type;
    size_t off;
};
/* obs.c: an attempt's observations as JSON (every string masked with m;
 * NULL when they were not recorded), and back (NULL or damaged text: not
 * recorded). */
struct mp_attempt_obs;
char *mp_store_obs_json(const struct mp_store_mask *m, const struct mp_attempt_obs *o);
void mp_store_obs_read(struct mp_attempt_obs *o, const char *text);
/* attempts columns that mirror struct mp_attempt_result fields */
extern const struct mp_store_col mp_store_attempt_cols[];
extern const size_t mp_store_nattempt_cols;
/* Attempt columns a schema version has (the last ones came with later versions). */
size_t mp_store_attempt_cols_in(int version);

/* ---- db.c: the SQLite helpers, under every other file of the store ---- */

/* The store fails (sticky) with what and SQLite's message; returns MP_EDB. */
int mp_store_fail(struct mp_store *s, const char *what);
int mp_store_prep(struct mp_store *s, sqlite3_stmt **st, const char *sql);
void mp_store_bind_text(struct mp_store *s, sqlite3_stmt *st, int i, const char *v);
char *mp_store_strv_json(const struct mp_strv *v);
/* sqlite3_step once and finalize: 0, or MP_EDB (the store fails with what). */
int mp_store_step_done(struct mp_store *s, sqlite3_stmt *st, const char *what);
/* sqlite3_exec: 0 or MP_EDB. */
int mp_store_exec(struct mp_store *s, const char *sql);
/* BEGIN IMMEDIATE (MP_EDB on a failed or read-only store) ... COMMIT when rc
 * is 0, else ROLLBACK; mp_store_commit returns 0 or MP_EDB. */
int mp_store_begin(struct mp_store *s);
int mp_store_commit(struct mp_store *s, int rc);
/* The current UTC time as ISO 8601. */
void mp_store_now_iso(char *out, size_t n);
/* The end of a read loop: r, the last sqlite3_step result, must be
 * SQLITE_DONE (or SQLITE_ROW when the loop stopped early); anything else is
 * an error, never the end of the data. Finalizes st. 0 or MP_EDB. */
int mp_store_read_end(struct mp_store *s, sqlite3_stmt *st, int r, const char *what);

/* metrics.c: delete an attempt's stored histograms (inside the caller's
 * transaction); store one phase's non-empty histograms as their summary
 * and non-empty buckets. 0 or MP_EDB. */
int mp_store_clear_metrics(struct mp_store *s, int64_t attempt);
int mp_store_put_metrics(struct mp_store *s, int64_t attempt, size_t pos,
                         const struct mp_phase_metrics *m);
/* Fill r's phases' histograms (r->nphases phases loaded): from the stored
 * buckets, or for the phases with legacy[k] set (no stored histograms:
 * written before schema v9) rebuilt from the raw request rows. 0 or MP_EDB. */
int mp_store_load_metrics(struct mp_store *s, int64_t attempt, struct mp_attempt_result *r,
                          const bool *legacy);
/* The stored workload into rep->workload / has_workload (false: none, or a
 * store older than v9). 0 or MP_EDB. */
int mp_store_load_workload(struct mp_store *s, struct mp_report *rep);

/* resume.c: the candidate's engine starts that an interruption cut short
 * and the load did not take as results (c->cut_*; see model/report.h);
 * interrupted: the run is still interrupted (its interrupted attempts with
 * a summary were loaded). 0 or MP_EDB. */
int mp_store_load_cut(struct mp_store *s, int64_t cand_id, bool interrupted,
                      struct mp_cand_report *c);

/* Server metrics per phase (srvmetrics.c): the table comes with this schema
 * version; write / load return 0 or MP_EDB and do nothing before it. */
#define MP_STORE_SRVM_VERSION 10
extern const char mp_store_srvm_schema[];
int mp_store_srvm_write(struct mp_store *s, int64_t attempt_id, const struct mp_attempt_result *r);
int mp_store_srvm_load(struct mp_store *s, int64_t attempt_id, struct mp_attempt_result *r);

/* bisect tables and fingerprint.engine_kernels (bisect.c) */
#define MP_STORE_BISECT_VERSION 13
extern const char mp_store_bisect_schema[];
extern const char mp_store_procs_schema[];   /* v15: resume.c */

/* The scoring pass (correct.c): its tables come with this schema version;
 * write / load return 0 or MP_EDB and do nothing before it. */
#define MP_STORE_SCORE_VERSION 17
extern const char mp_store_score_schema[];
int mp_store_score_load(struct mp_store *s, int64_t attempt, struct mp_attempt_result *r);
int mp_store_load_reference(struct mp_store *s, struct mp_report *rep);

#endif
