/* coredump.h - the lines the CUDA driver prints while it writes a GPU core
 * dump (CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1 with
 * CUDA_COREDUMP_SHOW_PROGRESS=1, or a dump triggered through
 * CUDA_COREDUMP_PIPE), read from an engine's log, any process of it:
 *
 *   [15:56:34.204002] coredump: Starting GPU coredump generation
 *   [15:56:34.206105] coredump: Detected an exception of type CUDBG_EXCEPTION_WARP_ILLEGAL_ADDRESS (14)
 *   [15:56:34.206134] coredump:   - Device: 0
 *   [15:56:34.206139] coredump:   - SM: 0
 *   [15:56:34.206142] coredump:   - Warp: 2
 *   [15:56:34.206145] coredump:   - PC 0x7f7ae77a6d70
 *   [15:56:34.206509] coredump: Stack trace (lane masks: active 0xFFFFFFFF, valid 0xFFFFFFFF):
 *   [15:56:34.206516] coredump:   #0	0x7f7ae77a6e60	gather
 *   [15:56:34.425449] coredump: Writing ELF file to DIR/core_457.1796399790
 *   [15:56:34.435534] coredump: All done (took 00s)
 *
 * (issue 24, measured on an H200, driver 580; the frame's separators may be
 * tabs or spaces, the "- PC" line may have a colon). Anything before
 * "coredump:" is a prefix (timestamps, a process tag): a tag with "pid=N"
 * keeps the dumps of several processes apart when their lines interleave;
 * without one, a "Starting" line begins the next dump. A dump's pid also
 * comes from its file name (core_<pid>... as moeprobe names it, or the
 * blog's name.<pid>.<time>).
 *
 * A NUL byte ends a line (what follows it is not read).
 *
 * Pure: no I/O. Bounded: MP_CD_RECORDS dumps (more are counted in
 * dropped), MP_CD_FRAMES frames each, MP_CD_NAME_MAX bytes of a frame's
 * name, MP_CD_PATH_MAX of a file name.
 *
 * Partial input: each field of a dump is set by the first line that gives
 * it and never changes after; frames and dumps are only appended. So the
 * state after any prefix of a log's lines is a prefix of the state after
 * all of them: the same dumps in the same order, each field either unset or
 * equal, each frame list a prefix (tests/fuzz/fuzz_coredump.c checks it). */
#ifndef MP_LOGS_COREDUMP_H
#define MP_LOGS_COREDUMP_H

#include "compat.h"

#define MP_CD_RECORDS 8
#define MP_CD_FRAMES 16
#define MP_CD_NAME_MAX 8192
#define MP_CD_PATH_MAX 1024

struct mp_cd_frame {
    int index;              /* the #N it was printed with */
    unsigned long long pc;
    char *name;             /* as printed (mangled C++ or a plain name), owned */
};

struct mp_cd_dump {
    long pid;               /* 0 = unknown */
    bool started;           /* "Starting GPU coredump generation" was seen */
    bool done;              /* "All done" */
    char exception[64];     /* "CUDBG_EXCEPTION_WARP_ILLEGAL_ADDRESS"; "" = none (a dump
                             * triggered by the user has no exception) */
    int exception_code;     /* the number in parentheses, -1 = not given */
    int device, sm, warp;   /* -1 = not given */
    unsigned long long pc;
    bool has_pc;
    struct mp_cd_frame frames[MP_CD_FRAMES];
    size_t nframes;
    size_t frames_dropped;
    char *file;             /* the ELF file it wrote, owned; NULL = not said */
    long line_first;        /* log line numbers: the dump's first line, */
    long line_exception;    /* its exception line, */
    long line_frame;        /* its first frame line (0 = none) */
};

struct mp_coredump {
    struct mp_cd_dump d[MP_CD_RECORDS];
    size_t n;
    size_t dropped;         /* dumps beyond MP_CD_RECORDS */
    long lines;             /* coredump lines read */
};

void mp_coredump_init(struct mp_coredump *c);
void mp_coredump_release(struct mp_coredump *c); /* c is empty (init) again */

/* Read one log line line[0..len) (need not be NUL-terminated; any bytes)
 * with its number in the log. Returns true when it was a coredump line. */
bool mp_coredump_line(struct mp_coredump *c, const char *line, size_t len, long lineno);

/* The first dump with an exception, or NULL. */
const struct mp_cd_dump *mp_coredump_exception(const struct mp_coredump *c);

/* A dump's pid from its file name ("DIR/core_457.1796399790" -> 457,
 * "/tmp/cuda_coredump_host.3000837.1764236276" -> 3000837); 0 when the
 * name shows none. */
long mp_coredump_file_pid(const char *path);

/* The kernel names of cuda-gdb's "info cuda kernels" table (a dump opened
 * with "target cudacore FILE"), in order, without repeats (at most
 * MP_CD_FRAMES), appended to names; its rows are
 *   [*] Kernel Parent Dev Grid Status SMs-Mask GridDim BlockDim Name Args
 * ("*      0      -   0   53 Active 0x00000001 (1,1,1) (128,1,1) hang_kernel flag=0"):
 * the name is what follows BlockDim up to the first argument "x=". Lines
 * that are not such rows are skipped. Returns the number added. */
struct mp_strv;
size_t mp_cudagdb_kernels(const char *text, size_t len, struct mp_strv *names);

#endif
