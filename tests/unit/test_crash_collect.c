/* test_crash_collect.c - what an attempt sets up and gathers for a GPU
 * fault (run/crashinfo.h), on fixtures: which core-dump variables a run
 * gets (the same in every run: the dump on exception with skip_abort and
 * the hang's pipe; --no-coredump; a candidate's own, its dump turned off,
 * its flags without skip_abort; a container with and without a volume for
 * the attempt directory); the collection at
 * the end (the dump's kernel, demangled, its family, the class a crash
 * without traceback gets, NVML and kernel-log Xids inside the window and of
 * the engine's processes only, an unreadable kernel log said and not
 * fatal, dump files deleted or kept, pipes removed); cuda-gdb's kernel
 * table. */
#include "compat.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "logs/coredump.h"
#include "run/crashinfo.h"
#include "verdict/classify.h"
#include "strv.h"
#include "xalloc.h"

static char tmp[256];

static int setup(void **st)
{
    (void)st;
    snprintf(tmp, sizeof(tmp), "/tmp/test_crash_collect.XXXXXX");
    return mkdtemp(tmp) ? 0 : -1;
}

static int teardown(void **st)
{
    (void)st;
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
    return system(cmd) == 0 ? 0 : -1;
}

static void test_container_path(void **st)
{
    (void)st;
    static const struct {
        const char *cmd;
        const char *dir;
        int rc;
        const char *path;
    } rows[] = {
        {"vllm serve m", "/r/a", -1, NULL},
        {"docker run --gpus all img vllm serve", "/r/a", 0, NULL},
        {"docker run -v /r:/data img", "/r/a", 1, "/data/a"},
        {"docker run --volume=/r/a:/x:rw img", "/r/a", 1, "/x"},
        {"docker run -v /:/host img", "/r/a", 1, "/host/r/a"},
        {"podman run --mount type=bind,source=/r,target=/m img", "/r/a", 1, "/m/a"},
        {"docker run -v cache:/root/.cache img", "/r/a", 0, NULL},
        {"docker run -v /rr:/x img", "/r/a", 0, NULL},
        {"docker run img -v /r:/data", "/r/a", 0, NULL}, /* after the image: the engine's */
        {"sudo docker run -v /r/:/d img", "/r/a", 1, "/d/a"},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        struct mp_strv w = MP_STRV_INIT;
        mp_split_words(rows[i].cmd, &w, NULL);
        char out[256] = "";
        int rc = mp_crash_container_path(w.v, w.n, rows[i].dir, out, sizeof(out));
        if (rc != rows[i].rc || (rc == 1 && strcmp(out, rows[i].path)))
            fail_msg("'%s' with %s: got %d '%s'", rows[i].cmd, rows[i].dir, rc, out);
        mp_strv_release(&w);
    }
}

static const char *find_env(const struct mp_crash_env *e, const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; i < e->env.n; i++)
        if (!strncmp(e->env.v[i], name, n) && e->env.v[i][n] == '=')
            return e->env.v[i] + n + 1;
    return NULL;
}

