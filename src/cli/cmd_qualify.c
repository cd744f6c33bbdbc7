/* cmd_qualify.c - `moeprobe qualify`, `diagnose` and `resolve`: their help,
 * resuming a run (its stored arguments, secrets restored from the
 * environment, the dead run's engines ended) and the candidate loop; the
 * set-up, tear-down and reports are the session's (cli/session.h). */
#include "compat.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/coverage.h"
#include "cli/era.h"
#include "cli/opts.h"
#include "cli/resume.h"
#include "cli/scoreopt.h"
#include "cli/session.h"
#include "err.h"
#include "escape.h"
#include "quality/quality.h"
#include "report/report.h"
#include "run/runner.h"
#include "store/store.h"
#include "sched/sched.h"
#include "secret.h"
#include "store/runinfo.h"
#include "verdict/broken.h"
#include "verdict/inherit.h"
#include "xalloc.h"

static const char qualify_head[] =
    "usage: moeprobe qualify [options] -- SERVER COMMAND...\n"
    "\n"
    "Starts the engine once per candidate knob set, reads which MoE backend each\n"
    "resolved to, drives warm-up, sequential and concurrent load, watches for every\n"
    "kind of failure, diagnoses crashes with CUDA_LAUNCH_BLOCKING=1, and writes\n"
    "report.json, report.md and report.html into the run directory. The Markdown\n"
    "report goes to stdout (the JSON with --json), a summary to stderr.\n"
    "\n"
    "The server command gets the port through a {port} placeholder, or\n"
    "'--port N' appended. NAME=VALUE knobs go where they reach the engine: the\n"
    "command's environment ('env NAME=VALUE' after sudo's options, as sudo resets\n"
    "it), -e NAME=VALUE after the 'run' of a docker-like run\n"
    "('docker [opts] [container] run', 'podman --runtime R run', 'sudo docker run',\n"
    "'nerdctl run', 'docker compose run'; a --name is added if you gave none), or\n"
    "--env NAME=VALUE after 'apptainer|singularity exec|run'; other knob words are\n"
    "appended to it. Once the engine is ready every knob is looked for in the\n"
    "engine's own environment and arguments (candidates[].knob_delivery); a\n"
    "candidate with a knob that did not arrive is 'not-delivered'.\n"
    "\n";
static const char qualify_tail[] =
    "\n"
    "example:\n"
    "  moeprobe qualify -- vllm serve nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4 --port {port}\n"
    "  moeprobe qualify --candidate 'cutlass: --moe-backend cutlass' \\\n"
    "      --candidate 'marlin3: VLLM_USE_FLASHINFER_MOE_FP4=0 VLLM_TEST_FORCE_FP8_MARLIN=1' -- vllm serve M\n"
    "\n"
    "Everything is recorded as it happens in RUNDIR/moeprobe.db (SQLite); the\n"
    "reports are rendered from it. A run directory holds one run: --out on a\n"
    "directory that already holds a run, or is in use by another moeprobe, is\n"
    "refused (exit 2), and nothing is written through a symbolic link in it. An\n"
    "interrupted run (its reports open with a banner saying so) continues with\n"
    "  moeprobe qualify --resume RUNDIR [--quiet] [--json]\n"
    "from any directory (its original options; the engine starts where the run\n"
    "was started; finished candidates are kept, engines the dead run left are\n"
    "killed first). A server command after '--' is accepted there only if it is\n"
    "the run's own (to fill in a secret the store masked).\n"
    "\n"
    "exit codes: 0 a recommendation was made; 1 no candidate qualified;\n"
    "            2 usage or input error (also: run directory locked or holding a\n"
    "            run, --out FILE, a link planted in it, fingerprint differs on\n"
    "            --resume); 3 internal or I/O error (also: the evidence\n"
    "            store cannot be written); 128+N killed by signal N\n";

static const char diagnose_head[] =
    "usage: moeprobe diagnose [options] -- SERVER COMMAND...\n"
    "\n"
    "Runs one candidate (the first --candidate, or the knobs in the command itself\n"
    "when none is given) normally; if it crashes, decides between an async race and\n"
    "a faulty kernel by rerunning with CUDA_LAUNCH_BLOCKING=1 until it has served the\n"
    "number of requests that the normal-mode failure rate requires (95 % confidence).\n"
    "\n";
static const char diagnose_tail[] =
    "\n"
    "exit codes: 0 a diagnosis was reached (async-race, kernel-fault) or the candidate\n"
    "            is stable; 1 any other verdict (crashed, startup-failure, hang,\n"
    "            garbage-output, server-error, not-delivered);\n"
    "            2 usage or input error; 3 internal or I/O error; 128+N killed by signal N\n";

