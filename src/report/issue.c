/* issue.c - a candidate as a bug report for vLLM or FlashInfer
 * (report/issue.h). */
#include "report/issue.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "escape.h"
#include "knowledge/issues.h"
#include "lines.h"
#include "model/gpufault.h"
#include "report/crash.h"
#include "report/overview.h"
#include "store/store.h"
#include "version.h"
#include "xalloc.h"

#define EXCERPT_LINES 24 /* traceback lines quoted */
#define DUMP_LINES 16    /* core-dump lines quoted */

static const char *rel(const struct mp_report *rep, const char *dir)
{
    size_t rl = strlen(rep->run_dir);
    if (dir && !strncmp(dir, rep->run_dir, rl) && dir[rl] == '/')
        return dir + rl + 1;
    return dir ? dir : "";
}

static int rank(enum mp_verdict v)
{
    switch (v) {
    case MP_V_KERNEL_FAULT:
        return 0;
    case MP_V_ASYNC_RACE:
        return 1;
    case MP_V_CRASHED:
    case MP_V_HANG:
        return 2;
    case MP_V_SERVER_ERROR:
    case MP_V_STARTUP_FAILURE:
    case MP_V_GARBAGE_OUTPUT:
        return 3;
    default:
        return 9;
    }
}

static const struct mp_cand_report *pick(const struct mp_issue_in *in, char *why, size_t whyn)
{
    const struct mp_report *rep = in->rep;
    const struct mp_cand_report *best = NULL;
    for (size_t i = 0; i < rep->n; i++) {
        const struct mp_cand_report *c = &rep->c[i];
        if (in->candidate && !strcmp(c->cand.name, in->candidate))
            return c;
        if (!in->candidate && rank(c->verdict) < 9 && (!best || rank(c->verdict) < rank(best->verdict)))
            best = c;
    }
    if (in->candidate)
        snprintf(why, whyn, "no candidate '%s' in this run", in->candidate);
    else if (!best)
        snprintf(why, whyn, "no candidate of this run failed: nothing to report (--candidate NAME "
                            "picks one anyway)");
    return best;
}

/* a fenced block whose fence no backtick run inside can close */
static void fence(struct buf *out, const char *lang, const char *text)
{
    size_t run = 0, most = 0;
    for (const char *p = text; *p; p++) {
        run = *p == '`' ? run + 1 : 0;
        most = MP_MAX(most, run);
    }
    size_t n = MP_MAX((size_t)3, most + 1);
    for (size_t i = 0; i < n; i++)
        buf_addc(out, '`');
    buf_printf(out, "%s\n", lang);
    char *clean = mp_utf8_clean(text, strlen(text));
    for (const char *p = clean; *p; p++) /* controls but tab and newline as spaces */
        buf_addc(out, (unsigned char)*p < 0x20 && *p != '\n' && *p != '\t' ? ' ' : *p);
    free(clean);
    if (out->len && out->data[out->len - 1] != '\n')
        buf_addc(out, '\n');
    for (size_t i = 0; i < n; i++)
        buf_addc(out, '`');
    buf_adds(out, "\n\n");
}

struct grab {
    long from, to, no;
    const char *needle;   /* only lines with it (NULL: every line in [from, to]) */
    const char *skip;     /* but not lines with this */
    size_t max, n;
    struct buf *b;
};

static void on_line(void *ud, const char *line, size_t len, bool truncated)
{
    struct grab *g = ud;
    MP_UNUSED(truncated);
    g->no++;
    if (g->no < g->from || g->no > g->to || g->n >= g->max)
        return;
    if (g->needle && !memmem(line, len, g->needle, strlen(g->needle)))
        return;
    if (g->skip && memmem(line, len, g->skip, strlen(g->skip)))
        return;
    if (!g->needle && (memmem(line, len, " INFO ", 6) || memmem(line, len, "INFO:", 5)))
        return; /* the traceback, not the access log around it */
    buf_add(g->b, line, MP_MIN(len, (size_t)600));
    buf_addc(g->b, '\n');
    g->n++;
}

