/* resolved.c - report.json's `resolved` and `known_issues` of a candidate
 * and their sentences for report.md/html (report/resolved.h). */
#include "report/resolved.h"

#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "knowledge/knowledge.h"
#include "xalloc.h"

static cJSON *jstr(const char *s)
{
    return s ? cJSON_CreateString(s) : cJSON_CreateNull();
}

static cJSON *jstrv(const struct mp_strv *s)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; i < s->n; i++)
        cJSON_AddItemToArray(a, cJSON_CreateString(s->v[i]));
    return a;
}

/* "attempts/X-1/server.log:N" (the attempt's directory relative to the
 * run's), or NULL for line 0. Caller frees. */
static char *evidence(const struct mp_report *rep, const struct mp_attempt_result *a, long line)
{
    if (!a || line <= 0 || !a->dir)
        return NULL;
    const char *dir = a->dir;
    size_t rl = rep->run_dir ? strlen(rep->run_dir) : 0;
    if (rl && !strncmp(dir, rep->run_dir, rl) && dir[rl] == '/')
        dir += rl + 1;
    return xasprintf("%s/server.log:%ld", dir, line);
}

static cJSON *jevidence(const struct mp_report *rep, const struct mp_attempt_result *a, long line)
{
    char *s = evidence(rep, a, line);
    cJSON *j = jstr(s);
    free(s);
    return j;
}

const struct mp_attempt_result *mp_rep_issue_attempt(const struct mp_cand_report *c)
{
    for (size_t j = 0; j < c->nattempts; j++) {
        const struct mp_attempt_result *a = &c->attempts[j];
        if (!a->launch_blocking && (a->outcome == MP_OUT_CRASH || a->outcome == MP_OUT_HANG ||
                                    a->outcome == MP_OUT_STARTUP_FAILURE))
            return a;
    }
    return mp_cand_primary(c);
}

/* ---- the FlashInfer autotuner's tallies ---- */

struct autotune {
    long skipped, unsup, failed, tma, ws, first;
};

static long tally(const struct mp_resolved *v, const char *name, long *first)
{
    for (size_t i = 0; i < v->ntallies; i++) {
        if (!strcmp(v->tallies[i].name, name)) {
            if (v->tallies[i].first_line > 0 && (!*first || v->tallies[i].first_line < *first))
                *first = v->tallies[i].first_line;
            return v->tallies[i].count;
        }
    }
    return 0;
}

/* false when the log had no failed tactic */
static bool autotune_of(const struct mp_resolved *v, struct autotune *t)
{
    memset(t, 0, sizeof(*t));
    t->skipped = tally(v, "autotuner-skipped", &t->first);
    t->unsup = tally(v, "autotuner-unsupported", &t->first);
    t->failed = tally(v, "autotuner-failed", &t->first);
    t->tma = tally(v, "autotuner-tma-descriptor", &t->first);
    t->ws = tally(v, "tma-ws-grouped-gemm", &t->first);
    return t->skipped || t->unsup || t->failed || t->tma || t->ws;
}

static bool crash_follows(const struct mp_attempt_result *a, const struct autotune *t)
{
    return a->outcome == MP_OUT_CRASH && a->fail_line > t->first;
}

/* ---- known issues ---- */

static void facts_kernels(const struct mp_resolved *v, struct mp_strv *k)
{
    mp_ki_kernel(k, "moe", v->moe_backend);
    if (v->moe_kind) {
        char *area = xasprintf("%s moe", v->moe_kind);
        mp_ki_kernel(k, area, v->moe_backend);
        free(area);
    }
    mp_ki_kernel(k, "unquantized-moe", v->unquantized_moe_backend);
    mp_ki_kernel(k, "drafter-moe", v->drafter.moe_backend);
    if (v->moe_backend_flag) {
        char *f = xstrdup(v->moe_backend_flag);
        for (char *p = f; *p; p++)
            *p = *p == '-' ? '_' : (char)(*p >= 'A' && *p <= 'Z' ? *p + 32 : *p);
        mp_ki_kernel(k, "flag", f);
        free(f);
    }
    mp_ki_kernel(k, "linear", v->linear_kernel);
    for (size_t i = 0; i < v->linear_kernels.n; i++) {
        const char *kv = v->linear_kernels.v[i], *eq = strchr(kv, '=');
        if (!eq)
            continue;
        char *m = xstrndup(kv, (size_t)(eq - kv));
        mp_ki_kernel(k, m, eq + 1);
        free(m);
    }
    mp_ki_kernel(k, "attention", v->attention_backend);
    for (size_t i = 0; i < v->nother; i++)
        mp_ki_kernel(k, v->other[i].what, v->other[i].value);
}

