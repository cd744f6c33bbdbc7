/* kernels.h - can this engine build run on this GPU: the CUDA code each
 * shared object under a directory carries (fatbin.h), judged against a
 * compute capability with CUDA's compatibility rules, and which MoE
 * backends' kernels live in which library (data/kernel-libs.json).
 * docs/inspect.md states the rules with their sources.
 *
 * The judge (mp_cu_runs_on, mp_cu_judge) is pure. mp_engine_scan reads
 * files (mmap, only the pages the headers are on are touched) and never
 * writes. Errors follow err.h. */
#ifndef MP_INSPECT_KERNELS_H
#define MP_INSPECT_KERNELS_H

#include "compat.h"

#include "buf.h"
#include "err.h"
#include "inspect/fatbin.h"
#include "strv.h"

enum mp_cu_runs {
    MP_RUNS_UNKNOWN = 0, /* no compute capability to judge against */
    MP_RUNS_NO,          /* neither SASS nor PTX that this GPU can use */
    MP_RUNS_JIT,         /* only PTX: the driver compiles it at start-up (slow start,
                          * code not tuned by the library's authors for this SM) */
    MP_RUNS_NATIVE,      /* SASS that this GPU runs */
};
/* "unknown", "no", "jit", "native" */
const char *mp_cu_runs_name(enum mp_cu_runs r);

/* Parse "121", "12.1", "sm_121", "sm121" into 121. 0 or MP_EUSAGE. */
int mp_cu_parse_sm(const char *s, unsigned *sm);

/* Can target t run on a GPU of compute capability dev_sm (major*10+minor)?
 * SASS: MP_RUNS_NATIVE or MP_RUNS_NO; PTX: MP_RUNS_JIT or MP_RUNS_NO. why
 * (may be NULL) gets the rule that decided, one clause. */
enum mp_cu_runs mp_cu_runs_on(const struct mp_cu_target *t, unsigned dev_sm, char *why, size_t n);

/* A library's verdict: native when any SASS target runs, else jit when any
 * PTX target can be compiled, else no; why gets the deciding target and
 * rule. dev_sm 0: MP_RUNS_UNKNOWN. A library is judged as a whole: one
 * target that runs is enough, whichever kernels it holds. */
enum mp_cu_runs mp_cu_judge(const struct mp_cu_targets *t, unsigned dev_sm, char *why, size_t n);

/* The verdict for kernels that need arch-specific features (block-scaled
 * FP4 MMA, tcgen05: instructions only `a` and `f` targets can contain):
 * only the library's `a` targets (exactly their own compute capability)
 * and `f` targets (their family) count, SASS before PTX as above. When only
 * plain targets would run, the answer is MP_RUNS_NO and why says the
 * library loads, but without those kernels. dev_sm 0: MP_RUNS_UNKNOWN. */
enum mp_cu_runs mp_cu_judge_arch_specific(const struct mp_cu_targets *t, unsigned dev_sm,
                                          char *why, size_t n);

/* A MoE backend and the libraries that hold its kernels (kernel-libs.json). */
struct mp_kl_backend {
    char *backend;      /* "MARLIN" */
    char **patterns;    /* fnmatch patterns on the path below DIR (a leading
                         * "* /" is implied) */
    size_t npatterns;
    char *what;         /* what the library is, one sentence */
    char *arch_specific;/* the arch-specific feature its kernels need (judged
                         * by mp_cu_judge_arch_specific), or NULL */
    char *missing;      /* what it means when no library matches (JIT at start-up...) */
    char **sources;
    size_t nsources;
};
struct mp_kernel_libs {
    struct mp_kl_backend *b;
    size_t n;
};
/* The built-in mapping (parsed once; never freed). NULL only if the
 * compiled-in data is broken (a test keeps it parseable). */
const struct mp_kernel_libs *mp_kernel_libs_builtin(void);
/* Parse a mapping (JSON, len bytes). 0 or MP_EPARSE; release with
 * mp_kernel_libs_release. */
int mp_kernel_libs_parse(const char *json, size_t len, struct mp_kernel_libs *out,
                         struct mp_diag *d);
void mp_kernel_libs_release(struct mp_kernel_libs *k);

struct mp_engine_lib {
    char *path;                   /* below the scanned directory */
    struct mp_cu_targets t;
    enum mp_cu_runs runs;
    char *why;
    char *error;                  /* read error or a partial parse, or NULL */
    struct mp_strv backends;      /* MoE backends whose kernels it holds */
};

struct mp_engine_backend {
    const char *backend;          /* borrowed from the mapping */
    enum mp_cu_runs runs;         /* the best of its libraries (they are
                                   * alternatives: one module per SM family),
                                   * by mp_cu_judge_arch_specific when the
                                   * mapping marks it arch_specific */
    const char *library;          /* the library that decided, or NULL: none found */
    const char *note;             /* the mapping's `missing` when none found */
    const char *arch_specific;    /* borrowed from the mapping, or NULL */
    char *why;                    /* the deciding target and rule, or NULL */
};

struct mp_engine_kernels {
    char *dir;
    unsigned sm;                  /* 0: unknown */
    const char *sm_source;        /* "--sm", "fingerprint", or NULL */
    struct mp_engine_lib *libs;   /* libraries with CUDA code, by path */
    size_t nlibs;
    unsigned long files;          /* shared objects and cubins looked at */
    struct mp_engine_backend *backends; /* one per mapping entry */
    size_t nbackends;
    char *summary;
};

/* Scan dir (recursively, symbolic links to directories not followed, each
 * file once) for shared objects (*.so, *.so.N), cubins and fat binaries,
 * read their CUDA targets and judge them against sm (0: unknown). map may
 * be NULL (the built-in one). 0, or <0 with d naming dir (not a directory,
 * unreadable). A file that cannot be read or parsed is listed with its
 * error, never fatal. Release with mp_engine_kernels_release (also on
 * error). */
int mp_engine_scan(const char *dir, unsigned sm, const char *sm_source,
                   const struct mp_kernel_libs *map, struct mp_engine_kernels *out,
                   struct mp_diag *d);
/* The same, descending at the top of dir only into the entries that match
 * one of top's fnmatch patterns (NULL-terminated; NULL: all), e.g.
 * {"vllm", "flashinfer*", NULL} in a site-packages. */
int mp_engine_scan_top(const char *dir, const char *const *top, unsigned sm,
                       const char *sm_source, const struct mp_kernel_libs *map,
                       struct mp_engine_kernels *out, struct mp_diag *d);
void mp_engine_kernels_release(struct mp_engine_kernels *k);

/* The `inspect --engine --json` object (DESIGN.md), pretty-printed + "\n". */
void mp_engine_to_json(const struct mp_engine_kernels *k, struct buf *out);
/* The same as JSON on one line (for the store and report.json). */
char *mp_engine_to_json_compact(const struct mp_engine_kernels *k);
/* Human-readable table. */
void mp_engine_to_text(const struct mp_engine_kernels *k, struct buf *out);

#endif
