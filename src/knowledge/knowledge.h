/* knowledge.h - what moeprobe knows about vLLM, as data.
 *
 * The facts of reference/vllm-knobs.md live in data/knowledge.json, compiled
 * into the binary (mp_knowledge_builtin()) and replaceable or extendable at
 * run time with --knowledge FILE (mp_knowledge_load(); format in
 * docs/knowledge.md). Three kinds of fact:
 *   - knobs: CLI flags and environment variables, with per-version eras
 *     (what they affect, their status, a note and its source);
 *   - log signatures: a literal (prefilter) + optional PCRE2 regex (JIT)
 *     + what the line means (event, crash class, fields it sets, finding);
 *   - backend facts: NvFp4 MoE backends and the auto lists per version.
 * A struct mp_knowledge is immutable after loading; it may be shared by any
 * number of scanners (src/logs/logscan.h) and explain calls. */
#ifndef MP_KNOWLEDGE_H
#define MP_KNOWLEDGE_H

#include "compat.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "buf.h"
#include "err.h"

/* A vLLM version reduced to major.minor.patch; suffixes (rc1, .dev8+g...)
 * are ignored, so 0.19.2rc1 compares equal to 0.19.2. */
struct mp_kn_ver {
    int v[3];
};
/* Parse "v0.19.2rc1" / "0.17" (missing parts 0). Returns 0, or MP_EPARSE
 * when s does not start with digits (after an optional 'v') or is
 * setuptools-scm's "0.1.devN+gSHA" (or 0.0.devN: a build from a checkout
 * without tags, such as a nightly image: its release is unknown, never 0.1). */
int mp_kn_ver_parse(const char *s, struct mp_kn_ver *out);
int mp_kn_ver_cmp(const struct mp_kn_ver *a, const struct mp_kn_ver *b);

/* Crash classes (DESIGN.md / scan output), most specific first. */
enum mp_kn_class {
    MP_KN_CLS_NONE = -1,
    MP_KN_CLS_ILLEGAL_ADDRESS = 0,
    MP_KN_CLS_MISALIGNED_ADDRESS,
    MP_KN_CLS_ILLEGAL_INSTRUCTION,
    MP_KN_CLS_LAUNCH_FAILURE,
    MP_KN_CLS_TMA_DESCRIPTOR,
    MP_KN_CLS_OUT_OF_MEMORY,
    MP_KN_CLS_CUDA_OTHER,
    MP_KN_CLS_NO_MOE_BACKEND,
    MP_KN_CLS_UNSUPPORTED_BACKEND,
    MP_KN_CLS_ENGINE_DEAD,
    MP_KN_CLS_PYTHON_ERROR,
    MP_KN_NCLASSES
};
/* "illegal-address", ... ; NULL for an out-of-range value. */
const char *mp_kn_class_name(int cls);
/* -1 when unknown. */
int mp_kn_class_from_name(const char *name);
/* How much a class explains a failure: a later fatal line of a strictly
 * higher rank replaces the recorded crash (root cause over EngineDead). */
int mp_kn_class_rank(int cls);
/* True for the classes that are CUDA-fault evidence: a kernel fault that
 * CUDA reports asynchronously (illegal/misaligned address, illegal
 * instruction, launch failure, TMA descriptor, any other CUDA error form).
 * Only a failure with such evidence is ever diagnosed with
 * CUDA_LAUNCH_BLOCKING=1 (async-race / kernel-fault); out-of-memory,
 * engine death and Python errors are not. A new CUDA class must be added
 * here. */
bool mp_kn_class_is_cuda_fault(int cls);
/* The same for a class name ("illegal-address"); false for NULL/unknown. */
bool mp_kn_class_name_is_cuda_fault(const char *name);

enum mp_kn_event {
    MP_KN_EV_INFO,
    MP_KN_EV_WARNING,
    MP_KN_EV_RESOLVED,
    MP_KN_EV_FATAL,
    MP_KN_EV_READY,
    MP_KN_EV_TRACEBACK, /* "Traceback (most recent call last)" */
    MP_KN_EV_FRAME,     /* a traceback frame or C++ source location */
    MP_KN_EV_DRAFTER,   /* the speculative drafter starts to load: the MoE selections
                           after it are the drafter's ("Loading drafter model...") */
    MP_KN_EV_TUNE_BEGIN,/* the FlashInfer autotuner starts profiling tactics */
    MP_KN_EV_TUNE_END,  /* ... and ends */
};