/* lines of DIR/server.log (bounded), into b; false when it cannot be read */
static bool log_lines(const char *dir, struct grab *g)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/server.log", dir);
    FILE *f = fopen(path, "re");
    if (!f)
        return false;
    struct mp_lines l;
    mp_lines_init(&l, 8192);
    char chunk[65536];
    size_t got;
    while (g->no <= g->to && (got = fread(chunk, 1, sizeof(chunk), f)) > 0)
        mp_lines_feed(&l, chunk, got, on_line, g);
    mp_lines_finish(&l, on_line, g);
    mp_lines_release(&l);
    fclose(f);
    return true;
}

/* the launch command without moeprobe's instruments (the core-dump
 * variables it adds, CUDA_LAUNCH_BLOCKING=1 of the blocked run; with the
 * -e/--env word before each in a container run), shell-quoted */
static void launch_command(const struct mp_cand_report *c, const struct mp_attempt_result *p,
                           struct buf *out)
{
    static const char *const ours[] = {"CUDA_ENABLE_COREDUMP_ON_EXCEPTION=", "CUDA_COREDUMP_",
                                       "CUDA_ENABLE_USER_TRIGGERED_COREDUMP=",
                                       "CUDA_LAUNCH_BLOCKING="};
    struct mp_strv w = MP_STRV_INIT, keep = MP_STRV_INIT;
    if (!p || !p->command || mp_split_words(p->command, &w, NULL) < 0) {
        buf_adds(out, "(not recorded)");
        mp_strv_release(&w);
        return;
    }
    for (size_t i = 0; i < w.n; i++) {
        bool mine = false;
        for (size_t k = 0; k < MP_ARRAY_SIZE(ours); k++)
            mine = mine || !strncmp(w.v[i], ours[k], strlen(ours[k]));
        if (mine && !mp_strv_has(&c->cand.env, w.v[i])) {
            if (keep.n && (!strcmp(keep.v[keep.n - 1], "-e") || !strcmp(keep.v[keep.n - 1], "--env"))) {
                free(keep.v[--keep.n]);
                keep.v[keep.n] = NULL;
            }
            continue;
        }
        mp_strv_push(&keep, w.v[i]);
    }
    for (size_t i = 0; i < keep.n; i++) {
        if (i)
            buf_addc(out, ' ');
        buf_add_shell_word(out, keep.v[i]);
    }
    mp_strv_release(&keep);
    mp_strv_release(&w);
}

static void environment(const struct mp_report *rep, const struct mp_attempt_result *p,
                        struct buf *out)
{
    const struct mp_fingerprint *fp = &rep->fp;
    buf_adds(out, "#### Environment\n\n| | |\n|---|---|\n");
    const char *rows[][2] = {
        {"vLLM", fp->engine_version ? fp->engine_version : (p ? p->res.engine_version : NULL)},
        {"GPU", fp->gpu},
        {"compute capability", fp->compute_capability},
        {"driver", fp->driver},
        {"CUDA", fp->cuda},
        {"host", fp->host_arch},
        {"model", fp->model},
        {"resolved MoE backend", p ? p->res.moe_backend : NULL},
        {"dense NVFP4 kernel", p ? p->res.linear_kernel : NULL},
        {"attention backend", p ? p->res.attention_backend : NULL},
    };
    for (size_t i = 0; i < MP_ARRAY_SIZE(rows); i++) {
        buf_printf(out, "| %s | ", rows[i][0]);
        mp_md_text(out, rows[i][1] ? rows[i][1] : "unknown", 200, MP_MD_TABLE);
        buf_adds(out, " |\n");
    }
    buf_printf(out, "| found by | moeprobe %s |\n\n", mp_version);
}

