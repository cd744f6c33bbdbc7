/* srv_coredump.c - refengine's GPU driver, as far as a fault shows it from
 * outside (issue 24): what the CUDA driver prints and writes when the
 * environment asks for a core dump, and what the kernel log records.
 *
 * A simulated CUDA failure (async-race, kernel-fault):
 *  - with REFENGINE_FAKE_KMSG=FILE (a test fixture standing for the kernel
 *    log), the driver's "NVRM: Xid" lines for the world's xid key (default:
 *    the H200 record of an illegal address: two Xid 13 lines and an Xid 31
 *    naming the faulting process) are appended in /dev/kmsg's form;
 *  - when the environment asks for a dump on exception, the driver makes
 *    one. As measured on an H200 (driver 580.159.04, CUDA 13.0;
 *    scripts/gpu-dumpvars.sh, docs/verdicts.md "GPU core dumps"), it does
 *    so with CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1, with the pipe's variables
 *    alone (CUDA_ENABLE_USER_TRIGGERED_COREDUMP=1 and CUDA_COREDUMP_PIPE)
 *    and with CUDA_COREDUMP_SHOW_PROGRESS=1 and CUDA_COREDUMP_FILE alone.
 *    With CUDA_COREDUMP_SHOW_PROGRESS=1 its lines (the H200 format:
 *    exception, device, SM, warp, PC, the stack frame with the backend's
 *    kernel, one line per SM, the file, "All done") go to stderr
 *    unprefixed; a file stands for the ELF dump at CUDA_COREDUMP_FILE (%p,
 *    %t, %h expanded; /dev/null: none). Then the process that faulted (the
 *    EngineCore) is killed by SIGABRT instead of raising the Python
 *    exception, and the API server says the engine core died, as vLLM does;
 *    unless CUDA_COREDUMP_GENERATION_FLAGS has skip_abort: then the
 *    exception is raised as without a dump (the traceback follows).
 * A hang with CUDA_ENABLE_USER_TRIGGERED_COREDUMP=1 and CUDA_COREDUMP_PIPE:
 * a FIFO at that path (the EngineCore's pid for %p); writing to it makes a
 * dump file naming the kernel the warps spin in (the world's kernel key)
 * and, with CUDA_COREDUMP_SHOW_PROGRESS=1, the driver's progress lines;
 * the pipe is read by a thread of its own (the loop may be the one that
 * hangs). CUDA mode leaves all of it to the real driver, except
 * that a hanging backend launches a kernel that really spins.
 *
 * The kernel a backend's fault names: the world's kernel key, else a
 * realistic default (names of the families of data/gpufault.json; the
 * mangled forms are what g++ gives for declarations of those templates). */
