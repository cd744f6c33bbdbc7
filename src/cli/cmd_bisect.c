/* cmd_bisect.c - `moeprobe bisect`: one candidate, many builds. Each probe
 * is one qualify of the candidate on one build (the server command's
 * {build} filled in): the usual attempt, knob delivery, resolution, output
 * check and diagnosis (run/runner.h), stored as a candidate row of its own
 * plus a bisect_probes row. Every decision is recomputed from the store
 * after each probe (report/bisect.h, verdict/bisect.h), so `--resume`
 * continues exactly where the store stands. docs/bisect.md. */
#include "compat.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/opts.h"
#include "cli/resume.h"
#include "cli/scoreopt.h"
#include "cli/session.h"
#include "err.h"
#include "escape.h"
#include "file.h"
#include "quality/quality.h"
#include "report/bisect.h"
#include "report/report.h"
#include "run/runner.h"
#include "store/store.h"
#include "verdict/stats.h"
#include "xalloc.h"

/* A progress line on stderr, "moeprobe: bisect: " + the formatted text: build
 * names (the user's list), the engine's resolved names and the probes' why
 * go through the terminal's mask and escaping (escape.h mp_term_write), as
 * every other message does. */
static void bsay(const char *fmt, ...) MP_PRINTF(1, 2);
static void bsay(const char *fmt, ...)
{
    char line[4096];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    size_t len = MP_MIN((size_t)n, sizeof(line) - 1);
    fputs("moeprobe: bisect: ", stderr);
    mp_term_write(stderr, line, len);
    fputc('\n', stderr);
}

static const char bisect_head[] =
    "usage: moeprobe bisect --good G --bad B [--builds FILE | --build X ...]\n"
    "                       [--candidate 'NAME: KNOBS'] [--by verdict|resolved|throughput:PCT]\n"
    "                       [--probe-requests N] [options] -- SERVER COMMAND WITH {build}...\n"
    "       moeprobe bisect --resume RUNDIR [--quiet] [--json]\n"
    "\n"
    "Finds the first build on which one candidate stops behaving like it did on the\n"
    "good build. {build} in the server command is replaced by each build's name (an\n"
    "image tag: 'podman run ... vllm/vllm-openai:{build} ...'; a virtual environment:\n"
    "'{build}/bin/vllm serve ...'). A probe is one qualify of the candidate (the\n"
    "--candidate given, else 'auto': no knobs) on one build: knob delivery,\n"
    "resolution, load, output check, the correctness gate against the good build's\n"
    "logprobs and task answers (--agreement N, --accuracy N; a build serving fluent\n"
    "wrong output is wrong-output: bad) and the CUDA_LAUNCH_BLOCKING=1 diagnosis. The bad\n"
    "build is probed first (it sets how many clean requests a probe needs: enough that\n"
    "a build failing as often as it did would have failed with 95 % probability), then\n"
    "the good one, then the middle of what is left (binary search). Without a list\n"
    "(only --good and --bad) both builds are compared side by side.\n"
    "\n";

static const char bisect_tail[] =
    "\n"
    "Reports (report.json = `bisect --json`, report.md, report.html) name the first bad\n"
    "and last good build, the difference between them (engine version, resolved\n"
    "kernels, verdict, error class, throughput), every probe with its evidence, and\n"
    "the confidence of the answer. docs/bisect.md has the rules.\n"
    "\n"
    "exit codes: 0 the first bad build was found (or the two builds differ);\n"
    "            1 no answer (the bad build behaved like the good one, the good one\n"
    "            could not be probed, or unprobeable builds hide the change);\n"
    "            2 usage or input error; 3 internal or I/O error; 128+N killed by signal N\n";

/* bisect's own options, as parsed into struct mp_opts */
struct bisect_args {
    const char *good, *bad, *builds_file, *by;
    struct mp_strv builds;
    unsigned long probe_requests;
};

/* --builds FILE: one build per line, oldest first; '#' comments, blank
 * lines skipped, surrounding blanks trimmed. 0 or -1 (message printed). */
