/* cmd_soak.c - `moeprobe soak`: one candidate under steady load for a long
 * time, until the duration ends or the first failure; every request goes
 * into the run's evidence store as it finishes, and the report has the
 * same format as qualify's. */
#include "compat.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/opts.h"
#include "clock.h"
#include "err.h"
#include "logs/logscan.h"
#include "proc/proc.h"
#include "report/report.h"
#include "run/runner.h"
#include "store/store.h"
#include "version.h"
#include "xalloc.h"


static const char soak_help[] =
    "usage: moeprobe soak --duration D [--concurrency N] [options] -- SERVER COMMAND...\n"
    "       moeprobe soak --duration D [--concurrency N] --base-url URL [--log FILE] [options]\n"
    "\n"
    "Starts the engine with one candidate (the first --candidate, or none) and\n"
    "drives N concurrent requests (default 8) after one warm-up request until\n"
    "the duration D (seconds, or with s/m/h/d: 9h; at most 30 days) ends or the\n"
    "first failure, which is classified as in qualify. Every request is recorded\n"
    "in RUNDIR/moeprobe.db as it finishes; a progress line shows elapsed/remaining\n"
    "time, requests, tok/s and the 95 % upper bound on the failure rate. The\n"
    "report (report.json, report.md) has qualify's format; --json prints the JSON\n"
    "on stdout.\n"
    "\n"
    MP_COMMON_OPTS_HELP
    "\n"
    "attach to a server someone else started (no SERVER COMMAND; nothing is stopped):\n"
    "  --base-url URL             drive this server (e.g. http://127.0.0.1:8000)\n"
    "  --log FILE                 its log, read from the start and followed as it grows,\n"
    "                             so the backends it resolved and its crashes are classified\n"
    "\n"
    "exit codes: 0 the soak ran its duration without a failure; 1 it failed;\n"
    "            2 usage or input error; 3 internal or I/O error; 128+N killed by signal N\n";

/* The longest soak: 30 days. Longer ones are refused (usage error) rather
 * than run into the nanosecond clock's range (int64 ns holds 292 years, but
 * a value like 99999999999999h does not fit). */
#define SOAK_MAX_S (30.0 * 24 * 3600)

static int parse_duration(const char *s, double *out)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    double mult = 1;
    if (end && *end && end[1] == '\0') {
        if (*end == 's')
            end++;
        else if (*end == 'm')
            mult = 60, end++;
        else if (*end == 'h')
            mult = 3600, end++;
        else if (*end == 'd')
            mult = 86400, end++;
    }
    if (errno || end == s || *end || !isfinite(v) || v <= 0)
        return mp_error("--duration: '%s' is not a positive duration (seconds, or with s/m/h/d)", s);
    if (v > SOAK_MAX_S / mult)
        return mp_error("--duration: '%s' is longer than the 30 days a soak may run (30d, 720h)", s);
    *out = v * mult;
    return 0;
}

