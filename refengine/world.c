/* world.c - INI parser for refengine world files. Pure: no I/O except in
 * world_load(), never prints. */
#include "compat.h"

#include "world.h"
#include "xalloc.h"
#include "buf.h"
#include "file.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const backend_names[WB_COUNT] = {
    [WB_FLASHINFER_TRTLLM] = "FLASHINFER_TRTLLM",
    [WB_FLASHINFER_CUTEDSL] = "FLASHINFER_CUTEDSL",
    [WB_FLASHINFER_CUTEDSL_BATCHED] = "FLASHINFER_CUTEDSL_BATCHED",
    [WB_FLASHINFER_CUTLASS] = "FLASHINFER_CUTLASS",
    [WB_VLLM_CUTLASS] = "VLLM_CUTLASS",
    [WB_MARLIN] = "MARLIN",
    [WB_HUMMING] = "HUMMING",
    [WB_EMULATION] = "EMULATION",
    [WB_FLASHINFER_B12X] = "FLASHINFER_B12X",
    [WB_B12X] = "B12X",
};

static const char *const device_names[] = {"sm90", "sm100", "sm120", "sm121"};
static const char *const failure_names[] = {"none", "async-race", "kernel-fault",
                                            "startup-crash", "hang", "garbage"};

const char *world_backend_name(enum world_backend b)
{
    if ((int)b < 0 || b >= WB_COUNT)
        return NULL;
    return backend_names[b];
}

enum world_backend world_backend_from_name(const char *name)
{
    for (int i = 0; i < WB_COUNT; i++)
        if (strcmp(name, backend_names[i]) == 0)
            return (enum world_backend)i;
    return WB_NONE;
}

const char *world_device_name(enum world_device d)
{
    return (unsigned)d < MP_ARRAY_SIZE(device_names) ? device_names[d] : "?";
}

const char *world_failure_name(enum world_failure f)
{
    return (unsigned)f < MP_ARRAY_SIZE(failure_names) ? failure_names[f] : "?";
}

void world_backend_defaults(struct world_backend_cfg *b)
{
    memset(b, 0, sizeof(*b));
    b->supported = true;
    b->tokens_per_second = 50.0;
    b->contention = 0.1;
    b->failure = WF_NONE;
    b->race_probability = -1.0;
    b->blocking_slowdown = 0.6;
    b->accuracy = 1.0;
    b->cuda_path = -1;
    snprintf(b->error, sizeof(b->error), "an illegal memory access was encountered");
}

int world_parse_version(const char *s, int *maj, int *min, int *pat)
{
    int v[3] = {0, 0, 0};
    const char *p = s;
    for (int i = 0; i < 3; i++) {
        if (!isdigit((unsigned char)*p)) {
            if (i < 2)
                return MP_EPARSE;
            break;
        }
        long n = 0;
        while (isdigit((unsigned char)*p)) {
            n = n * 10 + (*p - '0');
            if (n > 9999)
                return MP_EPARSE;
            p++;
        }
        v[i] = (int)n;
        if (i == 0) {
            if (*p != '.')
                return MP_EPARSE;
            p++;
        } else if (i == 1) {
            if (*p != '.')
                break; /* "0.17": patch 0 */
            p++;
        } else if (*p == '.') {
            break; /* 0.10.1.1 style: ignore the rest */
        }
    }
    /* the rest may be a PEP 440 suffix: rc1, .dev8+g..., .post1 */
    for (; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '.' && *p != '+' && *p != '-' && *p != '_')
            return MP_EPARSE;
    *maj = v[0];
    *min = v[1];
    *pat = v[2];
    return 0;
}

/* ---- small value parsers; each returns true on success ---- */

static bool parse_bool(const char *v, bool *out)
{
    if (!strcmp(v, "true") || !strcmp(v, "yes") || !strcmp(v, "1") || !strcmp(v, "on")) {
        *out = true;
        return true;
    }
    if (!strcmp(v, "false") || !strcmp(v, "no") || !strcmp(v, "0") || !strcmp(v, "off")) {
        *out = false;
        return true;
    }
    return false;
}

