/* crashinfo.h - what an attempt learns about a GPU fault beyond the Python
 * traceback (#24), in three calls from the attempt:
 *
 *  1. at launch, mp_crash_env_build: the CUDA core-dump variables its
 *     engine gets, the same in every run: the dump on exception
 *     (CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1, CUDA_COREDUMP_SHOW_PROGRESS=1,
 *     CUDA_COREDUMP_GENERATION_FLAGS skipping every memory and with
 *     skip_abort, CUDA_COREDUMP_FILE=DIR/core_%p.%t) and the user-triggered
 *     dump (CUDA_ENABLE_USER_TRIGGERED_COREDUMP=1,
 *     CUDA_COREDUMP_PIPE=DIR/pipe_%p) for a hang. skip_abort keeps the
 *     Python traceback after the driver's lines: without it the faulting
 *     process aborts instead, and the pipe's variables alone make such a
 *     dump too (driver 580, docs/verdicts.md "GPU core dumps"). A container
 *     gets the path its volumes map the attempt directory to, or no pipe
 *     and /dev/null as the file (the driver's lines stay in the log). A
 *     variable the candidate sets itself is left as it sets it; a
 *     candidate that sets CUDA_ENABLE_COREDUMP_ON_EXCEPTION to 0 (or empty)
 *     gets none of them. With less than MP_CD_MIN_FREE free, or
 *     MP_CD_KEEP_CAP of kept dumps in the run, the file is /dev/null.
 *     --no-coredump: nothing is added.
 *  2. on a hang, run/crashhang.h (steps on the attempt's loop): /health
 *     and /metrics during the stall (the evidence), then a dump through
 *     each pipe the engine's processes opened and the kernels its warps
 *     were in (cuda-gdb on the dump).
 *  3. at the end, mp_crash_collect: the core-dump lines of server.log, the
 *     Xids of NVML events (observe/telemetry.h) and of the kernel log
 *     (proc/kmsg.h) within the attempt's window and of its processes (the
 *     leader, the processes of its tree seen, the pids its log names), into
 *     r->fault; a crash whose traceback the dump replaced gets its class and
 *     message from the dump. Dump files are deleted unless kept.
 * Loop-thread only. */
#ifndef MP_RUN_CRASHINFO_H
#define MP_RUN_CRASHINFO_H

#include "compat.h"

#include <sys/types.h>

#include "model/attempt.h"
#include "model/candidate.h"
#include "observe/telemetry.h"
#include "strv.h"

#define MP_CD_MIN_FREE (4ULL << 30)  /* free bytes needed to write a dump file */
#define MP_CD_KEEP_CAP (2ULL << 30)  /* --keep-coredumps: dump bytes a run keeps at most */
#define MP_CD_HANG_WAIT_S 60.0       /* longest wait for the dumps a hang triggered */

struct mp_crash_env_in {
    const char *dir;              /* the attempt directory (created) */
    const char *run_dir;          /* the run directory (the kept-dumps cap), may be NULL */
    bool allowed;                 /* false: --no-coredump */
    bool keep;                    /* --keep-coredumps */
    char *const *cmd;             /* the server command (a container's volumes) */
    size_t ncmd;
    const struct mp_candidate *cand; /* its own variables win; may be NULL */
};
struct mp_crash_env {
    struct mp_strv env;           /* NAME=VALUE for the engine */
    bool pipes;                   /* a hang can trigger a dump through DIR/pipe_<pid> */
    char *words;                  /* the settings in words (gpu_fault.coredump) */
};
void mp_crash_env_build(const struct mp_crash_env_in *in, struct mp_crash_env *out);
void mp_crash_env_release(struct mp_crash_env *e);
/* Drop e's variables from the list of knobs l checks for delivery (they are
 * moeprobe's instruments, not the candidate's knobs); the launch keeps
 * them in its environment and command. */
void mp_crash_env_unlist(const struct mp_crash_env *e, struct mp_strv *env_knobs);

/* Where a container sees host_dir: 1 and the path in out when a volume of
 * cmd (-v/--volume HOST:CONT, --mount type=bind,source=HOST,target=CONT)
 * maps it or a folder above it; 0 when cmd is a container run that does
 * not; -1 when cmd is not a docker-like container run. Pure. */
int mp_crash_container_path(char *const *cmd, size_t ncmd, const char *host_dir, char *out,
                            size_t outn);

struct mp_crash_collect_in {
    const char *dir;
    pid_t leader;                 /* the engine's first process, 0 = none (attached) */
    const pid_t *pids;            /* the other processes of its tree moeprobe saw (an engine
                                   * whose log does not tag its processes with their pids) */
    size_t npids;
    int64_t t_spawn_ns, t_end_ns; /* the attempt's window (mp_now_ns) */
    const struct mp_gpu_xid_event *ev; /* NVML Xid events (observe/telemetry.h) */
    size_t nev;
    const char *nvml_why;         /* why there are no NVML events (NULL: subscribed) */
    const char (*pci)[16];        /* the engine's GPUs' PCI addresses ("0000:01:00", NVML:
                                   * mp_gpu_pci_addrs); a kernel-log Xid of another GPU that
                                   * names no engine process is another's */
    size_t npci;                  /* 0: not known (every GPU may be the engine's) */
    bool keep;                    /* --keep-coredumps */
    const char *run_dir;          /* the kept-dumps cap */
    const char *coredump_words;   /* mp_crash_env.words */
};
void mp_crash_collect(const struct mp_crash_collect_in *in, struct mp_attempt_result *r);

#endif