static const char resolve_head[] =
    "usage: moeprobe resolve [options] -- SERVER COMMAND...\n"
    "\n"
    "Which road leads where, in minutes: starts the engine once per candidate and\n"
    "stops it as soon as its kernel selections are in the log (the MoE backend, the\n"
    "dense kernels, the attention backend: vLLM prints them while it builds the\n"
    "model, long before it is ready; a speculative drafter's own MoE selection\n"
    "comes after the weights, and the stop waits for it). No load is driven. The\n"
    "report maps each knob set to the backends it resolved, the variables the\n"
    "engine called unknown, and the start-up failures seen before the selection\n"
    "lines (an argparse error, an unsupported explicit backend, a drafter's); a\n"
    "failure later in start-up (weights, profile, CUDA graphs) is not seen.\n"
    "report.json/md/html go into the run directory as for qualify; the Markdown to\n"
    "stdout (the JSON with --json).\n"
    "\n";
static const char resolve_tail[] =
    "\n"
    "exit codes: 0 every candidate was started and its result read; 2 usage or input\n"
    "            error; 3 internal or I/O error; 128+N killed by signal N\n";

/* The start of the variable name of an environment assignment NAME=***
 * whose '=' is at hit inside the stored word w, or NULL: NAME must be an
 * identifier that begins the word (`HF_TOKEN=***`, `-e HF_TOKEN=***`),
 * follows a space (a candidate's knobs, one word) or "--env=". The tail of
 * a flag (`--hf-token=***` is no variable "token") never counts. */
static const char *assignment_name(const char *w, const char *hit)
{
    const char *n0 = hit;
    while (n0 > w && (isalnum((unsigned char)n0[-1]) || n0[-1] == '_'))
        n0--;
    if (n0 == hit || isdigit((unsigned char)*n0))
        return NULL;
    if (n0 == w || n0[-1] == ' ' || n0[-1] == '\t' ||
        ((size_t)(n0 - w) == 6 && !strncmp(w, "--env=", 6)))
        return n0;
    return NULL;
}

/* A stored argument with NAME=*** assignments gets the values back from
 * our environment (assignment_name: no other masked text is ever filled
 * in). 0, or -1 when a variable is not set (message printed). */
static int unmask_word(const char *w, struct mp_strv *out)
{
    struct buf b = BUF_INIT;
    const char *p = w;
    const char *hit;
    while ((hit = strstr(p, "=***")) != NULL) {
        const char *n0 = assignment_name(w, hit);
        if (!n0)
            n0 = hit;
        buf_add(&b, p, (size_t)(hit - p));
        char *name = xstrndup(n0, (size_t)(hit - n0));
        const char *val = *name ? getenv(name) : NULL;
        if (*name && mp_is_secret_name(name, strlen(name))) {
            if (!val) {
                mp_error("the run used the secret %s, which is stored masked; set %s in the "
                         "environment to resume", name, name);
                free(name);
                buf_release(&b);
                return -1;
            }
            buf_adds(&b, "=");
            buf_adds(&b, val);
        } else {
            buf_adds(&b, "=***");
        }
        free(name);
        p = hit + 4;
    }
    buf_adds(&b, p);
    mp_strv_push_owned(out, b.data ? buf_detach(&b, NULL) : xstrdup(""));
    return 0;
}

/* Does the word given after '--' on a resume match the stored (masked)
 * word: equal, with each *** of the stored word standing for any text? */
static bool masked_match(const char *stored, const char *given)
{
    const char *star = strstr(stored, "***");
    if (!star)
        return !strcmp(stored, given);
    size_t pre = (size_t)(star - stored);
    if (strncmp(stored, given, pre) != 0)
        return false;
    const char *rest = star + 3;
    for (const char *g = given + pre;; g++) {
        if (masked_match(rest, g))
            return true;
        if (!*g)
            return false;
    }
}

/* A stored relative path of one of moeprobe's own options, made absolute
 * against the directory the run was started in. */
static void push_path_opt(struct mp_strv *out, const char *opt, const char *path, const char *cwd)
{
    if (cwd && path[0] != '/' && path[0])
        mp_strv_push_owned(out, opt ? xasprintf("%s=%s/%s", opt, cwd, path)
                                    : xasprintf("%s/%s", cwd, path));
    else
        mp_strv_push_owned(out, opt ? xasprintf("%s=%s", opt, path) : xstrdup(path));
}