static bool parse_double(const char *v, double lo, double hi, double *out)
{
    if (!*v)
        return false;
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (errno || *end || !isfinite(x) || x < lo || x > hi)
        return false;
    *out = x;
    return true;
}

static bool parse_uint(const char *v, unsigned long long hi, unsigned long long *out)
{
    if (!isdigit((unsigned char)*v))
        return false;
    char *end;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    if (errno || *end || x > hi)
        return false;
    *out = x;
    return true;
}

static bool copy_str(char *dst, size_t cap, const char *src)
{
    size_t n = strlen(src);
    if (n == 0 || n >= cap)
        return false;
    memcpy(dst, src, n + 1);
    return true;
}

static bool is_env_name(const char *s)
{
    if (!(isupper((unsigned char)*s) || *s == '_'))
        return false;
    for (; *s; s++)
        if (!(isupper((unsigned char)*s) || isdigit((unsigned char)*s) || *s == '_'))
            return false;
    return true;
}

/* ---- parser state ---- */

enum section { SEC_NONE, SEC_ENGINE, SEC_BACKEND, SEC_KNOB };

/* keys seen in the current section (duplicate detection) */
#define MAX_SEEN 32
struct pstate {
    struct world *w;
    struct mp_diag *d;
    size_t line;
    enum section sec;
    enum world_backend cur_backend;
    struct world_knob *cur_knob;
    char seen[MAX_SEEN][64];
    unsigned nseen;
    bool engine_seen;
    bool have_version, have_device, have_model;
    size_t failure_line[WB_COUNT];
};

static int err(struct pstate *s, const char *fmt, ...) MP_PRINTF(2, 3);

static int err(struct pstate *s, const char *fmt, ...)
{
    if (s->d) {
        s->d->line = s->line;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(s->d->msg, sizeof(s->d->msg), fmt, ap);
        va_end(ap);
    }
    return MP_EPARSE;
}

static int mark_seen(struct pstate *s, const char *key)
{
    for (unsigned i = 0; i < s->nseen; i++)
        if (!strcmp(s->seen[i], key))
            return err(s, "duplicate key '%s'%s", key, " in this section");
    if (s->nseen < MAX_SEEN) {
        snprintf(s->seen[s->nseen], sizeof(s->seen[0]), "%s", key);
        s->nseen++;
    }
    return 0;
}

/* "13, 31": the Xids the fake driver logs when this backend faults */
static int parse_xids(struct pstate *s, struct world_backend_cfg *b, const char *v)
{
    b->nxid = 0;
    for (const char *p = v; *p;) {
        char *end;
        long x = strtol(p, &end, 10);
        if (end == p || x <= 0 || x > 999 || b->nxid >= MP_ARRAY_SIZE(b->xid))
            return err(s, "xid: expected up to 4 Xid numbers (1-999) separated by commas, got "
                          "'%.80s'", v);
        b->xid[b->nxid++] = (int)x;
        p = end;
        while (*p == ' ' || *p == ',')
            p++;
    }
    return b->nxid ? 0 : err(s, "xid: expected at least one Xid number");
}

static int parse_sites(struct pstate *s, struct world_backend_cfg *b, const char *v)
{
    b->nsites = 0;
    const char *p = v;
    while (*p) {
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        if (!*p)
            break;
        const char *e = p;
        while (*e && *e != ',')
            e++;
        const char *t = e;
        while (t > p && (t[-1] == ' ' || t[-1] == '\t'))
            t--;
        size_t n = (size_t)(t - p);
        if (b->nsites >= WORLD_MAX_SITES)
            return err(s, "too many sites (at most %s)", "16");
        if (n >= sizeof(b->sites[0]))
            return err(s, "site name too long: '%.60s'", p);
        for (size_t i = 0; i < n; i++)
            if (!(isalnum((unsigned char)p[i]) || strchr("_.:()/-", p[i])))
                return err(s, "bad character in site name '%.60s'", p);
        memcpy(b->sites[b->nsites], p, n);
        b->sites[b->nsites][n] = 0;
        b->nsites++;
        p = e;
    }
    if (b->nsites == 0)
        return err(s, "sites: expected a comma-separated list");
    return 0;
}