static void facts_findings(const struct mp_attempt_result *a, struct mp_strv *codes)
{
    struct autotune t;
    if (!autotune_of(&a->res, &t))
        return;
    mp_strv_push(codes, "autotuner-tactics");
    if (t.tma)
        mp_strv_push(codes, "autotuner-tma-descriptor");
    if (crash_follows(a, &t))
        mp_strv_push(codes, "crash-after-autotuner");
}

size_t mp_rep_cand_known_issues(const struct mp_report *rep, const struct mp_cand_report *c,
                                struct mp_ki_hits *out)
{
    memset(out, 0, sizeof(*out));
    const struct mp_attempt_result *a = mp_rep_issue_attempt(c);
    if (!a)
        return 0;
    struct mp_strv k = MP_STRV_INIT, msgs = MP_STRV_INIT, codes = MP_STRV_INIT;
    facts_kernels(&a->res, &k);
    bool failed = a->outcome == MP_OUT_CRASH || a->outcome == MP_OUT_HANG ||
                  a->outcome == MP_OUT_STARTUP_FAILURE;
    if (failed && a->fail_message)
        mp_strv_push(&msgs, a->fail_message);
    for (size_t i = 0; i < a->res.fatal_messages.n; i++)
        if (!mp_strv_has(&msgs, a->res.fatal_messages.v[i]))
            mp_strv_push(&msgs, a->res.fatal_messages.v[i]);
    facts_findings(a, &codes);
    char dev[16];
    const char *device = mp_ki_device(rep->fp.compute_capability, dev, sizeof(dev));
    struct mp_ki_facts f = {
        .crash_class = failed ? a->fail_class : NULL,
        .messages = (const char *const *)msgs.v,
        .nmessages = msgs.n,
        .kernels = (const char *const *)k.v,
        .nkernels = k.n,
        .findings = (const char *const *)codes.v,
        .nfindings = codes.n,
        .device = device ? device : a->res.device,
        .engine_version = rep->fp.engine_version ? rep->fp.engine_version : a->res.engine_version,
    };
    const struct mp_knowledge *kn = rep->kn ? rep->kn : mp_knowledge_builtin();
    mp_ki_match(kn, &f, out);
    mp_strv_release(&k);
    mp_strv_release(&msgs);
    mp_strv_release(&codes);
    return out->n;
}

cJSON *mp_rep_known_issues_json(const struct mp_report *rep, const struct mp_cand_report *c)
{
    struct mp_ki_hits h;
    mp_rep_cand_known_issues(rep, c, &h);
    struct buf b = BUF_INIT;
    mp_ki_hits_to_json(&h, &b);
    cJSON *j = cJSON_ParseWithLength(b.data, b.len);
    buf_release(&b);
    mp_ki_hits_release(&h);
    return j ? j : cJSON_CreateArray();
}

/* ---- report.json's resolved ---- */

static cJSON *drafter_json(const struct mp_report *rep, const struct mp_attempt_result *p)
{
    const struct mp_resolved_drafter *d = &p->res.drafter;
    if (!d->loaded_line && !d->moe_backend)
        return cJSON_CreateNull();
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "moe_backend", jstr(d->moe_backend));
    cJSON_AddItemToObject(o, "moe_kind", jstr(d->moe_kind));
    cJSON_AddItemToObject(o, "moe_candidates", jstrv(&d->moe_candidates));
    cJSON_AddItemToObject(o, "loaded_evidence", jevidence(rep, p, d->loaded_line));
    cJSON_AddItemToObject(o, "evidence", jevidence(rep, p, d->line));
    return o;
}

