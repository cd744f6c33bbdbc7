/* crash.c - a GPU fault's kernel, Xids and sources in the reports
 * (report/crash.h). One writer for the Markdown and the plain sentences:
 * struct em says how text and code spans are written. */
#include "report/crash.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "escape.h"
#include "logs/gpufault.h"
#include "model/gpufault.h"
#include "xalloc.h"

struct em {
    struct buf *b;
    bool md;
    unsigned flags; /* mp_md_* flags */
};

static void t(struct em *e, const char *s)
{
    if (e->md)
        mp_md_text(e->b, s, 600, e->flags & ~(unsigned)MP_MD_START);
    else
        buf_adds(e->b, s ? s : "");
}

static void tf(struct em *e, const char *fmt, ...) MP_PRINTF(2, 3);
static void tf(struct em *e, const char *fmt, ...)
{
    char tmp[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    t(e, tmp);
}

static void code(struct em *e, const char *s, size_t max)
{
    if (e->md)
        mp_md_code(e->b, s, max, e->flags & ~(unsigned)MP_MD_START);
    else
        buf_add_some(e->b, s ? s : "", s ? MP_MIN(strlen(s), max) : 0);
}

static const char *rel(const struct mp_report *rep, const char *dir)
{
    size_t rl = strlen(rep->run_dir);
    if (dir && !strncmp(dir, rep->run_dir, rl) && dir[rl] == '/')
        return dir + rl + 1;
    return dir ? dir : "";
}

/* the first kernel a hang's dump found the warps in, or NULL */
static const struct mp_kernel_fault *hang_kernel(const struct mp_cand_report *c)
{
    for (size_t j = 0; j < c->nattempts; j++)
        for (size_t i = 0; i < c->attempts[j].fault.nk; i++) {
            const struct mp_kernel_fault *k = &c->attempts[j].fault.k[i];
            if (!k->exception && k->name)
                return k;
        }
    return NULL;
}

/* "in `X` (label)" / "surfaced in `X` (label)" / "warps in `X`" (a hang) */
static bool kernel_note(struct em *e, const struct mp_cand_report *c)
{
    struct mp_cand_kernel ck;
    const struct mp_kernel_fault *hk;
    if (!mp_cand_kernel(c, &ck) && c->verdict == MP_V_HANG && (hk = hang_kernel(c))) {
        t(e, ", warps in ");
        code(e, hk->short_name ? hk->short_name : hk->name, 160);
        if (hk->family_label) {
            t(e, " (");
            t(e, hk->family_label);
            t(e, ")");
        }
        return true;
    }
    if (!ck.k)
        return false;
    const struct mp_kernel_fault *k = ck.k;
    t(e, ck.surfaced_only ? ", surfaced in " : " in ");
    code(e, k->short_name ? k->short_name : k->name, 160);
    if (k->family_label) {
        t(e, " (");
        t(e, k->family_label);
        t(e, ")");
    }
    return true;
}

char *mp_rep_kernel_note(const struct mp_cand_report *c)
{
    struct buf b = BUF_INIT;
    struct em e = {&b, false, 0};
    if (!kernel_note(&e, c)) {
        buf_release(&b);
        return NULL;
    }
    /* without the verdict before it: "surfaced in ...", "in ..." */
    char *s = buf_detach(&b, NULL);
    size_t skip = strspn(s, ", ");
    memmove(s, s + skip, strlen(s + skip) + 1);
    return s;
}

void mp_rep_kernel_note_md(struct buf *out, const struct mp_cand_report *c, unsigned md_flags)
{
    struct em e = {out, true, md_flags};
    kernel_note(&e, c);
}

/* ---- report.json ---- */

void mp_rep_crash_json(cJSON *crash, const struct mp_report *rep, const struct mp_cand_report *c)
{
    struct mp_cand_kernel ck;
    if (mp_cand_kernel(c, &ck)) {
        cJSON *k = mp_kernel_fault_to_json(ck.k, rel(rep, ck.a->dir));
        cJSON_AddBoolToObject(k, "surfaced_only", ck.surfaced_only);
        cJSON_AddStringToObject(k, "attempt", rel(rep, ck.a->dir));
        cJSON_AddItemToObject(crash, "kernel", k);
    } else {
        cJSON_AddNullToObject(crash, "kernel");
    }
    cJSON *xs = cJSON_AddArrayToObject(crash, "xid");
    for (size_t j = 0; j < c->nattempts; j++) {
        const struct mp_attempt_result *a = &c->attempts[j];
        for (size_t i = 0; i < a->fault.nx; i++) {
            cJSON *x = mp_xid_record_to_json(&a->fault.x[i]);
            cJSON_AddStringToObject(x, "attempt", rel(rep, a->dir));
            cJSON_AddItemToArray(xs, x);
        }
    }
}

cJSON *mp_rep_attempt_fault_json(const struct mp_report *rep, const struct mp_attempt_result *a)
{
    if (mp_gpu_fault_empty(&a->fault))
        return cJSON_CreateNull();
    return mp_gpu_fault_to_json(&a->fault, rel(rep, a->dir));
}

/* ---- the details ---- */

static void kernel_line(struct em *e, const struct mp_report *rep, const struct mp_cand_kernel *ck)
{
    const struct mp_kernel_fault *k = ck->k;
    t(e, ck->surfaced_only ? "the fault surfaced in kernel " : "faulting kernel ");
    code(e, k->name, 400);
    if (k->family_label)
        tf(e, " (%s)", k->family_label);
    else
        t(e, " (family not in data/gpufault.json)");
    tf(e, ": %s", k->exception ? k->exception : "no exception");
    if (k->device >= 0)
        tf(e, " on device %d", k->device);
    if (k->sm >= 0)
        tf(e, ", SM %d", k->sm);
    if (k->warp >= 0)
        tf(e, ", warp %d", k->warp);
    if (k->has_pc)
        tf(e, ", PC 0x%llx", k->pc);
    if (k->pid > 0)
        tf(e, ", process %ld", k->pid);
    tf(e, "; named by the GPU core dump of %s", rel(rep, ck->a->dir));
    if (k->line > 0)
        tf(e, "/server.log:%ld", k->line);
    if (k->mangled && k->demangled)
        t(e, " (demangled by moeprobe)");
    if (ck->surfaced_only)
        t(e, ". This run was not launch-blocking: the kernel that faults is where an "
             "asynchronous fault surfaces, which for a race is not necessarily its cause "
             "(another kernel may have written what it read)");
    else
        t(e, ". With CUDA_LAUNCH_BLOCKING=1 every launch completes before the next: the "
             "faulting kernel is the one that faulted");
    if (k->dump_file)
        tf(e, "; dump file %s", k->dump_state ? k->dump_state : "written");
}

/* one attempt's Xids in one sentence: "Xid 13 (Graphics Engine Exception,
 * application) x2 and Xid 31 (...) x2 through the kernel log and NVML, the
 * first naming a process quoted" */
static void xid_summary(struct em *e, const struct mp_report *rep, const struct mp_attempt_result *a)
{
    const struct mp_gpu_fault *g = &a->fault;
    int seen[16];
    size_t nseen = 0;
    const struct mp_xid_record *quote = NULL;
    tf(e, "%s: the driver reported ", rel(rep, a->dir));
    for (size_t i = 0; i < g->nx; i++) {
        const struct mp_xid_record *x = &g->x[i];
        bool dup = false;
        for (size_t k = 0; k < nseen; k++)
            dup = dup || seen[k] == x->xid;
        /* quoted: the first kernel-log line naming a process, else the first */
        bool kl = x->source && !strcmp(x->source, "kmsg");
        if (kl && (!quote || (x->pid > 0 && quote->pid <= 0)))
            quote = x;
        if (dup || nseen >= MP_ARRAY_SIZE(seen))
            continue;
        seen[nseen++] = x->xid;
        size_t kmsg = 0, nvml = 0;
        for (size_t j = i; j < g->nx; j++) {
            if (g->x[j].xid != x->xid)
                continue;
            kmsg += g->x[j].source && !strcmp(g->x[j].source, "kmsg");
            nvml += g->x[j].source && !strcmp(g->x[j].source, "nvml");
        }
        struct mp_xid_info info;
        mp_gf_xid(x->xid, &info);
        tf(e, "%sXid %d (%s, %s", nseen > 1 ? "; " : "", x->xid,
           info.meaning ? info.meaning : "not in the catalog", x->cause ? x->cause : "unknown");
        if (kmsg)
            tf(e, "; kernel log x%zu", kmsg);
        if (nvml)
            tf(e, "; NVML event x%zu", nvml);
        if (x->t_s >= 0)
            tf(e, "; %.1f s in", x->t_s);
        t(e, ")");
    }
    if (quote && quote->evidence) {
        t(e, ": ");
        code(e, quote->evidence, 300);
    }
}

static bool failed(const struct mp_attempt_result *a)
{
    return a->outcome == MP_OUT_CRASH || a->outcome == MP_OUT_HANG;
}

/* The details' sentences: a Markdown list item each, or a plain string each. */
struct out_lines {
    bool md;
    struct buf *mdout;
    struct mp_strv *plain;
    struct buf b;
    struct em e;
};

static void line_begin(struct out_lines *l)
{
    if (l->md)
        buf_adds(l->mdout, "- ");
    else
        buf_reset(&l->b);
}

static void line_end(struct out_lines *l)
{
    if (l->md)
        buf_adds(l->mdout, "\n");
    else
        mp_strv_push(l->plain, l->b.data);
}

/* what is said once for all runs: the first run's reason (the others' are alike) */
struct summary {
    size_t dumps_on, dumps_off, nkmsg, nnvml;
    const char *kmsg_why, *nvml_why, *off_why, *on_how;
    bool any_failed;
};

static void attempt_lines(struct out_lines *l, const struct mp_report *rep,
                          const struct mp_attempt_result *a, struct summary *sm)
{
    const struct mp_gpu_fault *g = &a->fault;
    struct em *e = &l->e;
    if (g->nx) {
        line_begin(l);
        xid_summary(e, rep, a);
        line_end(l);
    }
    if (g->other_xids && failed(a)) {
        line_begin(l);
        tf(e, "%u kernel-log Xid line(s) during %s named another process or GPU (not counted)",
           g->other_xids, rel(rep, a->dir));
        line_end(l);
    }
    const char *both[][2] = {{g->hang, ""}, {g->hang_dump, "GPU core dump on the hang: "}};
    for (size_t i = 0; i < MP_ARRAY_SIZE(both); i++) {
        if (!both[i][0])
            continue;
        line_begin(l);
        tf(e, "%s: %s", rel(rep, a->dir), both[i][1]);
        t(e, both[i][0]);
        line_end(l);
    }
    sm->any_failed = sm->any_failed || failed(a);
    if (failed(a) && g->kmsg && !sm->nkmsg++)
        sm->kmsg_why = g->kmsg;
    if (failed(a) && g->nvml && !sm->nnvml++)
        sm->nvml_why = g->nvml;
    if (g->coredump && !strncmp(g->coredump, "on", 2)) {
        sm->dumps_on++;
        const char *comma = strrchr(g->coredump, ',');
        sm->on_how = comma ? comma + 2 : NULL; /* "deleted after parsing" / "kept" */
    } else if (g->coredump) {
        sm->dumps_off++;
        const char *colon = strstr(g->coredump, ": ");
        sm->off_why = colon ? colon + 2 : g->coredump;
    }
}

static void summary_lines(struct out_lines *l, const struct summary *sm)
{
    struct em *e = &l->e;
    if (sm->kmsg_why) {
        line_begin(l);
        t(e, sm->kmsg_why);
        tf(e, " (%zu failed run(s))", sm->nkmsg);
        line_end(l);
    }
    if (sm->nvml_why) {
        line_begin(l);
        t(e, "NVML Xid events: ");
        t(e, sm->nvml_why);
        tf(e, " (%zu failed run(s))", sm->nnvml);
        line_end(l);
    }
    if (!sm->any_failed || !(sm->dumps_on || sm->dumps_off))
        return;
    line_begin(l);
    tf(e, "GPU core dump on exception: in %zu run(s)", sm->dumps_on);
    if (sm->on_how)
        tf(e, " (%s)", sm->on_how);
    tf(e, ", not in %zu", sm->dumps_off);
    if (sm->off_why)
        tf(e, " (%.*s)", (int)strcspn(sm->off_why, ";"), sm->off_why);
    line_end(l);
}

static void details(const struct mp_report *rep, const struct mp_cand_report *c, bool md,
                    struct buf *mdout, struct mp_strv *plain)
{
    struct out_lines l = {md, mdout, plain, BUF_INIT, {NULL, md, 0}};
    l.e.b = md ? mdout : &l.b;
    struct mp_cand_kernel ck;
    if (mp_cand_kernel(c, &ck)) {
        line_begin(&l);
        kernel_line(&l.e, rep, &ck);
        line_end(&l);
    }
    struct summary sm;
    memset(&sm, 0, sizeof(sm));
    for (size_t j = 0; j < c->nattempts; j++)
        attempt_lines(&l, rep, &c->attempts[j], &sm);
    summary_lines(&l, &sm);
    buf_release(&l.b);
}

void mp_rep_crash_details_md(struct buf *out, const struct mp_report *rep,
                             const struct mp_cand_report *c)
{
    details(rep, c, true, out, NULL);
}

void mp_rep_crash_details_text(struct mp_strv *out, const struct mp_report *rep,
                               const struct mp_cand_report *c)
{
    details(rep, c, false, NULL, out);
}
