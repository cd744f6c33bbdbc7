/* logscan.h - streaming scanner of vLLM engine logs.
 *
 * Feeds raw log bytes (any chunking; NUL bytes are skipped and counted),
 * keeps at most MP_LOGSCAN_MAX_LINE
 * bytes of a line (the rest is skipped and counted), and keeps a running
 * struct mp_logresult: engine version, model, resolved MoE / linear /
 * attention backends, unknown environment variables, the first fatal failure
 * (its root cause preferred over EngineDeadError), readiness and findings.
 *
 * Cost per line: a 2-byte-gram literal prefilter over the line (no
 * allocation); only lines that contain a signature literal are stripped of
 * their prefixes and given to PCRE2 (JIT). Used by `moeprobe scan` on files
 * and by qualify on a live server's output. Knowledge (which lines mean
 * what) comes from src/knowledge/knowledge.h. */
#ifndef MP_LOGSCAN_H
#define MP_LOGSCAN_H

#include "compat.h"

#include "buf.h"
#include "err.h"
#include "model/attempt.h"

#define MP_LOGSCAN_MAX_LINE (64u * 1024u) /* bytes kept per line */
#define MP_LOGSCAN_MAX_FINDINGS 64        /* then one "findings-truncated" */
#define MP_LOGSCAN_MAX_SITES 4

struct mp_knowledge;                                   /* src/knowledge/knowledge.h */
const struct mp_knowledge *mp_knowledge_builtin(void); /* compiled-in data; never NULL; not freed */
int mp_knowledge_load(const char *path, struct mp_knowledge **out, struct mp_diag *d); /* 0 / <0 */
void mp_knowledge_free(struct mp_knowledge *k);

struct mp_logscan; /* opaque */
/* k is borrowed for the scanner's life. Never returns NULL. */
struct mp_logscan *mp_logscan_new(const struct mp_knowledge *k);
void mp_logscan_free(struct mp_logscan *s); /* accepts NULL */
/* Feed raw bytes in any chunking (LF/CRLF, partial lines kept); returns OR of
 * MP_LOGEV_* of the lines completed by this call. mp_logscan_finish() flushes
 * a last unterminated line (and adds end-of-log findings); feeding after
 * finish starts a new line. */
unsigned mp_logscan_feed(struct mp_logscan *s, const char *data, size_t len);
unsigned mp_logscan_finish(struct mp_logscan *s);
/* Or feed exactly one line (no terminator); the scanner numbers lines itself
 * from 1. A trailing CR is dropped; len beyond MP_LOGSCAN_MAX_LINE is cut.
 * mp_logscan_line (the live capture of an engine's output) takes each line
 * as it is. mp_logscan_feed (collected or pasted logs) also joins lines a
 * terminal wrapped: a line of at least 80 columns is held until the next
 * line shows whether it continues it (a line that starts no log record,
 * traceback line or Markdown block); the joined line keeps the number of
 * its first line. ANSI escape sequences are removed from every line. */
unsigned mp_logscan_line(struct mp_logscan *s, const char *line, size_t len);
enum {
    MP_LOGEV_RESOLVED = 1, /* a MoE backend selection line was seen */
    MP_LOGEV_FATAL = 2,    /* a fatal signature: CUDA error, EngineDeadError, engine/core init
                              failure, argparse error, No NvFp4 MoE backend..., ValueError at
                              startup, OOM */
    MP_LOGEV_READY = 4,    /* first sign the server is ready: "Application startup complete",
                              or serving (access log, throughput stats) without it */
    MP_LOGEV_WARNING = 8   /* unknown/deprecated env, TMA/autotuner failure, ... */
};