static int engine_key(struct pstate *s, const char *k, const char *v)
{
    struct world *w = s->w;
    if (!strcmp(k, "version")) {
        if (strlen(v) >= sizeof(w->version) ||
            world_parse_version(v, &w->ver_major, &w->ver_minor, &w->ver_patch) != 0)
            return err(s, "version: expected a vLLM version like 0.17.0, got '%.80s'", v);
        snprintf(w->version, sizeof(w->version), "%s", v);
        s->have_version = true;
    } else if (!strcmp(k, "device")) {
        for (unsigned i = 0; i < MP_ARRAY_SIZE(device_names); i++)
            if (!strcmp(v, device_names[i])) {
                w->device = (enum world_device)i;
                s->have_device = true;
                return 0;
            }
        return err(s, "device: expected sm90, sm100, sm120 or sm121, got '%.80s'", v);
    } else if (!strcmp(k, "model")) {
        if (!copy_str(w->model, sizeof(w->model), v) || strchr(v, '\'') || strchr(v, ' '))
            return err(s, "model: expected a model name without spaces or quotes");
        s->have_model = true;
    } else if (!strcmp(k, "quantization")) {
        if (!copy_str(w->quantization, sizeof(w->quantization), v) || strchr(v, '\''))
            return err(s, "quantization: bad value '%.80s'", v);
    } else if (!strcmp(k, "load_seconds")) {
        if (!parse_double(v, 0, 3600, &w->load_seconds))
            return err(s, "load_seconds: expected a number of seconds in [0, 3600], got '%.80s'", v);
    } else if (!strcmp(k, "select_seconds")) {
        if (!parse_double(v, 0, 3600, &w->select_seconds))
            return err(s, "select_seconds: expected a number of seconds in [0, 3600], got '%.80s'", v);
    } else if (!strcmp(k, "seed")) {
        unsigned long long x;
        if (!parse_uint(v, UINT64_MAX, &x))
            return err(s, "seed: expected a non-negative integer, got '%.80s'", v);
        w->seed = x;
    } else if (!strcmp(k, "child_ignores_sigterm")) {
        if (!parse_bool(v, &w->child_ignores_sigterm))
            return err(s, "child_ignores_sigterm: expected true or false, got '%.80s'", v);
    } else if (!strcmp(k, "child_escapes_group")) {
        if (!parse_bool(v, &w->child_escapes_group))
            return err(s, "child_escapes_group: expected true or false, got '%.80s'", v);
    } else if (!strcmp(k, "kv_cache_tokens")) {
        unsigned long long x;
        if (!parse_uint(v, 1ULL << 32, &x) || x < 16)
            return err(s, "kv_cache_tokens: expected an integer >= 16 (tokens), got '%.80s'", v);
        w->kv_cache_tokens = (unsigned long)x;
    } else if (!strcmp(k, "max_num_seqs")) {
        unsigned long long x;
        if (!parse_uint(v, 65536, &x) || x == 0)
            return err(s, "max_num_seqs: expected an integer in [1, 65536], got '%.80s'", v);
        w->max_num_seqs = (unsigned)x;
    } else if (!strcmp(k, "cuda")) {
        if (!parse_bool(v, &w->cuda))
            return err(s, "cuda: expected true or false, got '%.80s'", v);
    } else if (!strcmp(k, "drafter_moe")) {
        static const char *const names[] = {"TRITON", "BATCHED_TRITON", "FlashInfer CUTLASS",
                                            "FlashInfer TRTLLM"};
        for (size_t i = 0; i < MP_ARRAY_SIZE(names); i++)
            if (!strcmp(v, names[i])) {
                snprintf(w->drafter_moe, sizeof(w->drafter_moe), "%s", v);
                return 0;
            }
        return err(s, "drafter_moe: expected TRITON, BATCHED_TRITON, FlashInfer CUTLASS or "
                      "FlashInfer TRTLLM, got '%.80s'", v);
    } else if (!strcmp(k, "drafter_startup_error")) {
        if (!copy_str(w->drafter_startup_error, sizeof(w->drafter_startup_error), v))
            return err(s, "drafter_startup_error: too long%s", "");
    } else if (!strcmp(k, "autotuner_unsupported_tactics")) {
        unsigned long long x;
        if (!parse_uint(v, 100000, &x))
            return err(s, "autotuner_unsupported_tactics: expected an integer in [0, 100000], "
                          "got '%.80s'", v);
        w->autotuner_unsupported_tactics = (unsigned)x;
    } else if (!strcmp(k, "cuda_route_jitter")) {
        if (!parse_double(v, 0, 1, &w->cuda_route_jitter))
            return err(s, "cuda_route_jitter: expected a probability in [0, 1], got '%.80s'", v);
    } else if (!strcmp(k, "cuda_logit_scale")) {
        if (!parse_double(v, 0, 100, &w->cuda_logit_scale))
            return err(s, "cuda_logit_scale: expected nats in [0, 100], got '%.80s'", v);
    } else if (!strncmp(k, "cuda_", 5)) {
        static const struct {
            const char *key;
            unsigned lo, hi, mult;
            size_t off;
        } dims[] = {
            {"cuda_hidden", 64, 8192, 64, offsetof(struct world, cuda_hidden)},
            {"cuda_intermediate", 64, 8192, 64, offsetof(struct world, cuda_intermediate)},
            {"cuda_experts", 2, 256, 1, offsetof(struct world, cuda_experts)},
            {"cuda_top_k", 1, 16, 1, offsetof(struct world, cuda_top_k)},
            {"cuda_layers", 1, 256, 1, offsetof(struct world, cuda_layers)},
        };
        for (size_t i = 0; i < MP_ARRAY_SIZE(dims); i++) {
            if (strcmp(k, dims[i].key) != 0)
                continue;
            unsigned long long x;
            if (!parse_uint(v, dims[i].hi, &x) || x < dims[i].lo || x % dims[i].mult)
                return err(s, "%s: expected an integer in [%u, %u]%s, got '%.80s'", k, dims[i].lo,
                           dims[i].hi, dims[i].mult > 1 ? " (a multiple of 64)" : "", v);
            *(unsigned *)((char *)w + dims[i].off) = (unsigned)x;
            return 0;
        }
        return err(s, "unknown key '%.80s' in [engine]", k);
    } else {
        return err(s, "unknown key '%.80s' in [engine]", k);
    }
    return 0;
}