/* Result fields a signature can set (see struct mp_logresult). */
enum mp_kn_field {
    MP_KN_F_ENGINE_VERSION,
    MP_KN_F_MODEL,
    MP_KN_F_QUANTIZATION,
    MP_KN_F_MOE_BACKEND,
    MP_KN_F_MOE_CANDIDATES,
    MP_KN_F_LINEAR_KERNEL,
    MP_KN_F_ATTENTION_BACKEND,
    MP_KN_F_MOE_BACKEND_FLAG,
    MP_KN_F_UNKNOWN_ENV,
    MP_KN_F_LINEAR_KERNELS,   /* value: kernel; method from group "method" or the kernel name */
    MP_KN_F_UNQUANT_MOE_BACKEND,
    MP_KN_F_UNQUANT_MOE_CANDIDATES,
    MP_KN_F_MOE_KIND,  /* the oracle of a MoE selection: "NvFp4", "Unquantized", "Mxfp8", ... */
    MP_KN_F_OTHER,     /* another selection ("Using X ..."): value; what from the signature's
                          `what` template */
    MP_KN_F_DEVICE,    /* the GPU: "sm121" from "sm_121a", "12.1", or a mapped name */
    MP_KN_NFIELDS
};

struct mp_kn_pair {
    char *key, *value;
};

struct mp_kn_set {
    int field;   /* enum mp_kn_field */
    char *group; /* named group of the regex, or "=CONST" for a constant */
};

struct mp_kn_sig {
    char *id;
    char *literal;   /* required substring (case-sensitive); never empty */
    size_t literal_len;
    char *also;      /* a second required substring, or NULL */
    char *exclude;   /* the line must not contain this, or NULL */
    char *era;       /* free text, or NULL */
    pcre2_code *re;  /* NULL: the literal alone decides */
    uint32_t re_ncap;
    int event;       /* enum mp_kn_event */
    int cls;         /* enum mp_kn_class for MP_KN_EV_FATAL, else -1 */
    int severity;    /* finding severity 0 info 1 warning 2 error; -1 no finding */
    char *code, *text; /* finding code and template ("{group}" substituted) */
    struct mp_kn_set sets[5];
    size_t nsets;
    char *what;             /* MP_KN_F_OTHER: what was selected ("{kind} MoE"), or NULL */
    char *tally;            /* a count the scanner keeps of these lines ("autotuner-skipped"),
                               or NULL */
    struct mp_kn_pair *map; /* value translation for set fields */
    size_t nmap;
    char **ignore;          /* values that never set a field ("auto") */
    size_t nignore;
    int priority;           /* higher replaces lower; equal keeps the first */
    bool anchor_message;    /* regex runs on the message after the log prefix */
    bool min_level_error;   /* skip lines whose level is DEBUG/INFO/WARNING */
    bool weak;              /* fatal evidence a later error of the same rank replaces */
};

struct mp_kn_era {
    bool has_from, has_until;
    struct mp_kn_ver from, until; /* from <= v < until */
    char *affects;  /* moe | linear | attention | none */
    char *status;   /* active | no-moe-effect | deprecated | removed | unknown-to-engine | not-yet-available */
    char *note, *source;
    char *overridden_by;  /* flag that wins over this knob, or NULL */
    char *predicts;       /* backend this knob forces ("MARLIN"), or NULL */
    char *predict_value;  /* ... when set to this value (NULL: any) */
    char *unless;         /* ... unless this NAME=VALUE is also set */
    bool predicts_by_map; /* "predicts": true - the value maps to a backend */
    char **values;        /* the values the flag accepts in this era (argparse choices),
                             or NULL: the knob's values */
    size_t nvalues;
    bool selection_only;  /* the knob acts only through the backend selection that the
                             engine logs for its area (affects): two runs whose logged
                             selections are equal ran the same kernels whatever its value */
    bool uncertain;       /* the boundary or effect could not be verified in vLLM's
                             source (kept as the best estimate; explain says so) */
    char *error;          /* env knobs: vLLM reads the variable in this era and a value
                             outside `values` (or, for "parse": "int", one int() rejects)
                             stops the engine with this text ({value}: the value as a
                             Python repr, {values}: the valid values as a Python list,
                             {name}); NULL: a bad value is only noted */
};

