/* kmsg.h - the kernel log, read once per call (the only code of moeprobe
 * that reads it: a privileged source, kept in proc/ with /proc).
 *
 * Where from: $MOEPROBE_KMSG when set ("none": not read; any other value: a
 * file of kernel-log lines in /dev/kmsg's or dmesg's form, as tests and
 * refengine's fake driver write them), else /dev/kmsg (non-blocking, record
 * by record), else syslog(2)'s READ_ALL (what dmesg reads). Both need
 * CAP_SYSLOG where kernel.dmesg_restrict=1, and a container has usually
 * neither: then nothing is read and *why says so; a caller never fails
 * because of it. Reads at most MP_KMSG_MAX bytes. Loop-thread only. */
#ifndef MP_PROC_KMSG_H
#define MP_PROC_KMSG_H

#include "compat.h"

#define MP_KMSG_MAX (16u << 20)

/* One line as read (not NUL-terminated; its record prefix kept:
 * logs/xidline.h splits it). */
typedef void (*mp_kmsg_cb)(void *ud, const char *line, size_t len);

/* Call cb for every line of the kernel log that contains needle (NULL:
 * every line). Returns the number of lines read (>= 0), or a negative
 * code with why filled ("kernel log not readable: /dev/kmsg: Operation not
 * permitted, syslog(2): Operation not permitted (needs CAP_SYSLOG, or
 * kernel.dmesg_restrict=0)", "kernel log not read (MOEPROBE_KMSG=none)"). */
int mp_kmsg_read(const char *needle, mp_kmsg_cb cb, void *ud, char *why, size_t whyn);

#endif