static int read_builds_file(const char *path, struct mp_strv *out)
{
    struct buf fb = BUF_INIT;
    struct mp_diag d = MP_DIAG_INIT;
    int rc = mp_read_file(path, 1 << 20, &fb, &d);
    if (rc < 0) {
        buf_release(&fb);
        return mp_error("bisect: cannot read --builds '%s': %s", path,
                        d.msg[0] ? d.msg : mp_strerror(rc)), -1;
    }
    char *text = fb.data ? buf_detach(&fb, NULL) : xstrdup("");
    size_t line = 0;
    for (char *p = text, *nl; p && *p; p = nl ? nl + 1 : NULL) {
        nl = strchr(p, '\n');
        line++;
        if (nl)
            *nl = '\0';
        char *h = strchr(p, '#');
        if (h)
            *h = '\0';
        while (isspace((unsigned char)*p))
            p++;
        size_t l = strlen(p);
        while (l && isspace((unsigned char)p[l - 1]))
            p[--l] = '\0';
        if (!l)
            continue;
        if (strpbrk(p, " \t")) {
            mp_error("bisect: %s:%zu: a build name has no blanks ('%s')", path, line, p);
            free(text);
            return -1;
        }
        mp_strv_push(out, p);
    }
    free(text);
    return 0;
}

/* The build list, checked: G and B in it, no duplicates. 0 or -1. */
static int settle_builds(struct bisect_args *ba)
{
    if (!ba->good || !ba->bad)
        return mp_error("bisect: --good G and --bad B are needed"), -1;
    if (!strcmp(ba->good, ba->bad))
        return mp_error("bisect: --good and --bad name the same build '%s'", ba->good), -1;
    if (ba->builds_file && ba->builds.n)
        return mp_error("bisect: give --builds FILE or --build X, not both"), -1;
    if (ba->builds_file && read_builds_file(ba->builds_file, &ba->builds) < 0)
        return -1;
    if (!ba->builds.n) {
        mp_strv_push(&ba->builds, ba->good);
        mp_strv_push(&ba->builds, ba->bad);
    }
    for (size_t i = 0; i < ba->builds.n; i++)
        for (size_t j = i + 1; j < ba->builds.n; j++)
            if (!strcmp(ba->builds.v[i], ba->builds.v[j]))
                return mp_error("bisect: build '%s' is listed twice", ba->builds.v[i]), -1;
    if (!mp_strv_has(&ba->builds, ba->good) || !mp_strv_has(&ba->builds, ba->bad))
        return mp_error("bisect: --good '%s' and --bad '%s' must both be in the build list",
                        ba->good, ba->bad), -1;
    return 0;
}

/* The server command with {build} replaced (owned words, NULL-ended). */
static char **subst_cmd(char *const *cmd, size_t n, const char *build)
{
    char **out = xcalloc(n + 1, sizeof(*out));
    for (size_t i = 0; i < n; i++) {
        struct buf b = BUF_INIT;
        const char *p = cmd[i], *hit;
        while ((hit = strstr(p, "{build}")) != NULL) {
            buf_add(&b, p, (size_t)(hit - p));
            buf_adds(&b, build);
            p = hit + 7;
        }
        buf_adds(&b, p);
        out[i] = buf_detach(&b, NULL);
    }
    return out;
}

static void free_words(char **w, size_t n)
{
    for (size_t i = 0; w && i < n; i++)
        free(w[i]);
    free(w);
}

static bool has_placeholder(char *const *cmd, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strstr(cmd[i], "{build}"))
            return true;
    return false;
}

/* A candidate name for the probe of build (attempt directories are named
 * after it): the build's characters that are safe in a file name, made
 * unique among rep's candidates. */
static char *probe_name(const struct mp_report *rep, const char *build, long pos)
{
    struct buf b = BUF_INIT;
    for (const char *p = build; *p && b.len < 40; p++)
        buf_addc(&b, isalnum((unsigned char)*p) || *p == '.' || *p == '-' || *p == '_' ? *p : '_');
    if (!b.len || b.data[0] == '.')
        buf_printf(&b, "build%ld", pos);
    char *name = buf_detach(&b, NULL);
    for (size_t i = 0; i < rep->n; i++) {
        if (!strcmp(rep->c[i].cand.name, name)) {
            char *u = xasprintf("%s-%ld", name, pos);
            free(name);
            return u;
        }
    }
    return name;
}

