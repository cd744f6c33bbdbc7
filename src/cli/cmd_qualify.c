/* cmd_qualify.c - `moeprobe qualify` and `moeprobe diagnose`: the options
 * they share, the signal set-up, and writing the report. */
#include "compat.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/opts.h"
#include "clock.h"
#include "err.h"
#include "logs/logscan.h"
#include "proc/proc.h"
#include "quality/quality.h"
#include "report/report.h"
#include "run/runner.h"
#include "sched/sched.h"
#include "xalloc.h"

static const char qualify_help[] =
    "usage: moeprobe qualify [options] -- SERVER COMMAND...\n"
    "\n"
    "Starts the engine once per candidate knob set, reads which MoE backend each\n"
    "resolved to, drives warm-up, sequential and concurrent load, watches for every\n"
    "kind of failure, diagnoses crashes with CUDA_LAUNCH_BLOCKING=1, and writes\n"
    "report.json and report.md into the run directory. The Markdown report goes to\n"
    "stdout (the JSON with --json), a summary to stderr.\n"
    "\n"
    "The server command gets the port through a {port} placeholder, or\n"
    "'--port N' appended. NAME=VALUE knobs go to its environment (as -e NAME=VALUE\n"
    "after 'docker run'/'podman run'); other knob words are appended to it.\n"
    "\n"
    MP_COMMON_OPTS_HELP
    MP_SCHED_OPTS_HELP
    "\n"
    "example:\n"
    "  moeprobe qualify -- vllm serve nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4 --port {port}\n"
    "  moeprobe qualify --candidate 'cutlass: --moe-backend cutlass' \\\n"
    "      --candidate 'marlin3: VLLM_USE_FLASHINFER_MOE_FP4=0 VLLM_TEST_FORCE_FP8_MARLIN=1' -- vllm serve M\n"
    "\n"
    "exit codes: 0 a recommendation was made; 1 no candidate qualified;\n"
    "            2 usage or input error; 3 internal or I/O error; 128+N killed by signal N\n";

static const char diagnose_help[] =
    "usage: moeprobe diagnose [options] -- SERVER COMMAND...\n"
    "\n"
    "Runs one candidate (the first --candidate, or the knobs in the command itself\n"
    "when none is given) normally; if it crashes, decides between an async race and\n"
    "a faulty kernel by rerunning with CUDA_LAUNCH_BLOCKING=1 until it has served the\n"
    "number of requests that the normal-mode failure rate requires (95 %% confidence).\n"
    "\n"
    MP_COMMON_OPTS_HELP
    "\n"
    "exit codes: 0 a diagnosis was reached (async-race, kernel-fault) or the candidate\n"
    "            is stable; 1 inconclusive (crashed, startup-failure, hang);\n"
    "            2 usage or input error; 3 internal or I/O error; 128+N killed by signal N\n";

static volatile sig_atomic_t dummy;

int mp_signals_setup(sigset_t *old)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGCHLD);
    signal(SIGPIPE, SIG_IGN);
    if (sigprocmask(SIG_BLOCK, &set, old) != 0)
        return -errno;
    int fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    if (fd < 0)
        return -errno;
    MP_UNUSED(dummy);
    return fd;
}

int mp_write_reports(struct mp_report *rep, bool json_stdout, bool quiet)
{
    struct buf j = BUF_INIT, md = BUF_INIT, sum = BUF_INIT, html = BUF_INIT;
    int rc = 0;
    mp_report_finalize(rep);
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
        fprintf(stderr, "\nmoeprobe: run directory %s\n%s", rep->run_dir, sum.data);
    }
    buf_release(&j);
    buf_release(&md);
    buf_release(&sum);
    buf_release(&html);
    return rc;
}

static bool only_has(const char *only, const char *name)
{
    if (!only)
        return true;
    size_t nl = strlen(name);
    const char *p = only;
    while (*p) {
        const char *e = strchr(p, ',');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l == nl && !strncmp(p, name, nl))
            return true;
        if (!e)
            break;
        p = e + 1;
    }
    return false;
}

