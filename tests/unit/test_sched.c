/* test_sched.c - the scale-out pieces that need no processes: GPU sets,
 * the child command, the sbatch script, task records, and the merge of
 * task results (same and different fingerprints, a task without result). */
#include "compat.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "report/report.h"
#include "sched/internal.h"
#include "sched/sched.h"
#include "store/store.h"
#include "hist.h"
#include "version.h"
#include "xalloc.h"

const char mp_version[] = "0.0.0-test";

static void t_gpu_sets(void **state)
{
    MP_UNUSED(state);
    struct mp_strv s = MP_STRV_INIT;
    struct mp_diag d = MP_DIAG_INIT;
    assert_int_equal(mp_sched_gpu_sets("0,1,2,3", 1, &s, &d), 0);
    assert_int_equal(s.n, 4);
    assert_string_equal(s.v[3], "3");
    mp_strv_release(&s);
    assert_int_equal(mp_sched_gpu_sets("0, 1,2,3,4", 2, &s, &d), 0);
    assert_int_equal(s.n, 2); /* GPU 4 is left over */
    assert_string_equal(s.v[0], "0,1");
    assert_string_equal(s.v[1], "2,3");
    mp_strv_release(&s);
    assert_int_equal(mp_sched_gpu_sets("GPU-8c1b-77", 1, &s, &d), 0);
    assert_string_equal(s.v[0], "GPU-8c1b-77");
    mp_strv_release(&s);
    assert_int_equal(mp_sched_gpu_sets("0,0", 1, &s, &d), MP_EUSAGE);
    assert_non_null(strstr(d.msg, "twice"));
    assert_int_equal(mp_sched_gpu_sets("0,,1", 1, &s, &d), MP_EUSAGE);
    assert_int_equal(mp_sched_gpu_sets("0;rm", 1, &s, &d), MP_EUSAGE);
    assert_int_equal(mp_sched_gpu_sets("0,1", 3, &s, &d), MP_EUSAGE);
    assert_int_equal(s.n, 0);
    mp_strv_release(&s);
}

static void t_child_argv(void **state)
{
    MP_UNUSED(state);
    char *argv[] = {"qualify", "--gpus", "0,1", "--seq", "3", "--out", "R", "--only=a,b",
                    "--slurm", "--slurm-args", "--gres=gpu:1", "--port", "9000", "--json",
                    "--candidate", "a: --moe-backend marlin", "--resume", "R", "--",
                    "vllm", "serve", "M", NULL};
    struct mp_sched_plan pl;
    memset(&pl, 0, sizeof(pl));
    mp_sched_filter_opts(argv, 19, &pl.child_opts);
    assert_int_equal(pl.child_opts.n, 4);
    assert_string_equal(pl.child_opts.v[0], "--seq");
    assert_string_equal(pl.child_opts.v[1], "3");
    assert_string_equal(pl.child_opts.v[2], "--candidate");
    pl.self = "/bin/moeprobe";
    pl.cmd = argv + 19;
    pl.ncmd = 3;
    struct mp_sched_task t = {.name = "a", .dir = "/r/tasks/a"};
    pl.t = &t;
    pl.n = 1;
    struct mp_strv out = MP_STRV_INIT;
    mp_sched_child_argv(&pl, 0, 9001, &out);
    const char *want[] = {"/bin/moeprobe", "qualify", "--seq", "3", "--candidate",
                          "a: --moe-backend marlin", "--only", "a", "--out", "/r/tasks/a",
                          "--port", "9001", "--", "vllm", "serve", "M"};
    assert_int_equal(out.n, MP_ARRAY_SIZE(want));
    for (size_t i = 0; i < out.n; i++)
        assert_string_equal(out.v[i], want[i]);
    mp_strv_release(&out);

    /* the sbatch script: only tasks not skipped, args quoted, slurm args as #SBATCH */
    struct mp_sched_task ts[3] = {{.name = "a", .dir = "/r/tasks/a"},
                                  {.name = "b", .dir = "/r/tasks/b", .skip = true},
                                  {.name = "c", .dir = "/r/tasks/c"}};
    pl.t = ts;
    pl.n = 3;
    pl.run_dir = "/r";
    struct buf b = BUF_INIT;
    mp_sched_slurm_script(&pl, "--partition=gpu --gres=gpu:1", &b);
    assert_non_null(strstr(b.data, "#SBATCH --array=0,2\n"));
    assert_non_null(strstr(b.data, "#SBATCH --partition=gpu\n#SBATCH --gres=gpu:1\n"));
    assert_non_null(strstr(b.data, "names=( 'a' 'b' 'c' )"));
    assert_non_null(strstr(b.data, "'a: --moe-backend marlin'"));
    assert_non_null(strstr(b.data, "--only \"$name\" --out \"$dir\" -- 'vllm' 'serve' 'M'"));
    assert_non_null(strstr(b.data, "#SBATCH --output=/r/tasks/slurm-%A_%a.out"));
    buf_release(&b);
    mp_strv_release(&pl.child_opts);
}