static cJSON *other_json(const struct mp_report *rep, const struct mp_attempt_result *p)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; i < p->res.nother; i++) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddItemToObject(e, "what", jstr(p->res.other[i].what));
        cJSON_AddItemToObject(e, "value", jstr(p->res.other[i].value));
        cJSON_AddItemToObject(e, "evidence", jevidence(rep, p, p->res.other[i].line));
        cJSON_AddItemToArray(a, e);
    }
    return a;
}

static cJSON *autotuner_json(const struct mp_report *rep, const struct mp_attempt_result *p)
{
    struct autotune t;
    if (!autotune_of(&p->res, &t))
        return cJSON_CreateNull();
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "tactics_skipped", (double)t.skipped);
    cJSON_AddNumberToObject(o, "tactics_unsupported", (double)t.unsup);
    cJSON_AddNumberToObject(o, "profiling_failed", (double)t.failed);
    cJSON_AddNumberToObject(o, "tma_descriptor_errors", (double)t.tma);
    cJSON_AddNumberToObject(o, "tma_ws_init_failures", (double)t.ws);
    cJSON_AddBoolToObject(o, "crash_follows", crash_follows(p, &t));
    cJSON_AddItemToObject(o, "evidence", jevidence(rep, p, t.first));
    return o;
}

static void linear_kernels_json(cJSON *res, const struct mp_resolved *v)
{
    cJSON *lk = cJSON_AddObjectToObject(res, "linear_kernels");
    for (size_t i = 0; i < v->linear_kernels.n; i++) {
        const char *kv = v->linear_kernels.v[i], *eq = strchr(kv, '=');
        if (!eq)
            continue;
        char *m = xstrndup(kv, (size_t)(eq - kv));
        cJSON_AddItemToObject(lk, m, jstr(eq + 1));
        free(m);
    }
}

static void evidence_json(cJSON *res, const struct mp_report *rep, const struct mp_attempt_result *p)
{
    cJSON *e = cJSON_AddObjectToObject(res, "evidence");
    const struct { const char *k; long line; } f[] = {
        {"moe_backend", p->res.moe_backend_line},
        {"linear_kernel", p->res.linear_kernel_line},
        {"attention_backend", p->res.attention_backend_line},
        {"unknown_env", p->res.unknown_env_line},
    };
    for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
        if (f[i].line > 0)
            cJSON_AddItemToObject(e, f[i].k, jevidence(rep, p, f[i].line));
}

cJSON *mp_rep_resolved_json(const struct mp_report *rep, const struct mp_cand_report *c)
{
    const struct mp_attempt_result *p = mp_cand_primary(c);
    static const struct mp_resolved none;
    const struct mp_resolved *v = p ? &p->res : &none;
    cJSON *res = cJSON_CreateObject();
    cJSON_AddItemToObject(res, "moe_backend", jstr(v->moe_backend));
    cJSON_AddItemToObject(res, "moe_candidates", jstrv(&v->moe_candidates));
    cJSON_AddItemToObject(res, "moe_kind", jstr(v->moe_kind));
    cJSON_AddItemToObject(res, "linear_kernel", jstr(v->linear_kernel));
    linear_kernels_json(res, v);
    cJSON_AddItemToObject(res, "unquantized_moe_backend", jstr(v->unquantized_moe_backend));
    cJSON_AddItemToObject(res, "attention_backend", jstr(v->attention_backend));
    cJSON_AddItemToObject(res, "moe_backend_flag", jstr(v->moe_backend_flag));
    cJSON_AddItemToObject(res, "device", jstr(v->device));
    cJSON_AddItemToObject(res, "drafter", p ? drafter_json(rep, p) : cJSON_CreateNull());
    cJSON_AddItemToObject(res, "other", p ? other_json(rep, p) : cJSON_CreateArray());
    cJSON_AddItemToObject(res, "autotuner", p ? autotuner_json(rep, p) : cJSON_CreateNull());
    if (p)
        evidence_json(res, rep, p);
    if (p && !v->moe_backend && mp_candidate_nknobs(&c->cand) > 0)
        cJSON_AddStringToObject(res, "note", "the engine's log did not say which MoE backend it resolved");
    return res;
}