static void test_env(void **st)
{
    (void)st;
    /* every run gets the same variables (docs/verdicts.md "GPU core dumps"):
     * the dump on exception with skip_abort (the traceback stays) and the
     * hang's pipe */
    static const struct {
        bool allowed;
        const char *cmd, *cand_env;
        const char *on_exc, *flags, *file_tail, *pipe_tail; /* expected, NULL = absent */
        const char *words;
    } rows[] = {
        {true, "vllm serve", NULL, "1", "skip_constbank_memory,skip_abort", "/core_%p.%t",
         "/pipe_%p", "on: "},
        {false, "vllm serve", NULL, NULL, NULL, NULL, NULL, "off: --no-coredump"},
        {false, "vllm serve", "CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1", NULL, NULL, NULL, NULL,
         "off: --no-coredump"},
        /* the candidate turns it on: moeprobe completes the settings */
        {true, "vllm serve", "CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1", NULL, ",skip_abort",
         "/core_%p.%t", "/pipe_%p", "on: "},
        /* ... or off: nothing at all, since the pipe's variables alone (and
         * SHOW_PROGRESS with FILE) made a dump on exception on driver 580 */
        {true, "vllm serve", "CUDA_ENABLE_COREDUMP_ON_EXCEPTION=0", NULL, NULL, NULL, NULL,
         "off: the candidate sets CUDA_ENABLE_COREDUMP_ON_EXCEPTION off"},
        {true, "vllm serve", "CUDA_ENABLE_COREDUMP_ON_EXCEPTION=", NULL, NULL, NULL, NULL,
         "off: the candidate"},
        /* its own file wins */
        {true, "vllm serve", "CUDA_COREDUMP_FILE=/mine/c", "1", ",skip_abort", NULL, "/pipe_%p",
         "on: "},
        /* its own flags without skip_abort win, and the words say the abort */
        {true, "vllm serve", "CUDA_COREDUMP_GENERATION_FLAGS=skip_global_memory", "1", NULL,
         "/core_%p.%t", "/pipe_%p", "on: "},
        /* a container that cannot see the directory: lines only, no pipe */
        {true, "docker run img", NULL, "1", ",skip_abort", "/dev/null", NULL,
         "on: the driver's lines only"},
        {true, "docker run -v /:/h img", NULL, "1", ",skip_abort", "/core_%p.%t", "/pipe_%p",
         "on: /h/"},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        struct mp_strv w = MP_STRV_INIT;
        mp_split_words(rows[i].cmd, &w, NULL);
        struct mp_candidate cand;
        memset(&cand, 0, sizeof(cand));
        if (rows[i].cand_env)
            mp_strv_push(&cand.env, rows[i].cand_env);
        struct mp_crash_env_in in = {.dir = tmp, .allowed = rows[i].allowed, .cmd = w.v,
                                     .ncmd = w.n, .cand = &cand};
        struct mp_crash_env e;
        mp_crash_env_build(&in, &e);
        const char *on = find_env(&e, "CUDA_ENABLE_COREDUMP_ON_EXCEPTION");
        const char *flags = find_env(&e, "CUDA_COREDUMP_GENERATION_FLAGS");
        const char *file = find_env(&e, "CUDA_COREDUMP_FILE");
        const char *pipe = find_env(&e, "CUDA_COREDUMP_PIPE");
        size_t fl = file ? strlen(file) : 0, pl = pipe ? strlen(pipe) : 0, gl = flags ? strlen(flags) : 0;
        const char *ft = rows[i].flags, *tt = rows[i].file_tail, *pt = rows[i].pipe_tail;
        bool ok = (on == NULL) == (rows[i].on_exc == NULL) && (!on || !strcmp(on, rows[i].on_exc)) &&
                  (flags == NULL) == (ft == NULL) &&
                  (!flags || (gl >= strlen(ft) && !strcmp(flags + gl - strlen(ft), ft) &&
                              strstr(flags, "skip_global_memory"))) &&
                  (file == NULL) == (tt == NULL) &&
                  (!file || (fl >= strlen(tt) && !strcmp(file + fl - strlen(tt), tt))) &&
                  (pipe == NULL) == (pt == NULL) &&
                  (!pipe || !strcmp(pipe + pl - strlen(pt), pt)) &&
                  e.pipes == (pt != NULL) &&
                  (find_env(&e, "CUDA_ENABLE_USER_TRIGGERED_COREDUMP") != NULL) == (pt != NULL) &&
                  !strncmp(e.words, rows[i].words, strlen(rows[i].words));
        /* the words say whether the traceback stays */
        if (ok && strncmp(e.words, "off", 3))
            ok = strstr(e.words, ft ? "skip_abort: the Python traceback follows"
                                    : "have no skip_abort: a fault aborts") != NULL;
        if (!ok)
            fail_msg("row %zu (%s): on=%s flags=%s file=%s pipe=%s words='%s'", i, rows[i].cmd,
                     on ? on : "-", flags ? flags : "-", file ? file : "-", pipe ? pipe : "-",
                     e.words);
        /* off is off: none of the others either (SHOW_PROGRESS with FILE
         * alone dumped on exception too) */
        if (!strncmp(rows[i].words, "off", 3))
            assert_int_equal(e.env.n, 0);
        /* the candidate's own variable is never repeated */
        for (size_t k = 0; rows[i].cand_env && k < e.env.n; k++)
            if (!strncmp(e.env.v[k], rows[i].cand_env, strcspn(rows[i].cand_env, "=") + 1))
                fail_msg("row %zu: the candidate's %s was added again", i, rows[i].cand_env);
        /* unlisting drops exactly our variables from the knobs */
        struct mp_strv knobs = MP_STRV_INIT;
        mp_strv_push(&knobs, "VLLM_X=1");
        for (size_t k = 0; k < e.env.n; k++)
            mp_strv_push(&knobs, e.env.v[k]);
        mp_crash_env_unlist(&e, &knobs);
        assert_int_equal(knobs.n, 1);
        assert_string_equal(knobs.v[0], "VLLM_X=1");
        assert_null(knobs.v[1]);
        mp_strv_release(&knobs);
        mp_crash_env_release(&e);
        mp_strv_release(&cand.env);
        mp_strv_release(&w);
    }
}