static int count_key(struct pstate *s, const char *k, const char *v, unsigned *out)
{
    unsigned long long x;
    if (!parse_uint(v, 1000000000ULL, &x) || x == 0)
        return err(s, "%s: expected a request number >= 1, got '%.80s'", k, v);
    *out = (unsigned)x;
    return 0;
}

static int backend_key(struct pstate *s, const char *k, const char *v)
{
    struct world_backend_cfg *b = &s->w->backends[s->cur_backend];
    if (!strcmp(k, "supported")) {
        if (!parse_bool(v, &b->supported))
            return err(s, "supported: expected true or false, got '%.80s'", v);
    } else if (!strcmp(k, "tokens_per_second")) {
        if (!parse_double(v, 0.001, 1e6, &b->tokens_per_second))
            return err(s, "tokens_per_second: expected a number in (0, 1e6], got '%.80s'", v);
    } else if (!strcmp(k, "contention")) {
        if (!parse_double(v, 0, 100, &b->contention))
            return err(s, "contention: expected a number in [0, 100], got '%.80s'", v);
    } else if (!strcmp(k, "failure")) {
        for (unsigned i = 0; i < MP_ARRAY_SIZE(failure_names); i++)
            if (!strcmp(v, failure_names[i])) {
                b->failure = (enum world_failure)i;
                s->failure_line[s->cur_backend] = s->line;
                return 0;
            }
        return err(s,
                   "failure: expected none, async-race, kernel-fault, startup-crash, hang or "
                   "garbage, got '%.80s'", v);
    } else if (!strcmp(k, "crash_after_requests")) {
        return count_key(s, k, v, &b->crash_after_requests);
    } else if (!strcmp(k, "fault_after_requests")) {
        return count_key(s, k, v, &b->fault_after_requests);
    } else if (!strcmp(k, "hang_after_requests")) {
        return count_key(s, k, v, &b->hang_after_requests);
    } else if (!strcmp(k, "race_probability")) {
        if (!parse_double(v, 0, 1, &b->race_probability))
            return err(s, "race_probability: expected a probability in [0, 1], got '%.80s'", v);
    } else if (!strcmp(k, "sites")) {
        return parse_sites(s, b, v);
    } else if (!strcmp(k, "error")) {
        if (!copy_str(b->error, sizeof(b->error), v))
            return err(s, "error: expected a CUDA error text (at most 255 bytes)");
    } else if (!strcmp(k, "startup_error")) {
        if (!copy_str(b->startup_error, sizeof(b->startup_error), v))
            return err(s, "startup_error: expected an error text (at most 511 bytes)");
    } else if (!strcmp(k, "failure_when")) {
        const char *eq = strchr(v, '=');
        bool name_ok = eq && eq > v;
        for (const char *q = v; name_ok && q < eq; q++)
            name_ok = (*q >= 'A' && *q <= 'Z') || (*q >= 'a' && *q <= 'z') || *q == '_' ||
                      (q > v && *q >= '0' && *q <= '9');
        if (!name_ok || !copy_str(b->failure_when, sizeof(b->failure_when), v))
            return err(s, "failure_when: expected NAME=VALUE (an environment variable), got '%.80s'",
                       v);
    } else if (!strcmp(k, "kernel")) {
        if (!copy_str(b->kernel, sizeof(b->kernel), v) || strchr(v, ' '))
            return err(s, "kernel: expected a kernel name without spaces (as a core dump prints "
                          "it, at most 1023 bytes), got '%.80s'", v);
    } else if (!strcmp(k, "xid")) {
        return parse_xids(s, b, v);
    } else if (!strcmp(k, "blocking_slowdown")) {
        if (!parse_double(v, 0.001, 100, &b->blocking_slowdown))
            return err(s, "blocking_slowdown: expected a factor in (0, 100], got '%.80s'", v);
    } else if (!strcmp(k, "logit_noise") || !strcmp(k, "logit_error")) {
        if (!parse_double(v, 0, 50, k[6] == 'n' ? &b->logit_noise : &b->logit_error))
            return err(s, "%s: expected nats in [0, 50], got '%.80s'", k, v);
    } else if (!strcmp(k, "accuracy")) {
        if (!parse_double(v, 0, 1, &b->accuracy))
            return err(s, "accuracy: expected a share in [0, 1], got '%.80s'", v);
    } else if (!strcmp(k, "cuda_path")) {
        /* in the order of enum moe_cuda_path (refengine/cuda/moe_cuda.h) */
        static const char *const paths[] = {"marlin", "two-stream", "racy", "faulty", "bf16",
                                            "wrong-scale"};
        for (unsigned i = 0; i < MP_ARRAY_SIZE(paths); i++)
            if (!strcmp(v, paths[i])) {
                b->cuda_path = (int)i;
                return 0;
            }
        return err(s, "cuda_path: expected marlin, two-stream, racy, faulty, bf16 or wrong-scale, "
                      "got '%.80s'", v);
    } else {
        return err(s, "unknown key '%.80s' in [backend %s]", k,
                   world_backend_name(s->cur_backend));
    }
    return 0;
}

