/* stub_inspect.c - placeholder until 'moeprobe inspect' is implemented; delete this
 * file in the commit that adds src/cli/cmd_inspect.c. */
#include "compat.h"

#include "cli/commands.h"
#include "err.h"

int cmd_inspect(int argc, char **argv)
{
    MP_UNUSED(argc);
    MP_UNUSED(argv);
    mp_error("'moeprobe inspect' is not implemented in this version");
    return MP_EXIT_USAGE;
}
