/* merge.c - merge the task results of a run directory into one report.
 *
 * Each task left RUNDIR/tasks/NAME/report.json (a qualify of one
 * candidate). Its candidates and attempts are loaded back into the report
 * model (struct mp_report) and the merged model is finalized and rendered
 * by the report module, so verdicts, groups, no-op knobs, the output check
 * and the recommendation are computed across all candidates exactly as in
 * a serial run.
 *
 * Each task is loaded from its evidence store (RUNDIR/tasks/NAME/moeprobe.db,
 * mp_store_load: lossless). A task directory without a database (a moeprobe
 * without the store, or a store that failed) falls back to its report.json,
 * which restores what the report shows: latency samples are rebuilt so that
 * p50/p99 come out as the task reported them, the output check's answers
 * are the quoted texts (200 bytes), and attempts other than the first keep
 * only their outcome, counts and evidence lines. */
#include "compat.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "buf.h"
#include "clock.h"
#include "escape.h"
#include "file.h"
#include "report/report.h"
#include "sched/internal.h"
#include "sched/sched.h"
#include "store/store.h"
#include "xalloc.h"

/* ---- JSON helpers ---- */

static const cJSON *jget(const cJSON *o, const char *k)
{
    return o ? cJSON_GetObjectItemCaseSensitive(o, k) : NULL;
}

static char *jdup(const cJSON *o, const char *k)
{
    const cJSON *v = jget(o, k);
    return cJSON_IsString(v) && v->valuestring ? xstrdup(v->valuestring) : NULL;
}

