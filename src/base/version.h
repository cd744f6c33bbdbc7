/* version.h - moeprobe's version string, in the base layer so every module
 * (reports, the store) can name it. */
#ifndef MP_VERSION_H
#define MP_VERSION_H

/* "0.1.0" */
extern const char mp_version[];
/* The git commit the binary was built from ("1a2b3c4d5e6f", with "-dirty"
 * when the tree had changes), or "" when it was not built from a checkout
 * (the Makefile passes MP_COMMIT). */
extern const char mp_commit[];

#endif