static bool is_path_opt(const char *w, size_t *eq)
{
    static const char *const opts[] = {"--knowledge", "--model-dir"};
    for (size_t i = 0; i < MP_ARRAY_SIZE(opts); i++) {
        size_t n = strlen(opts[i]);
        if (!strncmp(w, opts[i], n) && (w[n] == '\0' || w[n] == '=')) {
            *eq = w[n] == '=' ? n : 0;
            return true;
        }
    }
    return false;
}

/* `qualify --resume RUNDIR [options] [-- SERVER COMMAND]`: the arguments
 * become ours, then the stored ones (secrets restored from the
 * environment; relative paths of --knowledge/--model-dir resolved against
 * the directory the run was started in, *cwd, which the engine is started
 * in too). A server command after '--' must be the run's own (it may fill
 * in what the store masked); another one is refused. Returns 0 (no
 * --resume, or *out filled), or an exit code (message printed). */
int mp_cli_resume_args(int argc, char **argv, const char *sub, struct mp_strv *out, char **cwd)
{
    const char *dir = NULL;
    int dashdash = argc;
    *cwd = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--")) {
            dashdash = i;
            break;
        }
        if (!strcmp(argv[i], "--resume") && i + 1 < argc)
            dir = argv[i + 1];
        else if (!strncmp(argv[i], "--resume=", 9))
            dir = argv[i] + 9;
    }
    if (!dir)
        return 0;
    int ec = mp_cli_run_dir_check(sub, dir, true);
    if (ec)
        return ec;
    struct mp_store *st = NULL;
    struct mp_diag d = MP_DIAG_INIT;
    int rc = mp_store_open(dir, MP_STORE_READONLY, &st, &d);
    if (rc == -ENOENT && dashdash < argc)
        return 0; /* a scale-out run (tasks/, no store of its own): src/sched resumes it */
    if (rc < 0) {
        mp_error("--resume: %s", d.msg[0] ? d.msg : mp_strerror(rc));
        return rc == -ENOENT ? MP_EXIT_USAGE : MP_EXIT_INTERNAL;
    }
    char *stored_sub = NULL;
    struct mp_strv stored = MP_STRV_INIT;
    rc = mp_store_run_argv(st, &stored_sub, &stored);
    if (rc == 0)
        rc = mp_store_run_cwd(st, cwd);
    mp_store_close(st);
    if (rc < 0 || strcmp(stored_sub, sub) != 0) {
        mp_error("--resume: '%s' holds no %s run%s%s", dir, sub, stored_sub ? " (it is a " : "",
                 stored_sub ? stored_sub : "");
        if (stored_sub)
            fputs(")\n", stderr);
        ec = MP_EXIT_USAGE;
        goto out;
    }
    size_t sdash = 0;
    while (sdash < stored.n && strcmp(stored.v[sdash], "--") != 0)
        sdash++;
    if (dashdash < argc) {
        /* a command given again: it must be the run's own */
        size_t ng = (size_t)(argc - dashdash - 1), ns = sdash < stored.n ? stored.n - sdash - 1 : 0;
        size_t bad = 0;
        while (bad < ng && bad < ns && masked_match(stored.v[sdash + 1 + bad], argv[dashdash + 1 + bad]))
            bad++;
        if (bad < ng || bad < ns) {
            struct buf c = BUF_INIT;
            for (size_t i = sdash + 1; i < stored.n; i++) {
                if (c.len)
                    buf_addc(&c, ' ');
                buf_add_shell_word(&c, stored.v[i]);
            }
            mp_error("--resume continues a run with the server command it was started with; "
                     "the command after '--' is another one (they differ at word %zu). The run's "
                     "command is: %s. Leave the command out to resume (give it again only to "
                     "fill in a secret the store masked), or start a new run with another --out",
                     bad + 1, c.data);
            buf_release(&c);
            ec = MP_EXIT_USAGE;
            goto out;
        }
    }
    for (int i = 0; i < dashdash; i++)
        mp_strv_push(out, argv[i]);
    for (size_t i = 0; i < sdash && !ec; i++) {
        size_t eq = 0;
        if (is_path_opt(stored.v[i], &eq)) {
            if (eq) {
                char *opt = xstrndup(stored.v[i], eq);
                push_path_opt(out, opt, stored.v[i] + eq + 1, *cwd);
                free(opt);
            } else {
                mp_strv_push(out, stored.v[i]);
                if (i + 1 < sdash)
                    push_path_opt(out, NULL, stored.v[++i], *cwd);
            }
            continue;
        }
        if (unmask_word(stored.v[i], out) < 0) {
            ec = MP_EXIT_USAGE;
        } else if (strstr(out->v[out->n - 1], "***")) {
            /* a candidate's flag knob (--db-password ***): nowhere to restore it from */
            mp_error("--resume: the run's option '%s' held a secret, which is stored masked and "
                     "cannot be restored; start the run again with another --out",
                     out->v[out->n - 1]);
            ec = MP_EXIT_USAGE;
        }
    }
    if (!ec)
        mp_strv_push(out, "--");
    if (dashdash < argc) {
        for (int i = dashdash + 1; i < argc; i++)
            mp_strv_push(out, argv[i]);
    } else {
        for (size_t i = sdash + 1; i < stored.n && !ec; i++) {
            if (unmask_word(stored.v[i], out) < 0) {
                ec = MP_EXIT_USAGE;
            } else if (strstr(out->v[out->n - 1], "***")) {
                /* --api-key ***, a URL password: nothing to restore it from */
                mp_error("--resume: the run's server command held a secret, which is stored "
                         "masked (word %zu: %s); give the same command again after '--' to "
                         "resume", i - sdash, out->v[out->n - 1]);
                ec = MP_EXIT_USAGE;
            }
        }
    }
