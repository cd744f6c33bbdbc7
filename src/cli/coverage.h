/* coverage.h - qualify's and resolve's kernel coverage check (coverage.c;
 * docs/inspect.md "In qualify and resolve"). */
#ifndef MP_CLI_COVERAGE_H
#define MP_CLI_COVERAGE_H

#include "compat.h"

#include "cli/opts.h"
#include "cli/session.h"
#include "model/report.h"

/* When the engine's files can be found (o->engine_dir, or the Python
 * environment of a `vllm` server command), read the CUDA code of its
 * libraries, judge it against rep's GPU, store it with the fingerprint
 * (out_rep, may be NULL, gets it too) and, unless quiet, print the summary
 * and a plan line for each candidate whose explicitly chosen backend's
 * kernels this build cannot run natively. Nothing found: 0, silently.
 * Returns 0 or an exit code (message printed): MP_EXIT_USAGE for an
 * --engine-dir that cannot be read, the store's failure. */
int mp_cli_engine_coverage(struct mp_session *ss, const struct mp_opts *o,
                           const struct mp_report *rep, struct mp_report *out_rep);

#endif
