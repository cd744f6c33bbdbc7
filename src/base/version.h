/* version.h - moeprobe's version string, in the base layer so every module
 * (reports, the store) can name it. */
#ifndef MP_VERSION_H
#define MP_VERSION_H

/* "0.1.0" */
extern const char mp_version[];

#endif