/* minimize.json's minimal knob change, as words; NULL when there is none */
static char *minimal_set(const struct mp_report *rep)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/minimize.json", rep->run_dir);
    FILE *f = fopen(path, "re");
    if (!f)
        return NULL;
    char b[65536];
    size_t n = fread(b, 1, sizeof(b) - 1, f);
    fclose(f);
    b[n] = '\0';
    cJSON *j = cJSON_Parse(b);
    cJSON *m = cJSON_GetObjectItemCaseSensitive(j, "minimal"), *it;
    struct buf out = BUF_INIT;
    cJSON_ArrayForEach(it, m)
    {
        if (cJSON_IsString(it))
            buf_printf(&out, "%s%s", out.len ? " " : "", it->valuestring);
    }
    cJSON_Delete(j);
    return out.len ? buf_detach(&out, NULL) : (buf_release(&out), NULL);
}

/* the first failing normal attempt (its traceback), or NULL */
static const struct mp_attempt_result *first_failure(const struct mp_cand_report *c)
{
    for (size_t j = 0; j < c->nattempts; j++) {
        const struct mp_attempt_result *a = &c->attempts[j];
        if (!a->launch_blocking && a->outcome != MP_OUT_CLEAN && a->outcome != MP_OUT_SAME_CONFIG &&
            a->outcome != MP_OUT_RESOLVED)
            return a;
    }
    return mp_cand_primary(c);
}

static void blocking_result(const struct mp_cand_report *c, struct buf *out)
{
    size_t runs = 0, crashed = 0;
    struct buf after = BUF_INIT;
    for (size_t j = 0; j < c->nattempts; j++) {
        const struct mp_attempt_result *a = &c->attempts[j];
        if (a->launch_blocking)
            continue;
        runs++;
        if (a->outcome == MP_OUT_CRASH) {
            crashed++;
            buf_printf(&after, "%s%lu", after.len ? ", " : "", a->ok_before_failure);
        }
    }
    const struct mp_diagnosis *d = &c->diag;
    buf_printf(out, "- normal mode: %zu of %zu run(s) crashed", crashed, runs);
    if (after.len)
        buf_printf(out, ", after %s request(s)", after.data);
    buf_adds(out, "\n");
    buf_release(&after);
    if (!d->done || !d->launch_blocking) {
        buf_adds(out, "- with `CUDA_LAUNCH_BLOCKING=1`: not run");
        if (d->note) {
            buf_adds(out, " (");
            mp_md_text(out, d->note, 400, 0);
            buf_adds(out, ")");
        }
        buf_adds(out, "\n");
        return;
    }
    if (d->launch_blocking == MP_LB_CRASHED)
        buf_printf(out, "- with `CUDA_LAUNCH_BLOCKING=1`: crashed too, after %lu request(s)",
                   d->requests_clean);
    else
        buf_printf(out, "- with `CUDA_LAUNCH_BLOCKING=1`: clean, %lu request(s) (%lu required "
                        "for 95 %% confidence that the race, not a kernel, failed)",
                   d->requests_clean, d->requests_required);
    if (d->throughput_ratio > 0)
        buf_printf(out, "; blocked/normal throughput %.2fx", d->throughput_ratio);
    if (d->pinned_site) {
        buf_adds(out, "; pinned at ");
        mp_md_code(out, d->pinned_site, 300, 0);
    }
    buf_adds(out, "\n");
}

static void what_happened(const struct mp_report *rep, const struct mp_cand_report *c,
                          struct buf *out)
{
    buf_adds(out, "#### What happened\n\n- verdict: **");
    mp_md_text(out, mp_cand_verdict_label(c), 40, 0);
    buf_adds(out, "**");
    mp_rep_kernel_note_md(out, c, 0);
    buf_adds(out, ": ");
    mp_md_text(out, c->why, 1000, 0);
    buf_adds(out, "\n");
    blocking_result(c, out);
    mp_rep_crash_details_md(out, rep, c); /* the kernel, the Xids, the sources */
    buf_adds(out, "\n");
}