#include "srv_int.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static const char *const default_kernel[WB_COUNT] = {
    [WB_FLASHINFER_TRTLLM] =
        "GemmGatedActKernel_E4m3_E4m3_Fp32_tile128x8x256_epilogueTile128x8_mma128x8x32_"
        "cluster1x1x1_transposeMmaOutput_sm100a",
    [WB_FLASHINFER_CUTEDSL] = "kernel_cutlass_blockscaled_grouped_gemm_nvfp4_0",
    [WB_FLASHINFER_CUTEDSL_BATCHED] = "kernel_cutlass_blockscaled_batched_gemm_nvfp4_0",
    [WB_FLASHINFER_CUTLASS] =
        "_ZN7cutlass13device_kernelINS_4gemm6kernel13GemmUniversalINS1_17GroupProblemShapeIN4cute5"
        "tupleIJiiiEEEEENS1_10collective13CollectiveMmaINS1_36MainloopSm120ArrayTmaWarpSpecializ"
        "edILi3ELi2ENS6_IJNS5_1CILi1EEESD_SD_EEENS1_40KernelPtrArrayTmaWarpSpecializedPingpongE"
        "EENS6_IJNSC_ILi128EEESH_SH_EEENS_11nv_float4_tINS_12float_e2m1_tEEENS_13float_ue4m3_tE"
        "SL_SM_EENS_8epilogue10collective18CollectiveEpilogueIN12tensorrt_llm18cutlass_extensio"
        "ns24EpilogueMoeFusedFinalizeENS_10bfloat16_tEEEvEEEEvNT_6ParamsE",
    [WB_VLLM_CUTLASS] =
        "_ZN7cutlass13device_kernelINS_4gemm6kernel13GemmUniversalINS1_17GroupProblemShapeIN4cute5"
        "tupleIJiiiEEEEENS1_10collective13CollectiveMmaINS1_36MainloopSm120ArrayTmaWarpSpecializ"
        "edILi3ELi2ENS6_IJNS5_1CILi1EEESD_SD_EEENS1_40KernelPtrArrayTmaWarpSpecializedPingpongE"
        "EENS6_IJNSC_ILi128EEESH_SH_EEENS_11nv_float4_tINS_12float_e2m1_tEEENS_13float_ue4m3_tE"
        "SL_SM_EENS_8epilogue10collective18CollectiveEpilogueINSO_34PtrArrayTmaWarpSpecializedP"
        "ingpongENS_10bfloat16_tEEEvEEEEvNT_6ParamsE",
    [WB_MARLIN] = "_ZN16marlin_moe_wna166MarlinILl5ELl13ELl5ELl12ELi256ELi1ELi8ELi8ELb1ELi4ELi1EL"
                  "b0EEEvPK4int4S3_PS1_S4_S3_PKfS3_PKtS3_PKiSA_SA_SA_S6_ibbiiiiPibbb",
    [WB_HUMMING] = "_ZN7humming15moe_gemm_kernelILi128ELi64EEEvPKvPvPKii",
    [WB_EMULATION] =
        "_ZN2at6native24index_elementwise_kernelILi128ELi4EZNS0_16gpu_index_kernelIZNS0_17index_"
        "kernel_implINS0_10OpaqueTypeILi1EEEEEvRNS_18TensorIteratorBaseEN3c108ArrayRefIlEESA_EUl"
        "PcPKclE_EEvS7_SA_SA_RKT_bEUliE_EEvlT1_",
    [WB_FLASHINFER_B12X] = "kernel_cutlass_b12x_grouped_gemm_nvfp4_0",
    [WB_B12X] = "kernel_cutlass_b12x_moe_nvfp4_0",
};

static const char *kernel_name(void)
{
    if (srv.be->kernel[0])
        return srv.be->kernel;
    enum world_backend b = srv.cfg->res->backend;
    return b >= 0 && b < WB_COUNT && default_kernel[b] ? default_kernel[b] : "moe_kernel";
}

/* the process that holds the GPU, as a fault names it: the EngineCore */
static pid_t gpu_pid(void)
{
    return srv.cfg->child > 0 ? srv.cfg->child : getpid();
}

static bool env_on(const char *name)
{
    const char *v = getenv(name);
    return v && *v && strcmp(v, "0") != 0;
}

static int sm_count(void)
{
    static const int n[] = {[WD_SM90] = 132, [WD_SM100] = 148, [WD_SM120] = 188, [WD_SM121] = 48};
    return n[srv.cfg->w->device];
}

/* one driver line on stderr, whole in one write: "[HH:MM:SS.uuuuuu] coredump: ..." */
static void say(const char *fmt, ...) MP_PRINTF(1, 2);
static void say(const char *fmt, ...)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    struct tm tm;
    localtime_r(&tv.tv_sec, &tm);
    char line[2048];
    int n = snprintf(line, sizeof(line), "[%02d:%02d:%02d.%06ld] coredump: ", tm.tm_hour,
                     tm.tm_min, tm.tm_sec, (long)tv.tv_usec);
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
    va_end(ap);
    size_t len = (size_t)n + (size_t)MP_MIN(m, (int)(sizeof(line) - (size_t)n - 2));
    line[len++] = '\n';
    ssize_t w = write(2, line, len);
    (void)w;
}

/* CUDA_COREDUMP_FILE / _PIPE with %p %t %h expanded (the driver's default
 * file name when unset) */
static void expand(const char *var, const char *def, pid_t pid, char *out, size_t n)
{
    const char *pat = getenv(var);
    if (!pat || !*pat)
        pat = def;
    char host[128] = "localhost";
    gethostname(host, sizeof(host) - 1);
    size_t o = 0;
    for (const char *p = pat; *p && o + 32 < n; p++) {
        if (*p == '%' && p[1] == 'p')
            o += (size_t)snprintf(out + o, n - o, "%ld", (long)pid), p++;
        else if (*p == '%' && p[1] == 't')
            o += (size_t)snprintf(out + o, n - o, "%ld", (long)time(NULL)), p++;
        else if (*p == '%' && p[1] == 'h')
            o += (size_t)snprintf(out + o, n - o, "%.60s", host), p++;
        else
            out[o++] = *p;
    }
    out[o] = '\0';
}

