/* gpufault.h - what a GPU fault's names mean: the catalog compiled in from
 * data/gpufault.json (kernel families, the CUDA debugger's exception types,
 * NVIDIA's Xid catalog; each entry cites its source there and in
 * docs/crash.md). Read-only after the first use, which parses the data
 * once; loop-thread only (the first call is not synchronised). A damaged
 * catalog is a build error caught by test_gpufault: at run time it reads as
 * empty (nothing is known). */
#ifndef MP_LOGS_GPUFAULT_H
#define MP_LOGS_GPUFAULT_H

#include "compat.h"

/* A kernel's family. Strings are the catalog's (static, never freed),
 * except key, which is copied. */
struct mp_kfamily {
    const char *id;    /* "cutlass-grouped-gemm" */
    const char *label; /* "CUTLASS grouped GEMM" */
    char key[128];     /* the identifier of the name that matched
                        * ("MainloopSm120ArrayTmaWarpSpecialized"), "" when
                        * the match was not inside one */
};

/* The family of a kernel whose readable (demangled, or raw when it could
 * not be) name is readable and raw name raw (either may be NULL): the first
 * family of the catalog whose patterns match either. false (out zeroed)
 * when none does. */
bool mp_gf_family(const char *readable, const char *raw, struct mp_kfamily *out);

/* The crash class ("illegal-address", ... as the knowledge's classes) of a
 * CUDA debugger exception name ("CUDBG_EXCEPTION_WARP_ILLEGAL_ADDRESS"), and
 * its meaning in words into *meaning (may be NULL); NULL when the name is
 * not in the catalog. */
const char *mp_gf_exception_class(const char *name, const char **meaning);

enum mp_xid_cause {
    MP_XID_UNKNOWN = 0,  /* not in the catalog */
    MP_XID_APPLICATION,  /* a fault of the program (13, 31, 43, 45, 68) */
    MP_XID_HARDWARE,     /* memory, bus, NVLink: not evidence about a kernel */
    MP_XID_DRIVER,       /* driver or GPU firmware: not evidence about a kernel */
    MP_XID_INFO,         /* reports a state */
};
/* "unknown", "application", "hardware", "driver", "informational". */
const char *mp_xid_cause_name(enum mp_xid_cause c);
/* The inverse; an unknown or NULL name is MP_XID_UNKNOWN. */
enum mp_xid_cause mp_xid_cause_from_name(const char *name);
/* True for the causes that make a failure no evidence about a kernel. */
bool mp_xid_cause_blames_system(enum mp_xid_cause c);

struct mp_xid_info {
    int xid;
    const char *mnemonic, *meaning; /* static */
    enum mp_xid_cause cause;
};
/* The catalog's entry for xid; false (out->cause MP_XID_UNKNOWN, strings
 * NULL) when it has none. */
bool mp_gf_xid(int xid, struct mp_xid_info *out);

/* Counts of the loaded catalog (tests: the data parsed). */
void mp_gf_counts(size_t *families, size_t *exceptions, size_t *xids);

#endif
