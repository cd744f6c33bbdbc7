/* fingerprint.h - what a result is a result of: GPU, driver, CUDA, engine,
 * model, host. Plain data and the comparison rule; detection on the host is
 * report/fingerprint.h. */
#ifndef MP_MODEL_FINGERPRINT_H
#define MP_MODEL_FINGERPRINT_H

#include "compat.h"

/* Owned strings, NULL when unknown. */
struct mp_fingerprint {
    char *gpu, *compute_capability, *driver, *cuda, *engine, *engine_version, *model, *host_arch;
};
void mp_fingerprint_release(struct mp_fingerprint *fp);

/* Fingerprint extras the report model has no field for. */
struct mp_fp_extra {
    char *quantization;        /* from the log or the checkpoint */
    long gpu_memory_mib;       /* -1 = not reported (unified memory, e.g. GB10) */
    char *gpu_source;          /* "nvml", "nvidia-smi", "none" */
    char *model_dir;           /* --model-dir or NULL */
    char *checkpoint_json;     /* mp_inspect_to_json of --model-dir, or NULL */
};
/* Frees the strings; gpu_memory_mib becomes -1. */
void mp_fp_extra_release(struct mp_fp_extra *x);

/* Compare the parts that decide whether results carry over: GPU, compute
 * capability, model, host architecture, and unless history is set also
 * driver, CUDA and engine version (history = runs put side by side, e.g.
 * before and after an engine upgrade, where those may differ). Returns NULL
 * when they match (a field unknown on either side matches), else a
 * sentence naming the first difference (caller frees). */
char *mp_fingerprint_mismatch(const struct mp_fingerprint *a, const struct mp_fingerprint *b,
                              bool history);

#endif
