/* xidline.h - the kernel log's records and the NVIDIA driver's Xid lines in
 * them. Pure: no I/O, no allocation.
 *
 * Records (mp_kmsg_split), one per line:
 *   /dev/kmsg         "6,1234,8123456789,-;NVRM: Xid (...): 31, ..."
 *                     (priority, sequence, microseconds since boot, flags)
 *   syslog(2)/dmesg   "<6>[ 8123.456789] NVRM: Xid (...)" or "[ 8123.456789] ..."
 *   anything else     the whole line, time unknown (journalctl, pasted logs)
 *
 * Xid lines (mp_xid_parse), as NVIDIA's open kernel modules print them and
 * users quote them (reference/field-evidence.md 2d; issue 24):
 *   NVRM: Xid (PCI:0000:00:06): 13, Graphics SM Warp Exception on (GPC 7, TPC 6, SM 0): MMU Fault
 *   NVRM: Xid (PCI:0000:00:06): 13, Graphics Exception: ESR 0x57b730=0x8000017 0x57b734=0x20 ...
 *   NVRM: Xid (PCI:0000:00:06): 31, pid=552, name=python3, channel 0x0000000a, intr 00000000.
 *         MMU Fault: ENGINE GRAPHICS GPC0 UNRECOGNIZED_CLIENT faulted @ 0x1827e2_000345d0.
 *         Fault is of type UNRECOGNIZED_FAULT UNRECOGNIZED_ACCESS_TYPE
 *   NVRM: Xid (PCI:0000:05:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.
 *   NVRM: Xid (0000:03:00): 13, 0003 00000000 00008297 ...   (older drivers: no "PCI:", no pid)
 * Fields are cut to their arrays' sizes (never inside a UTF-8 sequence is
 * not promised: the report escapes what it shows). */
#ifndef MP_LOGS_XIDLINE_H
#define MP_LOGS_XIDLINE_H

#include "compat.h"

/* Split one kernel-log line into its time (microseconds since boot, -1 when
 * the line has none) and the offset of its message. */
void mp_kmsg_split(const char *line, size_t len, long long *ts_us, size_t *msg_off);

struct mp_xid_line {
    int xid;
    char pci[32];        /* "0000:00:06" ("(PCI:0000:00:06)", or "(0000:03:00)" as older
                          * drivers write it), "" when not given */
    long pid;            /* 0: not given or '<unknown>' */
    char name[64];       /* the process name ("python3", "VLLM::EngineCor"), "" */
    char detail[256];    /* the text after xid, pid and name (the driver's words) */
    char fault_type[96]; /* "UNRECOGNIZED_FAULT UNRECOGNIZED_ACCESS_TYPE" after
                          * "Fault is of type ", "" */
    char esr[160];       /* "ESR 0x57b730=0x8000017 ..." of a Graphics Exception line, "" */
};

/* Parse msg[0..len) (a kernel-log message, any prefix before "NVRM: Xid").
 * Returns true and fills *out for an Xid line, false (out zeroed) for any
 * other line. */
bool mp_xid_parse(const char *msg, size_t len, struct mp_xid_line *out);

#endif