struct bisect_run {
    struct mp_opts *o;
    struct bisect_args *ba;
    struct mp_session *ss;
    struct mp_runctx ctx;
    struct mp_report rep;          /* live: every probe's candidate and attempts */
    char **tmpl;                   /* the server command as given (with {build}) */
    size_t ntmpl;
    const struct mp_candidate *cand; /* the candidate probed */
    double probe_s;                /* summed wall time of finished probes */
    size_t nprobe_s;
};

/* The model as the store holds it now (rep_out: the loaded report, which
 * the model borrows). 0, or an exit code (message printed). */
static int load_model(struct bisect_run *br, struct mp_report *rep_out, struct mp_bisect_model *m)
{
    mp_report_init(rep_out, br->o->out_dir);
    if (mp_store_load(br->ss->store, rep_out, NULL) < 0)
        return mp_session_store_failed(br->ss);
    mp_report_finalize(rep_out);
    struct mp_store_bisect sb;
    if (mp_store_bisect_load(br->ss->store, &sb) < 0)
        return mp_session_store_failed(br->ss);
    char why[256];
    if (mp_bisect_model_build(rep_out, &sb, m, why, sizeof(why)) < 0) {
        mp_error("%s", why);
        return MP_EXIT_INTERNAL;
    }
    return 0;
}

/* The normal attempts of candidate ci as geometric trials. */
static size_t trials_of(const struct mp_cand_report *c, struct mp_stats_attempt *t, size_t cap)
{
    size_t n = 0;
    for (size_t k = 0; k < c->nattempts && n < cap; k++) {
        const struct mp_attempt_result *a = &c->attempts[k];
        if (a->launch_blocking || a->outcome == MP_OUT_ERROR || a->outcome == MP_OUT_INTERRUPTED)
            continue;
        bool failed = a->outcome == MP_OUT_CRASH || a->outcome == MP_OUT_HANG;
        t[n].failed = failed;
        t[n].served = failed ? a->ok_before_failure : a->req_ok;
        n++;
    }
    return n;
}

/* After the bad build's probe: how many clean requests every later probe
 * needs (stored). 0 or an exit code. */
static int settle_required(struct bisect_run *br, size_t ci)
{
    struct mp_stats_attempt t[16];
    size_t n = trials_of(&br->rep.c[ci], t, MP_ARRAY_SIZE(t));
    double p = 0;
    char why[512];
    unsigned long req = mp_bisect_required(t, n, br->ba->probe_requests, &p, why, sizeof(why));
    if (mp_store_bisect_set_required(br->ss->store, req, p, why) < 0)
        return mp_session_store_failed(br->ss);
    if (!br->o->quiet)
        bsay("%s", why);
    return 0;
}

/* Run probe ci (its candidate row exists) on build: the attempt, and the
 * diagnosis of a crash as qualify does it. 0, or an exit code. */
