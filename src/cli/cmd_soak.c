/* cmd_soak.c - `moeprobe soak`: one candidate under steady load for a long
 * time, until the duration ends or the first failure; every request goes
 * into the run's evidence store as it finishes, and the report has the
 * same format as qualify's. */
#include "compat.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/opts.h"
#include "cli/session.h"
#include "err.h"
#include "report/report.h"
#include "run/runner.h"
#include "store/store.h"
#include "xalloc.h"


static const char soak_head[] =
    "usage: moeprobe soak --duration D [--concurrency N] [options] -- SERVER COMMAND...\n"
    "       moeprobe soak --duration D [--concurrency N] --base-url URL [--log FILE] [options]\n"
    "\n"
    "Starts the engine with one candidate (see below; none: the command as given)\n"
    "and drives N concurrent requests (default 8) after one warm-up request until\n"
    "the duration D (seconds, or with s/m/h/d: 9h; at most 30 days) ends or the\n"
    "first failure, which is classified as in qualify. Every request is recorded\n"
    "in RUNDIR/moeprobe.db as it finishes; a progress line shows elapsed/remaining\n"
    "time, requests, tok/s and the 95 % upper bound on the failure rate. The\n"
    "reports (report.json, report.md, report.html) have qualify's format, with each\n"
    "phase's throughput and latency; --json prints the JSON on stdout.\n"
    "\n"
    "One candidate: the --candidate given, the one --only names among several (or\n"
    "among the preset's), or the one candidate of an explicit --preset; several\n"
    "without --only are refused, and with none of these the command is soaked as\n"
    "given. --conc LEVEL:REQUESTS does not apply (the level is --concurrency N,\n"
    "held until the duration ends) and is refused; so is --resume, and so are the\n"
    "options of the CUDA_LAUNCH_BLOCKING=1 rerun and the output check, which soak\n"
    "does not run.\n"
    "\n";
static const char soak_tail[] =
    "\n"
    "exit codes: 0 the soak ran its duration without a failure; 1 it failed;\n"
    "            2 usage or input error; 3 internal or I/O error; 128+N killed by signal N\n";

/* The candidate a soak runs: the one --only names (among the --candidates,
 * or the preset's when none is given), else the one --candidate, else the
 * one candidate of an explicit --preset, else none (*pick = NULL: the
 * command as given). What was given is read from the parsed options
 * (o->ncands_given, o->preset), so abbreviations getopt accepts
 * (`--cand`, `--pre`) count like the full names. 0, or -1 when the options
 * name several or none (message printed). */
static int soak_candidate(const struct mp_opts *o, const struct mp_candidate **pick)
{
    *pick = NULL;
    if (o->only) {
        size_t nmatch = 0;
        for (size_t i = 0; i < o->ncands; i++) {
            if (mp_csv_has(o->only, o->cands[i].name)) {
                *pick = *pick ? *pick : &o->cands[i];
                nmatch++;
            }
        }
        if (nmatch == 1)
            return 0;
        *pick = NULL;
        return mp_error("--only '%s' %s: soak runs exactly one candidate", o->only,
                        nmatch ? "names more than one candidate" : "matches no candidate");
    }
    if (o->ncands_given > 1)
        return mp_error("soak runs one candidate for the whole --duration, and %zu --candidate "
                        "were given: pick one with --only NAME (or soak each in a run of its own)",
                        o->ncands_given);
    if (o->ncands_given == 1) {
        *pick = &o->cands[0];
        return 0;
    }
    if (o->preset) {
        if (o->ncands == 1) {
            *pick = &o->cands[0];
            return 0;
        }
        return mp_error("--preset %s has %zu candidates and soak runs one for the whole "
                        "--duration: pick one with --only NAME", o->preset, o->ncands);
    }
    return 0; /* the default preset, not asked for: the command as given */
}

/* Soak's phases: one warm-up request, --seq N sequential requests when
 * given, the --prefill-check phase when given (long prompts crash early or
 * not at all: before the hours of load, not after), then `conc` in flight
 * until the duration ends. */
