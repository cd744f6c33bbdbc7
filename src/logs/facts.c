/* facts.c - a scanned log as known-issue facts (logscan.h,
 * knowledge/issues.h): the crash, the fatal messages, every resolved kernel
 * as "AREA:NAME", the findings, the device and the version. */
#include "compat.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "knowledge/issues.h"
#include "logs/logscan.h"
#include "strv.h"
#include "xalloc.h"

static void moe_kernels(const struct mp_logresult *r, struct mp_strv *k)
{
    mp_ki_kernel(k, "moe", r->moe_backend);
    if (r->moe_kind) {
        char *area = xasprintf("%s moe", r->moe_kind);
        mp_ki_kernel(k, area, r->moe_backend);
        free(area);
    }
    mp_ki_kernel(k, "unquantized-moe", r->unquantized_moe_backend);
    mp_ki_kernel(k, "drafter-moe", r->drafter.moe_backend);
    if (r->moe_backend_flag) {
        char *f = xstrdup(r->moe_backend_flag);
        for (char *p = f; *p; p++)
            *p = *p == '-' ? '_' : (char)tolower((unsigned char)*p);
        mp_ki_kernel(k, "flag", f);
        free(f);
    }
}

void mp_logresult_facts(const struct mp_logresult *r, struct mp_ki_facts *f, struct mp_strv *k,
                        struct mp_strv *msgs, struct mp_strv *codes)
{
    memset(f, 0, sizeof(*f));
    moe_kernels(r, k);
    mp_ki_kernel(k, "linear", r->linear_kernel);
    for (size_t i = 0; i < r->n_linear_kernels; i++)
        mp_ki_kernel(k, r->linear_kernels[i].method, r->linear_kernels[i].kernel);
    mp_ki_kernel(k, "attention", r->attention_backend);
    for (size_t i = 0; i < r->n_other; i++)
        mp_ki_kernel(k, r->other[i].what, r->other[i].value);
    if (r->has_crash && r->crash.message)
        mp_strv_push(msgs, r->crash.message);
    for (size_t i = 0; i < r->n_fatal_messages; i++)
        if (!mp_strv_has(msgs, r->fatal_messages[i]))
            mp_strv_push(msgs, r->fatal_messages[i]);
    if (r->startup_error && !mp_strv_has(msgs, r->startup_error))
        mp_strv_push(msgs, r->startup_error);
    for (size_t i = 0; i < r->nfindings; i++)
        if (!mp_strv_has(codes, r->findings[i].code))
            mp_strv_push(codes, r->findings[i].code);
    f->crash_class = r->has_crash ? r->crash.cls : NULL;
    f->messages = (const char *const *)msgs->v;
    f->nmessages = msgs->n;
    f->kernels = (const char *const *)k->v;
    f->nkernels = k->n;
    f->findings = (const char *const *)codes->v;
    f->nfindings = codes->n;
    f->device = r->device;
    f->engine_version = r->engine_version;
}
