/* stub_soak.c - placeholder until 'moeprobe soak' is implemented; delete this
 * file in the commit that adds src/cli/cmd_soak.c. */
#include "compat.h"

#include "cli/commands.h"
#include "err.h"

int cmd_soak(int argc, char **argv)
{
    MP_UNUSED(argc);
    MP_UNUSED(argv);
    mp_error("'moeprobe soak' is not implemented in this version");
    return MP_EXIT_USAGE;
}