static void evidence(const struct mp_report *rep, const struct mp_cand_report *c,
                     struct buf *out)
{
    const struct mp_attempt_result *f = first_failure(c);
    struct buf b = BUF_INIT;
    if (f && f->fail_line > 0) {
        struct grab g = {.from = MP_MAX(1, f->fail_line - EXCERPT_LINES + 3), .to = f->fail_line + 2,
                         .max = EXCERPT_LINES, .b = &b};
        buf_printf(out, "#### The engine's own words (`%s/server.log`, lines %ld-%ld)\n\n",
                   rel(rep, f->dir), g.from, g.to);
        if (log_lines(f->dir, &g))
            fence(out, "text", b.data);
        else
            buf_adds(out, "(server.log is not in the run directory)\n\n");
    }
    struct mp_cand_kernel ck;
    if (mp_cand_kernel(c, &ck)) {
        buf_reset(&b);
        struct grab g = {.from = 1, .to = 1L << 40, .needle = "coredump:",
                         .skip = "has finished state collection", .max = DUMP_LINES, .b = &b};
        buf_printf(out, "#### The GPU core dump (`%s/server.log`)\n\n", rel(rep, ck.a->dir));
        if (log_lines(ck.a->dir, &g) && b.len)
            fence(out, "text", b.data);
    }
    buf_reset(&b);
    size_t nk = 0, shown = 0;
    const char *first_dir = NULL;
    for (size_t j = 0; j < c->nattempts; j++)
        for (size_t i = 0; i < c->attempts[j].fault.nx; i++) {
            const struct mp_xid_record *x = &c->attempts[j].fault.x[i];
            if (!x->source || strcmp(x->source, "kmsg") || !x->evidence)
                continue;
            nk++;
            if (!first_dir)
                first_dir = c->attempts[j].dir;
            if (c->attempts[j].dir == first_dir && shown < 8) { /* one run's lines */
                buf_printf(&b, "%s\n", x->evidence);
                shown++;
            }
        }
    if (b.len) {
        buf_printf(out, "#### The kernel log (`NVRM: Xid` lines of `%s`; %zu such line(s) in "
                        "all the runs)\n\n", rel(rep, first_dir), nk);
        fence(out, "text", b.data);
    }
    buf_release(&b);
}

static void known_issues(const struct mp_issue_in *in, const struct mp_cand_report *c,
                         struct buf *out)
{
    const struct mp_attempt_result *f = first_failure(c);
    if (!in->kn || !f)
        return;
    struct mp_strv kernels = MP_STRV_INIT;
    const struct { const char *area, *v; } ks[] = {
        {"moe", f->res.moe_backend}, {"linear", f->res.linear_kernel},
        {"attention", f->res.attention_backend}};
    for (size_t i = 0; i < MP_ARRAY_SIZE(ks); i++)
        if (ks[i].v)
            mp_strv_push_owned(&kernels, xasprintf("%s:%s", ks[i].area, ks[i].v));
    struct mp_cand_kernel ck;
    if (mp_cand_kernel(c, &ck) && ck.k->name)
        mp_strv_push_owned(&kernels, xasprintf("cuda-kernel:%s", ck.k->name));
    const char *msgs[1] = {f->fail_message};
    char dev[16];
    struct mp_ki_facts facts = {
        .crash_class = f->fail_class, .messages = msgs, .nmessages = f->fail_message ? 1 : 0,
        .kernels = (const char *const *)kernels.v, .nkernels = kernels.n,
        .device = mp_ki_device(in->rep->fp.compute_capability, dev, sizeof(dev)),
        .engine_version = in->rep->fp.engine_version ? in->rep->fp.engine_version
                                                     : f->res.engine_version,
    };
    struct mp_ki_hits hits;
    mp_ki_match(in->kn, &facts, &hits);
    if (hits.n) {
        buf_adds(out, "#### Known issues it resembles\n\n");
        for (size_t i = 0; i < hits.n; i++) {
            struct buf line = BUF_INIT;
            mp_ki_hit_line(&hits.v[i], &line);
            buf_adds(out, "- ");
            mp_md_text(out, line.data, 600, 0);
            buf_adds(out, "\n");
            buf_release(&line);
        }
        buf_adds(out, "\n");
    }
    mp_ki_hits_release(&hits);
    mp_strv_release(&kernels);
}

