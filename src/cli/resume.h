/* resume.h - `--resume RUNDIR`: a run's stored arguments made ours again
 * (cmd_qualify.c; bisect uses it too). */
#ifndef MP_CLI_RESUME_H
#define MP_CLI_RESUME_H

#include "compat.h"

#include "strv.h"

/* `SUB --resume RUNDIR [options] [-- SERVER COMMAND]`: *out gets our
 * arguments, then the stored ones (secrets restored from the environment;
 * relative paths of --knowledge/--model-dir resolved against the directory
 * the run was started in, *cwd - caller frees - which the engine is started
 * in too). A server command after '--' must be the run's own (it may fill
 * in what the store masked); another one is refused. Returns 0 (no
 * --resume, or *out filled), or an exit code (message printed). */
int mp_cli_resume_args(int argc, char **argv, const char *sub, struct mp_strv *out, char **cwd);

#endif
