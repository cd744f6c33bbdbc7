/* stub_report.c - placeholder until 'moeprobe report' is implemented; delete this
 * file in the commit that adds src/cli/cmd_report.c. */
#include "compat.h"

#include "cli/commands.h"
#include "err.h"

int cmd_report(int argc, char **argv)
{
    MP_UNUSED(argc);
    MP_UNUSED(argv);
    mp_error("'moeprobe report' is not implemented in this version");
    return MP_EXIT_USAGE;
}
