/* gpufault.h - what an attempt learned about a GPU fault beyond the Python
 * traceback: the kernels a CUDA core dump named, the Xids the driver
 * reported (NVML events and kernel-log lines), how the dumps were set up
 * and why a source could not be read. Plain data filled by run/crashinfo.c
 * (live) and store/ (loaded), read by verdict/ and report/; one JSON form
 * (mp_gpu_fault_to_json) for report.json's attempts and the store. */
#ifndef MP_MODEL_GPUFAULT_H
#define MP_MODEL_GPUFAULT_H

#include "compat.h"

#include <cjson/cJSON.h>

/* A kernel a core dump named. Strings owned; NULL = not known. */
struct mp_kernel_fault {
    char *name;          /* readable: demangled, or as printed */
    char *mangled;       /* as printed, when that is a mangled C++ name */
    bool demangled;      /* name came from the demangler */
    char *short_name;    /* for a report line ("cutlass::device_kernel<…Mainloop…>") */
    char *family;        /* data/gpufault.json id ("cutlass-grouped-gemm") */
    char *family_label;  /* "CUTLASS grouped GEMM" */
    char *exception;     /* "CUDBG_EXCEPTION_WARP_ILLEGAL_ADDRESS"; NULL: a dump the user
                          * triggered (a hang), no exception */
    char *crash_class;   /* the exception's class ("illegal-address") */
    int device, sm, warp;           /* -1 = not said */
    unsigned long long pc;
    bool has_pc;
    long pid;            /* the process it faulted in, 0 = unknown */
    long line;           /* server.log line that names it, 0 = none */
    char *dump_file;     /* the ELF file the driver wrote (as it said) */
    char *dump_state;    /* "deleted", "kept", "not written", "too large: deleted" or NULL */
};

/* An Xid the driver reported during the attempt. */
struct mp_xid_record {
    int xid;
    char *source;        /* "nvml" | "kmsg" */
    long pid;            /* 0 = not said */
    char *process;       /* the kernel log's name= (15 characters at most), NULL */
    char *pci;           /* "0000:00:06", NULL */
    char *detail;        /* the driver's words after the number (kmsg), or the catalog's meaning */
    char *cause;         /* "application" | "hardware" | "driver" | "informational" | "unknown" */
    double t_s;          /* seconds after the attempt's start; < 0 unknown */
    char *evidence;      /* the kernel-log line, or "NVML event (GPU 0)" */
};

struct mp_gpu_fault {
    struct mp_kernel_fault *k;
    size_t nk;
    struct mp_xid_record *x;
    size_t nx;
    char *coredump;      /* the attempt's dump settings in words ("on: ..." / "off: why") */
    char *kmsg;          /* NULL: the kernel log was read; else why not, one sentence */
    char *nvml;          /* NULL: Xid events were subscribed; else why not */
    char *hang;          /* a hang's evidence: /health and /metrics during the stall */
    char *hang_dump;     /* what the dump triggered on the hang gave */
    unsigned other_xids; /* kernel-log Xids in the window of another process or GPU */
};

void mp_gpu_fault_release(struct mp_gpu_fault *g); /* *g zeroed */
bool mp_gpu_fault_empty(const struct mp_gpu_fault *g);
/* Append (copies every string; returns the new element). */
struct mp_kernel_fault *mp_gpu_fault_add_kernel(struct mp_gpu_fault *g,
                                                const struct mp_kernel_fault *k);
struct mp_xid_record *mp_gpu_fault_add_xid(struct mp_gpu_fault *g, const struct mp_xid_record *x);
/* The first kernel with an exception (not a hang dump's), or NULL. */
const struct mp_kernel_fault *mp_gpu_fault_exception(const struct mp_gpu_fault *g);
/* The first Xid whose cause makes the failure no evidence about a kernel
 * (hardware or driver), or NULL. */
const struct mp_xid_record *mp_gpu_fault_system_xid(const struct mp_gpu_fault *g);

struct mp_cand_report;
struct mp_attempt_result;
/* The kernel a candidate's crash is reported with: the one its
 * CUDA_LAUNCH_BLOCKING=1 run named (the faulting launch itself:
 * surfaced_only false), else the one its first normal-mode attempt named
 * (where an asynchronous fault surfaced, which for a race is not
 * necessarily its cause: surfaced_only true). false when none did. */
struct mp_cand_kernel {
    const struct mp_kernel_fault *k;
    const struct mp_attempt_result *a; /* the attempt that named it */
    bool surfaced_only;
};
bool mp_cand_kernel(const struct mp_cand_report *c, struct mp_cand_kernel *out);

/* As JSON: {"kernels": [...], "xid": [...], "coredump", "kernel_log", "nvml_xid",
 * "hang", "hang_dump", "other_xids"}; a kernel is {"name", "mangled",
 * "short", "family", "family_label", "exception", "class", "device", "sm",
 * "warp", "pc", "pid", "line", "dump": {"file", "state"}}. dir (may be
 * NULL) prefixes evidence ("DIR/server.log:N"). The caller owns the
 * result. */
cJSON *mp_gpu_fault_to_json(const struct mp_gpu_fault *g, const char *dir);
cJSON *mp_kernel_fault_to_json(const struct mp_kernel_fault *k, const char *dir);
cJSON *mp_xid_record_to_json(const struct mp_xid_record *x);
/* The inverse (fields it does not find stay unknown); j may be NULL. */
void mp_gpu_fault_from_json(struct mp_gpu_fault *g, const cJSON *j);

#endif
