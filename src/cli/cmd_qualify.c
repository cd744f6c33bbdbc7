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

/* A resumed run's store: say why it stopped (an I/O error), end what the
 * dead run left, record the resume, load what it holds into *rep (the
 * stored candidates, their secret env knobs restored) and check the
 * fingerprint. 0; MP_EXIT_USAGE (refused: message printed); -1 when the
 * store failed (the caller reports it). */
static int resume_store(struct mp_session *ss, const struct mp_opts *o, struct mp_report *rep,
                        bool **done)
{
    struct mp_store *store = ss->store;
    int killed = 0;
    char *io_why = NULL; /* the run stopped on an I/O error: say so */
    if (mp_store_io_stop(store, &io_why) < 0)
        return -1;
    if (io_why && !o->quiet) {
        char *shown = mp_term_dup(io_why);
        fprintf(stderr, "moeprobe: resuming %s: the run was stopped by an I/O error (%s)\n",
                o->out_dir, shown);
        free(shown);
    }
    free(io_why);
    if (mp_run_end_dead_run(store, &killed) < 0)
        return -1;
    if (killed && !o->quiet)
        fprintf(stderr, "moeprobe: killed %d engine process(es) left by the interrupted run\n",
                killed);
    if (mp_store_run_resumed(store, ss->started) < 0)
        return -1;
    struct mp_report old;
    mp_report_init(&old, o->out_dir);
    if (mp_store_load(store, &old, done) < 0) {
        mp_report_release(&old);
        return -1;
    }
    char *why = mp_fingerprint_mismatch(&old.fp, &rep->fp, false);
    if (why) {
        mp_error("refusing to resume '%s' on a different machine (%s): results only hold "
                 "for the fingerprint they were measured on", o->out_dir, why);
        free(why);
        mp_report_release(&old);
        return MP_EXIT_USAGE;
    }
    /* keep the original start, the stored candidates and finished attempts */
    mp_fingerprint_detect_ex(&old.fp, NULL);
    mp_report_release(rep);
    *rep = old;
    if (restore_candidates(rep, *done) < 0)
        return MP_EXIT_USAGE;
    if (!o->quiet) {
        size_t nd = 0;
        for (size_t i = 0; i < rep->n; i++)
            nd += (*done)[i];
        fprintf(stderr, "moeprobe: resuming %s: %zu of %zu candidate(s) already finished\n",
                o->out_dir, nd, rep->n);
    }
    return mp_store_set_fingerprint(store, &rep->fp, &ss->fpx) < 0 ? -1 : 0;
}

enum run_kind { RUN_QUALIFY, RUN_DIAGNOSE, RUN_RESOLVE };

