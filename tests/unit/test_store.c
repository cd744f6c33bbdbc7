/* Unit tests: the evidence store - schema migration from version 1, the
 * lock, a round trip through the database, secret masking, and the
 * fingerprint with a fake NVML (a discrete GPU, a unified-memory GB10, no
 * GPU) and from a checkpoint folder. */
#include "compat.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hist.h"
#include "model/score.h"
#include "report/report.h"
#include "store/store.h"
#include "version.h"
#include "xalloc.h"

const char mp_version[] = "0.0.0-test";

static char *tmpdir(void)
{
    char t[] = "/tmp/test-store.XXXXXX";
    assert_non_null(mkdtemp(t));
    return xstrdup(t);
}

static void rmtree(const char *d)
{
    char *cmd = xasprintf("rm -rf '%s'", d);
    assert_int_equal(system(cmd), 0);
    free(cmd);
}

static void test_migrate_from_v1(void **state)
{
    (void)state;
    char *dir = tmpdir();
    char *path = xasprintf("%s/%s", dir, MP_STORE_DB_NAME);
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(mp_db_migrate(db, 1, NULL), 0);
    assert_int_equal(sqlite3_exec(db,
                                  "INSERT INTO run(id, subcommand, argv, moeprobe_version, started)"
                                  " VALUES (1, 'qualify', '[\"--\",\"x\"]', '0.0.9', 'then');"
                                  "INSERT INTO fingerprint(id, gpu) VALUES (1, 'NVIDIA GB10');"
                                  "INSERT INTO candidates(pos, name, env, args, done)"
                                  " VALUES (0, 'old', '[]', '[]', 1);",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(db);

    struct mp_store *s = NULL;
    assert_int_equal(mp_store_open(dir, MP_STORE_LOCK, &s, NULL), 0);
    /* migrated: the version-2 table and columns exist, the old rows are kept */
    assert_int_equal(mp_store_add_minimize_test(s, 1, "A=1", "old", true), 0);
    struct mp_fp_extra x;
    assert_int_equal(mp_store_load_fp_extra(s, &x), 0);
    assert_int_equal(x.gpu_memory_mib, -1);
    mp_fp_extra_release(&x);
    struct mp_report rep;
    mp_report_init(&rep, dir);
    bool *done = NULL;
    assert_int_equal(mp_store_load(s, &rep, &done), 0);
    assert_int_equal(rep.n, 1);
    assert_string_equal(rep.c[0].cand.name, "old");
    assert_true(done[0]);
    assert_string_equal(rep.fp.gpu, "NVIDIA GB10");
    free(done);
    mp_report_release(&rep);
    mp_store_close(s);

    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int(st, 0), MP_STORE_SCHEMA_VERSION);
    sqlite3_finalize(st);
    /* a newer schema than ours is refused, not damaged */
    assert_int_equal(sqlite3_exec(db, "PRAGMA user_version = 99", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    struct mp_diag d = MP_DIAG_INIT;
    assert_int_equal(mp_store_open(dir, 0, &s, &d), MP_EDB);
    assert_non_null(strstr(d.msg, "newer"));
    free(path);
    rmtree(dir);
    free(dir);
}

/* A reader of this version reads a version-3 store as it is: no v4 column
 * (linear_kernels, launch_site, ...) is asked of it. */
static void test_read_v3_unmigrated(void **state)
{
    (void)state;
    char *dir = tmpdir();
    char *path = xasprintf("%s/%s", dir, MP_STORE_DB_NAME);
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(mp_db_migrate(db, 3, NULL), 0);
    assert_int_equal(sqlite3_exec(db,
                                  "INSERT INTO run(id, subcommand, argv, moeprobe_version, started)"
                                  " VALUES (1, 'qualify', '[]', '0.0.9', 'then');"
                                  "INSERT INTO candidates(pos, name, env, args, done)"
                                  " VALUES (0, 'old', '[]', '[]', 1);"
                                  "INSERT INTO attempts(candidate_id, idx, launch_blocking, dir, status,"
                                  " outcome, moe_backend) VALUES (1, 1, 0, 'attempts/old-1', 'done',"
                                  " 'crashed', 'MARLIN');"
                                  "INSERT INTO diagnoses(candidate_id, done, pinned_site)"
                                  " VALUES (1, 1, 'csrc/x.cu');",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(db);
    struct mp_store *s = NULL;
    assert_int_equal(mp_store_open(dir, 0, &s, NULL), 0);
    struct mp_report rep;
    mp_report_init(&rep, dir);
    bool *done = NULL;
    assert_int_equal(mp_store_load(s, &rep, &done), 0);
    assert_int_equal(rep.c[0].nattempts, 1);
    assert_string_equal(rep.c[0].attempts[0].res.moe_backend, "MARLIN");
    assert_int_equal(rep.c[0].attempts[0].res.linear_kernels.n, 0);
    assert_null(rep.c[0].attempts[0].launch_site);
    assert_string_equal(rep.c[0].diag.pinned_site, "csrc/x.cu");
    assert_null(rep.c[0].diag.launch_site);
    free(done);
    mp_report_release(&rep);
    mp_store_close(s);
    free(path);
    rmtree(dir);
    free(dir);
}

static void test_lock_and_roundtrip(void **state)
{
    (void)state;
    char *dir = tmpdir();
    char *run = xasprintf("%s/run", dir);
    struct mp_store *s = NULL, *s2 = NULL;
    struct mp_diag d = MP_DIAG_INIT;
    assert_int_equal(mp_store_open(run, MP_STORE_LOCK, &s, &d), -ENOENT);
    assert_int_equal(mp_store_open(run, MP_STORE_CREATE | MP_STORE_LOCK, &s, NULL), 0);
    assert_int_equal(mp_store_open(run, MP_STORE_LOCK, &s2, &d), MP_ESTATE);
    assert_non_null(strstr(d.msg, "in use"));

    struct mp_candidate c;
    assert_int_equal(mp_candidate_from_knobs("tok", "HF_TOKEN=hunter22 --moe-backend marlin", &c, NULL), 0);
    mp_store_mask_init(mp_store_mask(s), &c, 1, NULL);
    char *argv[] = {"--candidate", "tok: HF_TOKEN=hunter22 --moe-backend marlin", "--", "vllm"};
    assert_int_equal(mp_store_run_begin(s, "qualify", argv, 4, "9.9", "t0"), 0);
    assert_int_equal(mp_store_candidate(s, 0, &c), 0);
    int idx = 0;
    assert_int_equal(mp_store_next_index(s, 0, &idx), 0);
    assert_int_equal(idx, 1);
    int64_t id = 0;
    assert_int_equal(mp_store_attempt_begin(s, 0, idx, false, "/x/tok-1", &id), 0);
    struct mp_store_request rq = {.seq = 1, .req_id = 7, .phase = "warmup", .outcome = "ok",
                                  .http_status = 200, .ttft_ms = 12, .e2e_ms = 40,
                                  .output_tokens = 3, .req_tok_s = 50,
                                  .error = "echo hunter22"};
    assert_int_equal(mp_store_add_request(s, id, &rq), 0);
    assert_int_equal(mp_store_add_request(s, id, &rq), MP_EDB); /* duplicate seq */
    /* after a write error the store is failed: no more writes */
    rq.seq = 2;
    assert_int_equal(mp_store_add_request(s, id, &rq), MP_EDB);
    assert_non_null(strstr(mp_store_errmsg(s), "UNIQUE"));
    mp_store_close(s);

    assert_int_equal(mp_store_open(run, MP_STORE_LOCK, &s, NULL), 0);
    struct mp_store_leftover *left = NULL;
    size_t nleft = 9;
    /* the attempt never finished: a dead run's leftover, with no engine recorded */
    assert_int_equal(mp_store_running_attempts(s, &left, &nleft), 0);
    assert_int_equal(nleft, 1);
    assert_int_equal(left[0].pid, 0);
    assert_string_equal(left[0].marker, "");
    mp_store_leftovers_free(left, nleft);
    assert_int_equal(mp_store_mark_interrupted(s), 0);
    assert_int_equal(mp_store_running_attempts(s, &left, &nleft), 0);
    assert_int_equal(nleft, 0);
    mp_store_leftovers_free(left, nleft);
    char *sub = NULL;
    struct mp_strv av = MP_STRV_INIT;
    assert_int_equal(mp_store_run_argv(s, &sub, &av), 0);
    assert_string_equal(sub, "qualify");
    assert_int_equal(av.n, 4);
    assert_string_equal(av.v[1], "tok: HF_TOKEN=*** --moe-backend marlin");
    free(sub);
    mp_strv_release(&av);
    assert_int_equal(mp_store_next_index(s, 0, &idx), 0);
    assert_int_equal(idx, 2); /* the interrupted attempt's number is not reused */
    struct mp_report rep;
    mp_report_init(&rep, run);
    assert_int_equal(mp_store_load(s, &rep, NULL), 0);
    assert_int_equal(rep.n, 1);
    assert_int_equal(rep.c[0].nattempts, 0); /* interrupted attempts are no evidence */
    assert_string_equal(rep.c[0].cand.env.v[0], "HF_TOKEN=***");
    mp_report_release(&rep);
    mp_store_close(s);
    mp_candidate_release(&c);

    /* nothing in the database holds the secret */
    char *cmd = xasprintf("grep -rqa hunter22 '%s'", run);
    assert_int_not_equal(system(cmd), 0);
    free(cmd);
    free(run);
    rmtree(dir);
    free(dir);
}

/* The run's report options (schema v11) come back with the run: the
 * objective and the percentiles as given, the defaults when not given or
 * when the store holds what this version does not know. */
static void test_report_opts(void **state)
{
    (void)state;
    char *dir = tmpdir();
    char *run = xasprintf("%s/run", dir);
    struct mp_store *s = NULL;
    assert_int_equal(mp_store_open(run, MP_STORE_CREATE | MP_STORE_LOCK, &s, NULL), 0);
    assert_int_equal(mp_store_run_begin(s, "qualify", NULL, 0, "9.9", "t0"), 0);
    struct mp_report rep;
    mp_report_init(&rep, run);
    assert_int_equal(mp_store_load(s, &rep, NULL), 0); /* nothing recorded: the defaults */
    assert_int_equal(rep.objective, MP_OBJ_SEQUENTIAL);
    assert_int_equal(rep.npercentiles, 0);
    mp_report_release(&rep);
    const double pct[] = {50, 95, 99.9};
    assert_int_equal(mp_store_set_report_opts(s, MP_OBJ_TPOT, pct, 3), 0);
    mp_store_close(s);

    assert_int_equal(mp_store_open(run, MP_STORE_READONLY, &s, NULL), 0);
    mp_report_init(&rep, run);
    assert_int_equal(mp_store_load(s, &rep, NULL), 0);
    assert_int_equal(rep.objective, MP_OBJ_TPOT);
    assert_int_equal(rep.npercentiles, 3);
    assert_true(rep.percentiles[0] == 50 && rep.percentiles[1] == 95 && rep.percentiles[2] == 99.9);
    mp_report_release(&rep);
    mp_store_close(s);

    /* what a later version might write: an unknown objective, a bad list */
    char *db = xasprintf("%s/moeprobe.db", run);
    sqlite3 *h = NULL;
    assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
    assert_int_equal(sqlite3_exec(h, "UPDATE run SET objective = 'cost', percentiles = '50,,200'",
                                  NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(h);
    assert_int_equal(mp_store_open(run, MP_STORE_READONLY, &s, NULL), 0);
    mp_report_init(&rep, run);
    assert_int_equal(mp_store_load(s, &rep, NULL), 0);
    assert_int_equal(rep.objective, MP_OBJ_SEQUENTIAL);
    assert_int_equal(rep.npercentiles, 0);
    mp_report_release(&rep);
    mp_store_close(s);
    free(db);
    free(run);
    rmtree(dir);
    free(dir);
}

static void test_mask(void **state)
{
    (void)state;
    struct mp_store_mask m;
    setenv("TEST_STORE_API_KEY", "sk-abcdef123456", 1);
    mp_store_mask_init(&m, NULL, 0, "bearer-xyz-789");
    unsetenv("TEST_STORE_API_KEY");
    bool ch = false;
    const char *line = "INFO key=sk-abcdef123456 auth bearer-xyz-789 max_num_batched_tokens=8192";
    char *o = mp_store_mask_apply(&m, line, strlen(line), false, &ch);
    assert_true(ch);
    assert_string_equal(o, "INFO key=*** auth *** max_num_batched_tokens=8192");
    free(o);
    const char *w = "a: MY_SECRET=v1-long-value --max-num-batched-tokens=8192 PLAIN=x";
    o = mp_store_mask_apply(&m, w, strlen(w), true, &ch);
    assert_string_equal(o, "a: MY_SECRET=*** --max-num-batched-tokens=8192 PLAIN=x");
    free(o);
    o = mp_store_mask_apply(&m, "nothing", 7, true, &ch);
    assert_false(ch);
    assert_string_equal(o, "nothing");
    free(o);
    mp_store_mask_release(&m);
}

/* ---- fake NVML ---- */
static int fake_mem_rc;
static unsigned fake_count;
static int f_init(void) { return 0; }
static int f_shutdown(void) { return 0; }
static int f_drv(char *b, unsigned n) { snprintf(b, n, "580.95.05"); return 0; }
static int f_cuda(int *v) { *v = 13000; return 0; }
static int f_count(unsigned *n) { *n = fake_count; return 0; }
static int f_handle(unsigned i, void **d) { (void)i; *d = &fake_count; return 0; }
static int f_name(void *d, char *b, unsigned n) { (void)d; snprintf(b, n, fake_mem_rc ? "NVIDIA GB10" : "NVIDIA RTX PRO 6000"); return 0; }
static int f_cc(void *d, int *a, int *b) { (void)d; *a = 12; *b = fake_mem_rc ? 1 : 0; return 0; }
static int f_mem(void *d, unsigned long long m[3])
{
    (void)d;
    if (fake_mem_rc)
        return fake_mem_rc; /* NVML_ERROR_NOT_SUPPORTED */
    m[0] = 96ULL << 30;
    return 0;
}

static void test_fingerprint_nvml(void **state)
{
    (void)state;
    struct mp_nvml_api api = {f_init, f_shutdown, f_drv, f_cuda, f_count, f_handle, f_name, f_cc, f_mem};
    struct mp_fingerprint fp;
    struct mp_fp_extra x;
    memset(&fp, 0, sizeof(fp));
    memset(&x, 0, sizeof(x));
    fake_count = 1;
    fake_mem_rc = 0;
    assert_int_equal(mp_fingerprint_from_nvml(&api, &fp, &x), 0);
    assert_string_equal(fp.gpu, "NVIDIA RTX PRO 6000");
    assert_string_equal(fp.compute_capability, "12.0");
    assert_string_equal(fp.driver, "580.95.05");
    assert_string_equal(fp.cuda, "13.0");
    assert_int_equal(x.gpu_memory_mib, 96 * 1024);
    assert_string_equal(x.gpu_source, "nvml");
    /* GB10: unified memory, NVML says NOT_SUPPORTED for memory figures */
    struct mp_fingerprint fp2;
    memset(&fp2, 0, sizeof(fp2));
    fake_mem_rc = 3;
    assert_int_equal(mp_fingerprint_from_nvml(&api, &fp2, &x), 0);
    assert_string_equal(fp2.gpu, "NVIDIA GB10");
    assert_string_equal(fp2.compute_capability, "12.1");
    assert_int_equal(x.gpu_memory_mib, -1);
    /* different machines are never compared */
    char *why = mp_fingerprint_mismatch(&fp, &fp2, true);
    assert_non_null(why);
    assert_non_null(strstr(why, "GPU"));
    free(why);
    assert_null(mp_fingerprint_mismatch(&fp, &fp, false));
    /* no GPU: NVML loads but lists none */
    fake_count = 0;
    struct mp_fingerprint fp3;
    memset(&fp3, 0, sizeof(fp3));
    assert_true(mp_fingerprint_from_nvml(&api, &fp3, &x) < 0);
    assert_null(fp3.gpu);
    /* without NVML and without nvidia-smi */
    setenv("MOEPROBE_NVML_LIB", "none", 1);
    char *path = getenv("PATH") ? xstrdup(getenv("PATH")) : NULL;
    setenv("PATH", "/nonexistent", 1);
    struct mp_fp_extra x4;
    mp_fingerprint_detect_ex(&fp3, &x4);
    assert_string_equal(fp3.gpu, "no NVIDIA GPU");
    assert_string_equal(x4.gpu_source, "none");
    assert_non_null(fp3.host_arch);
    if (path)
        setenv("PATH", path, 1);
    free(path);
    unsetenv("MOEPROBE_NVML_LIB");
    mp_fp_extra_release(&x);
    mp_fp_extra_release(&x4);
    struct mp_report r;
    mp_report_init(&r, ".");
    r.fp = fp;
    mp_report_release(&r);
    mp_report_init(&r, ".");
    r.fp = fp2;
    mp_report_release(&r);
    mp_report_init(&r, ".");
    r.fp = fp3;
    mp_report_release(&r);
}

static void test_model_dir(void **state)
{
    (void)state;
    char *dir = tmpdir();
    char *p = xasprintf("%s/config.json", dir);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs("{\"quantization_config\": {\"quant_method\": \"modelopt\", \"quant_algo\": \"NVFP4\"}}", f);
    fclose(f);
    char *q = mp_fingerprint_model_dir(dir);
    assert_string_equal(q, "modelopt (NVFP4)");
    free(q);
    unlink(p);
    free(p);
    q = mp_fingerprint_model_dir(dir);
    assert_null(q);
    rmtree(dir);
    free(dir);
}

/* A reader refuses what it could only misread, naming the file: no
 * database, a foreign database, a damaged one (integrity_check, and pages
 * that only the load meets); a path with URI characters still opens. */
static void test_reader_refuses_damage(void **state)
{
    (void)state;
    char *dir = tmpdir();
    char *run = xasprintf("%s/run ?#%%41", dir); /* '?', '#', '%' are URI syntax */
    char *path = xasprintf("%s/%s", run, MP_STORE_DB_NAME);
    struct mp_store *s = NULL;
    struct mp_diag d = MP_DIAG_INIT;
    assert_int_equal(mp_store_open(run, MP_STORE_CREATE | MP_STORE_LOCK, &s, NULL), 0);
    assert_int_equal(mp_store_run_begin(s, "qualify", NULL, 0, "0.0.0", "now"), 0);
    struct mp_candidate c;
    for (int i = 0; i < 200; i++) {
        char name[64];
        snprintf(name, sizeof(name), "cand-%03d-padding-padding-padding", i);
        assert_int_equal(mp_candidate_from_knobs(name, "", &c, NULL), 0);
        assert_int_equal(mp_store_candidate(s, (size_t)i, &c), 0);
        mp_candidate_release(&c);
    }
    mp_store_close(s);

    /* intact: opens read-only, loads */
    assert_int_equal(mp_store_open(run, MP_STORE_READONLY, &s, &d), 0);
    assert_string_equal(mp_store_note(s), "");
    struct mp_report rep;
    mp_report_init(&rep, run);
    assert_int_equal(mp_store_load(s, &rep, NULL), 0);
    assert_int_equal(rep.n, 200);
    mp_report_release(&rep);
    mp_store_close(s);

    /* the candidates' last page overwritten: PRAGMA integrity_check fails */
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    long size = ftell(f);
    assert_true(size > 8 * 4096);
    char junk[4096];
    memset(junk, 0xA5, sizeof(junk));
    assert_int_equal(fseek(f, size - 4096, SEEK_SET), 0);
    assert_int_equal(fwrite(junk, 1, sizeof(junk), f), sizeof(junk));
    fclose(f);
    assert_int_equal(mp_store_open(run, MP_STORE_READONLY, &s, &d), MP_EDB);
    assert_non_null(strstr(d.msg, MP_STORE_DB_NAME));
    assert_non_null(strstr(d.msg, "damaged"));

    /* not a database; an SQLite database that is not ours */
    f = fopen(path, "wb");
    assert_non_null(f);
    for (int i = 0; i < 100; i++)
        fputs("plain text, not an evidence store\n", f);
    fclose(f);
    assert_int_equal(mp_store_open(run, MP_STORE_READONLY, &s, &d), MP_EDB);
    assert_non_null(strstr(d.msg, "not an SQLite database"));
    unlink(path);
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "CREATE TABLE x(y)", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    assert_int_equal(mp_store_open(run, MP_STORE_READONLY, &s, &d), MP_EDB);
    assert_non_null(strstr(d.msg, "not a moeprobe evidence store"));
    assert_null(strstr(d.msg, "-1"));
    rmtree(dir);
    free(path);
    free(run);
    free(dir);
}

/* Knob delivery: a v5 store's three JSON lists are read as they are by a
 * read-only opener, carried into v7's knob_delivery table by the migration
 * (through v6), and a v7 attempt round-trips through the table. */
static void load_one(const char *dir, unsigned flags, struct mp_report *rep)
{
    struct mp_store *s = NULL;
    assert_int_equal(mp_store_open(dir, flags, &s, NULL), 0);
    mp_report_init(rep, dir);
    assert_int_equal(mp_store_load(s, rep, NULL), 0);
    mp_store_close(s);
}

static void test_delivery_migration(void **state)
{
    (void)state;
    char *dir = tmpdir();
    char *path = xasprintf("%s/%s", dir, MP_STORE_DB_NAME);
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(mp_db_migrate(db, 5, NULL), 0);
    assert_int_equal(sqlite3_exec(db,
                                  "INSERT INTO run(id, subcommand, argv, moeprobe_version, started)"
                                  " VALUES (1, 'qualify', '[]', '0.0.9', 'then');"
                                  "INSERT INTO candidates(pos, name, env, args, done)"
                                  " VALUES (0, 'm', '[\"A=1\"]', '[\"--x\",\"1\"]', 1);"
                                  "INSERT INTO attempts(candidate_id, idx, launch_blocking, dir, status,"
                                  " outcome, dlv_knob, dlv_status, dlv_evidence) VALUES (1, 1, 0,"
                                  " 'attempts/m-1', 'done', 'clean', '[\"A=1\",\"--x 1\"]',"
                                  " '[\"missing\",\"verified\"]', '[\"not in pid 9\",\"line 3\"]');",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(db);
    for (int pass = 0; pass < 2; pass++) {
        /* pass 0: read-only, unmigrated (v5 columns); pass 1: migrated to v7 */
        struct mp_report rep;
        load_one(dir, pass ? MP_STORE_LOCK : MP_STORE_READONLY, &rep);
        assert_int_equal(rep.c[0].nattempts, 1);
        const struct mp_attempt_result *a = &rep.c[0].attempts[0];
        assert_int_equal(a->ndlv, 2);
        assert_string_equal(a->dlv[0].knob, "A=1");
        assert_int_equal(a->dlv[0].status, MP_DLV_MISSING);
        assert_string_equal(a->dlv[0].evidence, "not in pid 9");
        assert_int_equal(a->dlv[1].status, MP_DLV_VERIFIED);
        mp_report_finalize(&rep);
        assert_string_equal(mp_verdict_name(rep.c[0].verdict), "not-delivered");
        assert_int_equal(rep.recommended, -1);
        mp_report_release(&rep);
    }
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT count(*) FROM knob_delivery", -1, &st, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int(st, 0), 2);
    sqlite3_finalize(st);
    sqlite3_close(db);

    /* v7: written to the table, secrets masked */
    struct mp_store *s = NULL;
    assert_int_equal(mp_store_open(dir, MP_STORE_LOCK, &s, NULL), 0);
    struct mp_candidate c;
    assert_int_equal(mp_candidate_from_knobs("t", "HF_TOKEN=hunter2222", &c, NULL), 0);
    mp_store_mask_init(mp_store_mask(s), &c, 1, NULL);
    assert_int_equal(mp_store_candidate(s, 1, &c), 0);
    int64_t id = 0;
    assert_int_equal(mp_store_attempt_begin(s, 1, 1, false, "/x/t-1", &id), 0);
    struct mp_attempt_result r;
    memset(&r, 0, sizeof(r));
    r.outcome = MP_OUT_CLEAN;
    mp_attempt_add_dlv(&r, "HF_TOKEN=***", MP_DLV_UNVERIFIED, "saw hunter2222 somewhere");
    assert_int_equal(mp_store_attempt_finish(s, id, &r), 0);
    mp_attempt_result_release(&r);
    mp_candidate_release(&c);
    mp_store_close(s);
    struct mp_report rep;
    load_one(dir, MP_STORE_READONLY, &rep);
    assert_int_equal(rep.n, 2);
    assert_int_equal(rep.c[1].attempts[0].ndlv, 1);
    assert_int_equal(rep.c[1].attempts[0].dlv[0].status, MP_DLV_UNVERIFIED);
    assert_null(strstr(rep.c[1].attempts[0].dlv[0].evidence, "hunter2222"));
    mp_report_release(&rep);
    free(path);
    rmtree(dir);
    free(dir);
}

/* The scoring pass' tables (v17, store/correct.c): a v16 store (none of
 * them) is read as it is, read-only, with no score; migrated, a score
 * written comes back (passages, greedy, answers, the engine's words
 * masked). Fails if store/internal.h's MP_STORE_SCORE_VERSION lags the
 * migration that adds the tables (the v16 store's load asks for them). */
static void test_scores_v17(void **state)
{
    (void)state;
    char *dir = tmpdir();
    char *path = xasprintf("%s/%s", dir, MP_STORE_DB_NAME);
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(mp_db_migrate(db, 16, NULL), 0);
    assert_int_equal(sqlite3_exec(db,
                                  "INSERT INTO run(id, subcommand, argv, moeprobe_version, started)"
                                  " VALUES (1, 'qualify', '[]', '0.0.9', 'then');"
                                  "INSERT INTO candidates(pos, name, env, args, done)"
                                  " VALUES (0, 'old', '[]', '[]', 1);"
                                  "INSERT INTO attempts(candidate_id, idx, launch_blocking, dir, status,"
                                  " outcome) VALUES (1, 1, 0, 'attempts/old-1', 'done', 'clean');",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(db);
    struct mp_report rep;
    load_one(dir, MP_STORE_READONLY, &rep);
    assert_int_equal(rep.c[0].nattempts, 1);
    assert_null(rep.c[0].attempts[0].score);
    mp_report_release(&rep);

    struct mp_store *s = NULL;
    assert_int_equal(mp_store_open(dir, MP_STORE_LOCK, &s, NULL), 0);
    struct mp_candidate c;
    assert_int_equal(mp_candidate_from_knobs("t", "HF_TOKEN=hunter2222", &c, NULL), 0);
    mp_store_mask_init(mp_store_mask(s), &c, 1, NULL);
    assert_int_equal(mp_store_candidate(s, 1, &c), 0);
    int64_t id = 0;
    assert_int_equal(mp_store_attempt_begin(s, 1, 1, false, "/x/t-1", &id), 0);
    struct mp_score *x = mp_score_new();
    x->k = 5;
    x->plp = MP_SC_OK;
    x->npass = 1;
    x->pass = xcalloc(1, sizeof(*x->pass));
    x->pass[0].n = 2;
    x->pass[0].p = xcalloc(2, sizeof(*x->pass[0].p));
    x->pass[0].p[0] = (struct mp_lp_pos){xstrdup(" The"), -1.5, xstrdup(" A"), -0.5};
    x->pass[0].p[1] = (struct mp_lp_pos){xstrdup(" <b>"), -0.25, xstrdup(" <b>"), -0.25};
    x->greedy = MP_SC_REFUSED;
    x->greedy_note = xstrdup("token hunter2222 allows 2");
    x->task = MP_SC_OK;
    x->task_source = xstrdup("built-in");
    x->nans = 1;
    x->ans = xcalloc(1, sizeof(*x->ans));
    x->ans[0] = (struct mp_task_ans){xstrdup("19"), xstrdup("19"), true, true, xstrdup(" 19.")};
    assert_int_equal(mp_store_score_write(s, id, x), 0);
    struct mp_attempt_result r;
    memset(&r, 0, sizeof(r));
    r.outcome = MP_OUT_CLEAN;
    assert_int_equal(mp_store_attempt_finish(s, id, &r), 0);
    mp_attempt_result_release(&r);
    mp_score_free(x);
    mp_candidate_release(&c);
    mp_store_close(s);

    load_one(dir, MP_STORE_READONLY, &rep);
    assert_int_equal(rep.n, 2);
    const struct mp_score *y = rep.c[1].attempts[0].score;
    assert_non_null(y);
    assert_int_equal(y->k, 5);
    assert_int_equal(y->plp, MP_SC_OK);
    assert_int_equal(y->npass, 1);
    assert_int_equal(y->pass[0].n, 2);
    assert_string_equal(y->pass[0].p[1].token, " <b>");
    assert_true(y->pass[0].p[0].lp == -1.5 && y->pass[0].p[0].top1_lp == -0.5);
    assert_int_equal(y->greedy, MP_SC_REFUSED);
    assert_null(strstr(y->greedy_note, "hunter2222"));
    assert_int_equal(y->nans, 1);
    assert_true(y->ans[0].right);
    assert_string_equal(y->ans[0].got, "19");
    assert_null(rep.c[0].attempts[0].score);
    mp_report_release(&rep);
    free(path);
    rmtree(dir);
    free(dir);
}

/* Schema v14: an attempt's observations come back whole (masked), and the
 * verdict is judged from them, not from the conclusions stored beside
 * them: an older moeprobe's judgement (here: a CUDA fault the log does not
 * show) is judged again. */
static void test_observations_rejudged(void **state)
{
    (void)state;
    char *dir = tmpdir();
    struct mp_store *s = NULL;
    assert_int_equal(mp_store_open(dir, MP_STORE_CREATE | MP_STORE_LOCK, &s, NULL), 0);
    struct mp_candidate c;
    assert_int_equal(mp_candidate_from_knobs("t", "HF_TOKEN=hunter2222", &c, NULL), 0);
    mp_store_mask_init(mp_store_mask(s), &c, 1, NULL);
    char *argv[] = {"qualify"};
    assert_int_equal(mp_store_run_begin(s, "qualify", argv, 1, "9.9", "t0"), 0);
    assert_int_equal(mp_store_candidate(s, 0, &c), 0);
    int64_t id = 0;
    assert_int_equal(mp_store_attempt_begin(s, 0, 1, false, "/x/t-1", &id), 0);
    struct mp_attempt_result r;
    memset(&r, 0, sizeof(r));
    r.outcome = MP_OUT_CRASH;
    r.fail_class = xstrdup("illegal-address"); /* the stored judgement */
    r.cuda_fault = r.engine_died = true;
    r.obs.recorded = true;
    r.obs.seen = MP_SEEN_HTTP_ERROR;
    r.obs.seen_message = xstrdup("HTTP 500: token hunter2222 rejected");
    r.obs.exit_status = -1;
    r.obs.error_quote = xstrdup("server.log:4: auth hunter2222");
    r.obs.last_error_line = 4;
    r.obs.crash = true; /* a crash line that is no CUDA fault, the engine alive */
    r.obs.crash_class = xstrdup("python-error");
    r.obs.crash_line = 9;
    mp_strv_push(&r.obs.crash_sites, "schedule");
    assert_int_equal(mp_store_attempt_finish(s, id, &r), 0);
    mp_attempt_result_release(&r);
    assert_int_equal(mp_store_candidate_done(s, 0, NULL, NULL), 0);
    mp_candidate_release(&c);
    mp_store_close(s);
    struct mp_report rep;
    load_one(dir, MP_STORE_READONLY, &rep);
    const struct mp_attempt_obs *o = &rep.c[0].attempts[0].obs;
    assert_true(o->recorded);
    assert_int_equal(o->seen, MP_SEEN_HTTP_ERROR);
    assert_string_equal(o->seen_message, "HTTP 500: token *** rejected");
    assert_string_equal(o->error_quote, "server.log:4: auth ***");
    assert_int_equal(o->last_error_line, 4);
    assert_int_equal(o->exit_status, -1);
    assert_true(o->crash);
    assert_string_equal(o->crash_class, "python-error");
    assert_int_equal(o->crash_line, 9);
    assert_int_equal(o->crash_sites.n, 1);
    assert_string_equal(rep.c[0].attempts[0].fail_class, "illegal-address"); /* as stored */
    mp_report_finalize(&rep);
    const struct mp_attempt_result *a = &rep.c[0].attempts[0];
    assert_false(a->cuda_fault);
    assert_false(a->engine_died);
    assert_string_equal(a->fail_class, "http-error");
    assert_string_equal(mp_verdict_name(rep.c[0].verdict), "server-error");
    mp_report_release(&rep);
    char *cmd = xasprintf("grep -rqa hunter2222 '%s'", dir);
    assert_int_not_equal(system(cmd), 0);
    free(cmd);
    rmtree(dir);
    free(dir);
}

/* Schema v9: the metric histograms as buckets, the workload; and a v8
 * store's raw request rows (with their per-request ITL blobs) rebuilt into
 * histograms, read-only (unmigrated) and after the migration. */
static int64_t count_rows(const char *path, const char *sql)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    int64_t n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return n;
}

/* A v8 store at path: one run, candidate "old" with a clean attempt, a
 * warmup request and three sequential ones (one failed). */
static void write_v8_store(const char *path)
{
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(mp_db_migrate(db, 8, NULL), 0);
    assert_int_equal(sqlite3_exec(db,
                                  "INSERT INTO run(id, subcommand, argv, moeprobe_version, started)"
                                  " VALUES (1, 'qualify', '[]', '0.0.9', 'then');"
                                  "INSERT INTO candidates(pos, name, env, args, done)"
                                  " VALUES (0, 'old', '[]', '[]', 1);"
                                  "INSERT INTO attempts(candidate_id, idx, launch_blocking, dir, status,"
                                  " outcome, req_ok) VALUES (1, 1, 0, 'attempts/old-1', 'done', 'clean', 3);"
                                  "INSERT INTO phases(attempt_id, pos, name, level, planned, ok, failed,"
                                  " wall_s, tokens, tok_s, req_tok_s_p50) VALUES"
                                  " (1, 0, 'warmup', 1, 1, 1, 0, 1, 5, 5, 40),"
                                  " (1, 1, 'sequential', 1, 2, 2, 1, 2, 10, 5, 50);",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(db,
                                        "INSERT INTO requests(attempt_id, seq, phase, outcome, ttft_ms,"
                                        " e2e_ms, output_tokens, req_tok_s, itl) VALUES (1,?,?,?,?,?,?,?,?)",
                                        -1, &st, NULL),
                     SQLITE_OK);
    /* warmup: 1 ok; sequential: 2 ok and a failure (not evidence) */
    const char *ph[] = {"warmup", "sequential", "sequential", "sequential"};
    const char *oc[] = {"ok", "ok", "ok", "stream-cut"};
    double ttft[] = {100, 20, 30, 5}, e2e[] = {140, 60, 90, 6};
    double itl[4][4] = {{10, 10, 10, 10}, {10, 10, 10, 10}, {15, 15, 15, 15}, {1, 1, 1, 1}};
    for (int i = 0; i < 4; i++) {
        sqlite3_reset(st);
        sqlite3_bind_int(st, 1, i + 1);
        sqlite3_bind_text(st, 2, ph[i], -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, oc[i], -1, SQLITE_STATIC);
        sqlite3_bind_double(st, 4, ttft[i]);
        sqlite3_bind_double(st, 5, e2e[i]);
        sqlite3_bind_int(st, 6, 5);
        sqlite3_bind_double(st, 7, 100);
        sqlite3_bind_blob(st, 8, itl[i], sizeof(itl[i]), SQLITE_STATIC);
        assert_int_equal(sqlite3_step(st), SQLITE_DONE);
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
}

static void test_metrics_v9(void **state)
{
    (void)state;
    char *dir = tmpdir();
    char *path = xasprintf("%s/%s", dir, MP_STORE_DB_NAME);
    write_v8_store(path);
    for (int pass = 0; pass < 2; pass++) {
        /* pass 0: read-only, a v8 store as it is; pass 1: migrated to v9 */
        struct mp_report rep;
        load_one(dir, pass ? MP_STORE_LOCK : MP_STORE_READONLY, &rep);
        assert_false(rep.has_workload);
        const struct mp_attempt_result *a = &rep.c[0].attempts[0];
        assert_int_equal(a->nphases, 2);
        const struct mp_phase_metrics *w = &a->phases[0].m, *q = &a->phases[1].m;
        assert_int_equal(w->ttft_ms.n, 1);
        assert_true(w->ttft_ms.min == 100);
        assert_int_equal(q->ttft_ms.n, 2);
        assert_true(q->ttft_ms.min == 20 && q->ttft_ms.max == 30);
        assert_int_equal(q->itl_ms.n, 8);
        assert_true(q->itl_ms.max == 15);
        assert_true(fabs(mp_hist_mean(&q->itl_ms) - 12.5) < 1e-9);
        assert_int_equal(q->tpot_ms.n, 2); /* (60-20)/4, (90-30)/4 */
        assert_true(q->tpot_ms.min == 10 && q->tpot_ms.max == 15);
        assert_int_equal(q->e2e_ms.n, 2);
        assert_int_equal(q->req_tok_s.n, 2);
        mp_report_release(&rep);
    }
    assert_int_equal(count_rows(path, "PRAGMA user_version"), MP_STORE_SCHEMA_VERSION);

    /* v9: histograms written as buckets, read back as they were */
    struct mp_store *s = NULL;
    assert_int_equal(mp_store_open(dir, MP_STORE_LOCK, &s, NULL), 0);
    struct mp_workload wl;
    mp_workload_default(&wl);
    wl.max_tokens = 77;
    wl.input_tokens = 512;
    wl.chat = true;
    wl.temperature = 0.5;
    wl.api_key = "sk-never-stored-9876";
    wl.phases[1].duration_s = 600;
    assert_int_equal(mp_store_set_workload(s, &wl), 0);
    wl.max_tokens = 1; /* once per session: the run's workload stays */
    assert_int_equal(mp_store_set_workload(s, &wl), 0);
    struct mp_candidate c = {0};
    c.name = xstrdup("new");
    assert_int_equal(mp_store_candidate(s, 1, &c), 0);
    int64_t id = 0;
    assert_int_equal(mp_store_attempt_begin(s, 1, 1, false, "/x/new-1", &id), 0);
    struct mp_attempt_result r;
    memset(&r, 0, sizeof(r));
    r.outcome = MP_OUT_CLEAN;
    r.nphases = 2;
    snprintf(r.phases[0].name, sizeof(r.phases[0].name), "warmup");
    snprintf(r.phases[1].name, sizeof(r.phases[1].name), "soak");
    for (int i = 0; i < 200000; i++) {
        mp_hist_add(&r.phases[1].m.itl_ms, 20 + (i % 1000) * 0.013);
        if (i % 100 == 0) {
            mp_hist_add(&r.phases[1].m.ttft_ms, 50 + i * 1e-4);
            mp_hist_add(&r.phases[1].m.req_tok_s, 50 - (i % 7));
        }
    }
    assert_int_equal(mp_store_attempt_finish(s, id, &r), 0);
    mp_store_close(s);
    struct mp_report rep;
    load_one(dir, MP_STORE_READONLY, &rep);
    assert_true(rep.has_workload);
    assert_int_equal(rep.workload.max_tokens, 77);
    assert_int_equal(rep.workload.input_tokens, 512);
    assert_true(rep.workload.chat && rep.workload.ignore_eos);
    assert_true(rep.workload.temperature == 0.5);
    assert_null(rep.workload.api_key);
    assert_int_equal(rep.workload.nphases, wl.nphases);
    assert_string_equal(rep.workload.phases[1].name, wl.phases[1].name);
    assert_int_equal(rep.workload.phases[1].requests, wl.phases[1].requests);
    assert_true(rep.workload.phases[1].duration_s == 600);
    const struct mp_attempt_result *b = &rep.c[1].attempts[0];
    assert_int_equal(b->nphases, 2);
    assert_int_equal(b->phases[0].m.itl_ms.n, 0);
    const struct mp_phase_metrics *m = &b->phases[1].m, *o = &r.phases[1].m;
    const struct mp_hist *hb[] = {&m->itl_ms, &m->ttft_ms, &m->req_tok_s};
    const struct mp_hist *ho[] = {&o->itl_ms, &o->ttft_ms, &o->req_tok_s};
    for (int k = 0; k < 3; k++) {
        assert_int_equal(hb[k]->n, ho[k]->n);
        assert_true(hb[k]->sum == ho[k]->sum && hb[k]->m2 == ho[k]->m2);
        assert_true(hb[k]->min == ho[k]->min && hb[k]->max == ho[k]->max);
        for (double p = 0; p <= 100; p += 2.5)
            assert_true(mp_hist_percentile(hb[k], p) == mp_hist_percentile(ho[k], p));
    }
    mp_report_release(&rep);
    mp_attempt_result_release(&r);
    mp_candidate_release(&c);
    /* bounded: 200000 samples are a few hundred bucket rows */
    assert_true(count_rows(path, "SELECT count(*) FROM metric_buckets") < 600);
    char *cmd = xasprintf("grep -qa sk-never-stored '%s'", path);
    assert_int_not_equal(system(cmd), 0);
    free(cmd);
    free(path);
    rmtree(dir);
    free(dir);
}

/* v14: what the log resolved beyond the classic columns (the drafter's own
 * MoE selection, other selections, autotuner tallies, the device, the fatal
 * messages) is stored with the attempt and comes back as it was. */
static void test_resolved_more(void **state)
{
    (void)state;
    char *dir = tmpdir();
    struct mp_store *s = NULL;
    assert_int_equal(mp_store_open(dir, MP_STORE_CREATE | MP_STORE_LOCK, &s, NULL), 0);
    char *argv[] = {"qualify"};
    assert_int_equal(mp_store_run_begin(s, "qualify", argv, 1, "9.9", "t0"), 0);
    struct mp_candidate c = {0};
    c.name = xstrdup("mtp");
    assert_int_equal(mp_store_candidate(s, 0, &c), 0);
    int64_t id = 0;
    assert_int_equal(mp_store_attempt_begin(s, 0, 1, false, "/x/mtp-1", &id), 0);
    struct mp_attempt_result r;
    memset(&r, 0, sizeof(r));
    r.outcome = MP_OUT_CRASH;
    r.res.moe_backend = xstrdup("FLASHINFER_CUTLASS");
    r.res.moe_kind = xstrdup("NvFp4");
    r.res.device = xstrdup("sm121");
    r.res.drafter.loaded_line = 90;
    r.res.drafter.line = 95;
    r.res.drafter.moe_backend = xstrdup("TRITON");
    r.res.drafter.moe_kind = xstrdup("Unquantized");
    mp_strv_push(&r.res.drafter.moe_candidates, "FlashInfer TRTLLM");
    mp_strv_push(&r.res.drafter.moe_candidates, "TRITON");
    mp_resolved_add_sel(&r.res, "MxFp8 MoE", "MARLIN", 40);
    mp_resolved_add_sel(&r.res, "FlashAttention version", "2", 41);
    mp_resolved_add_tally(&r.res, "autotuner-skipped", 12, 200);
    mp_strv_push(&r.res.fatal_messages, "RuntimeError: Invalid activation type.");
    assert_int_equal(mp_store_attempt_finish(s, id, &r), 0);
    mp_store_close(s);

    struct mp_report rep;
    load_one(dir, MP_STORE_READONLY, &rep);
    assert_int_equal(rep.c[0].nattempts, 1);
    const struct mp_resolved *v = &rep.c[0].attempts[0].res;
    assert_string_equal(v->moe_backend, "FLASHINFER_CUTLASS");
    assert_string_equal(v->moe_kind, "NvFp4");
    assert_string_equal(v->device, "sm121");
    assert_int_equal(v->drafter.loaded_line, 90);
    assert_int_equal(v->drafter.line, 95);
    assert_string_equal(v->drafter.moe_backend, "TRITON");
    assert_string_equal(v->drafter.moe_kind, "Unquantized");
    assert_int_equal(v->drafter.moe_candidates.n, 2);
    assert_string_equal(v->drafter.moe_candidates.v[1], "TRITON");
    assert_int_equal(v->nother, 2);
    assert_string_equal(v->other[0].what, "MxFp8 MoE");
    assert_string_equal(v->other[0].value, "MARLIN");
    assert_int_equal(v->other[1].line, 41);
    assert_int_equal(v->ntallies, 1);
    assert_string_equal(v->tallies[0].name, "autotuner-skipped");
    assert_int_equal(v->tallies[0].count, 12);
    assert_int_equal(v->tallies[0].first_line, 200);
    assert_int_equal(v->fatal_messages.n, 1);
    /* a copy is deep */
    struct mp_resolved cp;
    mp_resolved_copy(&cp, v);
    assert_ptr_not_equal(cp.drafter.moe_backend, v->drafter.moe_backend);
    assert_string_equal(cp.other[1].value, "2");
    assert_int_equal(cp.tallies[0].count, 12);
    mp_resolved_release(&cp);
    mp_report_release(&rep);
    mp_attempt_result_release(&r);
    mp_candidate_release(&c);
    rmtree(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_migrate_from_v1),
        cmocka_unit_test(test_report_opts),
        cmocka_unit_test(test_read_v3_unmigrated),
        cmocka_unit_test(test_scores_v17),
        cmocka_unit_test(test_delivery_migration),
        cmocka_unit_test(test_metrics_v9),
        cmocka_unit_test(test_lock_and_roundtrip),
        cmocka_unit_test(test_mask),
        cmocka_unit_test(test_observations_rejudged),
        cmocka_unit_test(test_fingerprint_nvml),
        cmocka_unit_test(test_model_dir),
        cmocka_unit_test(test_reader_refuses_damage),
        cmocka_unit_test(test_resolved_more),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
