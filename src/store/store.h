/* store.h - the evidence store: one SQLite database per run directory
 * (RUNDIR/moeprobe.db) that holds everything a run learns, written as it
 * happens, so that a crash or kill -9 of moeprobe loses at most the request
 * in flight. Reports are rendered from the database alone (see load.c).
 *
 * Database: WAL journal, synchronous=NORMAL (a committed transaction
 * survives the death of the process), foreign keys on, busy_timeout 5 s.
 * The schema is versioned with PRAGMA user_version and upgraded by forward
 * migrations when an older database is opened for writing (docs/store.md
 * lists the tables).
 *
 * Writers take RUNDIR/lock with flock(LOCK_EX|LOCK_NB) for as long as the
 * store is open: a second moeprobe on the same run directory is refused
 * (mp_store_open returns MP_ESTATE). Readers (moeprobe report) take no lock.
 *
 * Secrets: every text the store writes goes through the store's mask (see
 * mp_store_mask_*): values of secret variables become ***.
 *
 * Errors follow err.h: 0 or a negative code (MP_EDB for SQLite failures,
 * with the message in mp_store_errmsg(); -errno for file-system ones).
 * After the first write error the store is "failed": every later write
 * returns MP_EDB at once, and the database keeps its last committed state.
 * Loop-thread only. */
#ifndef MP_STORE_H
#define MP_STORE_H

#include "compat.h"

#include <sys/types.h>

#include "err.h"
#include "model/candidate.h"
#include "model/fingerprint.h"
#include "model/verdict.h"

struct sqlite3;
struct mp_report;
struct mp_fingerprint;
struct mp_diagnosis;
struct mp_attempt_result;

#define MP_STORE_DB_NAME "moeprobe.db"
#define MP_STORE_SCHEMA_VERSION 18

/* ---- the secret mask ---- */

/* A set of secret values to replace by *** wherever they appear, and the
 * structural rules of secret.h (URL passwords, Bearer/Authorization text,
 * quoted secret pairs), which apply to every text masked. */
struct mp_store_mask {
    struct mp_strv values;  /* longest first */
    bool first[256];        /* first bytes of values (a quick pre-check) */
};
/* Collect: values of every variable of our own environment whose name is
 * secret and whose value looks like one (secret.h), of the candidates'
 * secret env knobs and of secret flags among their args, and extra (e.g. the
 * API key, masked when >= 4 bytes; may be NULL). */
void mp_store_mask_init(struct mp_store_mask *m, const struct mp_candidate *cands, size_t ncands,
                        const char *extra);
/* Add the secret values of an argument vector (the server command):
 * mp_secret_scan_args's findings. */
void mp_store_mask_add_args(struct mp_store_mask *m, char *const *argv, size_t argc);
/* Add one value (>= 4 bytes; shorter ones are ignored). The adders accept
 * m == NULL (nothing to add to: no process mask in unit tests). */
void mp_store_mask_add(struct mp_store_mask *m, const char *value);
/* Add the candidates' secret env knobs and secret flag values. */
void mp_store_mask_add_cands(struct mp_store_mask *m, const struct mp_candidate *cands,
                             size_t ncands);
/* Add every value src knows to dst (src may be NULL). */
void mp_store_mask_merge(struct mp_store_mask *dst, const struct mp_store_mask *src);
void mp_store_mask_release(struct mp_store_mask *m);

/* The process's mask: what moeprobe shows on the terminal (every
 * mp_term_dup/mp_term_write text, with MP_MASK_WORDS: escape.h's
 * mp_term_set_mask) and what the scheduler copies into task logs. main
 * makes it once (mp_store_mask_process_init: the secret values of our
 * environment and of the server command after argv's "--"); a run adds the values its store's mask learns
 * (mp_store_mask_merge), so every channel masks the same values.
 * mp_store_mask_process() is NULL before init and after end. */
void mp_store_mask_process_init(char *const *argv, size_t argc);
struct mp_store_mask *mp_store_mask_process(void);
void mp_store_mask_process_end(void);

enum {
    MP_MASK_WORDS = 1, /* also NAME=VALUE words and --flag=VALUE (commands, knobs) */
    MP_MASK_CUT = 2,   /* s was cut at its end: a tail that begins a known value is masked */
};
/* Masked copy of s[0..len) (caller frees; NUL bytes are kept): every known
 * secret value and every structural match becomes ***; with MP_MASK_WORDS
 * also the value of every NAME=VALUE / --name=VALUE word (at a word start)
 * whose NAME is secret and whose value looks like one (not for engine
 * output, where "max_num_batched_tokens=8192" is no secret). *changed tells
 * whether anything was replaced (may be NULL); *outlen (may be NULL) gets
 * the length. m may be NULL (structural rules only). */
