/* crash.c - a GPU fault's kernel, Xids and sources in the reports
 * (report/crash.h). One writer for the Markdown and the plain sentences:
 * struct em says how text and code spans are written. */
#include "report/crash.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "escape.h"
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

/* "in `X` (label)" / "surfaced in `X` (label)" */
static bool kernel_note(struct em *e, const struct mp_cand_report *c)
{
    struct mp_cand_kernel ck;
    if (!mp_cand_kernel(c, &ck))
        return false;
    const struct mp_kernel_fault *k = ck.k;
    t(e, ck.surfaced_only ? "surfaced in " : "in ");
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
    return buf_detach(&b, NULL);
}

void mp_rep_kernel_note_md(struct buf *out, const struct mp_cand_report *c, unsigned md_flags)
{
    struct mp_cand_kernel ck;
    if (!mp_cand_kernel(c, &ck))
        return;
    struct em e = {out, true, md_flags};
    buf_addc(out, ' ');
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
    code(e, k->name, 600);
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

static void xid_line(struct em *e, const struct mp_report *rep, const struct mp_attempt_result *a,
                     const struct mp_xid_record *x)
{
    tf(e, "the driver reported Xid %d", x->xid);
    if (x->detail) {
        t(e, " (");
        t(e, x->detail);
        t(e, ")");
    }
    tf(e, ", cause %s, through %s", x->cause ? x->cause : "unknown",
       x->source && !strcmp(x->source, "kmsg") ? "the kernel log" : "an NVML event");
    if (x->pid > 0)
        tf(e, ", process %ld", x->pid);
    if (x->process)
        tf(e, " (%s)", x->process);
    if (x->t_s >= 0)
        tf(e, ", %.1f s into %s", x->t_s, rel(rep, a->dir));
    else
        tf(e, ", in %s", rel(rep, a->dir));
    if (x->evidence && x->source && !strcmp(x->source, "kmsg")) {
        t(e, ": ");
        code(e, x->evidence, 300);
    }
}

static bool failed(const struct mp_attempt_result *a)
{
    return a->outcome == MP_OUT_CRASH || a->outcome == MP_OUT_HANG;
}

static void details(const struct mp_report *rep, const struct mp_cand_report *c, bool md,
                    struct buf *mdout, struct mp_strv *plain)
{
    struct buf b = BUF_INIT;
    struct em e = {md ? mdout : &b, md, 0};
#define LINE_BEGIN() (md ? (void)buf_adds(mdout, "- ") : (void)buf_reset(&b))
#define LINE_END() (md ? (void)buf_adds(mdout, "\n") : mp_strv_push(plain, b.data))
    struct mp_cand_kernel ck;
    if (mp_cand_kernel(c, &ck)) {
        LINE_BEGIN();
        kernel_line(&e, rep, &ck);
        LINE_END();
    }
    size_t dumps_on = 0, dumps_off = 0;
    const char *off_why = NULL, *on_how = NULL;
    for (size_t j = 0; j < c->nattempts; j++) {
        const struct mp_attempt_result *a = &c->attempts[j];
        const struct mp_gpu_fault *g = &a->fault;
        for (size_t i = 0; i < g->nx; i++) {
            LINE_BEGIN();
            xid_line(&e, rep, a, &g->x[i]);
            LINE_END();
        }
        if (g->other_xids && failed(a)) {
            LINE_BEGIN();
            tf(&e, "%u kernel-log Xid line(s) during %s named another process (not counted)",
               g->other_xids, rel(rep, a->dir));
            LINE_END();
        }
        if (failed(a) && g->kmsg) {
            LINE_BEGIN();
            tf(&e, "%s: ", rel(rep, a->dir));
            t(&e, g->kmsg);
            LINE_END();
        }
        if (failed(a) && g->nvml) {
            LINE_BEGIN();
            tf(&e, "%s: NVML Xid events: ", rel(rep, a->dir));
            t(&e, g->nvml);
            LINE_END();
        }
        if (g->hang) {
            LINE_BEGIN();
            tf(&e, "%s: ", rel(rep, a->dir));
            t(&e, g->hang);
            LINE_END();
        }
        if (g->hang_dump) {
            LINE_BEGIN();
            tf(&e, "%s: GPU core dump on the hang: ", rel(rep, a->dir));
            t(&e, g->hang_dump);
            LINE_END();
        }
        if (g->coredump && !strncmp(g->coredump, "on", 2)) {
            dumps_on++;
            on_how = g->coredump;
        } else if (g->coredump) {
            dumps_off++;
            off_why = g->coredump;
        }
    }
    bool any_failed = false;
    for (size_t j = 0; j < c->nattempts; j++)
        any_failed = any_failed || failed(&c->attempts[j]);
    if (any_failed && (dumps_on || dumps_off)) {
        LINE_BEGIN();
        tf(&e, "GPU core dumps: %zu run(s) with, %zu without", dumps_on, dumps_off);
        if (off_why) {
            t(&e, " (");
            t(&e, off_why);
            t(&e, ")");
        }
        if (on_how) {
            t(&e, "; ");
            t(&e, on_how);
        }
        LINE_END();
    }
#undef LINE_BEGIN
#undef LINE_END
    buf_release(&b);
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