out:
    free(stored_sub);
    mp_strv_release(&stored);
    return ec;
}

/* A resumed run's unfinished candidates come from the store, their secret
 * knobs masked: an env knob NAME=*** gets NAME's value from our
 * environment; a masked flag knob (--db-password ***) cannot be restored.
 * 0, or -1 with the message printed (the resume is refused: no engine ever
 * starts with ***). */
static int restore_candidates(struct mp_report *rep, const bool *done)
{
    for (size_t i = 0; i < rep->n; i++) {
        struct mp_candidate *c = &rep->c[i].cand;
        for (size_t k = 0; !done[i] && k < c->env.n; k++) {
            const char *eq = strchr(c->env.v[k], '=');
            if (!eq || strcmp(eq + 1, "***") != 0)
                continue;
            char *name = xstrndup(c->env.v[k], (size_t)(eq - c->env.v[k]));
            const char *val = getenv(name);
            if (!val) {
                mp_error("--resume: candidate '%s' has the knob %s=***, stored masked; set %s in "
                         "the environment to resume", c->name, name, name);
                free(name);
                return -1;
            }
            free(c->env.v[k]);
            c->env.v[k] = xasprintf("%s=%s", name, val);
            free(name);
        }
        for (size_t k = 0; !done[i] && k < c->args.n; k++) {
            if (strstr(c->args.v[k], "***"))
                return mp_error("--resume: candidate '%s' has a knob stored masked (%s ***) that "
                                "cannot be restored; start the run again with another --out",
                                c->name, k ? c->args.v[k - 1] : c->args.v[k]);
        }
    }
    return 0;
}


enum run_kind { RUN_QUALIFY, RUN_DIAGNOSE, RUN_RESOLVE };

/* One qualify/diagnose/resolve run, from its parsed options to its exit
 * code. */
struct qrun {
    enum run_kind kind;
    const char *sub;
    struct mp_opts o;
    struct mp_strv rargv;   /* a resumed run's arguments */
    char *run_cwd;          /* a resumed run: where it was started */
    struct mp_report rep;
    struct mp_session ss;
    bool *done;             /* per candidate (grows with rep.n) */
    struct mp_era era;
    struct mp_runctx ctx;
    bool input_error;       /* the server command cannot run: no candidate can */
    bool command_ok;        /* an attempt got past the kernel selection (or died of a knob) */
    struct mp_diag_policy policy; /* recorded with each candidate: its diagnosis is derived */
    char *stop_reason;      /* the server command fails before any backend is chosen */
    struct mp_cli_score sco; /* the scoring pass (qualify only; cli/scoreopt.h) */
};

/* The options (a resumed run's own), the run directory's check. Returns
 * true to go on; else *ec is the exit code (help printed: 0). */
