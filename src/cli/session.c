/* session.c - the set-up and tear-down every run command shares, and the
 * reports rendered from the evidence store (cli/session.h). */
#include "cli/session.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "clock.h"
#include "err.h"
#include "escape.h"
#include "file.h"
#include "inspect/inspect.h"
#include "knowledge/knowledge.h"
#include "net.h"
#include "proc/proc.h"
#include "report/fingerprint.h"
#include "report/report.h"
#include "observe/telemetry.h"
#include "run/inherit.h"
#include "run/runner.h"
#include "store/runinfo.h"
#include "store/store.h"
#include "verdict/inherit.h"
#include "version.h"
#include "xalloc.h"

/* --model-dir: what the checkpoint says joins the fingerprint (moeprobe
 * inspect). Read before anything is created, so that a bad folder leaves
 * no run behind. 0 or MP_EXIT_USAGE (message printed; *in released). */
static int inspect_model_dir(const char *dir, struct mp_inspect *in)
{
    struct mp_diag d = MP_DIAG_INIT;
    if (mp_inspect_dir(dir, in, &d) < 0) {
        char m[600];
        mp_diag_format(&d, m, sizeof(m));
        mp_error("--model-dir: %s", m);
        mp_inspect_release(in);
        return MP_EXIT_USAGE;
    }
    return 0;
}

static void apply_model_dir(struct mp_session *s, const char *dir, const struct mp_inspect *in,
                            struct mp_report *rep)
{
    s->fpx.model_dir = xstrdup(dir);
    s->fpx.quantization = mp_inspect_quantization(in);
    if (!s->fpx.quantization)
        mp_warn("--model-dir '%s': no quantization found in config.json or "
                "hf_quant_config.json", dir);
    mp_report_set_checkpoint(rep, in);
    s->fpx.checkpoint_json = rep->checkpoint_json ? xstrdup(rep->checkpoint_json) : NULL;
}

/* What the attempts would refuse as usage errors, checked before the store
 * is created, so that the refusal leaves no run behind: --port taken by
 * someone else, a server command that cannot be run (a resumed run starts
 * it in the directory it was started in: left to the attempt). 0 or
 * MP_EXIT_USAGE (message printed, in the attempt's words). */
static int check_launch(const struct mp_opts *o, unsigned flags)
{
    if (flags & MP_SESSION_ATTACH)
        return 0; /* someone else's server: no port, no command of ours */
    if (o->port > 0 && mp_port_in_use(o->port)) {
        mp_error("port %d is already in use; pick another with --port or leave it out", o->port);
        return MP_EXIT_USAGE;
    }
    if (!(flags & MP_SESSION_RESUME) && o->ncmd > 0) {
        int rc = mp_proc_find_command(o->cmd[0]);
        if (rc < 0) {
            mp_error("cannot run '%s': %s", o->cmd[0], mp_strerror(rc));
            return MP_EXIT_USAGE;
        }
    }
    return 0;
}

bool mp_cli_out_dir_input_error(int rc)
{
    /* where --out points is the user's choice: a missing parent, a path it
     * cannot write or that is no directory are input errors, as is a run
     * directory in use; a full disk or an I/O error are not */
    return rc == MP_ESTATE || rc == -ENOENT || rc == -EACCES || rc == -EPERM || rc == -EROFS ||
           rc == -ENOTDIR || rc == -ENAMETOOLONG || rc == -ELOOP;
}

/* What the engines inherit from our environment (none for a server someone
 * else started), judged by the knowledge; with --clean-env removed from it
 * here, before any engine starts. 0 or MP_EXIT_INTERNAL. */
static int inherit_env(struct mp_session *s, unsigned flags, struct mp_report *rep)
{
    extern char **environ;
    mp_inherited_release(&rep->inherited);
    if (flags & MP_SESSION_ATTACH)
        return 0;
    mp_inherit_collect(environ, s->o->cmd, s->o->ncmd, s->o->clean_env, &rep->inherited);
    mp_inherit_judge(s->kn, NULL, &rep->inherited);
    int rc = mp_inherit_apply_clean(&rep->inherited);
    if (rc < 0) {
        mp_error("--clean-env: %s", mp_strerror(rc));
        return MP_EXIT_INTERNAL;
    }
    return 0;
}