static int knob_key(struct pstate *s, const char *k, const char *v)
{
    struct world_knob *kn = s->cur_knob;
    enum world_backend b = world_backend_from_name(v);
    if (b == WB_NONE)
        return err(s, "[knob] value '%.60s' maps to unknown backend '%.60s'", k, v);
    if (strlen(k) >= sizeof(kn->values[0].value))
        return err(s, "knob value too long: '%.60s'", k);
    if (kn->nvalues >= WORLD_MAX_KNOB_VALUES)
        return err(s, "too many values for knob %.60s", kn->name);
    snprintf(kn->values[kn->nvalues].value, sizeof(kn->values[0].value), "%s", k);
    kn->values[kn->nvalues].backend = b;
    kn->nvalues++;
    return 0;
}

static int section_header(struct pstate *s, char *p)
{
    /* p points just after '[' ; the line ends with ']' (checked by caller) */
    char *name = p;
    while (*name == ' ')
        name++;
    char *sp = name;
    while (*sp && *sp != ' ')
        sp++;
    char *arg = NULL;
    if (*sp) {
        *sp = 0;
        arg = sp + 1;
        while (*arg == ' ')
            arg++;
        char *e = arg + strlen(arg);
        while (e > arg && e[-1] == ' ')
            *--e = 0;
        if (!*arg)
            arg = NULL;
    }
    s->nseen = 0;
    if (!strcmp(name, "engine")) {
        if (arg)
            return err(s, "[engine] takes no name");
        if (s->engine_seen)
            return err(s, "duplicate section [engine]");
        s->engine_seen = true;
        s->sec = SEC_ENGINE;
    } else if (!strcmp(name, "backend")) {
        if (!arg)
            return err(s, "[backend NAME]: missing backend name");
        enum world_backend b = world_backend_from_name(arg);
        if (b == WB_NONE)
            return err(s,
                       "unknown backend '%.60s' (expected an NvFp4 MoE backend such as "
                       "FLASHINFER_CUTLASS, VLLM_CUTLASS, MARLIN)", arg);
        if (s->w->backends[b].present)
            return err(s, "duplicate section [backend %.60s]", arg);
        s->w->backends[b].present = true;
        s->cur_backend = b;
        s->sec = SEC_BACKEND;
    } else if (!strcmp(name, "knob")) {
        if (!arg || !is_env_name(arg) || strlen(arg) >= sizeof(s->w->knobs[0].name))
            return err(s, "[knob NAME]: expected an environment variable name, got '%.60s'", arg ? arg : "");
        for (unsigned i = 0; i < s->w->nknobs; i++)
            if (!strcmp(s->w->knobs[i].name, arg))
                return err(s, "duplicate section [knob %.60s]", arg);
        if (s->w->nknobs >= WORLD_MAX_KNOBS)
            return err(s, "too many [knob] sections");
        s->cur_knob = &s->w->knobs[s->w->nknobs++];
        snprintf(s->cur_knob->name, sizeof(s->cur_knob->name), "%s", arg);
        s->sec = SEC_KNOB;
    } else {
        return err(s, "unknown section [%.60s] (expected engine, backend NAME or knob NAME)", name);
    }
    return 0;
}