static void reproducer(const struct mp_issue_in *in, const struct mp_cand_report *c,
                       const struct mp_attempt_result *p, struct buf *out)
{
    struct buf cmd = BUF_INIT;
    char *knobs = mp_candidate_knobs_str(&c->cand);
    char *spec = xasprintf("%s: %s", c->cand.name, knobs);
    buf_adds(&cmd, "moeprobe diagnose --candidate ");
    buf_add_shell_word(&cmd, spec);
    buf_adds(&cmd, " --");
    size_t dd = in->argv ? in->argv->n : 0;
    for (size_t i = 0; in->argv && i < in->argv->n; i++)
        if (!strcmp(in->argv->v[i], "--")) {
            dd = i + 1;
            break;
        }
    if (in->argv && dd < in->argv->n) {
        for (size_t i = dd; i < in->argv->n; i++) {
            buf_addc(&cmd, ' ');
            buf_add_shell_word(&cmd, in->argv->v[i]);
        }
    } else {
        buf_addc(&cmd, ' ');
        launch_command(c, p, &cmd); /* the server command as it ran */
    }
    buf_adds(out, "#### Reproduce\n\nmoeprobe reruns the candidate, drives the same load, and "
                  "repeats the crash with `CUDA_LAUNCH_BLOCKING=1` and a GPU core dump:\n\n");
    fence(out, "sh", cmd.data);
    buf_release(&cmd);
    free(spec);
    free(knobs);
}

static void render(const struct mp_issue_in *in, const struct mp_cand_report *c, struct buf *out)
{
    const struct mp_report *rep = in->rep;
    const struct mp_attempt_result *p = mp_cand_primary(c);
    buf_adds(out, "### ");
    mp_md_text(out, p && p->res.moe_backend ? p->res.moe_backend : c->cand.name, 80, 0);
    buf_adds(out, ": ");
    mp_md_text(out, mp_cand_verdict_label(c), 40, 0);
    mp_rep_kernel_note_md(out, c, 0);
    if (rep->fp.gpu) {
        buf_adds(out, " on ");
        mp_md_text(out, rep->fp.gpu, 120, 0);
    }
    buf_printf(out, "\n\n<!-- written by moeprobe %s (report --format issue) from candidate ",
               mp_version);
    mp_md_text(out, c->cand.name, 64, 0);
    buf_adds(out, "; secrets masked -->\n\n");
    environment(rep, p, out);
    buf_adds(out, "#### Launch command\n\n");
    struct buf cmd = BUF_INIT;
    launch_command(c, p, &cmd);
    fence(out, "sh", cmd.data);
    buf_release(&cmd);
    char *knobs = mp_candidate_knobs_str(&c->cand), *min = minimal_set(rep);
    buf_adds(out, "The candidate's knobs: ");
    mp_md_code(out, knobs[0] ? knobs : "(none)", 400, 0);
    if (min) {
        buf_adds(out, "; the minimal knob change `moeprobe minimize` found: ");
        mp_md_code(out, min, 400, 0);
    }
    buf_adds(out, ".\n\n");
    /* what the engine got from the shell beyond the command (#29): an
     * exported VLLM_* that acts on a selection is part of the report */
    mp_rep_inherited_md(rep, out);
    free(knobs);
    free(min);
    what_happened(rep, c, out);
    evidence(rep, c, out);
    known_issues(in, c, out);
    reproducer(in, c, p, out);
}

int mp_report_issue(const struct mp_issue_in *in, struct buf *out, char *why, size_t whyn)
{
    const struct mp_cand_report *c = pick(in, why, whyn);
    if (!c)
        return MP_EUSAGE;
    struct buf raw = BUF_INIT;
    render(in, c, &raw);
    /* every secret the run knows, and NAME=VALUE words of secret names */
    struct mp_store_mask m;
    memset(&m, 0, sizeof(m));
    mp_store_mask_merge(&m, mp_store_mask_process());
    mp_store_mask_add_cands(&m, &c->cand, 1);
    size_t n = 0;
    char *masked = mp_store_mask_apply_ex(&m, raw.data, raw.len, MP_MASK_WORDS, NULL, &n);
    buf_add(out, masked, n);
    free(masked);
    mp_store_mask_release(&m);
    buf_release(&raw);
    return 0;
}