struct mp_kn_knob {
    char *name; /* "--moe-backend" or "VLLM_..." */
    bool is_flag;
    bool never_upstream;
    bool parse_int;  /* env: vLLM reads it as bool(int(value)) ("parse": "int") */
    bool normalize;  /* flag: the value is lower-cased and '-' becomes '_' before the
                        engine checks it (argparse type=) */
    char **values;
    size_t nvalues;
    struct mp_kn_pair *map; /* value -> backend */
    size_t nmap;
    struct mp_kn_era *eras;
    size_t neras;
};

struct mp_kn_backend {
    char *name, *flag, *devices, *note;
    bool automatic;
};

struct mp_kn_autolist {
    char *era;
    bool has_from, has_until;
    struct mp_kn_ver from, until;
    char **list;
    size_t n;
};

/* An NGC container release (nvcr.io/nvidia/vllm:TAG-py3) and the vLLM it
 * ships, from NVIDIA's release notes. */
struct mp_kn_image {
    char *tag;    /* "26.03" */
    char *vllm;   /* "0.17.1" */
    char *source; /* release-notes URL */
};

/* When vLLM started to warn "Unknown vLLM environment variable detected". */
struct mp_kn_unknown_env {
    bool has_from;
    struct mp_kn_ver from;   /* first version known to warn */
    bool has_maybe;
    struct mp_kn_ver maybe;  /* earlier versions from here may warn too (not verified) */
    char *source;
};

struct mp_kn_issue; /* src/knowledge/issues.h */

struct mp_knowledge {
    char *newest_version;
    struct mp_kn_image *images;
    size_t nimages;
    struct mp_kn_unknown_env unknown_env;
    struct mp_kn_issue *issues;
    size_t nissues;
    struct mp_kn_knob *knobs;
    size_t nknobs;
    struct mp_kn_sig *sigs;
    size_t nsigs;
    struct mp_kn_backend *backends;
    size_t nbackends;
    struct mp_kn_autolist *autolists;
    size_t nautolists;
    char **clamp;
    size_t nclamp;
};

/* The compiled-in knowledge (data/knowledge.json), parsed on first use.
 * Never NULL, never freed; aborts if the embedded data is broken (a build
 * bug caught by the unit tests). Not thread-safe on the first call. */
const struct mp_knowledge *mp_knowledge_builtin(void);
/* Load a knowledge file. With "extends": "builtin" its knobs, signatures,
 * backends and auto lists are merged into the built-in ones (same name/id
 * replaces), otherwise the file replaces the built-in knowledge. On success
 * *out is owned by the caller (mp_knowledge_free). Returns 0, -errno when
 * the file cannot be read, MP_EPARSE with d filled (file, message) for bad
 * JSON, unknown keys/values or a regex that does not compile. */
int mp_knowledge_load(const char *path, struct mp_knowledge **out, struct mp_diag *d);
/* Same from memory (text need not be NUL-terminated). */
int mp_knowledge_load_mem(const char *text, size_t len, struct mp_knowledge **out,
                          struct mp_diag *d);
void mp_knowledge_free(struct mp_knowledge *k); /* accepts NULL; never the builtin */

/* Lookups; NULL when absent. Names compare exactly (flags also accept '_'
 * for '-'). */
const struct mp_kn_knob *mp_kn_find_knob(const struct mp_knowledge *k, const char *name);
const struct mp_kn_backend *mp_kn_find_backend(const struct mp_knowledge *k, const char *name);
/* The era of knob that covers version v, or NULL. */
const struct mp_kn_era *mp_kn_knob_era(const struct mp_kn_knob *knob, const struct mp_kn_ver *v);

/* ---- explain: what a set of knobs does for one engine version ---- */

struct mp_kn_knob_report {
    char *knob;    /* "NAME=VALUE" (secret values as ***) or "--flag value" */
    char *name;    /* "NAME" or "--flag" */
    const char *kind;    /* "env" | "flag" */
    const char *affects; /* moe | linear | attention | none | unknown */
    const char *status;  /* active | no-moe-effect | overridden | deprecated | removed |
                            unknown-to-engine | not-yet-available | rejected (the engine
                            refuses this value: argparse, a ValueError at start) */
    char *note;          /* one sentence with its source */
    bool uncertain;      /* the fact behind it is marked uncertain in the knowledge */
    char *stops;         /* NULL, or why the server will not start because of this knob */
    char *fix;           /* NULL, or what to write instead (with `stops`) */
};