struct mp_logfinding {
    int severity; /* 0 info 1 warning 2 error */
    const char *code;
    long line;
    const char *text;
};
struct mp_logcrash {
    const char *cls;     /* "illegal-address", ... (crash classes of DESIGN.md) */
    const char *message; /* the error text of the line */
    long line;
    const char **sites;  /* innermost first; Python frames of any package
                            "pkg/path.py:function" (path from the package root, after
                            the last site-packages/ or dist-packages/; the file name
                            for code outside installed packages), C++ "csrc/file.cuh" */
    size_t nsites;
    const char *launch_site; /* innermost Python frame outside the launch machinery
                                (torch, triton, CUDA runtime wrappers): the code that
                                launched the failing kernel; NULL when none */
    bool engine_dead;    /* an EngineDeadError / engine-core failure was seen too */
};
/* A dense (linear) kernel selection: method "nvfp4" | "fp8" | "fp8_block" |
 * "int8" | "mxfp4" | "mxfp6" | "mxfp8" | "mixed" | "other". */
struct mp_logkernel {
    const char *method, *kernel;
    long line;
};
/* Another selection the engine logged ("Using X ..."): what was selected
 * ("MoE prepare/finalize", "Mxfp8 MoE", "FlashAttention version", ...). */
struct mp_logsel {
    const char *what, *value;
    long line;
};
/* How many lines of one kind the log had ("autotuner-skipped": FlashInfer
 * autotuner tactics that failed to profile), and where the first was. */
struct mp_logtally {
    const char *name;
    long count, first_line;
};
/* The speculative (MTP / EAGLE) drafter: vLLM loads it after the target
 * model ("Loading drafter model..."); the MoE selection logged after that is
 * the drafter's own. */
struct mp_logdrafter {
    long loaded_line;          /* 0: no drafter in the log */
    const char *moe_backend;   /* NULL: the drafter logged no MoE selection of its own (a
                                  dense drafter, or the same selection as the target's,
                                  which vLLM logs once) */
    const char *moe_kind;      /* "Unquantized", "NvFp4", ... */
    const char **moe_candidates;
    size_t n_moe_candidates;
    long line;
};
struct mp_ki_hits; /* knowledge/issues.h */
/* A line quoted as it was (control bytes as spaces, cut at
 * MP_LOGSCAN_ERRLINE_MAX bytes), with its number. */
struct mp_logline {
    long line;
    const char *text;
};
#define MP_LOGSCAN_ERRLINES 5       /* error-looking lines kept (the last ones) */
#define MP_LOGSCAN_ERRLINE_MAX 240  /* bytes kept of each */

/* All strings NUL-terminated, NULL when unknown, owned by the scanner. */
struct mp_logresult {
    long lines;
    const char *engine_version;
    const char *model;
    const char *quantization;
    const char *moe_backend;
    long moe_backend_line;
    const char **moe_candidates;
    size_t n_moe_candidates;
    const char *linear_kernel;  /* the dense NVFP4 GEMM kernel ("Using X for NVFP4 GEMM") */
    long linear_kernel_line;
    const struct mp_logkernel *linear_kernels; /* every dense kernel, by method, in log order */
    size_t n_linear_kernels;
    const char *unquantized_moe_backend; /* "Using X Unquantized MoE backend" (an MTP
                                            drafter beside an NVFP4 model; may hold spaces) */
    long unquantized_moe_backend_line;
    const char **unquantized_moe_candidates;
    size_t n_unquantized_moe_candidates;
    const char *attention_backend;
    long attention_backend_line;
    const char *moe_kind;        /* oracle of moe_backend: "NvFp4", "Mxfp8", "Unquantized", ... */
    struct mp_logdrafter drafter;
    const struct mp_logsel *other; /* other selections, in log order, each (what, value) once */
    size_t n_other;
    const struct mp_logtally *tallies; /* "autotuner-skipped", "autotuner-failed",
                                          "autotuner-tma-descriptor", "tma-ws-grouped-gemm" */
    size_t n_tallies;
    const char *device;          /* "sm121": the GPU the log names (sm_121a, compute
                                    capability 12.1, GB10, ...), NULL when it names none */
    long device_line;
    const char **fatal_messages; /* distinct fatal messages, in log order (at most 8) */
    size_t n_fatal_messages;
    const struct mp_ki_hits *known_issues; /* matched at mp_logscan_finish; NULL before */
    const char *moe_backend_flag;
    const char **unknown_env;
    size_t n_unknown_env;
    long unknown_env_line; /* first such line */
    bool has_crash;
    struct mp_logcrash crash; /* the first fatal failure (root cause preferred over EngineDead) */
    const char *startup_error; /* the engine's own reason when it failed before ready */
    long startup_error_line;
    bool ready;
    long ready_line;
    const struct mp_logfinding *findings;
    size_t nfindings;
    /* additions beyond the shared contract */
    long truncated_lines;       /* lines longer than MP_LOGSCAN_MAX_LINE */
    unsigned long long bytes;   /* bytes seen */
    /* The last MP_LOGSCAN_ERRLINES error-looking lines, oldest first, whatever
     * the knowledge says of them: a line containing Error, error, ERROR,
     * Exception, exception, Traceback, fatal, Fatal, FATAL, failed, Failed or
     * FAILED, unless its own level word says DEBUG or INFO. What an engine
     * that failed in a way moeprobe does not recognise said last. */
    const struct mp_logline *error_lines;
    size_t n_error_lines;
    /* NUL bytes are skipped wherever they are (an engine printed one; a
     * zero-filled tail after a node crash): lines are what remains. */
    unsigned long long nul_bytes; /* NUL bytes skipped */
    long nul_line;                /* line on which the first one was, 0 = none */
};

