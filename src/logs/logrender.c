/* logrender.c - JSON and text renderings of a struct mp_logresult, shared by
 * `moeprobe scan` and qualify's report. */
#include "compat.h"

#include <stdlib.h>
#include <string.h>

#include "escape.h"
#include "knowledge/issues.h"
#include "logs/logscan.h"
#include "strv.h"
#include "xalloc.h"

/* Every string of the JSON rendering comes from the log, so it goes through
 * the process's secret mask (escape.h's mp_term_mask: the one mask of every
 * channel, docs/store.md "Secrets") before it is JSON-escaped; the text
 * rendering is masked where it is written (mp_term_write). */
static void jstr(struct buf *b, const char *s)
{
    if (!s) {
        buf_adds(b, "null");
        return;
    }
    size_t n = 0;
    char *m = mp_term_mask(s, strlen(s), &n);
    buf_add_json_str(b, m, n);
    free(m);
}

static void jline(struct buf *b, long line)
{
    if (line > 0)
        buf_printf(b, "%ld", line);
    else
        buf_adds(b, "null");
}

static void jarr(struct buf *b, const char *const *v, size_t n)
{
    buf_addc(b, '[');
    for (size_t i = 0; i < n; i++) {
        if (i)
            buf_adds(b, ", ");
        jstr(b, v[i]);
    }
    buf_addc(b, ']');
}

static const char *sev_name(int s)
{
    return s >= 2 ? "error" : s == 1 ? "warning" : "info";
}

static void drafter_json(struct buf *b, const struct mp_logdrafter *d)
{
    if (!d->loaded_line) {
        buf_adds(b, "null");
        return;
    }
    buf_adds(b, "{\"moe_backend\": ");
    jstr(b, d->moe_backend);
    buf_adds(b, ", \"moe_kind\": ");
    jstr(b, d->moe_kind);
    buf_adds(b, ", \"moe_candidates\": ");
    jarr(b, d->moe_candidates, d->n_moe_candidates);
    buf_adds(b, ", \"line\": ");
    jline(b, d->line);
    buf_printf(b, ", \"loaded_line\": %ld}", d->loaded_line);
}

static void other_json(struct buf *b, const struct mp_logsel *o, size_t n)
{
    buf_addc(b, '[');
    for (size_t i = 0; i < n; i++) {
        buf_adds(b, i ? ", {\"what\": " : "{\"what\": ");
        jstr(b, o[i].what);
        buf_adds(b, ", \"value\": ");
        jstr(b, o[i].value);
        buf_printf(b, ", \"line\": %ld}", o[i].line);
    }
    buf_addc(b, ']');
}

/* {"name": {"count": N, "first_line": L}, ...} or null */
static void tallies_json(struct buf *b, const struct mp_logtally *t, size_t n)
{
    if (!n) {
        buf_adds(b, "null");
        return;
    }
    buf_addc(b, '{');
    for (size_t i = 0; i < n; i++) {
        buf_adds(b, i ? ", " : "");
        jstr(b, t[i].name);
        buf_printf(b, ": {\"count\": %ld, \"first_line\": %ld}", t[i].count, t[i].first_line);
    }
    buf_addc(b, '}');
}

/* The parts of scan's JSON beyond the resolved backends. */
static void more_json(const struct mp_logresult *r, struct buf *b)
{
    buf_adds(b, ",\n  \"tallies\": ");
    tallies_json(b, r->tallies, r->n_tallies);
    buf_adds(b, ", \"fatal_messages\": ");
    jarr(b, r->fatal_messages, r->n_fatal_messages);
    buf_adds(b, ",\n  \"known_issues\": ");
    if (r->known_issues)
        mp_ki_hits_to_json(r->known_issues, b);
    else
        buf_adds(b, "[]");
}