/* ---- sentences ---- */

static void drafter_text(struct buf *b, const struct mp_report *rep, const struct mp_attempt_result *p)
{
    const struct mp_resolved_drafter *d = &p->res.drafter;
    if (!d->moe_backend) {
        char *ev = evidence(rep, p, d->loaded_line);
        buf_printf(b, "loaded (%s); it logged no MoE selection of its own", ev ? ev : "?");
        free(ev);
        return;
    }
    buf_printf(b, "its own MoE selection %s", d->moe_backend);
    if (d->moe_kind)
        buf_printf(b, " (%s)", d->moe_kind);
    if (d->moe_candidates.n) {
        buf_adds(b, " out of [");
        for (size_t i = 0; i < d->moe_candidates.n; i++)
            buf_printf(b, "%s%s", i ? ", " : "", d->moe_candidates.v[i]);
        buf_adds(b, "]");
    }
    char *ev = evidence(rep, p, d->line);
    if (ev)
        buf_printf(b, " (%s)", ev);
    free(ev);
}

static void autotuner_text(struct buf *b, const struct mp_report *rep, const struct mp_attempt_result *p,
                           const struct autotune *t)
{
    const struct { long n; const char *what; } part[] = {
        {t->skipped, "tactic(s) skipped after failing to profile"},
        {t->unsup, "tactic(s) the autotuner called unsupported"},
        {t->failed, "profiling failure(s)"},
        {t->ws, "'Failed to initialize cutlass TMA WS grouped gemm'"},
        {t->tma, "TMA descriptor error(s) while tuning"},
    };
    const char *sep = "";
    for (size_t i = 0; i < sizeof(part) / sizeof(part[0]); i++) {
        if (part[i].n) {
            buf_printf(b, "%s%ld %s", sep, part[i].n, part[i].what);
            sep = ", ";
        }
    }
    char *ev = evidence(rep, p, t->first);
    if (ev)
        buf_printf(b, " (first at %s)", ev);
    free(ev);
    buf_adds(b, crash_follows(p, t) ? "; the crash follows them" : "; the autotuner kept other tactics");
}

static void push(struct mp_strv *labels, struct mp_strv *texts, const char *label, struct buf *b)
{
    mp_strv_push(labels, label);
    mp_strv_push(texts, b->data);
    buf_release(b);
}

void mp_rep_resolved_more_text(const struct mp_report *rep, const struct mp_cand_report *c,
                               struct mp_strv *labels, struct mp_strv *texts)
{
    const struct mp_attempt_result *p = mp_cand_primary(c);
    struct buf b = BUF_INIT;
    if (p && (p->res.drafter.loaded_line || p->res.drafter.moe_backend)) {
        drafter_text(&b, rep, p);
        push(labels, texts, "MTP drafter", &b);
    }
    if (p && p->res.nother) {
        for (size_t i = 0; i < p->res.nother; i++)
            buf_printf(&b, "%s%s: %s", i ? "; " : "", p->res.other[i].what, p->res.other[i].value);
        push(labels, texts, "other selections", &b);
    }
    struct autotune t;
    if (p && autotune_of(&p->res, &t)) {
        autotuner_text(&b, rep, p, &t);
        push(labels, texts, "FlashInfer autotuner", &b);
    }
    struct mp_ki_hits h;
    mp_rep_cand_known_issues(rep, c, &h);
    for (size_t i = 0; i < h.n; i++) {
        mp_ki_hit_line(&h.v[i], &b);
        push(labels, texts, "known issue", &b);
    }
    mp_ki_hits_release(&h);
}