static bool q_parse(struct qrun *q, int argc, char **argv, int *ec)
{
    int rc = mp_cli_resume_args(argc, argv, q->sub, &q->rargv, &q->run_cwd);
    memset(&q->o, 0, sizeof(q->o));
    if (rc) {
        *ec = rc;
        return false;
    }
    if (q->rargv.n) {
        argc = (int)q->rargv.n;
        argv = mp_strv_array(&q->rargv);
    }
    if (q->kind == RUN_RESOLVE)
        rc = mp_opts_parse(&q->o, MP_CMD_RESOLVE, argc, argv, resolve_head, resolve_tail);
    else if (q->kind == RUN_DIAGNOSE)
        rc = mp_opts_parse(&q->o, MP_CMD_DIAGNOSE, argc, argv, diagnose_head, diagnose_tail);
    else
        rc = mp_opts_parse(&q->o, MP_CMD_QUALIFY, argc, argv, qualify_head, qualify_tail);
    if (rc == 0 && mp_cli_run_dir_check(q->sub, q->o.resume ? q->o.resume : q->o.out_dir,
                                        q->o.resume != NULL))
        rc = -1;
    if (rc != 0) {
        *ec = rc > 0 ? MP_EXIT_OK : MP_EXIT_USAGE;
        return false;
    }
    /* the terminal (and a scale-out run's task logs) mask what the files mask */
    mp_store_mask_add_cands(mp_store_mask_process(), q->o.cands, q->o.ncands);
    mp_store_mask_add(mp_store_mask_process(), q->o.api_key);
    /* a serial run's --resume is ours (the store); scale-out runs resume in src/sched */
    bool serial_resume = q->o.resume && !q->o.gpus && !q->o.slurm && !q->o.slurm_script;
    struct mp_sched_cfg scfg;
    mp_opts_sched_cfg(&q->o, &scfg);
    if (q->kind == RUN_QUALIFY && !serial_resume && mp_sched_wanted(&scfg)) {
        *ec = mp_sched_qualify(&scfg, argc, argv); /* --gpus, --slurm: tasks (src/sched) */
        return false;
    }
    if (q->o.resume) {
        free(q->o.out_dir);
        q->o.out_dir = xstrdup(q->o.resume);
    }
    return true;
}

/* The run's candidates into q->rep (a resumed run takes them from the
 * store). 0 or MP_EXIT_USAGE. */
static int q_candidates(struct qrun *q)
{
    const struct mp_opts *o = &q->o;
    if (o->resume)
        return 0;
    if (q->kind == RUN_DIAGNOSE) {
        /* the first --candidate, else the preset's first (auto: the command as given) */
        mp_report_add_candidate(&q->rep, &o->cands[0]);
        return 0;
    }
    for (size_t i = 0; i < o->ncands; i++) {
        if (mp_csv_has(o->only, o->cands[i].name))
            mp_report_add_candidate(&q->rep, &o->cands[i]);
    }
    if (q->rep.n == 0) {
        mp_error("--only '%s' matches no candidate", o->only ? o->only : "");
        return MP_EXIT_USAGE;
    }
    return 0;
}

/* Can the run in the store be resumed here and now? Read only, so that a
 * refusal leaves the record as it was: a finished run has nothing to
 * resume (its reports render again with `moeprobe report`), another machine
 * or another inherited environment would not compare. 0 or MP_EXIT_USAGE
 * (message printed). */
static int q_resume_check(struct qrun *q)
{
    struct mp_report old;
    mp_report_init(&old, q->o.out_dir);
    bool *done = NULL;
    if (mp_store_load(q->ss.store, &old, &done) < 0) {
        mp_report_release(&old);
        return mp_session_store_failed(&q->ss);
    }
    free(done);
    int ec = 0;
    char *why = mp_fingerprint_mismatch(&old.fp, &q->rep.fp, false);
    char *envwhy = why ? NULL : mp_inherit_mismatch(&old.inherited, &q->rep.inherited);
    if (old.finished && !old.interrupted && !mp_report_nunfinished(&old)) {
        ec = mp_error("--resume: '%s' holds a finished %s run (finished %s): there is nothing to "
                      "resume; 'moeprobe report %s' renders its reports again",
                      q->o.out_dir, q->sub, old.finished, q->o.out_dir);
    } else if (why) {
        ec = mp_error("refusing to resume '%s' on a different machine (%s): results only "
                      "hold for the fingerprint they were measured on", q->o.out_dir, why);
    } else if (envwhy) {
        ec = mp_error("refusing to resume '%s' in another environment (%s): every candidate "
                      "inherits it, so the finished ones would not compare; set it as it "
                      "was, or start a new run", q->o.out_dir, envwhy);
    }
    free(why);
    free(envwhy);
    mp_report_release(&old);
    return ec ? MP_EXIT_USAGE : 0;
}

/* --resume: end what the dead run left, take the stored candidates and
 * finished attempts (after q_resume_check). 0 or an exit code. */