/* Can moeprobe hold the workload's requests in flight (its descriptors:
 * one connection each, and its own files)? Checked before anything is
 * created: running out later would be moeprobe's failure, never the
 * engine's. 0 or MP_EXIT_USAGE (message printed, with the numbers). */
static int check_fds(const char *sub, const struct mp_opts *o)
{
    long level = 1;
    for (size_t k = 0; k < o->wl.nphases; k++)
        level = MP_MAX(level, (long)o->wl.phases[k].level);
    if (!strcmp(sub, "soak"))
        level = MP_MAX(level, (long)o->concurrency);
    struct mp_proc_fd_room room;
    if (mp_proc_fd_fits(level, &room))
        return 0;
    mp_error("the workload runs up to %ld requests at once, which needs about %lu file "
             "descriptors (one per request, %lu for moeprobe's own files); moeprobe may open %lu "
             "(ulimit -n; hard limit %lu): raise the limit (ulimit -n %lu, or the hard limit in "
             "/etc/security/limits.conf) or lower the concurrency", level, room.need,
             room.need - (unsigned long)level, room.limit, room.hard, room.need);
    return MP_EXIT_USAGE;
}

int mp_session_begin(struct mp_session *s, const char *sub, const struct mp_opts *o,
                     unsigned flags, const struct mp_candidate *cands, size_t ncands,
                     struct mp_report *rep)
{
    struct mp_inspect in;
    int rc;
    s->sub = sub;
    s->o = o;
    if (mp_cli_knowledge(sub, o->knowledge_file, &s->kn_owned, &s->kn) < 0)
        return MP_EXIT_USAGE;
    if ((rc = check_fds(sub, o)) != 0 || (rc = check_launch(o, flags)) != 0)
        return rc;
    if (o->model_dir && (rc = inspect_model_dir(o->model_dir, &in)) != 0)
        return rc;
    struct mp_diag d = MP_DIAG_INIT;
    unsigned sf = MP_STORE_LOCK | (flags & MP_SESSION_RESUME ? 0 : MP_STORE_CREATE);
    /* only a store this session made is ever removed (mp_session_end_exit) */
    char *db = xasprintf("%s/%s", o->out_dir, MP_STORE_DB_NAME);
    bool existed = access(db, F_OK) == 0;
    free(db);
    rc = mp_store_open(o->out_dir, sf, &s->store, &d);
    if (rc < 0) {
        mp_error("%s", d.msg[0] ? d.msg : mp_strerror(rc));
        rc = mp_cli_out_dir_input_error(rc) ? MP_EXIT_USAGE : MP_EXIT_INTERNAL;
        goto out;
    }
    s->created = !(flags & MP_SESSION_RESUME) && !existed;
    mp_store_mask_init(mp_store_mask(s->store), cands, ncands, o->api_key);
    mp_store_mask_add_args(mp_store_mask(s->store), o->cmd, o->ncmd);
    /* the terminal masks what the files mask */
    mp_store_mask_merge(mp_store_mask_process(), mp_store_mask(s->store));
    if ((rc = mp_signals_begin(&s->sig)) < 0) {
        mp_error("cannot set up signal handling: %s", mp_strerror(rc));
        rc = MP_EXIT_INTERNAL;
        goto out;
    }
    mp_iso8601(mp_wall_ns(), s->started, sizeof(s->started));
    free(rep->started);
    rep->started = xstrdup(s->started);
    mp_fingerprint_detect_ex(&rep->fp, &s->fpx);
    if (o->model_dir)
        apply_model_dir(s, o->model_dir, &in, rep);
    if ((rc = inherit_env(s, flags, rep)) != 0)
        goto out;
    /* the GPU memory in use before this run starts an engine (run/gpuwait.h) */
    if (!(flags & MP_SESSION_ATTACH))
        mp_gpuwait_open(&s->gpuwait, mp_gpu_sampler_open(NULL, getenv("CUDA_VISIBLE_DEVICES")));
out:
    if (o->model_dir)
        mp_inspect_release(&in);
    return rc;
}

