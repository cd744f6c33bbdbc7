/* fingerprint.h - detecting the host's part of the fingerprint
 * (model/fingerprint.h): NVML, nvidia-smi, the kernel, a checkpoint's
 * quantization. */
#ifndef MP_REPORT_FINGERPRINT_H
#define MP_REPORT_FINGERPRINT_H

#include "compat.h"

#include "model/fingerprint.h"

/* The NVML functions moeprobe uses, as loaded with dlopen (injectable for
 * tests). Return values are nvmlReturn_t (0 = success). */
struct mp_nvml_api {
    int (*init)(void);
    int (*shutdown)(void);
    int (*driver_version)(char *buf, unsigned len);
    int (*cuda_version)(int *v);               /* e.g. 12080 */
    int (*count)(unsigned *n);
    int (*handle)(unsigned i, void **dev);
    int (*name)(void *dev, char *buf, unsigned len);
    int (*cc)(void *dev, int *major, int *minor);
    int (*memory)(void *dev, unsigned long long mem[3]); /* total, free, used */
};
/* Fill fp/x from NVML through api. Returns 0, or <0 when NVML has no GPU or
 * failed (fp untouched). A memory call that fails (unified-memory GPUs such
 * as GB10 say NOT_SUPPORTED) leaves x->gpu_memory_mib = -1. */
int mp_fingerprint_from_nvml(const struct mp_nvml_api *api, struct mp_fingerprint *fp,
                             struct mp_fp_extra *x);
/* Detect the host's part of the fingerprint: NVML (dlopen of
 * libnvidia-ml.so.1, or $MOEPROBE_NVML_LIB; "none" skips it), else
 * nvidia-smi, else gpu = "no NVIDIA GPU"; host arch and kernel. x may be NULL. */
void mp_fingerprint_detect_ex(struct mp_fingerprint *fp, struct mp_fp_extra *x);
/* Quantization of a checkpoint folder (config.json quantization_config, or
 * hf_quant_config.json), e.g. "modelopt_fp4 (NVFP4)"; NULL when not found. */
char *mp_fingerprint_model_dir(const char *dir);

/* mp_fingerprint_detect_ex(fp, NULL). */
void mp_fingerprint_detect(struct mp_fingerprint *fp);

#endif