static int q_resume(struct qrun *q)
{
    struct mp_store *store = q->ss.store;
    int killed = 0;
    int ec = q_resume_check(q);
    if (ec)
        return ec;
    char *io_why = NULL; /* the run stopped on an I/O error: say so */
    if (mp_store_io_stop(store, &io_why) < 0)
        return mp_session_store_failed(&q->ss);
    if (io_why && !q->o.quiet) {
        char *shown = mp_term_dup(io_why);
        fprintf(stderr, "moeprobe: resuming %s: the run was stopped by an I/O error (%s)\n",
                q->o.out_dir, shown);
        free(shown);
    }
    free(io_why);
    if (mp_run_end_dead_run(store, &killed) < 0 || mp_store_run_resumed(store, q->ss.started) < 0)
        return mp_session_store_failed(&q->ss);
    if (killed && !q->o.quiet)
        fprintf(stderr, "moeprobe: killed %d engine process(es) left by the interrupted run\n",
                killed);
    struct mp_report old;
    mp_report_init(&old, q->o.out_dir);
    if (mp_store_load(store, &old, &q->done) < 0) {
        mp_report_release(&old);
        return mp_session_store_failed(&q->ss);
    }
    /* keep the original start, the stored candidates and finished attempts */
    mp_fingerprint_detect_ex(&old.fp, NULL);
    mp_report_release(&q->rep);
    q->rep = old;
    if (restore_candidates(&q->rep, q->done) < 0)
        return MP_EXIT_USAGE;
    if (!q->o.quiet) {
        size_t nd = 0;
        for (size_t i = 0; i < q->rep.n; i++)
            nd += q->done[i];
        fprintf(stderr, "moeprobe: resuming %s: %zu of %zu candidate(s) already finished\n",
                q->o.out_dir, nd, q->rep.n);
    }
    if (mp_store_set_fingerprint(store, &q->rep.fp, &q->ss.fpx) < 0)
        return mp_session_store_failed(&q->ss);
    return 0;
}

/* The engine version the candidates should fit now: the one the engine
 * logged, else the assumed one. */
static const char *q_version(const struct qrun *q)
{
    for (size_t i = 0; i < q->rep.n; i++) {
        const struct mp_attempt_result *p = mp_cand_primary(&q->rep.c[i]);
        if (p && p->res.engine_version)
            return p->res.engine_version;
    }
    return q->rep.fp.engine_version ? q->rep.fp.engine_version : q->era.assumed;
}

/* After candidate i's attempt: the CUDA_LAUNCH_BLOCKING=1 run of a crash
 * (not for resolve, not with --no-diagnose); what it means, and why others
 * are not diagnosed, is derived by mp_run_candidate_diagnosis. 0, or -1
 * (message printed). */
static int q_diagnose(struct qrun *q, size_t i, const struct mp_attempt_result *a)
{
    if (q->kind != RUN_RESOLVE && !q->o.no_diagnose && a && a->outcome == MP_OUT_CRASH &&
        mp_diagnose(&q->ctx, &q->rep, i) < 0)
        return -1;
    return 0;
}

/* dir relative to the run directory when it lies inside it. */
static const char *rel_dir(const struct qrun *q, const char *dir)
{
    size_t n = strlen(q->o.out_dir);
    if (dir && !strncmp(dir, q->o.out_dir, n) && dir[n] == '/')
        return dir + n + 1;
    return dir ? dir : "?";
}

/* After an attempt: do the run's first attempts all die the same way before
 * any kernel selection line, for reasons that are no knob's? Then sets
 * q->stop_reason (recorded in the store) and the run stops: no backend can
 * be judged while the command itself fails. 0 or -1 (store). */