static int run_probe(struct bisect_run *br, size_t ci, const char *build, unsigned long required)
{
    char **cmd = subst_cmd(br->tmpl, br->ntmpl, build);
    struct mp_workload wl = br->o->wl;
    wl.min_total_ok = required;
    br->ctx.cmd = cmd;
    br->ctx.ncmd = br->ntmpl;
    br->ctx.wl = &wl;
    int ec = 0;
    const struct mp_attempt_result *a = NULL;
    if (br->rep.c[ci].nattempts)
        a = mp_cand_primary(&br->rep.c[ci]); /* resumed: its finished attempt stands */
    int r = a ? 0 : mp_run_attempt(&br->ctx, &br->rep, ci, false, NULL, &a);
    bool spawn_failed = r == MP_ECOMMAND;
    if (r < 0 && !spawn_failed) { /* a build whose command cannot run is a skipped probe */
        ec = r == MP_EUSAGE ? MP_EXIT_USAGE : MP_EXIT_INTERNAL;
        goto out;
    }
    if (!br->ctx.signo && !br->o->no_diagnose && a && a->outcome == MP_OUT_CRASH &&
        mp_diagnose(&br->ctx, &br->rep, ci) < 0)
        ec = MP_EXIT_INTERNAL;
    struct mp_diag_policy pol; /* a crash only: diagnosed, or skipped with --no-diagnose */
    mp_run_diag_policy(&br->ctx, !br->o->no_diagnose, br->o->no_diagnose, false, &pol);
    if (!ec && !br->ctx.signo) {
        mp_run_candidate_diagnosis(&br->rep, ci, &pol);
        if (mp_session_fingerprint(br->ss, &br->rep) < 0)
            ec = MP_EXIT_INTERNAL;
        else if (mp_store_candidate_done(br->ss->store, ci, &br->rep.c[ci].diag, &pol) < 0)
            ec = mp_session_store_failed(br->ss);
    }
    for (size_t k = 0; k < br->rep.c[ci].nattempts; k++) {
        br->probe_s += br->rep.c[ci].attempts[k].wall_s;
    }
    br->nprobe_s++;
out:
    br->ctx.cmd = NULL;
    br->ctx.wl = &br->o->wl;
    free_words(cmd, br->ntmpl);
    return ec;
}

static void say_step(const struct bisect_run *br, const struct mp_bisect_model *m,
                     const struct mp_bisect_probe_view *pv)
{
    if (br->o->quiet)
        return;
    if (pv)
        bsay("probe %ld, %s: %s (%s)", pv->sp->step, pv->sp->build,
             pv->finished ? mp_probe_outcome_name(pv->outcome) : "unfinished", pv->why);
    if (m->step.done || m->good_probe < 0)
        return;
    char eta[32] = "unknown yet";
    if (br->nprobe_s)
        mp_stats_fmt_duration(eta, sizeof(eta),
                              br->probe_s / (double)br->nprobe_s * m->step.probes_left);
    bsay("%zu build%s left between %s and %s, about %u more probe%s, ETA %s", m->step.left,
         m->step.left == 1 ? "" : "s",
         m->last_good >= 0 ? m->pv[m->last_good].sp->build : m->sb.good,
         m->first_bad >= 0 ? m->pv[m->first_bad].sp->build : m->sb.bad, m->step.probes_left,
         m->step.probes_left == 1 ? "" : "s", eta);
}

/* The next probe: an open one left by an interrupted run, else the one
 * the search asks for. *done when there is none. 0 or an exit code. */
