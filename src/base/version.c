/* version.c - moeprobe's version (version.h). */
#include "version.h"

#ifndef MP_COMMIT
#define MP_COMMIT "" /* not built from a git checkout */
#endif

const char mp_version[] = "0.1.0";
const char mp_commit[] = MP_COMMIT;
