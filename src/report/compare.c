/* compare.c - runs side by side and what changed between them
 * (compare.h). Every field is outside text (the stores, their engines):
 * escaped for the format. */
#include "report/compare.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "escape.h"
#include "xalloc.h"

#define SLOWER 0.10 /* a speed this much lower is a regression */

static const char *nz(const char *s)
{
    return s ? s : "-";
}

/* A speed counts when its phase ran through (every request served), as on
 * the reports' first screen: a failure's few requests are no speed. */
static bool ran_through(const struct mp_phase_result *ph)
{
    return ph->ok > 0 && ph->failed == 0 && (ph->planned <= 0 || ph->ok >= ph->planned);
}

static double seq_rate(const struct mp_attempt_result *a)
{
    for (size_t k = 0; a && k < a->nphases; k++)
        if (!strcmp(a->phases[k].name, "sequential") && ran_through(&a->phases[k]))
            return a->phases[k].tok_s;
    return -1;
}

static double best_conc(const struct mp_attempt_result *a)
{
    double best = -1;
    for (size_t k = 0; a && k < a->nphases; k++)
        if (!strncmp(a->phases[k].name, "concurrency-", 12) && ran_through(&a->phases[k]) &&
            a->phases[k].tok_s > best)
            best = a->phases[k].tok_s;
    return best;
}

static const struct mp_cand_report *find_cand(const struct mp_report *r, const char *name)
{
    for (size_t i = 0; i < r->n; i++)
        if (!strcmp(r->c[i].cand.name, name))
            return &r->c[i];
    return NULL;
}

static const char *verdict_word(const struct mp_cand_report *c)
{
    return c->unfinished ? "unfinished" : c->verdict ? mp_verdict_name(c->verdict) : "not-run";
}

static void add(struct mp_change **v, size_t *n, const char *cand, const char *what,
                const char *from, const char *to, int sign)
{
    *v = xreallocarray(*v, *n + 1, sizeof(**v));
    struct mp_change *c = &(*v)[(*n)++];
    c->candidate = cand ? xstrdup(cand) : NULL;
    c->what = xstrdup(what);
    c->from = xstrdup(nz(from));
    c->to = xstrdup(nz(to));
    c->regression = sign < 0;
    c->improvement = sign > 0;
}

static bool streq(const char *a, const char *b)
{
    return !strcmp(nz(a), nz(b));
}

/* The value of an inherited variable that reached the engines, or NULL. */
static const char *inherited(const struct mp_report *r, const char *name)
{
    for (size_t i = 0; i < r->inherited.n; i++)
        if (r->inherited.v[i].passed && !strcmp(r->inherited.v[i].name, name))
            return r->inherited.v[i].value;
    return NULL;
}

/* The variables the engines inherited in one run and not, or with another
 * value, in the other (#29: an export can move every candidate). */
static void env_changes(const struct mp_report *a, const struct mp_report *b,
                        struct mp_change **v, size_t *n)
{
    for (int side = 0; side < 2; side++) {
        const struct mp_report *r = side ? b : a;
        for (size_t i = 0; i < r->inherited.n; i++) {
            const char *name = r->inherited.v[i].name;
            const char *x = inherited(a, name), *y = inherited(b, name);
            if ((side && x) || (!x && !y) || (x && y && !strcmp(x, y)))
                continue; /* listed from a's side already, or unchanged */
            char *what = xasprintf("inherited %s", name);
            add(v, n, NULL, what, x ? x : "(not set)", y ? y : "(not set)", 0);
            free(what);
        }
    }
}

/* The run as a whole: engine, driver, CUDA, the inherited environment, the
 * recommendation. */