static int run_main(int argc, char **argv, enum run_kind kind)
{
    bool diagnose_only = kind == RUN_DIAGNOSE, resolve = kind == RUN_RESOLVE;
    const char *sub = resolve ? "resolve" : diagnose_only ? "diagnose" : "qualify";
    struct mp_opts o;
    struct mp_strv rargv = MP_STRV_INIT;
    bool *done = NULL;
    char *run_cwd = NULL; /* a resumed run: where it was started */
    int rc = mp_cli_resume_args(argc, argv, sub, &rargv, &run_cwd);
    if (rc) {
        mp_strv_release(&rargv);
        free(run_cwd);
        return rc;
    }
    if (rargv.n) {
        argc = (int)rargv.n;
        argv = mp_strv_array(&rargv);
    }
    if (resolve)
        rc = mp_opts_parse(&o, MP_CMD_RESOLVE, argc, argv, resolve_head, resolve_tail);
    else if (diagnose_only)
        rc = mp_opts_parse(&o, MP_CMD_DIAGNOSE, argc, argv, diagnose_head, diagnose_tail);
    else
        rc = mp_opts_parse(&o, MP_CMD_QUALIFY, argc, argv, qualify_head, qualify_tail);
    if (rc == 0)
        rc = mp_cli_run_dir_check(sub, o.resume ? o.resume : o.out_dir, o.resume != NULL) ? -1 : 0;
    if (rc != 0) {
        mp_opts_release(&o);
        mp_strv_release(&rargv);
        free(run_cwd);
        return rc > 0 ? MP_EXIT_OK : MP_EXIT_USAGE;
    }
    /* the terminal (and a scale-out run's task logs) mask what the files mask */
    mp_store_mask_add_cands(mp_store_mask_process(), o.cands, o.ncands);
    mp_store_mask_add(mp_store_mask_process(), o.api_key);
    /* a serial run's --resume is ours (the store); scale-out runs resume in src/sched */
    bool serial_resume = o.resume && !o.gpus && !o.slurm && !o.slurm_script;
    struct mp_sched_cfg scfg;
    mp_opts_sched_cfg(&o, &scfg);
    if (kind == RUN_QUALIFY && !serial_resume && mp_sched_wanted(&scfg)) { /* --gpus, --slurm: tasks (src/sched) */
        rc = mp_sched_qualify(&scfg, argc, argv);
        mp_opts_release(&o);
        mp_strv_release(&rargv);
        free(run_cwd);
        return rc;
    }
    const char *resume_dir = o.resume;
    if (resume_dir) {
        free(o.out_dir);
        o.out_dir = xstrdup(resume_dir);
    }
    int exit_code = MP_EXIT_INTERNAL;
    struct mp_report rep;
    mp_report_init(&rep, o.out_dir);
    struct mp_session ss = MP_SESSION_INIT;
    struct mp_cli_score sco; /* the scoring pass (qualify only; cli/scoreopt.h) */
    memset(&sco, 0, sizeof(sco));
    if (kind == RUN_QUALIFY && mp_cli_score_init(&sco, &o) < 0) {
        exit_code = MP_EXIT_USAGE;
        goto out;
    }

    /* candidates (a resumed run takes them from the store) */
    if (resume_dir) {
        /* nothing here */
    } else if (diagnose_only) {
        if (o.ncands == 0) {
            struct mp_candidate c;
            mp_candidate_from_knobs("candidate", "", &c, NULL);
            mp_report_add_candidate(&rep, &c);
            mp_candidate_release(&c);
        } else {
            mp_report_add_candidate(&rep, &o.cands[0]);
        }
    } else {
        for (size_t i = 0; i < o.ncands; i++) {
            if (mp_csv_has(o.only, o.cands[i].name))
                mp_report_add_candidate(&rep, &o.cands[i]);
        }
        if (rep.n == 0) {
            mp_error("--only '%s' matches no candidate", o.only ? o.only : "");
            exit_code = MP_EXIT_USAGE;
            goto out;
        }
    }
    exit_code = mp_session_begin(&ss, sub, &o, resume_dir ? MP_SESSION_RESUME : 0, o.cands,
                                 o.ncands, &rep);
    if (exit_code)
        goto out;
    exit_code = MP_EXIT_INTERNAL;
    struct mp_store *store = ss.store;
    if (resume_dir) {
        int e = resume_store(&ss, &o, &rep, &done);
        if (e < 0)
            goto store_failed;
        if (e > 0) {
            exit_code = e;
            goto out;
        }
    } else {
        /* secrets are masked by the store */
        if (mp_session_record_run(&ss, argv + 1, (size_t)(argc - 1), &rep) < 0)
            goto out;
        if (o.reference && mp_store_set_reference(store, o.reference) < 0)
            goto store_failed;
        /* the engine build's kernels against this GPU (docs/inspect.md) */
        if ((exit_code = mp_cli_engine_coverage(&ss, &o, &rep, &rep)) != 0)
            goto out;
        exit_code = MP_EXIT_INTERNAL;
        done = xcalloc(rep.n + 1, sizeof(*done));
    }

    struct mp_runctx ctx;
    mp_session_runctx(&ss, &ctx);
    ctx.dedupe = !o.no_dedupe && kind == RUN_QUALIFY;
    ctx.resolve_only = resolve;
    ctx.cwd = run_cwd;
    if (!o.no_quality && !resolve)
        ctx.quality_prompts = mp_quality_prompts(&ctx.nquality);
    ctx.score = mp_cli_score_plan(&sco);
    bool input_error = false;
    struct mp_diag_policy policy; /* recorded with each candidate: its diagnosis is derived */
    mp_run_diag_policy(&ctx, !resolve && !o.no_diagnose, !resolve && o.no_diagnose, !resolve,
                       &policy);
    for (size_t i = 0; i < rep.n && !ctx.signo; i++) {
        if (done[i])
            continue;
        const struct mp_attempt_result *a = NULL;
        int r = 0;
        if (rep.c[i].nattempts) /* resumed: its finished attempts stand */
            a = mp_cand_primary(&rep.c[i]);
        if (!a)
            r = mp_run_attempt(&ctx, &rep, i, false, NULL, &a);
        if (r == MP_ECOMMAND) { /* the server command itself cannot run: no candidate can */
            input_error = true;
            break;
        }
        if (r < 0) {
            exit_code = r == MP_EUSAGE ? MP_EXIT_USAGE : MP_EXIT_INTERNAL;
            if (r != MP_EUSAGE) { /* an I/O error: say so in the store, keep what was recorded */
                mp_store_record_io_stop(store);
                mp_session_reports(&ss, o.json, o.quiet, NULL);
            }
            goto out;
        }
        if (ctx.signo)
            break;
        /* the selections are the result of resolve: nothing to diagnose */
        if (!resolve && !o.no_diagnose && a && a->outcome == MP_OUT_CRASH &&
            mp_diagnose(&ctx, &rep, i) < 0) {
            exit_code = MP_EXIT_INTERNAL;
            goto out;
        }
        if (ctx.signo)
            break;
        mp_run_candidate_diagnosis(&rep, i, &policy); /* what it means: verdict/diagnose.h */
        if (mp_session_fingerprint(&ss, &rep) < 0)
            goto out;
        if (mp_store_candidate_done(store, i, &rep.c[i].diag, &policy) < 0)
            goto store_failed;
        done[i] = true;
    }
    if (input_error) {
        exit_code = MP_EXIT_USAGE;
        goto out;
    }
    if (mp_session_finish(&ss, ctx.signo != 0) < 0)
        goto out;
    /* the report, and what the exit code says, come from the store alone */
    struct mp_report fin;
    if (mp_session_reports(&ss, o.json, o.quiet, &fin) < 0) {
        exit_code = MP_EXIT_INTERNAL;
        goto out;
    }
    if (ctx.signo) {
        exit_code = 128 + ctx.signo;
    } else if (diagnose_only) {
        enum mp_verdict v = fin.n ? fin.c[0].verdict : MP_V_NONE;
        exit_code = v == MP_V_ASYNC_RACE || v == MP_V_KERNEL_FAULT || v == MP_V_STABLE
                        ? MP_EXIT_OK
                        : MP_EXIT_NONE;
    } else if (resolve) {
        exit_code = MP_EXIT_OK; /* the map is the result */
    } else {
        exit_code = fin.recommended >= 0 ? MP_EXIT_OK : MP_EXIT_NONE;
    }
    mp_report_release(&fin);
    goto out;
store_failed:
    exit_code = mp_session_store_failed(&ss);
out:
    mp_session_end_exit(&ss, exit_code, &rep);
    mp_report_release(&rep);
    mp_cli_score_release(&sco);
    mp_opts_release(&o);
    mp_strv_release(&rargv);
    free(done);
    free(run_cwd);
    return exit_code;
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