struct mp_explain {
    char *engine_version;   /* the version evaluated ("0.17.0"), never NULL */
    bool version_known;     /* false: evaluated with the newest knowledge */
    struct mp_kn_knob_report *knobs;
    size_t nknobs;
    char *predicted_moe_backend; /* or NULL */
    char *prediction_reason;     /* why (or why not), never NULL */
    char *summary;               /* the sentence that matters, never NULL */
    bool will_not_start;         /* a knob stops the server before it serves */
    char *verdict;               /* one short line, never NULL: "will not start: ...;
                                    fix: ..." or the MoE backend the rules decide */
};

/* Evaluate env (nenv "NAME=VALUE" strings) and flags (nflags words: "--flag",
 * "value" pairs flattened, or "--flag=value"; a "--flag" followed by another
 * "--flag" or nothing is a boolean) for engine_version (NULL: unknown; the
 * newest knowledge is used and the result says so). Env entries without '='
 * are ignored. Fills *out (caller releases with mp_kn_explain_release).
 * Returns 0, or MP_EPARSE when engine_version is given but not a version. */
int mp_kn_explain(const struct mp_knowledge *k, const char *engine_version, char **env,
                  size_t nenv, char **flags, size_t nflags, struct mp_explain *out);
void mp_kn_explain_release(struct mp_explain *e);
/* {"engine_version":..., "knobs":[...], "predicted_moe_backend":...} plus
 * "version_known", "prediction_reason", "summary". */
void mp_kn_explain_to_json(const struct mp_explain *e, struct buf *out);

/* ---- container images: which vLLM an image reference runs ---- */

enum mp_kn_image_kind {
    MP_KN_IMAGE_NONE = 0,   /* not an image reference moeprobe can read a version from */
    MP_KN_IMAGE_UPSTREAM,   /* vllm/vllm-openai:v0.17.0[-cu130]: the tag is the version */
    MP_KN_IMAGE_NGC,        /* nvcr.io/nvidia/vllm:26.03-py3: a release in the knowledge */
    MP_KN_IMAGE_NGC_UNKNOWN,/* an NGC vLLM tag the knowledge does not list: version unknown */
    MP_KN_IMAGE_OTHER,      /* another project's image with "vllm" in its name
                               (lmcache/vllm-openai:v0.3.9): its tag is not a vLLM version */
};

struct mp_kn_image_version {
    enum mp_kn_image_kind kind;
    char version[32]; /* the vLLM version ("0.17.1"), "" unless UPSTREAM or NGC */
    char tag[48];     /* the image tag ("26.03-py3", "v0.17.0-cu130"), "" for NONE */
                      /* (and for an UPSTREAM image whose tag names no version) */
    const char *source; /* NGC: the release-notes URL (owned by k); else NULL */
};

/* Which vLLM the container image reference `image` (registry/name:tag, with
 * or without a registry, digest ignored) runs. vLLM's own images
 * (".../vllm/vllm-openai*:vX.Y.Z...") name it in the tag; NVIDIA's
 * (".../nvidia/vllm:YY.MM[-py3]") are looked up in the knowledge's
 * `ngc_images` (NVIDIA's release notes), never guessed from the tag; any
 * other image's tag is never read as a vLLM version. Pure; always fills *out
 * and returns out->kind. */
enum mp_kn_image_kind mp_kn_image_version(const struct mp_knowledge *k, const char *image,
                                          struct mp_kn_image_version *out);
/* The vLLM version an NGC release ships ("26.03" or "26.03-py3"), with its
 * source (both owned by k); NULL when the knowledge does not list it. */
const char *mp_kn_ngc_vllm(const struct mp_knowledge *k, const char *ngc_tag,
                           const char **source);
/* Is `version` (a user's --engine-version) an NGC release tag ("25.10",
 * "26.03-py3": YY.MM with YY >= 23) rather than a vLLM version? Then fills
 * why (one sentence: the vLLM the release ships when the knowledge knows it,
 * else how to find it) and returns true. Pure. */
bool mp_kn_version_is_ngc_tag(const struct mp_knowledge *k, const char *version, char *why,
                              size_t n);

#endif