static void run_changes(const struct mp_report *a, const struct mp_report *b,
                        struct mp_change **v, size_t *n)
{
    if (!streq(a->fp.engine_version, b->fp.engine_version))
        add(v, n, NULL, "engine version", a->fp.engine_version, b->fp.engine_version, 0);
    if (!streq(a->fp.driver, b->fp.driver))
        add(v, n, NULL, "driver", a->fp.driver, b->fp.driver, 0);
    if (!streq(a->fp.cuda, b->fp.cuda))
        add(v, n, NULL, "CUDA", a->fp.cuda, b->fp.cuda, 0);
    env_changes(a, b, v, n);
    const char *ra = a->recommended >= 0 ? a->c[a->recommended].cand.name : "none";
    const char *rb = b->recommended >= 0 ? b->c[b->recommended].cand.name : "none";
    if (strcmp(ra, rb) != 0)
        add(v, n, NULL, "recommendation", ra, rb,
            !strcmp(rb, "none") ? -1 : !strcmp(ra, "none") ? 1 : 0);
}

/* A speed measured in both runs that moved by more than SLOWER. */
static void speed_change(const char *cand, const char *what, double x, double y,
                         struct mp_change **v, size_t *n)
{
    if (x <= 0 || y <= 0 || fabs(y - x) / x <= SLOWER)
        return;
    char f[32], t[48];
    snprintf(f, sizeof(f), "%.1f", x);
    snprintf(t, sizeof(t), "%.1f (%+.0f %%)", y, 100 * (y - x) / x);
    add(v, n, cand, what, f, t, y < x ? -1 : 1);
}

static void cand_changes(const struct mp_cand_report *x, const struct mp_cand_report *y,
                         struct mp_change **v, size_t *n)
{
    const char *name = x->cand.name;
    const char *vx = verdict_word(x), *vy = verdict_word(y);
    if (strcmp(vx, vy) != 0) {
        bool was = x->verdict == MP_V_STABLE, is = y->verdict == MP_V_STABLE;
        add(v, n, name, "verdict", vx, vy, was && !is && !y->unfinished ? -1 : !was && is ? 1 : 0);
    }
    const struct mp_attempt_result *p = mp_cand_primary(x), *q = mp_cand_primary(y);
    const char *bx = p ? p->res.moe_backend : NULL, *by = q ? q->res.moe_backend : NULL;
    if ((bx || by) && !streq(bx, by))
        add(v, n, name, "MoE backend", bx, by, 0);
    speed_change(name, "sequential tok/s", seq_rate(p), seq_rate(q), v, n);
    speed_change(name, "best concurrency tok/s", best_conc(p), best_conc(q), v, n);
}

static int by_weight(const void *pa, const void *pb)
{
    const struct mp_change *a = pa, *b = pb;
    int wa = a->regression ? 0 : a->improvement ? 2 : 1, wb = b->regression ? 0 : b->improvement ? 2 : 1;
    return wa - wb;
}

size_t mp_compare_changes(const struct mp_report *a, const struct mp_report *b,
                          struct mp_change **out)
{
    size_t n = 0;
    *out = NULL;
    run_changes(a, b, out, &n);
    for (size_t i = 0; i < b->n; i++) {
        const struct mp_cand_report *x = find_cand(a, b->c[i].cand.name);
        if (x)
            cand_changes(x, &b->c[i], out, &n);
        else
            add(out, &n, b->c[i].cand.name, "candidate", "absent", verdict_word(&b->c[i]), 0);
    }
    /* stable sort: regressions, then other changes, then improvements */
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && by_weight(&(*out)[j - 1], &(*out)[j]) > 0; j--) {
            struct mp_change t = (*out)[j - 1];
            (*out)[j - 1] = (*out)[j];
            (*out)[j] = t;
        }
    return n;
}

void mp_changes_free(struct mp_change *c, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(c[i].candidate);
        free(c[i].what);
        free(c[i].from);
        free(c[i].to);
    }
    free(c);
}

/* "## What changed (first → last)": a bullet per change, regressions first
 * and in bold. */