void mp_logresult_to_json(const struct mp_logresult *r, const char *file, struct buf *b)
{
    buf_adds(b, "{\"file\": ");
    jstr(b, file);
    buf_adds(b, ", \"engine_version\": ");
    jstr(b, r->engine_version);
    buf_adds(b, ", \"model\": ");
    jstr(b, r->model);
    buf_adds(b, ", \"quantization\": ");
    jstr(b, r->quantization);
    buf_adds(b, ", \"device\": ");
    jstr(b, r->device);
    buf_adds(b, ",\n  \"resolved\": {\"moe_backend\": ");
    jstr(b, r->moe_backend);
    buf_adds(b, ", \"moe_kind\": ");
    jstr(b, r->moe_kind);
    buf_adds(b, ", \"moe_candidates\": ");
    jarr(b, r->moe_candidates, r->n_moe_candidates);
    buf_adds(b, ", \"linear_kernel\": ");
    jstr(b, r->linear_kernel);
    buf_adds(b, ", \"linear_kernels\": {");
    for (size_t i = 0; i < r->n_linear_kernels; i++) {
        if (i)
            buf_adds(b, ", ");
        jstr(b, r->linear_kernels[i].method);
        buf_adds(b, ": ");
        jstr(b, r->linear_kernels[i].kernel);
    }
    buf_adds(b, "}, \"unquantized_moe_backend\": ");
    jstr(b, r->unquantized_moe_backend);
    buf_adds(b, ", \"unquantized_moe_candidates\": ");
    jarr(b, r->unquantized_moe_candidates, r->n_unquantized_moe_candidates);
    buf_adds(b, ", \"attention_backend\": ");
    jstr(b, r->attention_backend);
    buf_adds(b, ",\n    \"drafter\": ");
    drafter_json(b, &r->drafter);
    buf_adds(b, ", \"other\": ");
    other_json(b, r->other, r->n_other);
    buf_adds(b, "},\n  \"resolved_lines\": {\"moe_backend\": ");
    jline(b, r->moe_backend_line);
    buf_adds(b, ", \"linear_kernel\": ");
    jline(b, r->linear_kernel_line);
    buf_adds(b, ", \"attention_backend\": ");
    jline(b, r->attention_backend_line);
    buf_adds(b, "},\n  \"moe_backend_flag\": ");
    jstr(b, r->moe_backend_flag);
    buf_adds(b, ", \"unknown_env\": ");
    jarr(b, r->unknown_env, r->n_unknown_env);
    buf_adds(b, ",\n  \"crash\": ");
    if (r->has_crash) {
        buf_adds(b, "{\"class\": ");
        jstr(b, r->crash.cls);
        buf_adds(b, ", \"message\": ");
        jstr(b, r->crash.message);
        buf_printf(b, ", \"line\": %ld, \"sites\": ", r->crash.line);
        jarr(b, r->crash.sites, r->crash.nsites);
        buf_adds(b, ", \"launch_site\": ");
        jstr(b, r->crash.launch_site);
        buf_printf(b, ", \"engine_dead\": %s}", r->crash.engine_dead ? "true" : "false");
    } else {
        buf_adds(b, "null");
    }
    more_json(r, b);
    buf_adds(b, ",\n  \"startup_error\": ");
    jstr(b, r->startup_error);
    buf_adds(b, ", \"startup_error_line\": ");
    jline(b, r->startup_error_line);
    buf_printf(b, ", \"ready\": %s, \"ready_line\": ", r->ready ? "true" : "false");
    jline(b, r->ready_line);
    buf_printf(b, ", \"lines\": %ld, \"truncated_lines\": %ld, \"nul_bytes\": %llu,\n  \"error_lines\": [",
               r->lines, r->truncated_lines, r->nul_bytes);
    for (size_t i = 0; i < r->n_error_lines; i++) {
        buf_printf(b, "%s{\"line\": %ld, \"text\": ", i ? ", " : "", r->error_lines[i].line);
        jstr(b, r->error_lines[i].text);
        buf_addc(b, '}');
    }
    buf_adds(b, "],\n  \"findings\": [");
    for (size_t i = 0; i < r->nfindings; i++) {
        const struct mp_logfinding *f = &r->findings[i];
        buf_adds(b, i ? ",\n    " : "\n    ");
        buf_printf(b, "{\"severity\": \"%s\", \"code\": ", sev_name(f->severity));
        jstr(b, f->code);
        buf_adds(b, ", \"line\": ");
        jline(b, f->line);
        buf_adds(b, ", \"text\": ");
        jstr(b, f->text);
        buf_addc(b, '}');
    }
    buf_adds(b, r->nfindings ? "\n  ]}" : "]}");
}