void mp_session_runctx(const struct mp_session *s, struct mp_runctx *ctx)
{
    const struct mp_opts *o = s->o;
    memset(ctx, 0, sizeof(*ctx));
    ctx->run_dir = o->out_dir;
    ctx->cmd = o->cmd;
    ctx->ncmd = o->ncmd;
    ctx->port = o->port;
    ctx->kn = s->kn;
    ctx->wl = &o->wl;
    ctx->signal_fd = s->sig.fd;
    ctx->progress = isatty(2) && !o->quiet;
    ctx->progress_lines = !isatty(2) && !o->quiet;
    ctx->quiet = o->quiet;
    ctx->diag_max_requests = o->diag_max_requests;
    ctx->diag_budget_s = o->diag_budget_s;
    ctx->store = s->store;
    ctx->gpuwait = (struct mp_gpuwait *)&s->gpuwait;
    ctx->no_coredump = o->no_coredump;
    ctx->keep_coredumps = o->keep_coredumps;
}

int mp_session_store_failed(const struct mp_session *s)
{
    mp_error("cannot write the evidence store in '%s': %s", s->o->out_dir,
             mp_store_errmsg(s->store));
    mp_store_record_io_stop(s->store); /* best effort: no attempt left "running" */
    return MP_EXIT_INTERNAL;
}

int mp_session_record_run(struct mp_session *s, char **args, size_t nargs,
                          const struct mp_report *rep)
{
    if (mp_store_run_begin(s->store, s->sub, args, nargs, mp_version, s->started) < 0 ||
        mp_store_set_report_opts(s->store, s->o->objective, s->o->percentiles,
                                 s->o->npercentiles) < 0)
        goto failed;
    for (size_t i = 0; i < rep->n; i++) {
        if (mp_store_candidate(s->store, i, &rep->c[i].cand) < 0)
            goto failed;
    }
    if (mp_store_set_fingerprint(s->store, &rep->fp, &s->fpx) < 0 ||
        mp_store_set_inherited(s->store, &rep->inherited) < 0)
        goto failed;
    return 0;
failed:
    mp_session_store_failed(s);
    return -1;
}

int mp_session_fingerprint(struct mp_session *s, struct mp_report *rep)
{
    mp_report_fill_fingerprint(rep);
    for (size_t i = 0; i < rep->n && !s->fpx.quantization; i++) {
        const struct mp_attempt_result *p = mp_cand_primary(&rep->c[i]);
        if (p && p->res.quantization)
            s->fpx.quantization = xstrdup(p->res.quantization);
    }
    /* the judgement follows the engine version the log gave: stored again
     * only when it changed (each write grows the store's journal) */
    struct mp_inherited before;
    mp_inherited_copy(&before, &rep->inherited);
    mp_inherit_judge(s->kn, rep->fp.engine_version, &rep->inherited);
    bool changed = false;
    for (size_t i = 0; i < before.n; i++) {
        const char *a = before.v[i].affects, *b = rep->inherited.v[i].affects;
        /* what it acts on changes with the era too (VLLM_TEST_FORCE_FP8_MARLIN:
         * dense before vLLM 0.15, the MoE backend from 0.15) */
        changed |= before.v[i].acts != rep->inherited.v[i].acts ||
                   (a && b ? strcmp(a, b) != 0 : a != b);
    }
    mp_inherited_release(&before);
    if (mp_store_set_fingerprint(s->store, &rep->fp, &s->fpx) < 0 ||
        (changed && mp_store_set_inherited(s->store, &rep->inherited) < 0)) {
        mp_session_store_failed(s);
        return -1;
    }
    return 0;
}

int mp_session_finish(struct mp_session *s, bool interrupted)
{
    char iso[32];
    mp_iso8601(mp_wall_ns(), iso, sizeof(iso));
    if (mp_store_run_finish(s->store, iso, interrupted) < 0) {
        mp_session_store_failed(s);
        return -1;
    }
    return 0;
}