static int q_broken_check(struct qrun *q)
{
    const struct mp_attempt_result *first = NULL;
    size_t n = 0, firsti = 0;
    bool apart = false; /* two of them with no knob in common */
    struct buf names = BUF_INIT;
    for (size_t i = 0; i < q->rep.n && !q->command_ok; i++) {
        const struct mp_attempt_result *p = mp_cand_primary(&q->rep.c[i]);
        if (!p)
            continue;
        if (!mp_broken_before_selection(&q->rep.c[i].cand, p) ||
            (first && !mp_broken_same_way(first, p)))
            q->command_ok = true;
        for (size_t j = firsti; first && j < i && !apart; j++)
            apart = mp_cand_primary(&q->rep.c[j]) &&
                    mp_broken_knobs_apart(&q->rep.c[j].cand, &q->rep.c[i].cand);
        if (!first)
            first = p, firsti = i;
        buf_printf(&names, "%s%s", n++ ? " and " : "", q->rep.c[i].cand.name);
    }
    if (!q->command_ok && apart) {
        q->stop_reason = xasprintf("your server command fails before any backend is chosen: %s "
                                   "(%s ended so before logging any kernel selection, with "
                                   "different knobs; evidence %s/server.log%s%ld). Run the "
                                   "command by hand to see it fail, fix it, then start again",
                                   first->fail_message, names.data, rel_dir(q, first->dir),
                                   first->fail_line > 0 ? ":" : "", first->fail_line);
    }
    buf_release(&names);
    if (q->stop_reason && mp_store_set_stop_reason(q->ss.store, q->stop_reason) < 0)
        return mp_session_store_failed(&q->ss), -1;
    return 0;
}

/* Candidate i: fitted to the version, its attempt and diagnosis, recorded
 * as done. 0 to go on, or an exit code (stop). */
static int q_run_one(struct qrun *q, size_t i)
{
    struct mp_store *store = q->ss.store;
    const struct mp_attempt_result *a = NULL;
    int r = 0;
    if (mp_era_fit(&q->era, q_version(q), &q->rep, store, &q->done) < 0)
        return MP_EXIT_INTERNAL;
    if (q->rep.c[i].not_applicable && !q->rep.c[i].nattempts) {
        if (!q->o.quiet)
            fprintf(stderr, "moeprobe: %s: %s (not started)\n", q->rep.c[i].cand.name,
                    q->rep.c[i].not_applicable);
    } else {
        if (q->rep.c[i].nattempts) /* resumed: its finished attempts stand */
            a = mp_cand_primary(&q->rep.c[i]);
        if (!a)
            r = mp_run_attempt(&q->ctx, &q->rep, i, false, NULL, &a);
        if (r == MP_ECOMMAND) { /* the server command itself cannot run: no candidate can */
            q->input_error = true;
            return MP_EXIT_USAGE;
        }
        if (r < 0) {
            if (r != MP_EUSAGE) { /* an I/O error: say so in the store, keep what was recorded */
                mp_store_record_io_stop(store);
                mp_session_reports(&q->ss, q->o.json, q->o.quiet, NULL);
            }
            return r == MP_EUSAGE ? MP_EXIT_USAGE : MP_EXIT_INTERNAL;
        }
        if (q->ctx.signo)
            return 0;
        if (!q->command_ok && q_broken_check(q) < 0)
            return MP_EXIT_INTERNAL;
        /* a command that fails before any backend is chosen: nothing to diagnose */
        if (!q->stop_reason && q_diagnose(q, i, a) < 0)
            return MP_EXIT_INTERNAL;
        if (q->ctx.signo)
            return 0;
    }
    mp_run_candidate_diagnosis(&q->rep, i, &q->policy); /* what it means: verdict/diagnose.h */
    if (mp_session_fingerprint(&q->ss, &q->rep) < 0)
        return MP_EXIT_INTERNAL;
    if (mp_store_candidate_done(store, i, &q->rep.c[i].diag, &q->policy) < 0)
        return mp_session_store_failed(&q->ss);
    q->done[i] = true;
    return 0;
}

/* The reports from the store and what the exit code says. */
static int q_finish(struct qrun *q)
{
    if (mp_session_finish(&q->ss, q->ctx.signo != 0) < 0)
        return MP_EXIT_INTERNAL;
    struct mp_report fin;
    if (mp_session_reports(&q->ss, q->o.json, q->o.quiet, &fin) < 0)
        return MP_EXIT_INTERNAL;
    int ec;
    if (q->ctx.signo) {
        ec = 128 + q->ctx.signo;
    } else if (q->stop_reason) {
        mp_error("%s", q->stop_reason);
        ec = MP_EXIT_USAGE;
    } else if (q->kind == RUN_DIAGNOSE) {
        enum mp_verdict v = fin.n ? fin.c[0].verdict : MP_V_NONE;
        ec = v == MP_V_ASYNC_RACE || v == MP_V_KERNEL_FAULT || v == MP_V_STABLE ? MP_EXIT_OK
                                                                               : MP_EXIT_NONE;
    } else if (q->kind == RUN_RESOLVE) {
        ec = MP_EXIT_OK; /* the map is the result */
    } else {
        ec = fin.recommended >= 0 ? MP_EXIT_OK : MP_EXIT_NONE;
    }
    mp_report_release(&fin);
    return ec;
}

