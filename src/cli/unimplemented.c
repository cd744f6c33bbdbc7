/* unimplemented.c - subcommands that later work fills in. Each one says so
 * and exits with the usage code, so scripts can tell. Remove a stub here
 * when its command gets its own file. */
#include "compat.h"

#include "cli/commands.h"
#include "err.h"

#define STUB(fn, name)                                                       \
    int fn(int argc, char **argv)                                            \
    {                                                                        \
        MP_UNUSED(argc);                                                     \
        MP_UNUSED(argv);                                                     \
        mp_error("'moeprobe %s' is not implemented in this version", name); \
        return MP_EXIT_USAGE;                                                \
    }

STUB(cmd_soak, "soak")
STUB(cmd_inspect, "inspect")
STUB(cmd_report, "report")