/* the file standing for the ELF dump (a text file: refengine has no GPU) */
static void write_dump(const char *path, const char *exception, const char *kernel)
{
    if (!strcmp(path, "/dev/null"))
        return;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return;
    char b[2048];
    int n = snprintf(b, sizeof(b),
                     "refengine fake GPU core dump (not an ELF file)\nexception: %s\nkernel: %s\n",
                     exception, kernel);
    ssize_t w = write(fd, b, (size_t)MP_MIN(n, (int)sizeof(b) - 1));
    (void)w;
    close(fd);
}

static const char *exception_of(const char *error, int *code)
{
    if (strstr(error, "misaligned")) {
        *code = 6;
        return "CUDBG_EXCEPTION_WARP_MISALIGNED_ADDRESS";
    }
    if (strstr(error, "illegal instruction")) {
        *code = 4;
        return "CUDBG_EXCEPTION_WARP_ILLEGAL_INSTRUCTION";
    }
    *code = 14;
    return "CUDBG_EXCEPTION_WARP_ILLEGAL_ADDRESS";
}

/* ---- the kernel log (REFENGINE_FAKE_KMSG) ---- */

static void kmsg_line(int fd, const char *fmt, ...) MP_PRINTF(2, 3);
static void kmsg_line(int fd, const char *fmt, ...)
{
    static unsigned seq = 1000;
    char msg[1024], line[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    /* /dev/kmsg: priority, sequence, microseconds since boot (the kernel's
     * unslewed clock: CLOCK_MONOTONIC_RAW is the nearest a process has), flags */
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    int n = snprintf(line, sizeof(line), "4,%u,%lld,-;%s\n", seq++,
                     (long long)ts.tv_sec * 1000000LL + ts.tv_nsec / 1000, msg);
    ssize_t w = write(fd, line, (size_t)MP_MIN(n, (int)sizeof(line) - 1));
    (void)w;
}

static void fake_xids(pid_t pid)
{
    const char *path = getenv("REFENGINE_FAKE_KMSG");
    if (!path || !*path)
        return;
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0)
        return;
    const char *pci = "PCI:0000:01:00";
    int def[2] = {13, 31}, ndef = strstr(srv.be->error, "illegal memory access") ? 2 : 1;
    const int *x = srv.be->nxid ? srv.be->xid : def;
    unsigned nx = srv.be->nxid ? srv.be->nxid : (unsigned)ndef;
    for (unsigned i = 0; i < nx; i++) {
        if (x[i] == 13) {
            kmsg_line(fd, "NVRM: Xid (%s): 13, Graphics SM Warp Exception on (GPC 0, TPC 1, SM 0): "
                          "Out Of Range Address", pci);
            kmsg_line(fd, "NVRM: Xid (%s): 13, Graphics Exception: ESR 0x504730=0x10 "
                          "0x504734=0x0 0x504728=0x4c1eb72 0x50472c=0x174", pci);
        } else if (x[i] == 31) {
            kmsg_line(fd, "NVRM: Xid (%s): 31, pid=%ld, name=VLLM::EngineCor, Ch 00000008, intr "
                          "00000000. MMU Fault: ENGINE GRAPHICS GPC0 GPCCLIENT_T1_0 faulted @ "
                          "0x7f12_34560000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ",
                      pci, (long)pid);
        } else if (x[i] == 79) {
            kmsg_line(fd, "NVRM: Xid (%s): 79, pid='<unknown>', name=<unknown>, GPU has fallen "
                          "off the bus.", pci);
        } else {
            kmsg_line(fd, "NVRM: Xid (%s): %d, pid=%ld, name=VLLM::EngineCor, Xid %d reported by "
                          "the GPU", pci, x[i], (long)pid, x[i]);
        }
    }
    close(fd);
}

/* ---- the dump on exception ---- */

/* the dump's lines (when the driver shows its progress) and its file */
static void exception_dump(pid_t pid, bool lines)
{
    int code;
    const char *exc = exception_of(srv.be->error, &code);
    uint64_t st = srv.cfg->seed ^ 0xc0ffeeULL;
    int nsm = sm_count(), sm = (int)(re_gen_mix(&st) % (uint64_t)nsm);
    unsigned long long pc = 0x7f7ae7700000ULL + (re_gen_mix(&st) & 0xffff0ULL);
    char path[1024];
    expand("CUDA_COREDUMP_FILE", "core_%t_%h_%p.nvcudmp", pid, path, sizeof(path));
    if (lines) {
        say("Starting GPU coredump generation");
        say("Detected an exception of type %s (%d)", exc, code);
        say("  - Device: 0");
        say("  - SM: %d", sm);
        say("  - Warp: %d", (int)(re_gen_mix(&st) % 48));
        say("  - PC 0x%llx", pc);
        say("Stack trace (lane masks: active 0xFFFFFFFF, valid 0xFFFFFFFF):");
        say("  #0\t0x%llx\t%s", pc + 0xf0, kernel_name());
        for (int i = 1; i <= nsm; i++)
            say("SM %d/%d has finished state collection", i, nsm);
        say("Writing ELF file to %s", path);
    }
    write_dump(path, exc, kernel_name());
    if (lines)
        say("All done (took 00s)");
}