static char tmpdir[] = "/tmp/test_sched.XXXXXX";

static void put_file(const char *dir, const char *name, const char *text)
{
    char *p = xasprintf("%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    free(p);
}

/* A task's evidence store, as a task's qualify of one candidate leaves it:
 * one clean attempt whose sequential phase ran at tok_s, with its latency
 * histograms (ttft_ms of the TTFT samples). */
static void task(const char *run, const char *name, const char *gpu, double tok_s, double ttft_ms)
{
    char *d = xasprintf("%s/tasks/%s", run, name);
    mkdir(d, 0777);
    struct mp_store *s = NULL;
    assert_int_equal(mp_store_open(d, MP_STORE_CREATE | MP_STORE_LOCK, &s, NULL), 0);
    char *argv[] = {"qualify"};
    assert_int_equal(mp_store_run_begin(s, "qualify", argv, 1, "0.1.0", "2026-12-02T10:00:00Z"), 0);
    struct mp_fingerprint fp = {0};
    fp.gpu = (char *)gpu;
    fp.engine = "vllm";
    fp.engine_version = "0.19.0";
    fp.model = "m";
    fp.host_arch = "x86_64";
    assert_int_equal(mp_store_set_fingerprint(s, &fp, NULL), 0);
    struct mp_candidate c;
    char *knobs = xasprintf("--moe-backend %s", name);
    assert_int_equal(mp_candidate_from_knobs(name, knobs, &c, NULL), 0);
    free(knobs);
    assert_int_equal(mp_store_candidate(s, 0, &c), 0);
    char *dir = xasprintf("%s/attempts/%s-1", d, name);
    int64_t id = 0;
    assert_int_equal(mp_store_attempt_begin(s, 0, 1, false, dir, &id), 0);
    struct mp_attempt_result r;
    memset(&r, 0, sizeof(r));
    r.outcome = MP_OUT_CLEAN;
    r.req_ok = 11;
    r.res.moe_backend = xasprintf("B_%s", name);
    r.res.moe_backend_line = 7;
    r.nphases = 1;
    struct mp_phase_result *ph = &r.phases[0];
    snprintf(ph->name, sizeof(ph->name), "sequential");
    ph->level = 1;
    ph->planned = ph->ok = 10;
    ph->wall_s = 1;
    ph->tok_s = tok_s;
    ph->tokens = (long)tok_s;
    for (int k = 0; k < 10; k++) {
        mp_hist_add(&ph->m.ttft_ms, ttft_ms);
        mp_hist_add(&ph->m.e2e_ms, ttft_ms + 100);
        mp_hist_add(&ph->m.itl_ms, 5);
        mp_hist_add(&ph->m.req_tok_s, tok_s);
    }
    assert_int_equal(mp_store_attempt_finish(s, id, &r), 0);
    assert_int_equal(mp_store_candidate_done(s, 0, NULL, NULL), 0);
    assert_int_equal(mp_store_run_finish(s, "2026-12-02T10:01:00Z", false), 0);
    mp_store_close(s);
    mp_attempt_result_release(&r);
    mp_candidate_release(&c);
    free(dir);
    free(d);
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    struct buf b = BUF_INIT;
    char tmp[4096];
    size_t n;
    while ((n = fread(tmp, 1, sizeof(tmp), f)) > 0)
        buf_add(&b, tmp, n);
    fclose(f);
    buf_addc(&b, '\0');
    return buf_detach(&b, NULL);
}

static void t_merge(void **state)
{
    MP_UNUSED(state);
    assert_non_null(mkdtemp(tmpdir));
    char *run = xasprintf("%s/run", tmpdir);
    char *tasks = xasprintf("%s/tasks", run);
    mkdir(run, 0777);
    mkdir(tasks, 0777);
    task(run, "x", "RTX", 10, 12);
    task(run, "y", "RTX", 20, 40);
    put_file(tasks, "index.txt", "x\ny\nz\nw\n");
    /* w ran and ended well but left only a report.json, no database: a
     * failed task (its numbers are never made up from the JSON) */
    char *wd = xasprintf("%s/w", tasks);
    mkdir(wd, 0777);
    put_file(wd, "report.json", "{\"candidates\": [{\"name\": \"w\", \"latency_ms\": "
                                "{\"ttft_p50\": 1, \"ttft_p99\": 2}, \"attempts\": []}]}\n");
    struct mp_sched_rec wrec = {.candidate = "w", .host = "node8", .start_ns = 1, .end_ns = 2,
                                .exit_code = 0};
    assert_int_equal(mp_sched_rec_write(wd, &wrec), 0);
    /* z never ran: a gap; its record says why */
    char *zd = xasprintf("%s/z", tasks);
    mkdir(zd, 0777);
    struct mp_sched_rec rec = {.candidate = "z", .host = "node7", .start_ns = 1, .end_ns = 2,
                               .exit_code = 137};
    assert_int_equal(mp_sched_rec_write(zd, &rec), 0);
    struct mp_sched_rec back;
    assert_int_equal(mp_sched_rec_read(zd, &back), 0);
    assert_string_equal(back.host, "node7");
    assert_int_equal(back.exit_code, 137);
    mp_sched_rec_release(&back);
    assert_false(mp_sched_task_finished(zd));

    int rc = mp_sched_merge(run, true, true);
    assert_int_equal(rc, 0); /* y is recommended */
    char *p = xasprintf("%s/report.json", run);
    char *j = slurp(p);
    assert_null(strstr(j, "fingerprint_groups"));
    assert_non_null(strstr(j, "\"candidate\":\t\"y\""));
    assert_non_null(strstr(j, "tasks/x/attempts/x-1/server.log:7"));
    assert_non_null(strstr(j, "ended with exit 137 on node7"));
    assert_non_null(strstr(j, "the task for 'w' ended with exit 0 on node8 and left no evidence "
                              "store (moeprobe.db): a task without a database is a failed task"));
    /* the latency comes from the tasks' histograms, merged as stored */
    assert_non_null(strstr(j, "\"ttft_p50\":\t40"));
    assert_null(strstr(j, "\"ttft_p50\":\t1,"));
    free(j);

    /* y on another GPU: side by side, never one recommendation */
    char *yd = xasprintf("%s/y", tasks);
    char *cmd0 = xasprintf("rm -rf '%s'", yd);
    assert_int_equal(system(cmd0), 0);
    free(cmd0);
    free(yd);
    task(run, "y", "H100", 20, 40);
    rc = mp_sched_merge(run, true, true);
    assert_int_equal(rc, 0);
    j = slurp(p);
    assert_non_null(strstr(j, "\"fingerprint_groups\""));
    assert_non_null(strstr(j, "\"recommendation\": null\n}"));
    free(j);
    char *p1 = xasprintf("%s/fingerprint-1/report.json", run);
    char *p2 = xasprintf("%s/fingerprint-2/report.json", run);
    j = slurp(p1);
    assert_non_null(strstr(j, "\"RTX\""));
    assert_non_null(strstr(j, "\"candidate\":\t\"x\""));
    free(j);
    j = slurp(p2);
    assert_non_null(strstr(j, "\"H100\""));
    assert_non_null(strstr(j, "\"candidate\":\t\"y\""));
    free(j);
    char *md = xasprintf("%s/report.md", run);
    j = slurp(md);
    assert_non_null(strstr(j, "## Fingerprint 2: H100"));
    free(j);
    free(md);
    free(p1);
    free(p2);
    free(p);
    free(zd);
    free(wd);
    free(tasks);
    char *cmd = xasprintf("rm -rf '%s'", tmpdir);
    assert_int_equal(system(cmd), 0);
    free(cmd);
    free(run);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(t_gpu_sets),
        cmocka_unit_test(t_child_argv),
        cmocka_unit_test(t_merge),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