int cmd_soak(int argc, char **argv)
{
    double duration = 0;
    long conc = 8;
    bool has_cand = false;
    const char *base_url = NULL, *log_file = NULL;
    struct mp_strv rest = MP_STRV_INIT;
    int exit_code = MP_EXIT_USAGE;
    signal(SIGXFSZ, SIG_IGN);
    /* our own options first; the shared ones go to mp_opts_parse */
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        bool past = false;
        for (int k = 1; k < i; k++)
            past = past || !strcmp(argv[k], "--");
        if (!past && i > 0 && !strcmp(a, "--duration") && i + 1 < argc) {
            if (parse_duration(argv[++i], &duration) < 0)
                goto usage;
            continue;
        }
        if (!past && i > 0 && !strcmp(a, "--concurrency") && i + 1 < argc) {
            char *end = NULL;
            conc = strtol(argv[++i], &end, 10);
            if (!end || *end || conc < 1 || conc > 100000) {
                mp_error("--concurrency: '%s' is not a whole number in 1..100000", argv[i]);
                goto usage;
            }
            continue;
        }
        if (!past && i > 0 && !strcmp(a, "--base-url") && i + 1 < argc) {
            base_url = argv[++i];
            if (strncmp(base_url, "http://", 7) != 0 && strncmp(base_url, "https://", 8) != 0) {
                mp_error("--base-url: '%s' is not an http:// or https:// URL", base_url);
                goto usage;
            }
            continue;
        }
        if (!past && i > 0 && !strcmp(a, "--log") && i + 1 < argc) {
            log_file = argv[++i];
            continue;
        }
        if (!past && (!strcmp(a, "-h") || !strcmp(a, "--help"))) {
            fputs(soak_help, stdout);
            mp_strv_release(&rest);
            return MP_EXIT_OK;
        }
        if (!past && !strcmp(a, "--candidate"))
            has_cand = true;
        mp_strv_push(&rest, a);
    }
    if (duration <= 0) {
        mp_error("soak needs --duration (e.g. --duration 9h)");
        goto usage;
    }
    if (log_file && !base_url) {
        mp_error("--log goes with --base-url (a server soak starts itself is logged by moeprobe)");
        goto usage;
    }
    if (base_url) {
        for (size_t k = 0; k < rest.n; k++) {
            if (!strcmp(rest.v[k], "--")) {
                mp_error("give either --base-url or a server command after '--', not both");
                goto usage;
            }
        }
        /* the URL stands in for the command in the run's records */
        mp_strv_push(&rest, "--");
        mp_strv_push(&rest, base_url);
    }
    struct mp_opts o;
    int rc = mp_opts_parse(&o, (int)rest.n, mp_strv_array(&rest), soak_help);
    if (rc != 0) {
        mp_opts_release(&o);
        mp_strv_release(&rest);
        return rc > 0 ? MP_EXIT_OK : MP_EXIT_USAGE;
    }
    if (o.resume || mp_cli_run_dir_check("soak", o.out_dir, false) != 0) {
        if (o.resume)
            mp_error("soak does not resume a run: start it again with a new --out DIR");
        mp_opts_release(&o);
        mp_strv_release(&rest);
        return MP_EXIT_USAGE;
    }
    struct mp_report rep;
    mp_report_init(&rep, o.out_dir);
    struct mp_store *store = NULL;
    int sfd = -1;
    sigset_t oldmask;
    struct mp_fp_extra fpx;
    memset(&fpx, 0, sizeof(fpx));
    struct mp_knowledge *kn_owned = NULL;
    const struct mp_knowledge *kn = NULL;
    struct mp_candidate c;
    if (has_cand) {
        mp_candidate_copy(&c, &o.cands[0]);
    } else {
        mp_candidate_from_knobs("soak", "", &c, NULL);
    }
    mp_report_add_candidate(&rep, &c);
    if (mp_cli_knowledge("soak", o.knowledge_file, &kn_owned, &kn) < 0) {
        exit_code = MP_EXIT_USAGE;
        goto out;
    }
    struct mp_diag d = MP_DIAG_INIT;
    rc = mp_store_open(o.out_dir, MP_STORE_CREATE | MP_STORE_LOCK, &store, &d);
    if (rc < 0) {
        mp_error("%s", d.msg[0] ? d.msg : mp_strerror(rc));
        exit_code = rc == MP_ESTATE ? MP_EXIT_USAGE : MP_EXIT_INTERNAL;
        goto out;
    }
    exit_code = MP_EXIT_INTERNAL;
    mp_store_mask_init(mp_store_mask(store), &c, 1, o.api_key);
    mp_store_mask_add_args(mp_store_mask(store), o.cmd, o.ncmd);
    sfd = mp_signals_setup(&oldmask);
    if (sfd < 0) {
        mp_error("cannot set up signal handling: %s", mp_strerror(sfd));
        goto out;
    }
    mp_proc_become_subreaper();
    char iso[32];
    mp_iso8601(mp_wall_ns(), iso, sizeof(iso));
    rep.started = xstrdup(iso);
    mp_fingerprint_detect_ex(&rep.fp, &fpx);
    if (mp_store_run_begin(store, "soak", argv + 1, (size_t)(argc - 1), mp_version, iso) < 0 ||
        mp_store_candidate(store, 0, &c) < 0 || mp_store_set_fingerprint(store, &rep.fp, &fpx) < 0)
        goto store_failed;

    struct mp_workload wl = o.wl;
    wl.nphases = 2;
    wl.phases[0].level = 1;
    wl.phases[0].requests = 1;
    snprintf(wl.phases[0].name, sizeof(wl.phases[0].name), "warmup");
    snprintf(wl.phases[1].name, sizeof(wl.phases[1].name), "soak");
    wl.phases[1].level = (int)conc;
    wl.phases[1].requests = INT_MAX;
    wl.phases[1].duration_s = duration;
    struct mp_runctx ctx = {
        .run_dir = o.out_dir,
        .cmd = o.cmd,
        .ncmd = o.ncmd,
        .port = o.port,
        .kn = kn,
        .wl = &wl,
        .signal_fd = sfd,
        .progress = isatty(2) && !o.quiet,
        .quiet = o.quiet,
        .store = store,
        .attach_url = base_url,
        .attach_log = log_file,
    };
    const struct mp_attempt_result *a = NULL;
    rc = mp_run_attempt(&ctx, &rep, 0, false, NULL, &a);
    if (rc < 0 && !(a && a->outcome == MP_OUT_ERROR && a->fail_class && !strcmp(a->fail_class, "spawn"))) {
        /* an I/O error (message printed): keep what was recorded */
        mp_write_reports_from_store(store, o.out_dir, NULL, o.json, o.quiet, NULL);
        goto out_restore;
    }
    if (!ctx.signo && mp_store_candidate_done(store, 0, &rep.c[0].diag) < 0)
        goto store_failed;
    mp_iso8601(mp_wall_ns(), iso, sizeof(iso));
    if (mp_store_run_finish(store, iso, ctx.signo != 0) < 0)
        goto store_failed;
    if (mp_write_reports_from_store(store, o.out_dir, NULL, o.json, o.quiet, NULL) < 0)
        goto out_restore;
    if (ctx.signo)
        exit_code = 128 + ctx.signo;
    else if (rc < 0)
        exit_code = MP_EXIT_USAGE; /* the server command cannot run */
    else
        exit_code = a && a->outcome == MP_OUT_CLEAN ? MP_EXIT_OK : MP_EXIT_NONE;
    goto out_restore;
store_failed:
    mp_error("cannot write the evidence store in '%s': %s", o.out_dir, mp_store_errmsg(store));
    exit_code = MP_EXIT_INTERNAL;
out_restore:
    mp_proc_reap_orphans();
    sigprocmask(SIG_SETMASK, &oldmask, NULL);
out:
    if (sfd >= 0)
        close(sfd);
    mp_candidate_release(&c);
    mp_fp_extra_release(&fpx);
    mp_store_close(store);
    mp_knowledge_free(kn_owned);
    mp_report_release(&rep);
    mp_opts_release(&o);
    mp_strv_release(&rest);
    return exit_code;
usage:
    mp_strv_release(&rest);
    return MP_EXIT_USAGE;
}