static int next_probe(struct bisect_run *br, const struct mp_bisect_model *m, bool *done)
{
    const struct mp_store_probe *open = NULL;
    for (size_t i = 0; i < m->npv && !open; i++)
        if (!m->pv[i].finished)
            open = m->pv[i].sp;
    *done = !open && m->step.done;
    if (*done)
        return 0;
    struct mp_store_probe p = {0};
    if (open) {
        p = *open;
    } else {
        p.step = (long)m->npv + 1;
        p.pos = m->build_of[m->step.next];
        p.build = m->sb.builds.v[p.pos];
        struct mp_candidate c;
        char *name = probe_name(&br->rep, p.build, p.pos);
        mp_candidate_copy(&c, br->cand);
        free(c.name);
        c.name = name;
        p.cand_pos = (long)mp_report_add_candidate(&br->rep, &c);
        mp_candidate_release(&c);
        if (mp_store_candidate(br->ss->store, (size_t)p.cand_pos, &br->rep.c[p.cand_pos].cand) < 0)
            return mp_session_store_failed(br->ss);
        /* the good build's output is what every probe's is compared with
         * (verdict/correct.h: in a bisect run the reference is the task
         * gate's bar too) */
        if (p.pos == (long)m->build_of[0] &&
            mp_store_set_reference(br->ss->store, br->rep.c[p.cand_pos].cand.name) < 0)
            return mp_session_store_failed(br->ss);
    }
    p.required = m->sb.required_set ? m->sb.required : br->ba->probe_requests;
    p.outcome = MP_STORE_PROBE_OPEN;
    p.why = NULL;
    if (mp_store_bisect_probe(br->ss->store, &p) < 0)
        return mp_session_store_failed(br->ss);
    if (!br->o->quiet)
        bsay("probe %ld: build %s%s", p.step, p.build,
             p.pos == (long)m->build_of[m->m - 1] ? " (the bad build first: it sets the bar)"
             : p.pos == (long)m->build_of[0]      ? " (the good build: the reference)"
                                                  : "");
    int ec = run_probe(br, (size_t)p.cand_pos, p.build, p.required);
    if (ec || br->ctx.signo)
        return ec;
    /* judged from the store, as every later step and the report see it */
    struct mp_report cur;
    struct mp_bisect_model now;
    ec = load_model(br, &cur, &now);
    const struct mp_bisect_probe_view *pv = NULL;
    for (size_t i = 0; !ec && i < now.npv; i++) {
        /* every judged probe's row follows the model (the bad build's is
         * judged once the good one is in) */
        const struct mp_bisect_probe_view *q = &now.pv[i];
        if (q->sp->step == p.step)
            pv = q;
        if (!q->finished || q->outcome == MP_PROBE_UNKNOWN)
            continue;
        struct mp_store_probe row = *q->sp;
        row.outcome = q->outcome == MP_PROBE_GOOD  ? MP_STORE_PROBE_GOOD
                      : q->outcome == MP_PROBE_BAD ? MP_STORE_PROBE_BAD
                                                   : MP_STORE_PROBE_SKIP;
        row.why = (char *)q->why;
        if (mp_store_bisect_probe(br->ss->store, &row) < 0)
            ec = mp_session_store_failed(br->ss);
    }
    if (!ec && pv && pv->rank == (long)now.m - 1 && !now.sb.required_set)
        ec = settle_required(br, (size_t)p.cand_pos);
    if (!ec)
        say_step(br, &now, pv);
    mp_bisect_model_release(&now);
    mp_report_release(&cur);
    return ec;
}

/* report.json/md/html from the store; the JSON or Markdown on stdout;
 * *answer: the first bad build was found. 0 or an exit code. */
static int write_bisect_reports(struct bisect_run *br, bool *answer)
{
    struct mp_report fin;
    struct mp_bisect_model m;
    int ec = load_model(br, &fin, &m);
    if (ec) {
        mp_report_release(&fin);
        return ec;
    }
    struct buf j = BUF_INIT, md = BUF_INIT, html = BUF_INIT;
    mp_bisect_json(&fin, &m, &j);
    mp_bisect_markdown(&fin, &m, &md);
    mp_bisect_html(&fin, &m, &html);
    const char *dir = br->o->out_dir;
    int e = mp_write_file_atomic(dir, "report.json", j.data, j.len);
    if (e == 0)
        e = mp_write_file_atomic(dir, "report.md", md.data, md.len);
    if (e == 0)
        e = mp_write_file_atomic(dir, "report.html", html.data, html.len);
    if (e < 0) {
        mp_error("cannot write the report into '%s': %s", dir, mp_strerror(e));
        ec = MP_EXIT_INTERNAL;
    }
    struct buf *show = br->o->json ? &j : &md;
    fwrite(show->data, 1, show->len, stdout);
    if (fflush(stdout) != 0)
        ec = MP_EXIT_INTERNAL;
    if (!br->o->quiet) {
        fputs("\nmoeprobe: run directory ", stderr);
        mp_term_write(stderr, dir, strlen(dir));
        fputc('\n', stderr);
        bsay("%s", m.summary);
    }
    *answer = m.step.done && m.first_bad >= 0 && m.last_good >= 0 && !m.step.ambiguous;
    buf_release(&j);
    buf_release(&md);
    buf_release(&html);
    mp_bisect_model_release(&m);
    mp_report_release(&fin);
    return ec;
}