static void md_changes(const struct mp_report *runs, char *const *dirs, int n, struct buf *b)
{
    struct mp_change *ch;
    size_t nc = mp_compare_changes(&runs[0], &runs[n - 1], &ch);
    size_t nreg = 0;
    for (size_t i = 0; i < nc; i++)
        nreg += ch[i].regression;
    buf_adds(b, "## What changed (");
    mp_md_text(b, dirs[0], 200, 0);
    buf_adds(b, " → ");
    mp_md_text(b, dirs[n - 1], 200, 0);
    buf_adds(b, ")\n\n");
    if (!nc)
        buf_adds(b, "Nothing: the same verdicts, backends and speeds (within 10 %).\n");
    if (nreg)
        buf_printf(b, "**%zu regression%s**%s.\n\n", nreg, nreg == 1 ? "" : "s",
                   streq(runs[0].fp.engine_version, runs[n - 1].fp.engine_version)
                       ? ""
                       : " after the engine upgrade");
    for (size_t i = 0; i < nc; i++) {
        buf_adds(b, ch[i].regression ? "- **regression**: " : ch[i].improvement ? "- better: " : "- ");
        if (ch[i].candidate) {
            mp_md_text(b, ch[i].candidate, 64, 0);
            buf_adds(b, " ");
        }
        mp_md_text(b, ch[i].what, 64, 0);
        buf_adds(b, ": ");
        mp_md_text(b, ch[i].from, 64, 0);
        buf_adds(b, " → ");
        mp_md_text(b, ch[i].to, 64, 0);
        buf_adds(b, "\n");
    }
    buf_adds(b, "\n");
    mp_changes_free(ch, nc);
}

/* A row of the side-by-side table: label, then one cell per run. */
static void md_row(struct buf *b, const char *label, const struct mp_report *runs, int n,
                   const char *(*get)(const struct mp_report *r, char *tmp, size_t sz))
{
    char tmp[256];
    buf_printf(b, "| %s |", label);
    for (int i = 0; i < n; i++) {
        buf_addc(b, ' ');
        mp_md_text(b, get(&runs[i], tmp, sizeof(tmp)), 200, 0);
        buf_adds(b, " |");
    }
    buf_adds(b, "\n");
}

static const char *get_engine(const struct mp_report *r, char *t, size_t n)
{
    snprintf(t, n, "%s %s", nz(r->fp.engine), nz(r->fp.engine_version));
    return t;
}

static const char *get_driver(const struct mp_report *r, char *t, size_t n)
{
    snprintf(t, n, "%s / %s", nz(r->fp.driver), nz(r->fp.cuda));
    return t;
}

static const char *get_started(const struct mp_report *r, char *t, size_t n)
{
    (void)t, (void)n;
    return nz(r->started);
}

static const char *get_rec(const struct mp_report *r, char *t, size_t n)
{
    (void)t, (void)n;
    return r->recommended >= 0 ? r->c[r->recommended].cand.name : "none";
}

/* A candidate's cell: verdict, backend, speeds. */
static void md_cand_cell(struct buf *b, const struct mp_cand_report *cr)
{
    const struct mp_attempt_result *p = cr ? mp_cand_primary(cr) : NULL;
    if (!cr) {
        buf_adds(b, " - |");
        return;
    }
    buf_addc(b, ' ');
    mp_md_text(b, mp_cand_verdict_label(cr), 32, 0);
    if (p && p->res.moe_backend) {
        buf_adds(b, ", ");
        mp_md_text(b, p->res.moe_backend, 64, 0);
    }
    double sr = seq_rate(p), cc = best_conc(p);
    if (sr >= 0)
        buf_printf(b, ", %.1f tok/s seq", sr);
    if (cc >= 0)
        buf_printf(b, ", %.1f tok/s conc", cc);
    buf_adds(b, " |");
}

/* Candidate names in first-seen order over the runs. */
static void all_names(const struct mp_report *runs, int n, struct mp_strv *names)
{
    for (int i = 0; i < n; i++)
        for (size_t c = 0; c < runs[i].n; c++) {
            bool seen = false;
            for (size_t k = 0; k < names->n && !seen; k++)
                seen = !strcmp(names->v[k], runs[i].c[c].cand.name);
            if (!seen)
                mp_strv_push(names, runs[i].c[c].cand.name);
        }
}

