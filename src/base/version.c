/* version.c - moeprobe's version (version.h). */
#include "version.h"

const char mp_version[] = "0.1.0";