static void soak_workload(const struct mp_opts *o, long conc, double duration,
                          struct mp_workload *wl)
{
    *wl = o->wl;
    size_t n = 1; /* phases[0]: the warm-up, as mp_opts_parse left it */
    wl->phases[0].level = 1;
    wl->phases[0].requests = 1;
    snprintf(wl->phases[0].name, sizeof(wl->phases[0].name), "warmup");
    if (o->seq_given && o->wl.nphases > 1 && !strcmp(o->wl.phases[1].name, "sequential"))
        wl->phases[n++] = o->wl.phases[1]; /* --seq 0 removed it */
    for (size_t k = 1; k < o->wl.nphases; k++) {
        if (!strncmp(o->wl.phases[k].name, "prefill-", 8))
            wl->phases[n++] = o->wl.phases[k]; /* mp_workload_add_prefill */
    }
    memset(&wl->phases[n], 0, sizeof(wl->phases[n]));
    snprintf(wl->phases[n].name, sizeof(wl->phases[n].name), "soak");
    wl->phases[n].level = (int)conc;
    wl->phases[n].requests = INT_MAX;
    wl->phases[n].duration_s = duration;
    wl->nphases = n + 1;
}

int cmd_soak(int argc, char **argv)
{
    int exit_code = MP_EXIT_USAGE;
    struct mp_opts o;
    int rc = mp_opts_parse(&o, MP_CMD_SOAK, argc, argv, soak_head, soak_tail);
    if (rc == 0 && mp_cli_run_dir_check("soak", o.out_dir, false) != 0)
        rc = -1;
    if (rc != 0) {
        mp_opts_release(&o);
        return rc > 0 ? MP_EXIT_OK : MP_EXIT_USAGE;
    }
    const char *base_url = o.base_url, *log_file = o.log_file;
    struct mp_report rep;
    mp_report_init(&rep, o.out_dir);
    struct mp_session ss = MP_SESSION_INIT;
    struct mp_candidate c;
    memset(&c, 0, sizeof(c));
    const struct mp_candidate *pick = NULL;
    if (soak_candidate(&o, &pick) < 0)
        goto out;
    if (pick)
        mp_candidate_copy(&c, pick);
    else
        mp_candidate_from_knobs("soak", "", &c, NULL);
    mp_report_add_candidate(&rep, &c);
    exit_code = mp_session_begin(&ss, "soak", &o, base_url ? MP_SESSION_ATTACH : 0, &c, 1, &rep);
    if (exit_code)
        goto out;
    exit_code = MP_EXIT_INTERNAL;
    if (mp_session_record_run(&ss, argv + 1, (size_t)(argc - 1), &rep) < 0)
        goto out;

    struct mp_workload wl;
    soak_workload(&o, o.concurrency, o.duration_s, &wl);
    struct mp_runctx ctx;
    mp_session_runctx(&ss, &ctx);
    ctx.wl = &wl;
    ctx.attach_url = base_url;
    ctx.attach_log = log_file;
    const struct mp_attempt_result *a = NULL;
    rc = mp_run_attempt(&ctx, &rep, 0, false, NULL, &a);
    if (rc < 0 && rc != MP_ECOMMAND) {
        /* an I/O error (message printed): keep what was recorded */
        mp_session_reports(&ss, o.json, o.quiet, NULL);
        goto out;
    }
    bool clean = a && a->outcome == MP_OUT_CLEAN;
    struct mp_diag_policy pol; /* a soak is never diagnosed */
    mp_run_diag_policy(&ctx, false, false, false, &pol);
    if (!ctx.signo)
        mp_run_candidate_diagnosis(&rep, 0, &pol);
    if (!ctx.signo && (mp_session_fingerprint(&ss, &rep) < 0 ||
                       mp_store_candidate_done(ss.store, 0, &rep.c[0].diag, &pol) < 0)) {
        exit_code = mp_session_store_failed(&ss);
        goto out;
    }
    if (mp_session_finish(&ss, ctx.signo != 0) < 0)
        goto out;
    if (mp_session_reports(&ss, o.json, o.quiet, NULL) < 0)
        goto out;
    if (ctx.signo)
        exit_code = 128 + ctx.signo;
    else if (rc < 0)
        exit_code = MP_EXIT_USAGE; /* the server command cannot run */
    else
        exit_code = clean ? MP_EXIT_OK : MP_EXIT_NONE;
out:
    mp_session_end_exit(&ss, exit_code, &rep);
    mp_candidate_release(&c);
    mp_report_release(&rep);
    mp_opts_release(&o);
    return exit_code;
}