static void tline(struct buf *b, const char *label, const char *v, long line)
{
    buf_printf(b, "  %-18s %s", label, v ? v : "(not in log)");
    if (v && line > 0)
        buf_printf(b, "  (line %ld)", line);
    buf_addc(b, '\n');
}

/* The drafter's and the other selections, the device. */
static void more_text(const struct mp_logresult *r, struct buf *b)
{
    if (r->drafter.loaded_line && r->drafter.moe_backend)
        buf_printf(b, "  %-18s %s%s%s  (line %ld)\n", "drafter MoE", r->drafter.moe_backend,
                   r->drafter.moe_kind ? ", " : "", r->drafter.moe_kind ? r->drafter.moe_kind : "",
                   r->drafter.line);
    else if (r->drafter.loaded_line)
        buf_printf(b, "  %-18s loaded at line %ld; no MoE selection of its own in the log\n",
                   "drafter", r->drafter.loaded_line);
    for (size_t i = 0; i < r->n_other; i++)
        buf_printf(b, "  %-18s %s: %s  (line %ld)\n", i ? "" : "other selections", r->other[i].what,
                   r->other[i].value, r->other[i].line);
    if (r->device)
        buf_printf(b, "  %-18s %s  (line %ld)\n", "device", r->device, r->device_line);
}

void mp_logresult_to_text(const struct mp_logresult *r, const char *file, struct buf *b)
{
    buf_printf(b, "%s: %ld lines\n", file ? file : "(log)", r->lines);
    tline(b, "engine version", r->engine_version, 0);
    tline(b, "model", r->model, 0);
    if (r->quantization)
        tline(b, "quantization", r->quantization, 0);
    tline(b, "MoE backend", r->moe_backend, r->moe_backend_line);
    if (r->n_moe_candidates) {
        buf_printf(b, "  %-18s ", "  out of");
        for (size_t i = 0; i < r->n_moe_candidates; i++)
            buf_printf(b, "%s%s", i ? ", " : "", r->moe_candidates[i]);
        buf_addc(b, '\n');
    }
    tline(b, "linear kernel", r->linear_kernel, r->linear_kernel_line);
    for (size_t i = 0; i < r->n_linear_kernels; i++)
        buf_printf(b, "  %-18s %s: %s  (line %ld)\n", i ? "" : "  dense kernels",
                   r->linear_kernels[i].method, r->linear_kernels[i].kernel,
                   r->linear_kernels[i].line);
    if (r->unquantized_moe_backend)
        tline(b, "unquantized MoE", r->unquantized_moe_backend, r->unquantized_moe_backend_line);
    tline(b, "attention backend", r->attention_backend, r->attention_backend_line);
    more_text(r, b);
    if (r->moe_backend_flag)
        buf_printf(b, "  %-18s --moe-backend %s\n", "MoE flag", r->moe_backend_flag);
    if (r->n_unknown_env) {
        buf_printf(b, "  %-18s ", "unknown env");
        for (size_t i = 0; i < r->n_unknown_env; i++)
            buf_printf(b, "%s%s", i ? ", " : "", r->unknown_env[i]);
        buf_printf(b, "  (line %ld)\n", r->unknown_env_line);
    }
    if (r->ready)
        buf_printf(b, "  %-18s yes (line %ld)\n", "ready", r->ready_line);
    else
        buf_printf(b, "  %-18s no \"Application startup complete\" line\n", "ready");
    if (r->has_crash) {
        buf_printf(b, "  %-18s %s at line %ld%s\n", "crash", r->crash.cls, r->crash.line,
                   r->crash.engine_dead ? ", engine dead" : "");
        buf_printf(b, "  %-18s %s\n", "  message", r->crash.message ? r->crash.message : "");
        for (size_t i = 0; i < r->crash.nsites; i++)
            buf_printf(b, "  %-18s %s\n", i ? "" : "  sites", r->crash.sites[i]);
        if (r->crash.launch_site)
            buf_printf(b, "  %-18s %s\n", "  launched from", r->crash.launch_site);
    } else {
        buf_printf(b, "  %-18s none\n", "crash");
    }
    if (r->startup_error)
        buf_printf(b, "  %-18s %s (line %ld)\n", "startup error", r->startup_error,
                   r->startup_error_line);
    if (!r->has_crash && !r->startup_error && !r->ready) {
        /* never ready and nothing recognised: what it said last */
        for (size_t i = 0; i < r->n_error_lines; i++)
            buf_printf(b, "  %-18s line %ld: %s\n", i ? "" : "last error lines", r->error_lines[i].line,
                       r->error_lines[i].text);
    }
    if (r->nfindings)
        buf_adds(b, "  findings:\n");
    for (size_t i = 0; i < r->nfindings; i++) {
        const struct mp_logfinding *f = &r->findings[i];
        buf_printf(b, "    [%s] %s", sev_name(f->severity), f->code);
        if (f->line > 0)
            buf_printf(b, " (line %ld)", f->line);
        buf_printf(b, ": %s\n", f->text);
    }
}