/* Parse everything: bisect's options, the shared ones (argv as resumed). */
static int parse_all(int argc, char **argv, struct bisect_args *ba, struct mp_opts *o)
{
    int rc = mp_opts_parse(o, MP_CMD_BISECT, argc, argv, bisect_head, bisect_tail);
    if (rc > 0)
        return -1; /* --help */
    if (rc < 0)
        return MP_EXIT_USAGE;
    ba->good = o->good;
    ba->bad = o->bad;
    ba->builds_file = o->builds_file;
    ba->by = o->by;
    ba->probe_requests = o->probe_requests;
    for (size_t i = 0; i < o->builds.n; i++)
        mp_strv_push(&ba->builds, o->builds.v[i]);
    if (settle_builds(ba) < 0)
        return MP_EXIT_USAGE;
    char why[200];
    struct mp_bisect_cfg cfg;
    if (ba->by && mp_bisect_parse_by(ba->by, &cfg, why, sizeof(why)) != 0)
        return mp_error("bisect: %s", why), MP_EXIT_USAGE;
    if (!o->ncmd || !has_placeholder(o->cmd, o->ncmd))
        return mp_error("bisect: the server command must say where the build goes: put {build} "
                        "in it (an image tag, a virtual environment's path)"), MP_EXIT_USAGE;
    if (o->ncands_given > 1 || o->gpus || o->slurm || o->slurm_script)
        return mp_error("bisect: one candidate is probed per build (give one --candidate), "
                        "serially (no --gpus/--slurm)"), MP_EXIT_USAGE;
    return mp_cli_run_dir_check("bisect", o->resume ? o->resume : o->out_dir, o->resume != NULL)
               ? MP_EXIT_USAGE : 0;
}

/* A resumed run: end what the dead run left, check the machine, take the
 * stored candidates and attempts as the live report. 0 or an exit code. */
static int resume_state(struct bisect_run *br)
{
    int killed = 0;
    struct mp_store *st = br->ss->store;
    if (mp_run_end_dead_run(st, &killed) < 0 || mp_store_run_resumed(st, br->ss->started) < 0)
        return mp_session_store_failed(br->ss);
    if (killed && !br->o->quiet)
        fprintf(stderr, "moeprobe: killed %d engine process(es) left by the interrupted run\n",
                killed);
    struct mp_report old;
    mp_report_init(&old, br->o->out_dir);
    if (mp_store_load(st, &old, NULL) < 0) {
        mp_report_release(&old);
        return mp_session_store_failed(br->ss);
    }
    char *why = mp_fingerprint_mismatch(&old.fp, &br->rep.fp, true);
    if (why) {
        mp_error("refusing to resume '%s' on a different machine (%s)", br->o->out_dir, why);
        free(why);
        mp_report_release(&old);
        return MP_EXIT_USAGE;
    }
    mp_fingerprint_detect_ex(&old.fp, NULL);
    mp_report_release(&br->rep);
    br->rep = old;
    return mp_store_set_fingerprint(st, &br->rep.fp, &br->ss->fpx) < 0
               ? mp_session_store_failed(br->ss) : 0;
}

/* A new run: its arguments and the bisection's settings. */
static int record_new(struct bisect_run *br, int argc, char **argv)
{
    if (mp_session_record_run(br->ss, argv + 1, (size_t)(argc - 1), &br->rep) < 0)
        return MP_EXIT_INTERNAL;
    struct mp_store_bisect sb = {.good = (char *)br->ba->good, .bad = (char *)br->ba->bad,
                                 .builds = br->ba->builds,
                                 .by = (char *)(br->ba->by ? br->ba->by : "verdict"),
                                 .candidate = br->cand->name,
                                 .probe_requests = br->ba->probe_requests};
    struct mp_bisect_cfg cfg;
    char why[200];
    if (mp_bisect_parse_by(sb.by, &cfg, why, sizeof(why)) == 0) {
        sb.by = (char *)mp_bisect_by_name(cfg.by);
        sb.pct = cfg.pct;
    }
    return mp_store_bisect_begin(br->ss->store, &sb) < 0 ? mp_session_store_failed(br->ss) : 0;
}