/* Does the start of a file look binary rather than like a log? NUL bytes are
 * not counted (they are skipped: holes, zero-filled tails); of the other
 * bytes, more than 30% are control bytes other than tab, LF, VT, FF, CR,
 * backspace and ESC, or bytes that are not valid UTF-8. An empty or all-NUL
 * probe is not binary. Callers pass the first 64 KiB or so. */
bool mp_logscan_looks_binary(const char *p, size_t n);
/* Borrowed view valid until the next feed/finish/line/free. */
const struct mp_logresult *mp_logscan_result(const struct mp_logscan *s);

/* Copy what r says the engine resolved into *out (overwritten, not
 * released first). */
void mp_resolved_from_log(struct mp_resolved *out, const struct mp_logresult *r);

/* The known-issue facts of r (knowledge/issues.h): its crash, fatal
 * messages, resolved kernels as "AREA:NAME", findings, device, version.
 * Strings point into r and into *kernels (strings owned, release it). */
struct mp_ki_facts;
struct mp_strv;
void mp_logresult_facts(const struct mp_logresult *r, struct mp_ki_facts *f, struct mp_strv *kernels,
                        struct mp_strv *messages, struct mp_strv *codes);

/* Render r as the JSON object of `moeprobe scan --json` (DESIGN shapes):
 * {"file", "engine_version", "model", "quantization", "device", "resolved": {moe_backend,
 *  moe_kind, moe_candidates, linear_kernel, linear_kernels {method: kernel},
 *  unquantized_moe_backend, unquantized_moe_candidates, attention_backend,
 *  drafter: null | {moe_backend, moe_kind, moe_candidates, line, loaded_line},
 *  other: [{what, value, line}]}, "autotuner": null | {tallies}, "known_issues": [...],
 *  "moe_backend_flag", "unknown_env", "crash", "startup_error", "ready",
 *  "lines", "truncated_lines", "nul_bytes", "error_lines": [{"line", "text"}],
 *  "findings": [...]}. file may be NULL (then "file": null). */
void mp_logresult_to_json(const struct mp_logresult *r, const char *file, struct buf *out);
/* Human-readable report of r (several lines, each ending in '\n'); a log
 * that never became ready with nothing recognised in it also gets its last
 * error lines. */
void mp_logresult_to_text(const struct mp_logresult *r, const char *file, struct buf *out);
/* r's error lines as one line of text, oldest first:
 * "LOG:12: text; LOG:14: text" (LOG = log_name); nothing when there are none. */
void mp_logresult_quote_errors(const struct mp_logresult *r, const char *log_name, struct buf *out);

#endif