char *mp_store_mask_apply_ex(const struct mp_store_mask *m, const char *s, size_t len,
                             unsigned flags, bool *changed, size_t *outlen);
/* mp_store_mask_apply_ex with MP_MASK_WORDS when words is set. */
char *mp_store_mask_apply(const struct mp_store_mask *m, const char *s, size_t len, bool words,
                          bool *changed);

/* ---- opening ---- */

struct mp_store;

enum {
    MP_STORE_CREATE = 1,   /* create the database (and run directory) if missing */
    MP_STORE_LOCK = 2,     /* writer: take RUNDIR/lock; refused when another holds it */
    MP_STORE_READONLY = 4, /* reader: no lock, no migration, no writes */
};

/* Open RUNDIR's store. Returns 0 and *out, or: MP_ESTATE (another moeprobe
 * holds the lock), -ENOENT (no database and no MP_STORE_CREATE), MP_EDB
 * (corrupt, newer schema than this moeprobe, or an SQLite error), -errno.
 * d->msg says what happened, naming the file (d may be NULL).
 *
 * A reader (MP_STORE_READONLY) opens the file read-only ("file:...?mode=ro")
 * and, where the -shm file a WAL database needs cannot be created (read-only
 * media), immutable (mp_store_note then says what could not be read); it
 * refuses a file that is not an SQLite database, has no or a newer schema
 * version, or fails PRAGMA integrity_check. */
int mp_store_open(const char *run_dir, unsigned flags, struct mp_store **out, struct mp_diag *d);
/* Close (accepts NULL); releases the lock. */
void mp_store_close(struct mp_store *s);
/* The last error message ("" when none). */
const char *mp_store_errmsg(const struct mp_store *s);
/* What a reader should know about the data it reads ("" when nothing):
 * e.g. a store on read-only media whose -wal file could not be read. */
const char *mp_store_note(const struct mp_store *s);
/* The mask used for everything this store writes (borrowed, owned by s). */
struct mp_store_mask *mp_store_mask(struct mp_store *s);

/* Bring a raw database to schema version target (0 < target <=
 * MP_STORE_SCHEMA_VERSION) with the forward migrations, in one transaction.
 * Exposed for the migration test. 0 or MP_EDB. */
int mp_db_migrate(struct sqlite3 *db, int target, struct mp_diag *d);

/* ---- the run ---- */

/* Record the run: the subcommand, its arguments (secrets masked), the
 * version, start time and the working directory of this process (run.cwd:
 * a resume starts the engine there). Replaces nothing: a resumed run keeps
 * its row. */
int mp_store_run_begin(struct mp_store *s, const char *subcommand, char *const *argv, size_t argc,
                       const char *version, const char *started);
/* The stored subcommand and arguments (masked). 0, -ENOENT (no run), MP_EDB. */
int mp_store_run_argv(struct mp_store *s, char **subcommand, struct mp_strv *argv);
/* Where the run was started (*cwd: caller frees; NULL when not recorded,
 * e.g. a run of schema < 5). 0, -ENOENT (no run), MP_EDB. */
int mp_store_run_cwd(struct mp_store *s, char **cwd);
int mp_store_run_finish(struct mp_store *s, const char *finished, bool interrupted);
/* The report options of the run (--objective, --percentiles; npct = 0: not
 * given), loaded back by mp_store_load into rep->objective and
 * rep->percentiles. 0 or MP_EDB. */
int mp_store_set_report_opts(struct mp_store *s, enum mp_objective obj, const double *pct,
                             size_t npct);
/* Count a resume of this run. */
int mp_store_run_resumed(struct mp_store *s, const char *when);

/* Record the workload the run sends (replaces the stored one): every phase
 * (name, level, requests, duration, input tokens), max_tokens, input_tokens,
 * the API (chat), ignore_eos and the temperature; never the API key. Done
 * once per store session: later calls return 0 at once. 0 or MP_EDB. */
struct mp_workload;
int mp_store_set_workload(struct mp_store *s, const struct mp_workload *w);

/* Store the fingerprint (replaces the stored one). */
int mp_store_set_fingerprint(struct mp_store *s, const struct mp_fingerprint *fp,
                             const struct mp_fp_extra *x);

/* ---- candidates and attempts ---- */

