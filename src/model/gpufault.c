/* gpufault.c - the GPU-fault record of an attempt (model/gpufault.h). */
#include "model/gpufault.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/report.h"
#include "xalloc.h"

static char *dup(const char *s)
{
    return s ? xstrdup(s) : NULL;
}

static void kernel_release(struct mp_kernel_fault *k)
{
    free(k->name);
    free(k->mangled);
    free(k->short_name);
    free(k->family);
    free(k->family_label);
    free(k->exception);
    free(k->crash_class);
    free(k->dump_file);
    free(k->dump_state);
}

static void xid_release(struct mp_xid_record *x)
{
    free(x->source);
    free(x->process);
    free(x->pci);
    free(x->detail);
    free(x->cause);
    free(x->evidence);
}

void mp_gpu_fault_release(struct mp_gpu_fault *g)
{
    for (size_t i = 0; i < g->nk; i++)
        kernel_release(&g->k[i]);
    for (size_t i = 0; i < g->nx; i++)
        xid_release(&g->x[i]);
    free(g->k);
    free(g->x);
    free(g->coredump);
    free(g->kmsg);
    free(g->nvml);
    free(g->hang);
    free(g->hang_dump);
    memset(g, 0, sizeof(*g));
}

bool mp_gpu_fault_empty(const struct mp_gpu_fault *g)
{
    return !g->nk && !g->nx && !g->coredump && !g->kmsg && !g->nvml && !g->hang &&
           !g->hang_dump && !g->other_xids;
}

struct mp_kernel_fault *mp_gpu_fault_add_kernel(struct mp_gpu_fault *g,
                                                const struct mp_kernel_fault *k)
{
    g->k = xreallocarray(g->k, g->nk + 1, sizeof(*g->k));
    struct mp_kernel_fault *n = &g->k[g->nk++];
    *n = *k;
    n->name = dup(k->name);
    n->mangled = dup(k->mangled);
    n->short_name = dup(k->short_name);
    n->family = dup(k->family);
    n->family_label = dup(k->family_label);
    n->exception = dup(k->exception);
    n->crash_class = dup(k->crash_class);
    n->dump_file = dup(k->dump_file);
    n->dump_state = dup(k->dump_state);
    return n;
}

struct mp_xid_record *mp_gpu_fault_add_xid(struct mp_gpu_fault *g, const struct mp_xid_record *x)
{
    g->x = xreallocarray(g->x, g->nx + 1, sizeof(*g->x));
    struct mp_xid_record *n = &g->x[g->nx++];
    *n = *x;
    n->source = dup(x->source);
    n->process = dup(x->process);
    n->pci = dup(x->pci);
    n->detail = dup(x->detail);
    n->cause = dup(x->cause);
    n->evidence = dup(x->evidence);
    return n;
}

const struct mp_kernel_fault *mp_gpu_fault_exception(const struct mp_gpu_fault *g)
{
    for (size_t i = 0; i < g->nk; i++)
        if (g->k[i].exception)
            return &g->k[i];
    return NULL;
}

const struct mp_xid_record *mp_gpu_fault_system_xid(const struct mp_gpu_fault *g)
{
    for (size_t i = 0; i < g->nx; i++)
        if (g->x[i].cause && (!strcmp(g->x[i].cause, "hardware") || !strcmp(g->x[i].cause, "driver")))
            return &g->x[i];
    return NULL;
}

bool mp_cand_kernel(const struct mp_cand_report *c, struct mp_cand_kernel *out)
{
    memset(out, 0, sizeof(*out));
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < c->nattempts; i++) {
            const struct mp_attempt_result *a = &c->attempts[i];
            const struct mp_kernel_fault *k = mp_gpu_fault_exception(&a->fault);
            if (!k || a->launch_blocking != (pass == 0))
                continue;
            out->k = k;
            out->a = a;
            out->surfaced_only = !a->launch_blocking;
            return true;
        }
    }
    return false;
}

/* ---- JSON ---- */

static cJSON *jstr(const char *s)
{
    return s ? cJSON_CreateString(s) : cJSON_CreateNull();
}

static cJSON *jint(long v, bool known)
{
    return known ? cJSON_CreateNumber((double)v) : cJSON_CreateNull();
}

cJSON *mp_kernel_fault_to_json(const struct mp_kernel_fault *k, const char *dir)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "name", jstr(k->name));
    cJSON_AddItemToObject(o, "mangled", jstr(k->mangled));
    cJSON_AddBoolToObject(o, "demangled", k->demangled);
    cJSON_AddItemToObject(o, "short", jstr(k->short_name));
    cJSON_AddItemToObject(o, "family", jstr(k->family));
    cJSON_AddItemToObject(o, "family_label", jstr(k->family_label));
    cJSON_AddItemToObject(o, "exception", jstr(k->exception));
    cJSON_AddItemToObject(o, "class", jstr(k->crash_class));
    cJSON_AddItemToObject(o, "device", jint(k->device, k->device >= 0));
    cJSON_AddItemToObject(o, "sm", jint(k->sm, k->sm >= 0));
    cJSON_AddItemToObject(o, "warp", jint(k->warp, k->warp >= 0));
    char pc[32];
    snprintf(pc, sizeof(pc), "0x%llx", k->pc);
    cJSON_AddItemToObject(o, "pc", jstr(k->has_pc ? pc : NULL));
    cJSON_AddItemToObject(o, "pid", jint(k->pid, k->pid > 0));
    cJSON_AddItemToObject(o, "line", jint(k->line, k->line > 0));
    if (k->line > 0) {
        char ev[4200];
        snprintf(ev, sizeof(ev), "%s%sserver.log:%ld", dir ? dir : "", dir ? "/" : "", k->line);
        cJSON_AddStringToObject(o, "evidence", ev);
    } else {
        cJSON_AddNullToObject(o, "evidence");
    }
    cJSON *d = cJSON_AddObjectToObject(o, "dump");
    cJSON_AddItemToObject(d, "file", jstr(k->dump_file));
    cJSON_AddItemToObject(d, "state", jstr(k->dump_state));
    return o;
}