static void write_file(const char *name, const char *text)
{
    char p[512];
    snprintf(p, sizeof(p), "%s/%s", tmp, name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static bool exists(const char *name)
{
    char p[512];
    struct stat st;
    snprintf(p, sizeof(p), "%s/%s", tmp, name);
    return lstat(p, &st) == 0;
}

static long long raw_us(double delta_s)
{
    struct timespec r;
    clock_gettime(CLOCK_MONOTONIC_RAW, &r);
    return (long long)r.tv_sec * 1000000LL + r.tv_nsec / 1000 + (long long)(delta_s * 1e6);
}

static void test_collect(void **st)
{
    (void)st;
    char log[2048], kmsg[2048], core[64];
    snprintf(core, sizeof(core), "core_4242.1796399790");
    snprintf(log, sizeof(log),
             "(APIServer pid=4240) INFO started\n"
             "(EngineCore_DP0 pid=4242) INFO x\n"
             "[15:56:34.206105] coredump: Detected an exception of type CUDBG_EXCEPTION_WARP_MISALIGNED_ADDRESS (6)\n"
             "[15:56:34.206134] coredump:   - Device: 0\n"
             "[15:56:34.206516] coredump:   #0\t0x7f7ae77a6e60\t_ZN16marlin_moe_wna166MarlinILl5EEEvPK4int4\n"
             "[15:56:34.425449] coredump: Writing ELF file to %s/%s\n"
             "[15:56:34.435534] coredump: All done (took 00s)\n"
             "(APIServer pid=4240) ERROR Engine core proc EngineCore_DP0 died unexpectedly\n",
             tmp, core);
    write_file("server.log", log);
    write_file(core, "dump");
    write_file("core_9.1", "a stray dump of the run");
    char fifo[512];
    snprintf(fifo, sizeof(fifo), "%s/pipe_4242", tmp);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    int64_t t0 = mp_now_ns();
    snprintf(kmsg, sizeof(kmsg),
             "4,1,%lld,-;NVRM: Xid (PCI:0000:01:00): 13, Graphics SM Warp Exception on (GPC 0, TPC 1, SM 0): Misaligned Address\n"
             "4,2,%lld,-;NVRM: Xid (PCI:0000:01:00): 31, pid=4242, name=VLLM::EngineCor, Ch 8. MMU Fault: x. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ\n"
             "4,3,%lld,-;NVRM: Xid (PCI:0000:01:00): 31, pid=777, name=python3, Ch 8\n"
             "4,4,%lld,-;NVRM: Xid (PCI:0000:01:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n"
             "4,5,%lld,-;NVRM: Xid (PCI:0000:01:00): 48, pid=4242, name=x, DBE\n"
             "6,6,%lld,-;usb 1-1: new device\n",
             raw_us(0.1), raw_us(0.1), raw_us(0.1), raw_us(-100), raw_us(30), raw_us(0.1));
    char kpath[512];
    snprintf(kpath, sizeof(kpath), "%s/kmsg", tmp);
    write_file("kmsg", kmsg);
    setenv("MOEPROBE_KMSG", kpath, 1);
    struct mp_gpu_xid_event ev[2] = {{t0 + 100000000, 31, 0}, {t0 + 200000000, 999, 1}};
    struct mp_attempt_result r;
    memset(&r, 0, sizeof(r));
    r.outcome = MP_OUT_CRASH;
    r.obs.recorded = true; /* the log had no traceback: the engine just went away */
    r.obs.seen = MP_SEEN_PROCESS_EXIT;
    r.obs.died_early = true;
    struct mp_crash_collect_in in = {.dir = tmp, .leader = 4240, .t_spawn_ns = t0,
                                     .t_end_ns = t0 + 1000000000, .ev = ev, .nev = 2,
                                     .coredump_words = "on: x, deleted after parsing"};
    mp_crash_collect(&in, &r);
    const struct mp_gpu_fault *g = &r.fault;
    assert_int_equal(g->nk, 1);
    assert_string_equal(g->k[0].name, "marlin_moe_wna16::Marlin<5l>(int4 const*)");
    assert_true(g->k[0].demangled);
    assert_string_equal(g->k[0].family, "marlin-moe");
    assert_string_equal(g->k[0].crash_class, "misaligned-address");
    assert_int_equal(g->k[0].pid, 4242);
    assert_int_equal(g->k[0].line, 5);
    assert_string_equal(g->k[0].dump_state, "deleted after parsing");
    assert_false(exists(core));
    assert_false(exists("core_9.1")); /* the sweep: no dump is left */
    assert_false(exists("pipe_4242"));
    /* the traceback was replaced by the dump: the log's crash is the dump's,
     * and the judgement takes class and message from it */
    assert_true(r.obs.crash && r.obs.crash_engine_dead);
    assert_string_equal(r.obs.crash_class, "misaligned-address");
    assert_int_equal(r.obs.crash_line, 5);
    mp_verdict_classify(&r);
    assert_true(r.cuda_fault && r.engine_died);
    assert_string_equal(r.fail_class, "misaligned-address");
    assert_non_null(strstr(r.fail_message, "CUDBG_EXCEPTION_WARP_MISALIGNED_ADDRESS"));
    assert_non_null(strstr(r.fail_message, "Marlin"));
    assert_int_equal(r.fail_line, 5);
    /* Xids: 2 NVML events, the 13 (no pid) and the engine's 31; not the
     * other process's 31, not the 79 before the window nor the 48 after it */
    assert_int_equal(g->nx, 4);
    assert_int_equal(g->x[0].xid, 31);
    assert_string_equal(g->x[0].source, "nvml");
    assert_string_equal(g->x[0].cause, "application");
    assert_int_equal(g->x[1].xid, 999);
    assert_string_equal(g->x[1].cause, "unknown");
    assert_int_equal(g->x[2].xid, 13);
    assert_string_equal(g->x[2].source, "kmsg");
    assert_int_equal(g->x[3].xid, 31);
    assert_int_equal(g->x[3].pid, 4242);
    assert_string_equal(g->x[3].process, "VLLM::EngineCor");
    assert_true(g->x[3].t_s > 0 && g->x[3].t_s < 1);
    assert_int_equal(g->other_xids, 1);
    assert_null(g->kmsg);
    assert_null(g->nvml);
    mp_attempt_result_release(&r);

    /* unreadable: said, nothing fails; a clean attempt reads nothing */
    setenv("MOEPROBE_KMSG", "/nonexistent/kmsg", 1);
    memset(&r, 0, sizeof(r));
    r.outcome = MP_OUT_HANG;
    struct mp_crash_collect_in in2 = {.dir = tmp, .t_spawn_ns = t0, .t_end_ns = t0 + 1,
                                      .nvml_why = "no NVML", .keep = true};
    mp_crash_collect(&in2, &r);
    assert_non_null(r.fault.kmsg);
    assert_non_null(strstr(r.fault.kmsg, "kernel log not readable"));
    assert_string_equal(r.fault.nvml, "not subscribed: no NVML");
    mp_attempt_result_release(&r);
    memset(&r, 0, sizeof(r));
    r.outcome = MP_OUT_CLEAN;
    mp_crash_collect(&in2, &r);
    assert_null(r.fault.kmsg);
    mp_attempt_result_release(&r);
    setenv("MOEPROBE_KMSG", "none", 1);
    memset(&r, 0, sizeof(r));
    r.outcome = MP_OUT_CRASH;
    mp_crash_collect(&in2, &r);
    assert_string_equal(r.fault.kmsg, "kernel log not read (MOEPROBE_KMSG=none)");
    mp_attempt_result_release(&r);
    unsetenv("MOEPROBE_KMSG");
}

/* --keep-coredumps keeps the dump file */
/* An engine whose log does not tag its processes (vLLM 0.10.0 and older,
 * other servers) and made no dump: the kernel log's Xid 31 names a child
 * that moeprobe saw in the engine's process tree - it is the engine's,
 * not "another process". */
static void test_collect_tree_pids(void **st)
{
    (void)st;
    write_file("server.log", "INFO started\nERROR RuntimeError: CUDA error: an illegal memory "
                             "access was encountered\n");
    char kmsg[1024], kpath[512];
    snprintf(kmsg, sizeof(kmsg),
             "4,1,%lld,-;NVRM: Xid (PCI:0000:01:00): 31, pid=5151, name=python3, Ch 8\n"
             "4,2,%lld,-;NVRM: Xid (PCI:0000:01:00): 31, pid=6161, name=python3, Ch 8\n",
             raw_us(0.1), raw_us(0.1));
    write_file("kmsg", kmsg);
    snprintf(kpath, sizeof(kpath), "%s/kmsg", tmp);
    setenv("MOEPROBE_KMSG", kpath, 1);
    int64_t t0 = mp_now_ns();
    pid_t tree[2] = {5150, 5151};
    struct mp_attempt_result r;
    memset(&r, 0, sizeof(r));
    r.outcome = MP_OUT_CRASH;
    struct mp_crash_collect_in in = {.dir = tmp, .leader = 5149, .t_spawn_ns = t0,
                                     .t_end_ns = t0 + 1000000000, .pids = tree, .npids = 2,
                                     .nvml_why = "no NVML"};
    mp_crash_collect(&in, &r);
    assert_int_equal(r.fault.nx, 1);
    assert_int_equal(r.fault.x[0].xid, 31);
    assert_int_equal(r.fault.x[0].pid, 5151);
    assert_int_equal(r.fault.other_xids, 1); /* 6161 is nobody of the engine's */
    mp_attempt_result_release(&r);
    unsetenv("MOEPROBE_KMSG");
}

/* A shared host: another tenant's GPU falls off the bus (Xid 79 names no
 * process: pid='<unknown>') while the engine runs on 0000:01:00. Its line
 * is another GPU's, never the engine's hardware failure (which would void
 * the candidate's diagnosis); the engine GPU's own 79, an Xid of an
 * engine process, and one whose GPU the line does not say, are kept. */
static void test_collect_other_gpu(void **st)
{
    (void)st;
    write_file("server.log", "INFO started\n");
    char kmsg[1024], kpath[512];
    snprintf(kmsg, sizeof(kmsg),
             "4,1,%lld,-;NVRM: Xid (PCI:0000:41:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n"
             "4,2,%lld,-;NVRM: Xid (0000:41:00): 13, 0003 00000000 00008297\n"
             "4,3,%lld,-;NVRM: Xid (PCI:0000:01:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n"
             "4,4,%lld,-;NVRM: Xid (PCI:0000:41:00): 31, pid=5151, name=python3, Ch 8\n"
             "4,5,%lld,-;NVRM: Xid: 48, DBE\n",
             raw_us(0.1), raw_us(0.1), raw_us(0.1), raw_us(0.1), raw_us(0.1));
    write_file("kmsg", kmsg);
    snprintf(kpath, sizeof(kpath), "%s/kmsg", tmp);
    setenv("MOEPROBE_KMSG", kpath, 1);
    int64_t t0 = mp_now_ns();
    pid_t tree[1] = {5151};
    static const char pci[1][16] = {"0000:01:00"};
    struct mp_attempt_result r;
    memset(&r, 0, sizeof(r));
    r.outcome = MP_OUT_CRASH;
    struct mp_crash_collect_in in = {.dir = tmp, .leader = 5149, .t_spawn_ns = t0,
                                     .t_end_ns = t0 + 1000000000, .pids = tree, .npids = 1,
                                     .nvml_why = "no NVML", .pci = pci, .npci = 1};
    mp_crash_collect(&in, &r);
    assert_int_equal(r.fault.nx, 3);
    assert_int_equal(r.fault.x[0].xid, 79);
    assert_string_equal(r.fault.x[0].pci, "0000:01:00");
    assert_int_equal(r.fault.x[1].xid, 31); /* the engine's process, whatever the GPU */
    assert_int_equal(r.fault.x[2].xid, 48); /* no GPU said: kept */
    assert_int_equal(r.fault.other_xids, 2);
    mp_attempt_result_release(&r);
    /* the engine's GPUs not known: every line that names no other process counts */
    memset(&r, 0, sizeof(r));
    r.outcome = MP_OUT_CRASH;
    in.npci = 0;
    mp_crash_collect(&in, &r);
    assert_int_equal(r.fault.nx, 5);
    mp_attempt_result_release(&r);
    unsetenv("MOEPROBE_KMSG");
}

/* --keep-coredumps never fills the disk: with MP_CD_KEEP_CAP of dumps kept
 * in the run (a sparse file stands for them), the next attempt's dump goes
 * to /dev/null and one written anyway is deleted, saying why. */
/* A dump the candidate's own CUDA_COREDUMP_FILE wrote outside the attempt's
 * folder is the user's: parsed, never deleted (moeprobe deletes only what
 * its own setting put in the attempt's folder). */
static void test_candidate_dump_kept(void **st)
{
    (void)st;
    char a[300], mine[300], dump[340], log[1024];
    snprintf(a, sizeof(a), "%s/own-attempt", tmp);
    snprintf(mine, sizeof(mine), "%s/users-dumps", tmp);
    assert_int_equal(mkdir(a, 0700), 0);
    assert_int_equal(mkdir(mine, 0700), 0);
    snprintf(dump, sizeof(dump), "%s/core_9.1", mine);
    write_file("users-dumps/core_9.1", "dump");
    snprintf(log, sizeof(log),
             "coredump: Detected an exception of type CUDBG_EXCEPTION_WARP_ILLEGAL_ADDRESS (14)\n"
             "coredump:   #0 0x10 gather\n"
             "coredump: Writing ELF file to %s\n", dump);
    write_file("own-attempt/server.log", log);
    setenv("MOEPROBE_KMSG", "none", 1);
    struct mp_attempt_result r;
    memset(&r, 0, sizeof(r));
    r.outcome = MP_OUT_CRASH;
    struct mp_crash_collect_in in = {.dir = a};
    mp_crash_collect(&in, &r);
    assert_int_equal(r.fault.nk, 1);
    assert_string_equal(r.fault.k[0].name, "gather");
    assert_string_equal(r.fault.k[0].dump_state,
                        "kept where the candidate's CUDA_COREDUMP_FILE put it");
    struct stat sb;
    assert_int_equal(lstat(dump, &sb), 0);
    mp_attempt_result_release(&r);
    unsetenv("MOEPROBE_KMSG");
    unlink(dump);
}

static void test_keep_cap(void **st)
{
    (void)st;
    char run[300], a1[320], a2[320], big[340], log[1024];
    snprintf(run, sizeof(run), "%s/caprun", tmp);
    snprintf(a1, sizeof(a1), "%s/attempts", run);
    assert_int_equal(mkdir(run, 0700), 0);
    assert_int_equal(mkdir(a1, 0700), 0);
    snprintf(a1, sizeof(a1), "%s/attempts/x-1", run);
    snprintf(a2, sizeof(a2), "%s/attempts/x-2", run);
    assert_int_equal(mkdir(a1, 0700), 0);
    assert_int_equal(mkdir(a2, 0700), 0);
    snprintf(big, sizeof(big), "%s/core_1.1", a1);
    FILE *f = fopen(big, "w");
    assert_non_null(f);
    fclose(f);
    assert_int_equal(truncate(big, (off_t)MP_CD_KEEP_CAP + 1), 0);
    struct statvfs vs;
    bool room = statvfs(a2, &vs) == 0 &&
                (unsigned long long)vs.f_bavail * vs.f_frsize >= MP_CD_MIN_FREE;
    struct mp_strv w = MP_STRV_INIT;
    mp_split_words("vllm serve", &w, NULL);
    struct mp_crash_env_in ein = {.dir = a2, .run_dir = run, .allowed = true, .keep = true,
                                  .cmd = w.v, .ncmd = w.n};
    struct mp_crash_env e;
    mp_crash_env_build(&ein, &e);
    assert_string_equal(find_env(&e, "CUDA_COREDUMP_FILE"), "/dev/null");
    assert_non_null(strstr(e.words, room ? "--keep-coredumps' cap" : "GiB free"));
    mp_crash_env_release(&e);
    mp_strv_release(&w);
    /* a dump written anyway is not kept */
    snprintf(log, sizeof(log),
             "coredump: Detected an exception of type CUDBG_EXCEPTION_WARP_ILLEGAL_ADDRESS (14)\n"
             "coredump:   #0 0x10 gather\n"
             "coredump: Writing ELF file to %s/core_8.1\n", a2);
    char p[340];
    snprintf(p, sizeof(p), "%s/server.log", a2);
    f = fopen(p, "w");
    assert_non_null(f);
    fputs(log, f);
    fclose(f);
    snprintf(p, sizeof(p), "%s/core_8.1", a2);
    f = fopen(p, "w");
    assert_non_null(f);
    fputs("dump", f);
    fclose(f);
    setenv("MOEPROBE_KMSG", "none", 1);
    struct mp_attempt_result r;
    memset(&r, 0, sizeof(r));
    r.outcome = MP_OUT_CRASH;
    struct mp_crash_collect_in in = {.dir = a2, .keep = true, .run_dir = run};
    mp_crash_collect(&in, &r);
    assert_int_equal(r.fault.nk, 1);
    assert_string_equal(r.fault.k[0].dump_state, "deleted: --keep-coredumps' cap reached");
    struct stat sb;
    assert_int_not_equal(lstat(p, &sb), 0);
    mp_attempt_result_release(&r);
    unsetenv("MOEPROBE_KMSG");
    unlink(big);
}

static void test_keep(void **st)
{
    (void)st;
    char log[512];
    snprintf(log, sizeof(log),
             "coredump: Detected an exception of type CUDBG_EXCEPTION_WARP_ILLEGAL_ADDRESS (14)\n"
             "coredump:   #0 0x10 gather\n"
             "coredump: Writing ELF file to %s/core_7.1\n", tmp);
    write_file("server.log", log);
    write_file("core_7.1", "dump");
    setenv("MOEPROBE_KMSG", "none", 1);
    struct mp_attempt_result r;
    memset(&r, 0, sizeof(r));
    r.outcome = MP_OUT_CRASH;
    r.obs.recorded = true; /* a traceback said so already: kept as it is */
    r.obs.crash = true;
    r.obs.crash_class = xstrdup("illegal-address");
    r.obs.crash_message = xstrdup("CUDA error: an illegal memory access was encountered");
    r.obs.crash_line = 2;
    struct mp_crash_collect_in in = {.dir = tmp, .keep = true};
    mp_crash_collect(&in, &r);
    assert_int_equal(r.fault.nk, 1);
    assert_string_equal(r.fault.k[0].name, "gather");
    assert_null(r.fault.k[0].family);
    assert_false(r.fault.k[0].demangled);
    assert_string_equal(r.fault.k[0].dump_state, "kept");
    assert_true(exists("core_7.1"));
    assert_string_equal(r.obs.crash_message, "CUDA error: an illegal memory access was encountered");
    assert_int_equal(r.obs.crash_line, 2);
    mp_attempt_result_release(&r);
    unsetenv("MOEPROBE_KMSG");
}

static void test_cudagdb_table(void **st)
{
    (void)st;
    const char *out =
        "Opening GPU coredump: /tmp/core_1.2\n"
        "  Kernel Parent Dev Grid Status   SMs Mask   GridDim  BlockDim Name Args\n"
        "*      0      -   0   53 Active 0x00000001 (1,1,1) (128,1,1) conditional_hang_kernel x_ptr=0x7f, flag=0\n"
        "       1      -   0   54 Active 0x00000002 (2,1,1) (32,1,1) void marlin<int, 2>(int*) \n"
        "       2      -   0   55 Active 0x00000004 (2,1,1) (32,1,1) conditional_hang_kernel x_ptr=0x1\n"
        "garbage line\n";
    struct mp_strv names = MP_STRV_INIT;
    assert_int_equal(mp_cudagdb_kernels(out, strlen(out), &names), 2);
    assert_string_equal(names.v[0], "conditional_hang_kernel");
    assert_string_equal(names.v[1], "void marlin<int, 2>(int*)");
    mp_strv_release(&names);
    assert_int_equal(mp_cudagdb_kernels("", 0, &names), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_container_path),
        cmocka_unit_test(test_env),
        cmocka_unit_test(test_collect),
        cmocka_unit_test(test_collect_tree_pids),
        cmocka_unit_test(test_collect_other_gpu),
        cmocka_unit_test(test_keep),
        cmocka_unit_test(test_keep_cap),
        cmocka_unit_test(test_candidate_dump_kept),
        cmocka_unit_test(test_cudagdb_table),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