/* Make sure candidate number pos (report index) is stored; 0 or MP_EDB. */
int mp_store_candidate(struct mp_store *s, size_t pos, const struct mp_candidate *c);
/* Mark candidate pos finished, with its diagnosis (may be NULL: none) and
 * the policy it was derived under (may be NULL: not recorded; a loaded
 * candidate with a policy gets its diagnosis derived again, the stored one
 * is for older readers). */
struct mp_diag_policy;
int mp_store_candidate_done(struct mp_store *s, size_t pos, const struct mp_diagnosis *dg,
                            const struct mp_diag_policy *pol);
/* Next free attempt number of candidate pos (counts every stored attempt,
 * interrupted ones included, so directories are never reused). */
int mp_store_next_index(struct mp_store *s, size_t pos, int *index);
/* A new attempt row (status "running"); *id for the calls below. */
int mp_store_attempt_begin(struct mp_store *s, size_t pos, int index, bool blocking,
                           const char *dir, int64_t *id);
/* The engine was spawned: pid, its start time (/proc/PID/stat field 22) and
 * the marker, so that a resume can find what a dead run left. */
int mp_store_attempt_spawned(struct mp_store *s, int64_t id, const char *command, pid_t pid,
                             unsigned long long pid_start,
                             const char *marker);

/* One finished request. */
struct mp_store_request {
    long seq;                  /* 1-based order of completion in the attempt (unique) */
    long req_id;               /* the load generator's id (restarts per phase client) */
    const char *phase;
    const char *outcome;       /* "ok" or a failure class */
    int http_status;
    double start_s, ttft_ms, e2e_ms; /* ttft_ms < 0: no token */
    int output_tokens, chunks;
    double req_tok_s;          /* < 0: not defined */
    const char *error;         /* NULL = none */
};
/* Insert one request in its own transaction. */
int mp_store_add_request(struct mp_store *s, int64_t attempt, const struct mp_store_request *rq);
/* The attempt is over: its summary, phases with their metric histograms
 * (non-empty buckets), generated texts and log events (read from
 * server.log), status "done" - one transaction. */
int mp_store_attempt_finish(struct mp_store *s, int64_t id, const struct mp_attempt_result *r);

/* The scoring pass of attempt (run/score.h), in one transaction (schema
 * v12; store/correct.c). 0 or MP_EDB. */
struct mp_score;
int mp_store_score_write(struct mp_store *s, int64_t attempt, const struct mp_score *x);
/* The run's --reference NAME (NULL: none), loaded back into
 * rep->cor.reference. 0 or MP_EDB. */
int mp_store_set_reference(struct mp_store *s, const char *name);

/* One minimization test (minimize). */
int mp_store_add_minimize_test(struct mp_store *s, unsigned test_no, const char *knobs,
                               const char *candidate, bool passed);

/* ---- bisect (schema v13; store/bisect.c) ---- */

enum mp_store_probe_outcome {
    MP_STORE_PROBE_OPEN = 0, /* started, not judged (the run stopped in it) */
    MP_STORE_PROBE_GOOD,
    MP_STORE_PROBE_BAD,
    MP_STORE_PROBE_SKIP,
};
/* One probe: a build, run as candidate row cand_pos (its attempts are the
 * evidence). Owned strings when loaded. */
struct mp_store_probe {
    long step;                 /* 1-based order of the probes */
    char *build;
    long pos;                  /* index in the bisection's builds */
    long cand_pos;             /* candidates.pos of its candidate row */
    enum mp_store_probe_outcome outcome;
    char *why;                 /* why good/bad/skip, or NULL */
    unsigned long required;    /* clean requests it was asked for (0: the workload) */
};
/* The bisection's settings and its probes (loaded: owned). */
struct mp_store_bisect {
    char *good, *bad;
    struct mp_strv builds;     /* oldest first, as given */
    char *by;                  /* "verdict", "resolved", "throughput" */
    double pct;                /* --by throughput:PCT */
    char *candidate;           /* the candidate's name */
    unsigned long probe_requests; /* --probe-requests (0: derived) */
    unsigned long required;    /* clean requests per probe, once known */
    bool required_set;
    char *required_why;
    double p_bad;              /* the bad build's per-request failure rate (0: none) */
    struct mp_store_probe *probes;
    size_t nprobes;
};
void mp_store_bisect_release(struct mp_store_bisect *b);
/* Record the bisection's settings (replacing them). 0, -ENOENT (a store
 * older than v13), MP_EDB. */