void mp_logresult_quote_errors(const struct mp_logresult *r, const char *log_name, struct buf *out)
{
    for (size_t i = 0; i < r->n_error_lines; i++)
        buf_printf(out, "%s%s:%ld: %s", i ? "; " : "", log_name, r->error_lines[i].line,
                   r->error_lines[i].text);
}

static char *dup_or_null(const char *s)
{
    return s ? xstrdup(s) : NULL;
}

/* The drafter, the other selections, tallies, device and fatal messages. */
static void resolved_more_from_log(struct mp_resolved *out, const struct mp_logresult *r)
{
    out->moe_kind = dup_or_null(r->moe_kind);
    out->device = dup_or_null(r->device);
    out->drafter.loaded_line = r->drafter.loaded_line;
    out->drafter.line = r->drafter.line;
    out->drafter.moe_backend = dup_or_null(r->drafter.moe_backend);
    out->drafter.moe_kind = dup_or_null(r->drafter.moe_kind);
    for (size_t i = 0; i < r->drafter.n_moe_candidates; i++)
        mp_strv_push(&out->drafter.moe_candidates, r->drafter.moe_candidates[i]);
    for (size_t i = 0; i < r->n_other; i++)
        mp_resolved_add_sel(out, r->other[i].what, r->other[i].value, r->other[i].line);
    for (size_t i = 0; i < r->n_tallies; i++)
        mp_resolved_add_tally(out, r->tallies[i].name, r->tallies[i].count,
                              r->tallies[i].first_line);
    for (size_t i = 0; i < r->n_fatal_messages; i++)
        mp_strv_push(&out->fatal_messages, r->fatal_messages[i]);
}

void mp_resolved_from_log(struct mp_resolved *out, const struct mp_logresult *r)
{
    memset(out, 0, sizeof(*out));
    out->moe_backend = dup_or_null(r->moe_backend);
    out->linear_kernel = dup_or_null(r->linear_kernel);
    out->attention_backend = dup_or_null(r->attention_backend);
    out->engine_version = dup_or_null(r->engine_version);
    out->model = dup_or_null(r->model);
    out->quantization = dup_or_null(r->quantization);
    out->moe_backend_flag = dup_or_null(r->moe_backend_flag);
    out->unquantized_moe_backend = dup_or_null(r->unquantized_moe_backend);
    for (size_t i = 0; i < r->n_linear_kernels; i++) {
        char *kv = xasprintf("%s=%s", r->linear_kernels[i].method, r->linear_kernels[i].kernel);
        mp_strv_push(&out->linear_kernels, kv);
        free(kv);
    }
    out->moe_backend_line = r->moe_backend_line;
    out->linear_kernel_line = r->linear_kernel_line;
    out->attention_backend_line = r->attention_backend_line;
    out->unknown_env_line = r->unknown_env_line;
    for (size_t i = 0; i < r->n_moe_candidates; i++)
        mp_strv_push(&out->moe_candidates, r->moe_candidates[i]);
    for (size_t i = 0; i < r->n_unknown_env; i++)
        mp_strv_push(&out->unknown_env, r->unknown_env[i]);
    resolved_more_from_log(out, r);
}
