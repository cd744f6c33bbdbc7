/* sched.c - entry point of qualify's scale-out (see sched.h). */
#include "compat.h"

#include <stdlib.h>

#include "cli/opts.h"
#include "err.h"
#include "sched/sched.h"

bool mp_sched_wanted(const struct mp_opts *o)
{
    if (getenv(MP_SCHED_CHILD_VAR))
        return false;
    return o->gpus || o->slurm || o->slurm_script || o->resume;
}

int mp_sched_qualify(const struct mp_opts *o, int argc, char **argv)
{
    MP_UNUSED(o);
    MP_UNUSED(argc);
    MP_UNUSED(argv);
    mp_error("--gpus/--slurm: not implemented yet");
    return MP_EXIT_USAGE;
}
