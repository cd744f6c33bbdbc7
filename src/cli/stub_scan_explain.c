/* Placeholder for scan/explain until src/cli/cmd_scan.c and cmd_explain.c land. */
#include "compat.h"

#include "cli/commands.h"
#include "err.h"

int cmd_scan(int argc, char **argv)
{
    MP_UNUSED(argc);
    MP_UNUSED(argv);
    mp_error("'moeprobe scan' is not implemented in this version");
    return MP_EXIT_USAGE;
}

int cmd_explain(int argc, char **argv)
{
    MP_UNUSED(argc);
    MP_UNUSED(argv);
    mp_error("'moeprobe explain' is not implemented in this version");
    return MP_EXIT_USAGE;
}