/* The session's run: the candidates recorded (or resumed), each run in
 * turn, the reports. Returns the exit code. */
static int q_session(struct qrun *q, int argc, char **argv)
{
    int ec = q_candidates(q);
    if (ec)
        return ec;
    ec = mp_session_begin(&q->ss, q->sub, &q->o, q->o.resume ? MP_SESSION_RESUME : 0, q->o.cands,
                          q->o.ncands, &q->rep);
    if (ec)
        return ec;
    if (q->o.resume) {
        if ((ec = q_resume(q)) != 0)
            return ec;
    } else {
        if (mp_session_record_run(&q->ss, argv + 1, (size_t)(argc - 1), &q->rep) < 0)
            return MP_EXIT_INTERNAL;
        if (q->o.reference && mp_store_set_reference(q->ss.store, q->o.reference) < 0)
            return mp_session_store_failed(&q->ss);
        /* the engine build's kernels against this GPU (docs/inspect.md) */
        if ((ec = mp_cli_engine_coverage(&q->ss, &q->o, &q->rep, &q->rep)) != 0)
            return ec;
        q->done = xcalloc(q->rep.n + 1, sizeof(*q->done));
    }
    q->era.kn = q->ss.kn;
    q->era.preset = q->kind != RUN_DIAGNOSE && q->o.ncands_given == 0
                        ? (q->o.preset ? q->o.preset : "sm12x-nvfp4")
                        : NULL;
    q->era.only = q->o.only;
    q->era.quiet = q->o.quiet;
    q->era.assumed = mp_era_assumed(q->ss.kn, q->o.engine_version, q->o.cmd, q->o.ncmd,
                                    &q->era.assumed_from);
    mp_session_runctx(&q->ss, &q->ctx);
    q->ctx.dedupe = !q->o.no_dedupe && q->kind == RUN_QUALIFY;
    q->ctx.resolve_only = q->kind == RUN_RESOLVE;
    q->ctx.cwd = q->run_cwd;
    q->ctx.inherited = &q->rep.inherited;
    q->ctx.diagnose = !q->o.no_diagnose && q->kind != RUN_RESOLVE;
    if (!q->o.no_quality && q->kind != RUN_RESOLVE)
        q->ctx.quality_prompts = mp_quality_prompts(&q->ctx.nquality);
    q->ctx.score = mp_cli_score_plan(&q->sco);
    bool resolve = q->kind == RUN_RESOLVE;
    mp_run_diag_policy(&q->ctx, !resolve && !q->o.no_diagnose, !resolve && q->o.no_diagnose,
                       !resolve, &q->policy);
    for (size_t i = 0; i < q->rep.n && !q->ctx.signo && !q->stop_reason; i++) {
        if (!q->done[i] && (ec = q_run_one(q, i)) != 0)
            return ec;
    }
    return q_finish(q);
}

static int run_main(int argc, char **argv, enum run_kind kind)
{
    struct qrun q;
    memset(&q, 0, sizeof(q));
    q.kind = kind;
    q.sub = kind == RUN_RESOLVE ? "resolve" : kind == RUN_DIAGNOSE ? "diagnose" : "qualify";
    q.ss = (struct mp_session)MP_SESSION_INIT;
    int ec = MP_EXIT_INTERNAL;
    if (q_parse(&q, argc, argv, &ec)) {
        if (q.rargv.n) {
            argc = (int)q.rargv.n;
            argv = mp_strv_array(&q.rargv);
        }
        mp_report_init(&q.rep, q.o.out_dir);
        if (kind == RUN_QUALIFY && mp_cli_score_init(&q.sco, &q.o) < 0)
            ec = MP_EXIT_USAGE;
        else
            ec = q_session(&q, argc, argv);
        mp_session_end_exit(&q.ss, ec, &q.rep);
        mp_report_release(&q.rep);
    }
    mp_era_release(&q.era);
    mp_cli_score_release(&q.sco);
    free(q.stop_reason);
    mp_opts_release(&q.o);
    mp_strv_release(&q.rargv);
    free(q.done);
    free(q.run_cwd);
    return ec;
}

int cmd_qualify(int argc, char **argv)
{
    return run_main(argc, argv, RUN_QUALIFY);
}

int cmd_diagnose(int argc, char **argv)
{
    return run_main(argc, argv, RUN_DIAGNOSE);
}

int cmd_resolve(int argc, char **argv)
{
    return run_main(argc, argv, RUN_RESOLVE);
}
