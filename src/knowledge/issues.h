/* issues.h - known issues by signature: the knowledge's `known_issues`
 * table (docs/knowledge.md) and a pure matcher.
 *
 * An entry says what a failure or a resolved selection looks like (crash
 * class, a regex on the engine's error messages, a regex on the kernels and
 * backends it resolved, a finding code) and where it happens (devices, a
 * vLLM version range), and what is known (the public source, the fix
 * release, the workaround). The matcher compares facts - from a scanned
 * log or from a candidate's attempt - with every entry:
 *   - the signature criteria (class, message, unless, kernel, finding) that
 *     an entry names must all hold, or it does not match at all;
 *   - the context criteria (device, engine version) must hold for an exact
 *     match; one the facts contradict makes it a near match that says what
 *     differs; one the facts cannot tell (no device, no version) keeps the
 *     match exact and is listed as unconfirmed.
 * Callers: scan (src/logs), the reports (src/report, report.json
 * `known_issues` per candidate), `report --format issue`. */
#ifndef MP_KNOWLEDGE_ISSUES_H
#define MP_KNOWLEDGE_ISSUES_H

#include "compat.h"

#include "buf.h"
#include "strv.h"
#include "knowledge/knowledge.h"

struct mp_kn_issue {
    char *id, *title;
    char *source;      /* public URL of the thread, never NULL */
    char *fixed_in;    /* "vLLM 0.15.1", "flashinfer 0.6.8", or NULL (not fixed / unknown) */
    char *workaround;  /* or NULL */
    char *note;        /* or NULL */
    /* signature */
    char **classes;    /* crash classes, any of ("none": no crash); none named = any */
    size_t nclasses;
    pcre2_code *message, *unless, *kernel;
    char *message_src, *unless_src, *kernel_src;
    char **findings;   /* finding codes, any of */
    size_t nfindings;
    /* context */
    char **devices;    /* "sm90", "sm100", "sm120", "sm121"; none = any */
    size_t ndevices;
    bool has_from, has_until;
    struct mp_kn_ver from, until; /* engine versions from <= v < until */
};

/* What is known about one failed (or suspicious) run. Every array may be
 * empty; strings are borrowed. */
struct mp_ki_facts {
    const char *crash_class;          /* NULL: no crash */
    const char *const *messages;      /* the engine's fatal messages, the crash's first */
    size_t nmessages;
    const char *const *kernels;       /* "AREA:NAME": "moe:MARLIN", "linear:CutlassNvFp4LinearKernel",
                                         "fp8:FlashInferFP8ScaledMMLinearKernel", "attention:FLASHINFER",
                                         "drafter-moe:TRITON", "mxfp8-moe:MARLIN", "flag:b12x", ... */
    size_t nkernels;
    const char *const *findings;      /* finding codes of the log */
    size_t nfindings;
    const char *device;               /* "sm121" or NULL (unknown) */
    const char *engine_version;       /* or NULL (unknown) */
};

enum mp_ki_kind { MP_KI_NEAR = 1, MP_KI_EXACT = 2 };

struct mp_ki_hit {
    const struct mp_kn_issue *issue; /* borrowed from the knowledge */
    enum mp_ki_kind kind;
    char *differs;     /* near: what the facts contradict; NULL for exact */
    char *unconfirmed; /* what the facts cannot tell (no device, no version), or NULL */
};

struct mp_ki_hits {
    struct mp_ki_hit *v;
    size_t n;
};

/* Match f against k's known issues into *out (overwritten; release with
 * mp_ki_hits_release). Exact hits come first, in table order; near hits
 * are kept only when there is no exact one (a near hit says what differs,
 * so it is a lead, not a name). Pure. Returns out->n. */
size_t mp_ki_match(const struct mp_knowledge *k, const struct mp_ki_facts *f,
                   struct mp_ki_hits *out);
void mp_ki_hits_release(struct mp_ki_hits *h);

/* One line: "matches known issue ID (TITLE): fixed in X / workaround Y
 * [SOURCE]", a near hit "resembles known issue ID ... - differs: ...". */
void mp_ki_hit_line(const struct mp_ki_hit *h, struct buf *out);
/* The JSON array of DESIGN.md: [{"id", "title", "source", "match": "exact"|"near",
 * "fixed_in", "workaround", "differs", "unconfirmed"}]. */
void mp_ki_hits_to_json(const struct mp_ki_hits *h, struct buf *out);

/* Append "AREA:NAME" to out, AREA lower-cased with blanks as '-' ("MxFp8
 * MoE" -> "mxfp8-moe"), once; nothing for an empty name. The spelling of
 * mp_ki_facts.kernels, for every caller that builds facts. */
void mp_ki_kernel(struct mp_strv *out, const char *area, const char *name);

/* "sm121" for a compute capability "12.1" (or "sm_121a", "sm121");
 * NULL when cc says none. Writes into buf (at least 8 bytes). */
const char *mp_ki_device(const char *cc, char *buf, size_t n);

#endif
