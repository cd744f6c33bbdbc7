/* version.c - moeprobe's version, in the library so every part (reports,
 * the store) can name it without depending on main.c. */
#include "compat.h"

#include "cli/commands.h"

const char mp_version[] = "0.1.0";