static int bisect_loop(struct bisect_run *br)
{
    for (;;) {
        struct mp_report cur;
        struct mp_bisect_model m;
        int ec = load_model(br, &cur, &m);
        bool done = false;
        if (!ec)
            ec = next_probe(br, &m, &done);
        mp_bisect_model_release(&m);
        mp_report_release(&cur);
        if (ec || done || br->ctx.signo)
            return ec;
    }
}

int cmd_bisect(int argc, char **argv)
{
    struct bisect_args ba = {0};
    struct mp_opts o;
    struct mp_strv rargv = MP_STRV_INIT;
    char *run_cwd = NULL;
    struct mp_session ss = MP_SESSION_INIT;
    struct bisect_run br = {.o = &o, .ba = &ba, .ss = &ss};
    struct mp_candidate autoc = {0};
    struct mp_cli_score sco = {0};
    char **good_cmd = NULL;
    memset(&o, 0, sizeof(o));
    int ec = mp_cli_resume_args(argc, argv, "bisect", &rargv, &run_cwd);
    if (ec) {
        mp_strv_release(&rargv);
        free(run_cwd);
        return ec;
    }
    if (rargv.n) {
        argc = (int)rargv.n;
        argv = mp_strv_array(&rargv);
    }
    ec = parse_all(argc, argv, &ba, &o);
    mp_report_init(&br.rep, o.out_dir ? o.out_dir : ".");
    if (ec) {
        ec = ec < 0 ? MP_EXIT_OK : ec;
        goto out;
    }
    if (mp_cli_score_init(&sco, &o) < 0) {
        ec = MP_EXIT_USAGE;
        goto out;
    }
    if (o.resume) {
        free(o.out_dir);
        o.out_dir = xstrdup(o.resume);
        free(br.rep.run_dir);
        br.rep.run_dir = xstrdup(o.out_dir);
    }
    if (o.ncands_given)
        br.cand = &o.cands[0];
    else {
        mp_candidate_from_knobs("auto", "", &autoc, NULL);
        br.cand = &autoc;
    }
    /* the session checks a runnable command: the good build's */
    br.tmpl = o.cmd;
    br.ntmpl = o.ncmd;
    good_cmd = subst_cmd(o.cmd, o.ncmd, ba.good);
    o.cmd = good_cmd;
    ec = mp_session_begin(&ss, "bisect", &o, o.resume ? MP_SESSION_RESUME : 0, br.cand, 1, &br.rep);
    if (!ec)
        ec = o.resume ? resume_state(&br) : record_new(&br, argc, argv);
    if (!ec) {
        mp_session_runctx(&ss, &br.ctx);
        br.ctx.plan_said = true; /* bisect says its own plan */
        br.ctx.cwd = run_cwd;
        if (!o.no_quality)
            br.ctx.quality_prompts = mp_quality_prompts(&br.ctx.nquality);
        br.ctx.score = mp_cli_score_plan(&sco); /* a build serving wrong output is bad */
        if (!o.quiet)
            bsay("%zu builds in the list; %s (good) to %s (bad)", ba.builds.n, ba.good, ba.bad);
        ec = bisect_loop(&br);
    }
    if (!ec || br.ctx.signo) {
        bool answer = false;
        if (mp_session_finish(&ss, br.ctx.signo != 0) < 0)
            ec = MP_EXIT_INTERNAL;
        int rc = write_bisect_reports(&br, &answer);
        ec = br.ctx.signo ? 128 + br.ctx.signo : rc ? rc : answer ? MP_EXIT_OK : MP_EXIT_NONE;
    }
out:
    if (good_cmd) {
        o.cmd = br.tmpl;
        free_words(good_cmd, o.ncmd);
    }
    mp_session_end_exit(&ss, ec, &br.rep);
    mp_report_release(&br.rep);
    mp_candidate_release(&autoc);
    mp_cli_score_release(&sco);
    mp_opts_release(&o);
    mp_strv_release(&ba.builds);
    mp_strv_release(&rargv);
    free(run_cwd);
    return ec;
}