/* Write the three reports of rep (finalized) and print them. 0 or -1. */
static int write_reports(struct mp_report *rep, bool json_stdout, bool quiet)
{
    struct buf j = BUF_INIT, md = BUF_INIT, sum = BUF_INIT, html = BUF_INIT;
    int rc = 0;
    mp_report_json(rep, &j);
    mp_report_markdown(rep, &md);
    mp_report_html(rep, &html);
    int e = mp_write_file_atomic(rep->run_dir, "report.json", j.data, j.len);
    if (e == 0)
        e = mp_write_file_atomic(rep->run_dir, "report.md", md.data, md.len);
    if (e == 0)
        e = mp_write_file_atomic(rep->run_dir, "report.html", html.data, html.len);
    if (e < 0) {
        mp_error("cannot write the report into '%s': %s", rep->run_dir, mp_strerror(e));
        rc = -1;
    }
    if (json_stdout)
        fwrite(j.data, 1, j.len, stdout);
    else
        fwrite(md.data, 1, md.len, stdout);
    if (fflush(stdout) != 0)
        rc = -1;
    if (!quiet) {
        mp_report_summary(rep, &sum);
        fprintf(stderr, "\nmoeprobe: run directory %s\n", rep->run_dir);
        mp_term_write(stderr, sum.data, sum.len);
    }
    buf_release(&j);
    buf_release(&md);
    buf_release(&sum);
    buf_release(&html);
    return rc;
}

int mp_session_reports(struct mp_session *s, bool json, bool quiet, struct mp_report *loaded)
{
    struct mp_report out;
    mp_report_init(&out, s->o->out_dir);
    out.kn = s->kn; /* --knowledge: its known issues (borrowed until mp_session_end) */
    int rc = mp_store_load(s->store, &out, NULL);
    if (rc < 0) {
        mp_error("cannot read the evidence store back: %s", mp_store_errmsg(s->store));
        mp_report_release(&out);
        return -1;
    }
    mp_report_finalize(&out);
    rc = write_reports(&out, json, quiet);
    if (loaded)
        *loaded = out;
    else
        mp_report_release(&out);
    return rc;
}

void mp_session_end(struct mp_session *s)
{
    mp_gpuwait_close(&s->gpuwait);
    mp_signals_end(&s->sig);
    mp_store_close(s->store);
    s->store = NULL;
    mp_knowledge_free(s->kn_owned);
    s->kn_owned = NULL;
    s->kn = NULL;
    mp_fp_extra_release(&s->fpx);
    memset(&s->fpx, 0, sizeof(s->fpx));
}

/* Did the store record an attempt of one of rep's candidates? Also true
 * when it cannot say (the store is kept). */
static bool any_attempt(struct mp_session *s, const struct mp_report *rep)
{
    for (size_t i = 0; i < rep->n; i++) {
        int index = 1;
        if (mp_store_next_index(s->store, i, &index) < 0 || index > 1)
            return true;
    }
    return false;
}

int mp_session_end_exit(struct mp_session *s, int exit_code, const struct mp_report *rep)
{
    bool discard = s->store && s->created && exit_code == MP_EXIT_USAGE && !any_attempt(s, rep);
    mp_session_end(s);
    if (discard) {
        static const char *const names[] = {MP_STORE_DB_NAME, MP_STORE_DB_NAME "-wal",
                                            MP_STORE_DB_NAME "-shm", MP_STORE_DB_NAME "-journal",
                                            "lock"};
        const char *dir = s->o->out_dir;
        for (size_t i = 0; i < MP_ARRAY_SIZE(names); i++) {
            char *p = xasprintf("%s/%s", dir, names[i]);
            if (unlink(p) != 0 && errno != ENOENT)
                mp_warn("cannot remove '%s': %s", p, strerror(errno));
            free(p);
        }
        char *att = xasprintf("%s/attempts", dir);
        rmdir(att); /* only when empty: whatever is in it is not ours to remove */
        free(att);
    }
    return exit_code;
}