static double jnum(const cJSON *o, const char *k, double dflt)
{
    const cJSON *v = jget(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

static void jstrv(const cJSON *o, const char *k, struct mp_strv *out)
{
    const cJSON *a = jget(o, k), *e;
    cJSON_ArrayForEach(e, a)
    {
        if (cJSON_IsString(e))
            mp_strv_push(out, e->valuestring);
    }
}

/* a task's report.json: the report of a few candidates */
#define TASK_REPORT_MAX (64u << 20)

static char *slurp(const char *path, size_t *len)
{
    struct buf b = BUF_INIT;
    if (mp_read_file(path, TASK_REPORT_MAX, &b, NULL) < 0) {
        buf_release(&b);
        return NULL;
    }
    return buf_detach(&b, len);
}

/* inverse of mp_quality_quote: "..." with \" \\ \n \t \r \xNN; NULL for (none) */
static char *unquote(const char *q)
{
    size_t n = q ? strlen(q) : 0;
    if (n < 2 || q[0] != '"')
        return NULL;
    struct buf b = BUF_INIT;
    for (size_t i = 1; i < n; i++) {
        char c = q[i];
        if (c == '"')
            break;
        if (c != '\\' || i + 1 >= n) {
            buf_addc(&b, c);
            continue;
        }
        char e = q[++i];
        if (e == 'n')
            buf_addc(&b, '\n');
        else if (e == 't')
            buf_addc(&b, '\t');
        else if (e == 'r')
            buf_addc(&b, '\r');
        else if (e == 'x' && i + 2 < n) {
            char hex[3] = {q[i + 1], q[i + 2], 0};
            buf_addc(&b, (char)strtol(hex, NULL, 16));
            i += 2;
        } else
            buf_addc(&b, e);
    }
    buf_addc(&b, '\0');
    return buf_detach(&b, NULL);
}

/* samples whose p50 and p99 (linear interpolation) are the given ones */
static void synth(double p50, double p99, double **v, size_t *n)
{
    if (p50 < 0)
        return;
    *n = 101;
    *v = xmalloc(101 * sizeof(double));
    for (size_t i = 0; i < 101; i++)
        (*v)[i] = i < 99 || p99 < 0 ? p50 : p99;
}

/* the evidence entries of attempt dir (relative to the task) in order */
static void evidence_lines(const cJSON *cand, const char *rel, long *lines, size_t max, size_t *n)
{
    const cJSON *e;
    size_t rl = strlen(rel);
    *n = 0;
    cJSON_ArrayForEach(e, jget(cand, "evidence"))
    {
        if (!cJSON_IsString(e) || *n >= max)
            continue;
        const char *s = e->valuestring;
        if (strncmp(s, rel, rl) != 0 || strncmp(s + rl, "/server.log:", 12) != 0)
            continue;
        lines[(*n)++] = strtol(s + rl + 12, NULL, 10);
    }
}

static void load_attempt(const cJSON *cand, const cJSON *e, bool primary, bool first_fail,
                         const char *task_dir, int index, struct mp_attempt_result *a)
{
    memset(a, 0, sizeof(*a));
    char *rel = jdup(e, "dir");
    if (!rel)
        rel = xstrdup("");
    a->dir = rel[0] == '/' ? xstrdup(rel) : xasprintf("%s/%s", task_dir, rel);
    a->index = index;
    a->launch_blocking = cJSON_IsTrue(jget(e, "launch_blocking"));
    const cJSON *oc = jget(e, "outcome");
    a->outcome = mp_outcome_from_name(cJSON_IsString(oc) ? oc->valuestring : NULL);
    a->command = jdup(e, "command");
    a->req_ok = (unsigned long)jnum(e, "requests_ok", 0);
    a->req_failed = (unsigned long)jnum(e, "requests_failed", 0);
    a->ready_s = jnum(e, "ready_s", -1);
    a->workload_s = jnum(e, "workload_s", -1);
    a->teardown_s = jnum(e, "teardown_s", -1);
    a->wall_s = jnum(e, "wall_s", -1);
    a->exit_desc = jdup(e, "exit");
    const cJSON *td = jget(e, "teardown");
    a->teardown_killed = cJSON_IsTrue(jget(td, "killed"));
    a->escapees_killed = (int)jnum(td, "escapees_killed", 0);
    a->teardown_leftovers = (int)jnum(td, "leftovers", 0);
    double rts = jnum(e, "request_tok_s_p50", -1);
    if (rts >= 0) {
        a->req_tok_s = xmalloc(sizeof(double));
        a->req_tok_s[0] = rts;
        a->nreq_tok_s = 1;
    }
    long ev[3];
    size_t nev;
    evidence_lines(cand, rel, ev, 3, &nev);
    free(rel);
    if (first_fail) {
        const cJSON *cr = jget(cand, "crash");
        a->fail_class = jdup(cr, "class");
        a->fail_message = jdup(cr, "message");
        a->ok_before_failure = (unsigned long)jnum(cr, "after_requests", 0);
        a->fail_phase = jdup(cr, "phase");
        jstrv(cr, "sites", &a->sites);
        a->launch_site = jdup(cr, "launch_site");
        a->engine_dead = cJSON_IsTrue(jget(cr, "engine_dead"));
    }
    if (!primary) {
        /* positional: the renderers only list them */
        a->res.moe_backend_line = nev > 0 ? ev[0] : 0;
        a->res.unknown_env_line = nev > 1 ? ev[1] : 0;
        a->fail_line = nev > 2 ? ev[2] : 0;
        return;
    }
    const cJSON *res = jget(cand, "resolved");
    a->res.moe_backend = jdup(res, "moe_backend");
    jstrv(res, "moe_candidates", &a->res.moe_candidates);
    a->res.linear_kernel = jdup(res, "linear_kernel");
    a->res.attention_backend = jdup(res, "attention_backend");
    a->res.moe_backend_flag = jdup(res, "moe_backend_flag");
    a->res.unquantized_moe_backend = jdup(res, "unquantized_moe_backend");
    const cJSON *lk;
    cJSON_ArrayForEach(lk, jget(res, "linear_kernels"))
    {
        if (!cJSON_IsString(lk) || !lk->string)
            continue;
        char *kv = xasprintf("%s=%s", lk->string, lk->valuestring);
        mp_strv_push(&a->res.linear_kernels, kv);
        free(kv);
    }
    jstrv(cand, "unknown_env", &a->res.unknown_env);
    const cJSON *kd;
    cJSON_ArrayForEach(kd, jget(cand, "knob_delivery"))
    {
        const cJSON *st = jget(kd, "status"), *kn = jget(kd, "knob"), *ev_ = jget(kd, "evidence");
        mp_attempt_add_dlv(a, cJSON_IsString(kn) ? kn->valuestring : "",
                           mp_dlv_status_from_name(cJSON_IsString(st) ? st->valuestring : NULL),
                           cJSON_IsString(ev_) ? ev_->valuestring : "");
    }
    size_t k = 0;
    if (a->res.moe_backend && k < nev)
        a->res.moe_backend_line = ev[k++];
    if (a->res.unknown_env.n && k < nev)
        a->res.unknown_env_line = ev[k++];
    if (k < nev)
        a->fail_line = ev[k++];
    const cJSON *ph;
    cJSON_ArrayForEach(ph, jget(jget(cand, "throughput"), "phases"))
    {
        if (a->nphases >= MP_ARRAY_SIZE(a->phases))
            break;
        struct mp_phase_result *p = &a->phases[a->nphases++];
        const cJSON *nm = jget(ph, "phase");
        snprintf(p->name, sizeof(p->name), "%s", cJSON_IsString(nm) ? nm->valuestring : "");
        p->level = (int)jnum(ph, "level", 0);
        p->planned = (int)jnum(ph, "planned", 0);
        p->ok = (int)jnum(ph, "ok", 0);
        p->failed = (int)jnum(ph, "failed", 0);
        p->wall_s = jnum(ph, "wall_s", -1);
        p->tok_s = jnum(ph, "tok_s", -1);
        p->req_tok_s_p50 = jnum(ph, "request_tok_s_p50", -1);
    }
    const cJSON *lat = jget(cand, "latency_ms");
    synth(jnum(lat, "ttft_p50", -1), jnum(lat, "ttft_p99", -1), &a->ttft_ms, &a->nttft);
    synth(jnum(lat, "itl_p50", -1), jnum(lat, "itl_p99", -1), &a->itl_ms, &a->nitl);
    synth(jnum(lat, "e2e_p50", -1), jnum(lat, "e2e_p99", -1), &a->e2e_ms, &a->ne2e);
    const cJSON *ans = jget(jget(cand, "output_check"), "answers");
    int na = cJSON_GetArraySize(ans);
    if (na > 0 && a->outcome == MP_OUT_CLEAN) {
        a->nquality = (size_t)na;
        a->quality_texts = xcalloc((size_t)na + 1, sizeof(char *));
        for (int i = 0; i < na; i++) {
            const cJSON *o = jget(cJSON_GetArrayItem(ans, i), "output");
            a->quality_texts[i] = cJSON_IsString(o) ? unquote(o->valuestring) : NULL;
        }
    }
}

static void load_candidate(const cJSON *cj, const char *task_dir, struct mp_report *rep)
{
    struct mp_candidate cand = {0};
    cand.name = jdup(cj, "name");
    if (!cand.name)
        cand.name = xstrdup("?");
    const cJSON *knobs = jget(cj, "knobs"), *e;
    cJSON_ArrayForEach(e, jget(knobs, "env"))
    {
        if (cJSON_IsString(e))
            mp_strv_push_owned(&cand.env, xasprintf("%s=%s", e->string, e->valuestring));
    }
    jstrv(knobs, "args", &cand.args);
    size_t ci = mp_report_add_candidate(rep, &cand);
    mp_candidate_release(&cand);
    bool have_primary = false, have_fail = false;
    int index = 0;
    cJSON_ArrayForEach(e, jget(cj, "attempts"))
    {
        bool blocking = cJSON_IsTrue(jget(e, "launch_blocking"));
        const cJSON *oc = jget(e, "outcome");
        enum mp_outcome o = mp_outcome_from_name(cJSON_IsString(oc) ? oc->valuestring : NULL);
        bool primary = !blocking && !have_primary;
        bool first_fail = !blocking && !have_fail &&
                          (o == MP_OUT_CRASH || o == MP_OUT_HANG || o == MP_OUT_STARTUP_FAILURE);
        have_primary = have_primary || primary;
        have_fail = have_fail || first_fail;
        struct mp_attempt_result a;
        load_attempt(cj, e, primary, first_fail, task_dir, ++index, &a);
        mp_report_add_attempt(rep, ci, &a);
        mp_attempt_result_release(&a);
    }
    const cJSON *d = jget(cj, "diagnosis");
    if (cJSON_IsObject(d)) {
        struct mp_diagnosis *g = &rep->c[ci].diag;
        g->done = true;
        const cJSON *lb = jget(d, "launch_blocking");
        if (cJSON_IsString(lb))
            g->launch_blocking = !strcmp(lb->valuestring, "clean") ? "clean" : "crashed";
        g->requests_clean = (unsigned long)jnum(d, "requests_clean", 0);
        g->requests_required = (unsigned long)jnum(d, "requests_required", 0);
        g->confidence = jnum(d, "confidence", 0);
        g->throughput_ratio = jnum(d, "throughput_ratio", -1);
        g->pinned_site = jdup(d, "pinned_site");
        g->launch_site = jdup(d, "launch_site");
        g->reasoning = jdup(d, "reasoning");
        g->note = jdup(d, "note");
    } else {
        /* a diagnosis that was not run keeps its note in the why only */
        rep->c[ci].diag.done = false;
    }
}

/* Load task_dir/report.json into rep (candidates appended; fingerprint and
 * times set when rep has none). 0, -ENOENT, MP_EPARSE. */
static int load_task(const char *task_dir, struct mp_report *rep)
{
    char *path = xasprintf("%s/report.json", task_dir);
    size_t len = 0;
    char *text = slurp(path, &len);
    free(path);
    if (!text)
        return -ENOENT;
    cJSON *j = cJSON_ParseWithLength(text, len);
    free(text);
    if (!j || !cJSON_IsArray(jget(j, "candidates"))) {
        cJSON_Delete(j);
        return MP_EPARSE;
    }
    const cJSON *fp = jget(j, "fingerprint");
    struct mp_fingerprint *f = &rep->fp;
    if (!f->gpu && !f->engine_version && !f->model && !f->host_arch) {
        f->gpu = jdup(fp, "gpu");
        f->compute_capability = jdup(fp, "compute_capability");
        f->driver = jdup(fp, "driver");
        f->cuda = jdup(fp, "cuda");
        f->engine = jdup(fp, "engine");
        f->engine_version = jdup(fp, "engine_version");
        f->model = jdup(fp, "model");
        f->host_arch = jdup(fp, "host_arch");
    }
    char *st = jdup(j, "started"), *fin = jdup(j, "finished");
    if (st && (!rep->started || strcmp(st, rep->started) < 0)) {
        free(rep->started);
        rep->started = st;
        st = NULL;
    }
    if (fin && (!rep->finished || strcmp(fin, rep->finished) > 0)) {
        free(rep->finished);
        rep->finished = fin;
        fin = NULL;
    }
    free(st);
    free(fin);
    if (cJSON_IsTrue(jget(j, "interrupted")))
        rep->interrupted = true;
    const cJSON *c;
    cJSON_ArrayForEach(c, jget(j, "candidates"))
        load_candidate(c, task_dir, rep);
    cJSON_Delete(j);
    return 0;
}

int mp_sched_task_load(const char *task_dir, struct mp_report *rep, bool *finished)
{
    *finished = false;
    struct mp_store *st = NULL;
    int rc = mp_store_open(task_dir, MP_STORE_READONLY, &st, NULL);
    if (rc == 0) {
        bool *done = NULL;
        rc = mp_store_load(st, rep, &done);
        if (rc == 0)
            rc = mp_report_objective_from_store(rep, st); /* the tasks' --objective */
        mp_store_close(st);
        if (rc == 0) {
            *finished = rep->n > 0 && !rep->interrupted;
            for (size_t i = 0; i < rep->n && done; i++)
                *finished = *finished && done[i];
        }
        free(done);
        return rc;
    }
    /* no database: the task's report.json */
    rc = load_task(task_dir, rep);
    if (rc == 0)
        *finished = rep->n > 0 && !rep->interrupted;
    return rc;
}

static char *fp_key(const struct mp_fingerprint *f)
{
    const char *v[] = {f->gpu, f->compute_capability, f->driver, f->cuda,
                       f->engine, f->engine_version, f->model, f->host_arch};
    struct buf b = BUF_INIT;
    for (size_t i = 0; i < MP_ARRAY_SIZE(v); i++)
        buf_printf(&b, "%s\x1f", v[i] ? v[i] : "");
    return buf_detach(&b, NULL);
}

static void fp_move(struct mp_fingerprint *to, struct mp_fingerprint *from)
{
    *to = *from;
    memset(from, 0, sizeof(*from));
}

/* move every candidate of src into dst */
static void move_cands(struct mp_report *dst, struct mp_report *src)
{
    for (size_t i = 0; i < src->n; i++) {
        struct mp_cand_report *c = &src->c[i];
        size_t k = mp_report_add_candidate(dst, &c->cand);
        for (size_t j = 0; j < c->nattempts; j++)
            mp_report_add_attempt(dst, k, &c->attempts[j]);
        dst->c[k].diag = c->diag;
        memset(&c->diag, 0, sizeof(c->diag));
    }
    if (src->started && (!dst->started || strcmp(src->started, dst->started) < 0)) {
        free(dst->started);
        dst->started = xstrdup(src->started);
    }
    if (src->finished && (!dst->finished || strcmp(src->finished, dst->finished) > 0)) {
        free(dst->finished);
        dst->finished = xstrdup(src->finished);
    }
    dst->interrupted = dst->interrupted || src->interrupted;
    dst->objective = src->objective;
}

struct group {
    char *key;
    struct mp_report rep;
    struct mp_strv gaps;        /* candidates without a result, and why */
    struct mp_strv gap_why;
};

static void describe_gap(const char *task_dir, const char *name, struct buf *why)
{
    struct mp_sched_rec r;
    int e = mp_sched_rec_read(task_dir, &r);
    buf_printf(why, "no result: the task for '%s' ", name);
    if (e == -ENOENT) {
        buf_adds(why, "never ran (or its node could not write its directory)");
    } else if (r.end_ns == 0) {
        buf_adds(why, "did not finish");
        if (r.host)
            buf_printf(why, " (started on %s)", r.host);
    } else {
        buf_printf(why, "ended with exit %d", r.exit_code);
        if (r.host && *r.host)
            buf_printf(why, " on %s", r.host);
        if (r.note)
            buf_printf(why, " (%s)", r.note);
    }
    buf_printf(why, "; see tasks/%s/task.log; 'qualify --resume RUNDIR' runs it again", name);
    mp_sched_rec_release(&r);
}

static int render(struct mp_report *rep, const struct group *g, const char *dir, struct buf *j,
                  struct buf *md, struct buf *html)
{
    mp_report_finalize(rep);
    for (size_t i = 0; i < g->gaps.n; i++) {
        for (size_t k = 0; k < rep->n; k++) {
            if (!strcmp(rep->c[k].cand.name, g->gaps.v[i]) && !rep->c[k].verdict) {
                free(rep->c[k].why);
                rep->c[k].why = xstrdup(g->gap_why.v[i]);
            }
        }
        mp_strv_push(&rep->learned, g->gap_why.v[i]);
    }
    mp_report_json(rep, j);
    mp_report_markdown(rep, md);
    mp_report_html(rep, html);
    int e = mp_write_file_atomic(dir, "report.json", j->data, j->len);
    if (e == 0)
        e = mp_write_file_atomic(dir, "report.md", md->data, md->len);
    if (e == 0)
        e = mp_write_file_atomic(dir, "report.html", html->data, html->len);
    if (e < 0)
        mp_error("cannot write the report into '%s': %s", dir, mp_strerror(e));
    return e;
}

int mp_sched_merge(const char *run_dir, bool json, bool quiet)
{
    struct mp_strv names = MP_STRV_INIT;
    int e = mp_sched_index_read(run_dir, &names);
    if (e < 0) {
        mp_error("'%s' has no task index (tasks/index.txt): %s; was it run with --gpus or --slurm?",
                 run_dir, mp_strerror(e));
        return MP_EXIT_USAGE;
    }
    struct group *g = NULL;
    size_t ng = 0;
    size_t nmissing = 0;
    for (size_t i = 0; i < names.n; i++) {
        char *tdir = xasprintf("%s/tasks/%s", run_dir, names.v[i]);
        struct mp_report t;
        mp_report_init(&t, tdir);
        bool finished = false;
        int le = mp_sched_task_load(tdir, &t, &finished);
        if (le < 0 || !finished) {
            le = -ENOENT;
            nmissing++;
            mp_report_release(&t);
            mp_report_init(&t, tdir);
            struct mp_candidate c = {0};
            c.name = names.v[i];
            mp_report_add_candidate(&t, &c);
        }
        size_t gi = 0;
        if (le == 0) {
            char *key = fp_key(&t.fp);
            for (gi = 0; gi < ng && !(g[gi].key && !strcmp(g[gi].key, key)); gi++)
                ;
            if (gi == ng) {
                /* a new fingerprint; it adopts the group the gaps opened */
                for (gi = 0; gi < ng && g[gi].key; gi++)
                    ;
                if (gi == ng) {
                    g = xreallocarray(g, ng + 1, sizeof(*g));
                    memset(&g[ng], 0, sizeof(g[ng]));
                    mp_report_init(&g[ng].rep, run_dir);
                    ng++;
                }
                g[gi].key = key;
                fp_move(&g[gi].rep.fp, &t.fp);
            } else {
                free(key);
            }
        } else {
            if (ng == 0) { /* gaps go with the first fingerprint */
                g = xreallocarray(g, 1, sizeof(*g));
                memset(&g[0], 0, sizeof(g[0]));
                mp_report_init(&g[0].rep, run_dir);
                ng = 1;
            }
            struct buf why = BUF_INIT;
            describe_gap(tdir, names.v[i], &why);
            mp_strv_push(&g[0].gaps, names.v[i]);
            mp_strv_push_owned(&g[0].gap_why, buf_detach(&why, NULL));
        }
        move_cands(&g[gi].rep, &t);
        mp_report_release(&t);
        free(tdir);
    }
    int exit_code = MP_EXIT_NONE;
    struct buf out = BUF_INIT, sum = BUF_INIT;
    if (ng == 1) {
        struct buf j = BUF_INIT, md = BUF_INIT, html = BUF_INIT;
        if (render(&g[0].rep, &g[0], run_dir, &j, &md, &html) < 0)
            exit_code = MP_EXIT_INTERNAL;
        else
            exit_code = g[0].rep.recommended >= 0 ? MP_EXIT_OK : MP_EXIT_NONE;
        buf_add(&out, json ? j.data : md.data, json ? j.len : md.len);
        mp_report_summary(&g[0].rep, &sum);
        buf_release(&j);
        buf_release(&md);
        buf_release(&html);
    } else {
        /* fingerprints differ: side by side, one report per fingerprint */
        struct buf mdall = BUF_INIT, jall = BUF_INIT, hall = BUF_INIT;
        buf_printf(&mdall,
                   "# moeprobe qualify report: %zu fingerprints\n\n"
                   "The tasks ran on different GPUs or engine builds. Results are reported side "
                   "by side, one section per fingerprint; no recommendation spans them.\n\n",
                   ng);
        const char *mv = g[0].rep.moeprobe_version ? g[0].rep.moeprobe_version : "";
        buf_adds(&jall, "{\n\"moeprobe_version\": ");
        buf_add_json_str(&jall, mv, strlen(mv));
        buf_adds(&jall, ",\n\"fingerprint_groups\": [\n");
        buf_adds(&hall, "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>moeprobe "
                        "report</title></head><body><h1>moeprobe qualify report</h1><p>The "
                        "tasks ran on different fingerprints:</p><ul>\n");
        bool any = false;
        for (size_t k = 0; k < ng && exit_code != MP_EXIT_INTERNAL; k++) {
            char *dir = xasprintf("%s/fingerprint-%zu", run_dir, k + 1);
            mkdir(dir, 0777);
            struct buf j = BUF_INIT, md = BUF_INIT, html = BUF_INIT;
            if (render(&g[k].rep, &g[k], dir, &j, &md, &html) < 0)
                exit_code = MP_EXIT_INTERNAL;
            any = any || g[k].rep.recommended >= 0;
            const struct mp_fingerprint *f = &g[k].rep.fp;
            /* the fingerprint's words come from the tasks' engines: escaped */
            buf_printf(&mdall, "## Fingerprint %zu: ", k + 1);
            mp_md_text(&mdall, f->gpu ? f->gpu : "no GPU", 120, 0);
            buf_adds(&mdall, ", ");
            mp_md_text(&mdall, f->engine ? f->engine : "engine", 40, 0);
            buf_adds(&mdall, " ");
            mp_md_text(&mdall, f->engine_version ? f->engine_version : "?", 60, 0);
            buf_adds(&mdall, ", ");
            mp_md_text(&mdall, f->model ? f->model : "?", 200, 0);
            buf_printf(&mdall, "\n\n(fingerprint-%zu/)\n\n", k + 1);
            buf_add(&mdall, md.data, md.len);
            buf_adds(&mdall, "\n");
            buf_printf(&jall, "%s", k ? ",\n" : "");
            buf_add(&jall, j.data, j.len);
            buf_printf(&hall, "<li><a href=\"fingerprint-%zu/report.html\">fingerprint %zu</a></li>\n",
                       k + 1, k + 1);
            mp_report_summary(&g[k].rep, &sum);
            buf_release(&j);
            buf_release(&md);
            buf_release(&html);
            free(dir);
        }
        buf_adds(&jall, "],\n\"recommendation\": null\n}\n");
        buf_adds(&hall, "</ul></body></html>\n");
        if (exit_code != MP_EXIT_INTERNAL) {
            if (mp_write_file_atomic(run_dir, "report.json", jall.data, jall.len) < 0 ||
                mp_write_file_atomic(run_dir, "report.md", mdall.data, mdall.len) < 0 ||
                mp_write_file_atomic(run_dir, "report.html", hall.data, hall.len) < 0) {
                mp_error("cannot write the report into '%s'", run_dir);
                exit_code = MP_EXIT_INTERNAL;
            } else {
                exit_code = any ? MP_EXIT_OK : MP_EXIT_NONE;
            }
        }
        buf_add(&out, json ? jall.data : mdall.data, json ? jall.len : mdall.len);
        buf_release(&mdall);
        buf_release(&jall);
        buf_release(&hall);
    }
    if (out.len)
        fwrite(out.data, 1, out.len, stdout);
    if (fflush(stdout) != 0)
        exit_code = MP_EXIT_INTERNAL;
    if (!quiet) {
        fprintf(stderr, "\nmoeprobe: run directory %s (%zu task%s merged", run_dir,
                names.n - nmissing, names.n - nmissing == 1 ? "" : "s");
        if (nmissing)
            fprintf(stderr, ", %zu without a result", nmissing);
        fprintf(stderr, ")\n%s", sum.data ? sum.data : "");
    }
    buf_release(&out);
    buf_release(&sum);
    for (size_t k = 0; k < ng; k++) {
        free(g[k].key);
        mp_report_release(&g[k].rep);
        mp_strv_release(&g[k].gaps);
        mp_strv_release(&g[k].gap_why);
    }
    free(g);
    mp_strv_release(&names);
    return exit_code;
}