static char *trim(char *p)
{
    while (*p == ' ' || *p == '\t')
        p++;
    char *e = p + strlen(p);
    while (e > p && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
        *--e = 0;
    return p;
}

static int parse_line(struct pstate *s, char *line)
{
    /* strip comments: '#' at line start or after whitespace */
    for (char *c = line; *c; c++)
        if (*c == '#' && (c == line || c[-1] == ' ' || c[-1] == '\t')) {
            *c = 0;
            break;
        }
    char *p = trim(line);
    if (!*p)
        return 0;
    if (*p == '[') {
        size_t n = strlen(p);
        if (p[n - 1] != ']')
            return err(s, "section header without closing ']'");
        p[n - 1] = 0;
        return section_header(s, p + 1);
    }
    char *eq = strchr(p, '=');
    if (!eq)
        return err(s, "expected 'key = value', got '%.80s'", p);
    *eq = 0;
    char *k = trim(p);
    char *v = trim(eq + 1);
    if (!*k)
        return err(s, "missing key before '='");
    if (!*v)
        return err(s, "missing value for '%.80s'", k);
    if (s->sec == SEC_NONE)
        return err(s, "key '%.80s' outside a section (start with [engine])", k);
    int rc = mark_seen(s, k);
    if (rc)
        return rc;
    switch (s->sec) {
    case SEC_ENGINE:
        return engine_key(s, k, v);
    case SEC_BACKEND:
        return backend_key(s, k, v);
    case SEC_KNOB:
        return knob_key(s, k, v);
    default:
        return 0;
    }
}

static int check_backend(struct pstate *s, enum world_backend i)
{
    struct world_backend_cfg *b = &s->w->backends[i];
    const char *n = world_backend_name(i);
    s->line = s->failure_line[i];
    switch (b->failure) {
    case WF_ASYNC_RACE:
        if (!b->crash_after_requests && b->race_probability < 0)
            return err(s,
                       "[backend %s] failure = async-race needs crash_after_requests or "
                       "race_probability", n);
        break;
    case WF_KERNEL_FAULT:
        if (!b->fault_after_requests)
            return err(s, "[backend %s] failure = kernel-fault needs fault_after_requests", n);
        break;
    case WF_HANG:
        if (!b->hang_after_requests)
            return err(s, "[backend %s] failure = hang needs hang_after_requests", n);
        break;
    default:
        break;
    }
    if (b->nsites == 0) {
        /* default site: where an async error typically surfaces */
        snprintf(b->sites[0], sizeof(b->sites[0]), "get_output");
        b->nsites = 1;
    }
    return 0;
}

int world_parse(const char *text, size_t len, const char *filename, struct world *out,
                struct mp_diag *d)
{
    struct pstate s;
    memset(&s, 0, sizeof(s));
    memset(out, 0, sizeof(*out));
    if (d) {
        snprintf(d->file, sizeof(d->file), "%s", filename ? filename : "<world>");
        d->line = 0;
        d->col = 0;
        d->msg[0] = 0;
    }
    s.w = out;
    s.d = d;
    snprintf(out->quantization, sizeof(out->quantization), "modelopt_fp4");
    out->load_seconds = 0.5;
    out->kv_cache_tokens = 843392;
    out->max_num_seqs = 256;
    out->cuda_hidden = 1024;
    out->cuda_intermediate = 512;
    out->cuda_experts = 32;
    out->cuda_top_k = 4;
    out->cuda_layers = 8;
    out->cuda_route_jitter = 0.02;
    for (int i = 0; i < WB_COUNT; i++)
        world_backend_defaults(&out->backends[i]);
    if (len > WORLD_MAX_FILE)
        return mp_diag_set(d, MP_ELIMIT, 0, "file too large (%zu bytes, at most %u)", len,
                           WORLD_MAX_FILE);

    char linebuf[4096];
    size_t pos = 0;
    while (pos < len) {
        s.line++;
        size_t e = pos;
        while (e < len && text[e] != '\n')
            e++;
        size_t n = e - pos;
        if (n >= sizeof(linebuf))
            return mp_diag_set(d, MP_ELIMIT, s.line, "line too long (%zu bytes, at most %zu)",
                               n, sizeof(linebuf) - 1);
        memcpy(linebuf, text + pos, n);
        linebuf[n] = 0;
        if (memchr(linebuf, 0, n))
            return mp_diag_set(d, MP_EPARSE, s.line, "NUL byte in world file");
        for (size_t i = 0; i < n; i++) {
            unsigned char c = (unsigned char)linebuf[i];
            if (c < 0x20 && c != '\t' && c != '\r')
                return mp_diag_set(d, MP_EPARSE, s.line, "control character 0x%02x", c);
        }
        int rc = parse_line(&s, linebuf);
        if (rc)
            return rc;
        pos = e + 1;
    }
    s.line = 0;
    if (!s.engine_seen)
        return err(&s, "missing [engine] section");
    if (!s.have_version)
        return err(&s, "[engine] needs version (e.g. version = 0.17.0)");
    if (!s.have_device)
        return err(&s, "[engine] needs device (sm90, sm100, sm120 or sm121)");
    if (!s.have_model)
        return err(&s, "[engine] needs model");
    if (out->select_seconds > out->load_seconds)
        return err(&s, "[engine] select_seconds (%g) exceeds load_seconds (%g): the selection lines come before ready",
                   out->select_seconds, out->load_seconds);
    if (out->cuda_top_k > out->cuda_experts)
        return err(&s, "[engine] cuda_top_k (%u) exceeds cuda_experts (%u)", out->cuda_top_k,
                   out->cuda_experts);
    for (int i = 0; i < WB_COUNT; i++) {
        int rc = check_backend(&s, (enum world_backend)i);
        if (rc)
            return rc;
    }
    return 0;
}

int world_load(const char *path, struct world *out, struct mp_diag *d)
{
    struct buf b = BUF_INIT;
    int rc = mp_read_file(path, WORLD_MAX_FILE, &b, d);
    if (rc == 0)
        rc = world_parse(b.data, b.len, path, out, d);
    buf_release(&b);
    return rc;
}
