/* session.h - what every run command (qualify, diagnose, resolve, soak,
 * minimize) sets up and tears down, in one place: the knowledge, the run's
 * evidence store (created or reopened, locked as its writer) with its
 * secret masking, the signal set-up (signalfd), the subreaper, the host's
 * fingerprint (with --model-dir's checkpoint), and the reports, which are
 * always rendered from the store (one loader, mp_store_load) - never from
 * the command's live state.
 *
 *   struct mp_session ss = MP_SESSION_INIT;
 *   if ((ec = mp_session_begin(&ss, "soak", &o, 0, cands, n, &rep)) != 0) goto out;
 *   mp_session_runctx(&ss, &ctx);           ctx as every command starts it
 *   mp_session_record_run(&ss, args, nargs, &rep);
 *   ... mp_run_attempt(&ctx, &rep, ...) ...
 *   mp_session_finish(&ss, interrupted); mp_session_reports(&ss, json, quiet, NULL);
 * out:
 *   mp_session_end_exit(&ss, ec, &rep);    always, also after a failed begin
 *                                           (a usage error before any attempt
 *                                           leaves no store behind)
 *
 * Loop-thread only; one session per process at a time (it owns the signal
 * mask). Errors: the functions print their message (err.h) and return an
 * exit code (begin) or -1. */
#ifndef MP_CLI_SESSION_H
#define MP_CLI_SESSION_H

#include "compat.h"

#include <signal.h>

#include "cli/opts.h"
#include "model/fingerprint.h"
#include "proc/proc.h"
#include "run/gpuwait.h"

struct mp_candidate;
struct mp_knowledge;
struct mp_report;
struct mp_runctx;
struct mp_store;

struct mp_session {
    const char *sub;                 /* "qualify", "soak", ... (borrowed) */
    const struct mp_opts *o;         /* borrowed; o->out_dir is the run directory */
    const struct mp_knowledge *kn;   /* the built-in knowledge or kn_owned */
    struct mp_knowledge *kn_owned;   /* --knowledge FILE, or NULL */
    struct mp_store *store;          /* owned; NULL until begin opened it */
    struct mp_signals sig;           /* signalfd (sig.fd, -1 until set up), mask to restore */
    char started[32];                /* ISO 8601 start of this process's part of the run */
    struct mp_fp_extra fpx;          /* what the fingerprint adds (GPU memory, checkpoint) */
    bool created;                    /* begin created the store (none was there before) */
    struct mp_gpuwait gpuwait;       /* the GPU memory when the run began (run/gpuwait.h) */
};
#define MP_SESSION_INIT {.sig = MP_SIGNALS_INIT, .gpuwait = MP_GPUWAIT_INIT}

/* begin's flags */
#define MP_SESSION_RESUME 1u /* reopen the run's store (qualify --resume), do not create it */
#define MP_SESSION_ATTACH 2u /* o->cmd is no command of ours (soak --base-url): nothing to start */

/* Set up a run of sub in o->out_dir, in this order: the knowledge
 * (--knowledge), what the attempts would refuse (--port in use, a server
 * command that cannot be run; unless MP_SESSION_ATTACH; the command not on
 * MP_SESSION_RESUME) and --model-dir's checkpoint (all read first: a bad
 * one leaves nothing behind), the store (created unless MP_SESSION_RESUME; locked), the
 * mask of the secrets in cands[0..ncands) (their knobs), o->api_key and
 * o->cmd, the signals and the subreaper (mp_signals_begin: SIGINT/TERM/
 * HUP/QUIT/CHLD into a signalfd), the start time (rep->started) and the host's
 * fingerprint (rep->fp, s->fpx; helpers such as nvidia-smi run after the
 * signal set-up through proc/, with their own signals unblocked) with the
 * checkpoint's part (rep's checkpoint, s->fpx). Nothing is recorded
 * in the store yet (mp_session_record_run).
 * Returns 0, or an exit code (message printed): MP_EXIT_USAGE (a bad
 * knowledge file or --model-dir, a port in use, a command that cannot be
 * run, a locked run directory or one holding a
 * run), MP_EXIT_INTERNAL. Call mp_session_end in every case. */
int mp_session_begin(struct mp_session *s, const char *sub, const struct mp_opts *o,
                     unsigned flags, const struct mp_candidate *cands, size_t ncands,
                     struct mp_report *rep);

/* Is rc (a -errno or MP_E* from creating or opening the run directory) the
 * user's input error - exit 2: a missing parent, no permission, a read-only
 * file system, not a directory, in use - rather than an I/O error (exit 3)? */
bool mp_cli_out_dir_input_error(int rc);

/* Fill ctx as every command starts it (run directory, command, port,
 * knowledge, o->wl, the signal fd, progress on a terminal or as lines,
 * quiet, the diagnosis limits, the store); the rest zeroed. */
void mp_session_runctx(const struct mp_session *s, struct mp_runctx *ctx);

/* Record the start of a new run: its command line args[0..nargs) (secrets
 * masked by the store), rep's candidates and the fingerprint. 0 or -1
 * (message printed). */
int mp_session_record_run(struct mp_session *s, char **args, size_t nargs,
                          const struct mp_report *rep);

/* The fingerprint as the attempts so far add to it (engine version, model,
 * the quantization the engine logged) into rep->fp and the store. 0 or -1
 * (message printed). */
int mp_session_fingerprint(struct mp_session *s, struct mp_report *rep);

/* Record the end of the run (now; interrupted: by a signal). 0 or -1
 * (message printed). */
int mp_session_finish(struct mp_session *s, bool interrupted);

/* Render report.json, report.md and report.html into the run directory
 * from the store alone, print the JSON (json) or Markdown on stdout and the
 * summary on stderr unless quiet. loaded (may be NULL) receives the model as
 * loaded and finalized (verdicts, recommendation; caller releases it with
 * mp_report_release). 0 or -1 (message printed). */
int mp_session_reports(struct mp_session *s, bool json, bool quiet, struct mp_report *loaded);

/* Print "cannot write the evidence store in DIR: why" and return
 * MP_EXIT_INTERNAL. */
int mp_session_store_failed(const struct mp_session *s);

/* End the command with exit_code: mp_session_end, and when the store is one
 * this session created, the code is MP_EXIT_USAGE and no attempt of rep's
 * candidates was recorded (a usage error found after begin, such as a link
 * planted in attempts/ or a port taken since begin looked), remove what the
 * session left (the store's files, the lock, an empty attempts/), so that the
 * next run on the same --out is not refused as holding a run. Returns
 * exit_code. */
int mp_session_end_exit(struct mp_session *s, int exit_code, const struct mp_report *rep);

/* Tear down what begin set up: reap orphaned children, restore the signal
 * mask, close the signalfd and the store, free the knowledge and s->fpx.
 * Harmless after a failed or no begin (MP_SESSION_INIT) and twice. */
void mp_session_end(struct mp_session *s);

#endif