static int run_main(int argc, char **argv, bool diagnose_only)
{
    struct mp_opts o;
    int rc = mp_opts_parse(&o, argc, argv, diagnose_only ? diagnose_help : qualify_help);
    if (rc != 0) {
        mp_opts_release(&o);
        return rc > 0 ? MP_EXIT_OK : MP_EXIT_USAGE;
    }
    if (!diagnose_only && mp_sched_wanted(&o)) { /* --gpus, --slurm: tasks (src/sched) */
        rc = mp_sched_qualify(&o, argc, argv);
        mp_opts_release(&o);
        return rc;
    }
    int exit_code = MP_EXIT_INTERNAL;
    struct mp_report rep;
    mp_report_init(&rep, o.out_dir);
    struct mp_knowledge *kn_owned = NULL;
    const struct mp_knowledge *kn = mp_knowledge_builtin();
    int sfd = -1;
    sigset_t oldmask;

    if (o.knowledge_file) {
        struct mp_diag d = MP_DIAG_INIT;
        if (mp_knowledge_load(o.knowledge_file, &kn_owned, &d) < 0) {
            char m[600];
            mp_diag_format(&d, m, sizeof(m));
            mp_error("%s", m);
            exit_code = MP_EXIT_USAGE;
            goto out;
        }
        kn = kn_owned;
    }
    /* candidates */
    if (diagnose_only) {
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
            if (only_has(o.only, o.cands[i].name))
                mp_report_add_candidate(&rep, &o.cands[i]);
        }
        if (rep.n == 0) {
            mp_error("--only '%s' matches no candidate", o.only ? o.only : "");
            exit_code = MP_EXIT_USAGE;
            goto out;
        }
    }
    if (mkdir(o.out_dir, 0777) != 0 && errno != EEXIST) {
        mp_error("cannot create run directory '%s': %s", o.out_dir, strerror(errno));
        exit_code = MP_EXIT_INTERNAL;
        goto out;
    }
    sfd = mp_signals_setup(&oldmask);
    if (sfd < 0) {
        mp_error("cannot set up signal handling: %s", mp_strerror(sfd));
        goto out;
    }
    mp_proc_become_subreaper();
    char iso[32];
    mp_iso8601(mp_wall_ns(), iso, sizeof(iso));
    rep.started = xstrdup(iso);
    mp_fingerprint_detect(&rep.fp);

    struct mp_runctx ctx = {
        .run_dir = o.out_dir,
        .cmd = o.cmd,
        .ncmd = o.ncmd,
        .port = o.port,
        .kn = kn,
        .wl = &o.wl,
        .signal_fd = sfd,
        .progress = isatty(2) && !o.quiet,
        .quiet = o.quiet,
        .diag_max_requests = o.diag_max_requests,
        .cheap_start_s = 120,
    };
    if (!o.no_quality)
        ctx.quality_prompts = mp_quality_prompts(&ctx.nquality);
    bool input_error = false;
    for (size_t i = 0; i < rep.n && !ctx.signo; i++) {
        const struct mp_attempt_result *a = NULL;
        int r = mp_run_attempt(&ctx, &rep, i, false, NULL, &a);
        if (r < 0 && a && a->outcome == MP_OUT_ERROR && a->fail_class &&
            !strcmp(a->fail_class, "spawn")) {
            /* the server command itself cannot run: no candidate can */
            mp_error("%s", a->fail_message ? a->fail_message : "cannot start the server command");
            input_error = true;
            break;
        }
        if (r < 0) {
            exit_code = r == MP_EUSAGE ? MP_EXIT_USAGE : MP_EXIT_INTERNAL;
            goto out_restore;
        }
        if (ctx.signo)
            break;
        if (!o.no_diagnose && a && a->outcome == MP_OUT_CRASH) {
            if (mp_diagnose(&ctx, &rep, i) < 0) {
                exit_code = MP_EXIT_INTERNAL;
                goto out_restore;
            }
        } else if (a && a->outcome != MP_OUT_CRASH) {
            mp_diagnose(&ctx, &rep, i); /* notes why it is not diagnosed */
        }
        if (o.no_diagnose && a && a->outcome == MP_OUT_CRASH) {
            free(rep.c[i].diag.note);
            rep.c[i].diag.note = xstrdup("diagnosis skipped (--no-diagnose)");
        }
    }
    mp_iso8601(mp_wall_ns(), iso, sizeof(iso));
    rep.finished = xstrdup(iso);
    rep.interrupted = ctx.signo != 0;
    if (input_error) {
        exit_code = MP_EXIT_USAGE;
        goto out_restore;
    }
    if (mp_write_reports(&rep, o.json, o.quiet) < 0) {
        exit_code = MP_EXIT_INTERNAL;
        goto out_restore;
    }
    if (ctx.signo) {
        exit_code = 128 + ctx.signo;
    } else if (diagnose_only) {
        const char *v = rep.c[0].verdict;
        exit_code = v && (!strcmp(v, "async-race") || !strcmp(v, "kernel-fault") ||
                          !strcmp(v, "stable"))
                        ? MP_EXIT_OK
                        : MP_EXIT_NONE;
    } else {
        exit_code = rep.recommended >= 0 ? MP_EXIT_OK : MP_EXIT_NONE;
    }
out_restore:
    mp_proc_reap_orphans();
    sigprocmask(SIG_SETMASK, &oldmask, NULL);
out:
    if (sfd >= 0)
        close(sfd);
    mp_report_release(&rep);
    mp_knowledge_free(kn_owned);
    mp_opts_release(&o);
    return exit_code;
}

int cmd_qualify(int argc, char **argv)
{
    return run_main(argc, argv, false);
}

int cmd_diagnose(int argc, char **argv)
{
    return run_main(argc, argv, true);
}