cJSON *mp_xid_record_to_json(const struct mp_xid_record *x)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "xid", x->xid);
    cJSON_AddItemToObject(o, "source", jstr(x->source));
    cJSON_AddItemToObject(o, "pid", jint(x->pid, x->pid > 0));
    cJSON_AddItemToObject(o, "process", jstr(x->process));
    cJSON_AddItemToObject(o, "pci", jstr(x->pci));
    cJSON_AddItemToObject(o, "detail", jstr(x->detail));
    cJSON_AddItemToObject(o, "cause", jstr(x->cause));
    cJSON_AddItemToObject(o, "t_s", x->t_s >= 0 ? cJSON_CreateNumber(x->t_s) : cJSON_CreateNull());
    cJSON_AddItemToObject(o, "evidence", jstr(x->evidence));
    return o;
}

cJSON *mp_gpu_fault_to_json(const struct mp_gpu_fault *g, const char *dir)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *ks = cJSON_AddArrayToObject(o, "kernels");
    for (size_t i = 0; i < g->nk; i++)
        cJSON_AddItemToArray(ks, mp_kernel_fault_to_json(&g->k[i], dir));
    cJSON *xs = cJSON_AddArrayToObject(o, "xid");
    for (size_t i = 0; i < g->nx; i++)
        cJSON_AddItemToArray(xs, mp_xid_record_to_json(&g->x[i]));
    cJSON_AddItemToObject(o, "coredump", jstr(g->coredump));
    cJSON_AddItemToObject(o, "kernel_log", jstr(g->kmsg));
    cJSON_AddItemToObject(o, "nvml_xid", jstr(g->nvml));
    cJSON_AddItemToObject(o, "hang", jstr(g->hang));
    cJSON_AddItemToObject(o, "hang_dump", jstr(g->hang_dump));
    cJSON_AddNumberToObject(o, "other_xids", g->other_xids);
    return o;
}

static char *get_str(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? xstrdup(v->valuestring) : NULL;
}

static long get_long(const cJSON *o, const char *k, long def)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? (long)v->valuedouble : def;
}

static void kernel_from(struct mp_kernel_fault *k, const cJSON *o)
{
    memset(k, 0, sizeof(*k));
    k->name = get_str(o, "name");
    k->mangled = get_str(o, "mangled");
    k->demangled = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "demangled"));
    k->short_name = get_str(o, "short");
    k->family = get_str(o, "family");
    k->family_label = get_str(o, "family_label");
    k->exception = get_str(o, "exception");
    k->crash_class = get_str(o, "class");
    k->device = (int)get_long(o, "device", -1);
    k->sm = (int)get_long(o, "sm", -1);
    k->warp = (int)get_long(o, "warp", -1);
    char *pc = get_str(o, "pc");
    if (pc) {
        k->pc = strtoull(pc, NULL, 16);
        k->has_pc = true;
        free(pc);
    }
    k->pid = get_long(o, "pid", 0);
    k->line = get_long(o, "line", 0);
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(o, "dump");
    k->dump_file = get_str(d, "file");
    k->dump_state = get_str(d, "state");
}

static void xid_from(struct mp_xid_record *x, const cJSON *o)
{
    memset(x, 0, sizeof(*x));
    x->xid = (int)get_long(o, "xid", 0);
    x->source = get_str(o, "source");
    x->pid = get_long(o, "pid", 0);
    x->process = get_str(o, "process");
    x->pci = get_str(o, "pci");
    x->detail = get_str(o, "detail");
    x->cause = get_str(o, "cause");
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "t_s");
    x->t_s = cJSON_IsNumber(t) ? t->valuedouble : -1;
    x->evidence = get_str(o, "evidence");
}

void mp_gpu_fault_from_json(struct mp_gpu_fault *g, const cJSON *j)
{
    memset(g, 0, sizeof(*g));
    if (!cJSON_IsObject(j))
        return;
    const cJSON *it;
    cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(j, "kernels"))
    {
        struct mp_kernel_fault k;
        kernel_from(&k, it);
        g->k = xreallocarray(g->k, g->nk + 1, sizeof(*g->k));
        g->k[g->nk++] = k;
    }
    cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(j, "xid"))
    {
        struct mp_xid_record x;
        xid_from(&x, it);
        g->x = xreallocarray(g->x, g->nx + 1, sizeof(*g->x));
        g->x[g->nx++] = x;
    }
    g->coredump = get_str(j, "coredump");
    g->kmsg = get_str(j, "kernel_log");
    g->nvml = get_str(j, "nvml_xid");
    g->hang = get_str(j, "hang");
    g->hang_dump = get_str(j, "hang_dump");
    g->other_xids = (unsigned)get_long(j, "other_xids", 0);
}