/* the variables that made a dump on exception on the H200 (see the top) */
static bool dump_on_exception(void)
{
    return env_on("CUDA_ENABLE_COREDUMP_ON_EXCEPTION") ||
           (env_on("CUDA_ENABLE_USER_TRIGGERED_COREDUMP") && getenv("CUDA_COREDUMP_PIPE")) ||
           (env_on("CUDA_COREDUMP_SHOW_PROGRESS") && getenv("CUDA_COREDUMP_FILE"));
}

/* skip_abort among the comma-separated generation flags */
static bool skip_abort(void)
{
    const char *f = getenv("CUDA_COREDUMP_GENERATION_FLAGS");
    for (const char *p = f; p && *p; p += strcspn(p, ","), p += *p == ',') {
        size_t n = strcspn(p, ",");
        if (n == 10 && !strncmp(p, "skip_abort", 10))
            return true;
    }
    return false;
}

bool re_srv_cd_fault(void)
{
    if (srv.cfg->cuda)
        return false; /* the real driver's */
    pid_t pid = gpu_pid();
    fake_xids(pid);
    if (!dump_on_exception())
        return false;
    exception_dump(pid, env_on("CUDA_COREDUMP_SHOW_PROGRESS"));
    if (skip_abort())
        return false; /* the driver returns: the Python exception follows */
    if (srv.cfg->child > 0) {
        /* the EngineCore aborts in the driver: no Python exception; the API
         * server notices its death (SIGCHLD: "Engine core proc ... died
         * unexpectedly") */
        kill(srv.cfg->child, SIGABRT);
        return true;
    }
    abort();
}

/* ---- the dump a user triggers through the pipe ---- */

static char pipe_path[1024];
static pid_t pipe_pid;

static void *pipe_main(void *arg)
{
    MP_UNUSED(arg);
    char buf[65536];
    for (;;) {
        int fd = open(pipe_path, O_RDONLY | O_CLOEXEC); /* blocks until a writer comes */
        if (fd < 0)
            return NULL;
        size_t got = 0;
        ssize_t n;
        while ((n = read(fd, buf, sizeof(buf))) > 0 || (n < 0 && errno == EINTR))
            got += n > 0 ? (size_t)n : 0;
        close(fd);
        if (!got)
            continue;
        char path[1024];
        bool lines = env_on("CUDA_COREDUMP_SHOW_PROGRESS");
        expand("CUDA_COREDUMP_FILE", "core_%t_%h_%p.nvcudmp", pipe_pid, path, sizeof(path));
        if (lines) {
            say("Writing ELF file to %s", path);
            say("Writing out global memory (0 bytes)");
            say("Writing out device table");
        }
        /* a hanging backend's warps spin in its kernel */
        write_dump(path, "none (triggered by the user)",
                   srv.be->failure == WF_HANG ? kernel_name() : "");
        if (lines) {
            say("Writing out metadata");
            say("Finalizing");
            say("Writing done");
            say("All done (took 00s)");
        }
    }
}

void re_srv_cd_start(void)
{
    if (srv.cfg->cuda || !env_on("CUDA_ENABLE_USER_TRIGGERED_COREDUMP") ||
        !getenv("CUDA_COREDUMP_PIPE"))
        return;
    pipe_pid = gpu_pid();
    expand("CUDA_COREDUMP_PIPE", "", pipe_pid, pipe_path, sizeof(pipe_path));
    if (!pipe_path[0] || (mkfifo(pipe_path, 0600) != 0 && errno != EEXIST))
        return;
    pthread_t t;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old); /* signals stay the loop's */
    if (pthread_create(&t, NULL, pipe_main, NULL) == 0)
        pthread_detach(t);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

void re_srv_cd_hang(void)
{
    if (srv.cfg->cuda)
        (void)moe_cuda_spin(srv.cfg->cuda); /* a kernel that really spins, for the dump */
}