void mp_compare_markdown(const struct mp_report *runs, char *const *dirs, int n, struct buf *b)
{
    buf_printf(b, "# moeprobe: %d runs side by side\n\nGPU ", n);
    mp_md_text(b, nz(runs[0].fp.gpu), 120, 0);
    buf_adds(b, ", model ");
    mp_md_text(b, nz(runs[0].fp.model), 200, 0);
    buf_adds(b, "\n\n");
    md_changes(runs, dirs, n, b);
    buf_adds(b, "| |");
    for (int i = 0; i < n; i++) {
        buf_addc(b, ' ');
        mp_md_text(b, dirs[i], 200, 0);
        buf_adds(b, " |");
    }
    buf_adds(b, "\n|---|");
    for (int i = 0; i < n; i++)
        buf_adds(b, "---|");
    buf_adds(b, "\n");
    md_row(b, "engine", runs, n, get_engine);
    md_row(b, "driver / CUDA", runs, n, get_driver);
    md_row(b, "started", runs, n, get_started);
    md_row(b, "recommendation", runs, n, get_rec);
    struct mp_strv names = MP_STRV_INIT;
    all_names(runs, n, &names);
    for (size_t k = 0; k < names.n; k++) {
        buf_adds(b, "| **");
        mp_md_text(b, names.v[k], 64, 0);
        buf_adds(b, "** |");
        for (int i = 0; i < n; i++)
            md_cand_cell(b, find_cand(&runs[i], names.v[k]));
        buf_adds(b, "\n");
    }
    mp_strv_release(&names);
}

static cJSON *run_json(const struct mp_report *r, const char *dir)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "run_dir", dir);
    cJSON_AddStringToObject(o, "started", nz(r->started));
    cJSON_AddStringToObject(o, "engine_version", nz(r->fp.engine_version));
    cJSON_AddStringToObject(o, "driver", nz(r->fp.driver));
    cJSON_AddStringToObject(o, "cuda", nz(r->fp.cuda));
    if (r->recommended >= 0)
        cJSON_AddStringToObject(o, "recommendation", r->c[r->recommended].cand.name);
    else
        cJSON_AddNullToObject(o, "recommendation");
    cJSON *cs = cJSON_AddObjectToObject(o, "candidates");
    for (size_t c = 0; c < r->n; c++) {
        const struct mp_cand_report *cr = &r->c[c];
        const struct mp_attempt_result *p = mp_cand_primary(cr);
        cJSON *e = cJSON_AddObjectToObject(cs, cr->cand.name);
        cJSON_AddStringToObject(e, "verdict", verdict_word(cr));
        if (p && p->res.moe_backend)
            cJSON_AddStringToObject(e, "moe_backend", p->res.moe_backend);
        double sr = seq_rate(p);
        if (sr >= 0)
            cJSON_AddNumberToObject(e, "sequential_tok_s", sr);
    }
    return o;
}

void mp_compare_json(const struct mp_report *runs, char *const *dirs, int n, struct buf *out)
{
    cJSON *root = cJSON_CreateObject();
    cJSON *ra = cJSON_AddArrayToObject(root, "runs");
    for (int i = 0; i < n; i++)
        cJSON_AddItemToArray(ra, run_json(&runs[i], dirs[i]));
    cJSON_AddStringToObject(root, "gpu", nz(runs[0].fp.gpu));
    cJSON_AddStringToObject(root, "model", nz(runs[0].fp.model));
    struct mp_change *ch;
    size_t nc = mp_compare_changes(&runs[0], &runs[n - 1], &ch);
    cJSON *ca = cJSON_AddArrayToObject(root, "changes"); /* first run -> last */
    for (size_t i = 0; i < nc; i++) {
        cJSON *o = cJSON_CreateObject();
        if (ch[i].candidate)
            cJSON_AddStringToObject(o, "candidate", ch[i].candidate);
        else
            cJSON_AddNullToObject(o, "candidate");
        cJSON_AddStringToObject(o, "what", ch[i].what);
        cJSON_AddStringToObject(o, "from", ch[i].from);
        cJSON_AddStringToObject(o, "to", ch[i].to);
        cJSON_AddBoolToObject(o, "regression", ch[i].regression);
        cJSON_AddBoolToObject(o, "improvement", ch[i].improvement);
        cJSON_AddItemToArray(ca, o);
    }
    mp_changes_free(ch, nc);
    char *t = cJSON_Print(root);
    buf_adds(out, t);
    buf_addc(out, '\n');
    cJSON_free(t);
    cJSON_Delete(root);
}