int mp_store_bisect_begin(struct mp_store *s, const struct mp_store_bisect *b);
/* The clean requests per probe and how they were chosen. 0 or MP_EDB. */
int mp_store_bisect_set_required(struct mp_store *s, unsigned long required, double p_bad,
                                 const char *why);
/* Insert or replace probe p (by step). 0 or MP_EDB. */
int mp_store_bisect_probe(struct mp_store *s, const struct mp_store_probe *p);
/* Load the bisection into *b (zeroed first). 0, -ENOENT (no bisection
 * here, or a store older than v13), MP_EDB. */
int mp_store_bisect_load(struct mp_store *s, struct mp_store_bisect *b);
/* `inspect --engine`'s compact JSON for the fingerprint (NULL clears);
 * nothing on a store older than v13. 0 or MP_EDB. */
int mp_store_set_engine_kernels(struct mp_store *s, const char *json);
/* ... and back (*json: caller frees; NULL when none). 0 or MP_EDB. */
int mp_store_load_engine_kernels(struct mp_store *s, char **json);

/* ---- resume ---- */

/* What a dead run may have left running: one row per attempt still
 * "running" (its engine's pid, the pid's start time, its marker). proc/
 * ends them (mp_proc_end_leftover); then mp_store_mark_interrupted. */
struct mp_store_leftover {
    pid_t pid;
    unsigned long long start;  /* 0 = unknown */
    char *marker;              /* "" = none */
};
/* 0 (caller frees with mp_store_leftovers_free) or MP_EDB. */
int mp_store_running_attempts(struct mp_store *s, struct mp_store_leftover **out, size_t *n);
void mp_store_leftovers_free(struct mp_store_leftover *l, size_t n);
/* Mark every attempt still "running" as "interrupted". 0 or MP_EDB. */
int mp_store_mark_interrupted(struct mp_store *s);
/* After the store failed on a write (full disk, file-size limit, I/O
 * error): try once to record why the run stops - every attempt still
 * "running" becomes "interrupted" (outcome interrupted, fail_class
 * "io-error", fail_message naming the error) and the run interrupted by an
 * I/O error (run.interrupted = 2, finished now) - after a TRUNCATE
 * checkpoint of the -wal (which frees what a file-size limit counted
 * against it). The store stays failed. 0, or MP_EDB when even that could
 * not be written (a disk without a free byte): the attempt then stays
 * "running", as after a kill -9, until a --resume. */
int mp_store_record_io_stop(struct mp_store *s);
/* Why an interrupted run stopped, when it was an I/O error
 * (run.interrupted = 2): the stopped attempt's message into *why (owned),
 * else NULL. 0 or MP_EDB. */
int mp_store_io_stop(struct mp_store *s, char **why);

/* ---- engine processes (schema v15; store/resume.c) ----
 * Every process of an engine's tree that moeprobe saw while the attempt
 * ran (descendants of its leader, orphans reparented to us: proc.h's
 * mp_proc_watch), by pid, start time (/proc/PID/stat field 22) and boot id,
 * written as they are seen, so that a later moeprobe on the run directory
 * can end those still alive after a kill -9 - a daemon that left the group
 * and cleared its environment included - and never a recycled pid. */
struct mp_store_proc {
    pid_t pid;
    unsigned long long start;
    char boot_id[40];          /* /proc/sys/kernel/random/boot_id, "" unknown */
};
/* Record n processes of attempt (duplicates ignored), one transaction.
 * 0 or MP_EDB. */
int mp_store_add_engine_procs(struct mp_store *s, int64_t attempt, const struct mp_store_proc *p,
                              size_t n);
/* Every recorded process of the run (caller frees *out). 0 or MP_EDB. */
int mp_store_engine_procs(struct mp_store *s, struct mp_store_proc **out, size_t *n);

/* ---- reading back ---- */

/* Load the whole run into rep (initialised by the caller with
 * mp_report_init): fingerprint, workload, candidates in order, finished
 * attempts with their phases' metric histograms (stored as buckets; for a
 * store older than v9 rebuilt from its raw request rows) (while the run is marked interrupted also the attempts
 * cut short by its signal), diagnoses. done (may be NULL) gets a malloc'ed array
 * of rep->n flags: candidate finished. Returns 0, -ENOENT or MP_EDB. */
int mp_store_load(struct mp_store *s, struct mp_report *rep, bool **done);
/* Stored fingerprint extras (zeroed when none). */
int mp_store_load_fp_extra(struct mp_store *s, struct mp_fp_extra *x);

#endif
