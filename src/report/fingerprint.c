/* fingerprint.c - what the results are only valid for: GPU, compute
 * capability, driver, CUDA, host (the engine and model come from the log,
 * the quantization also from the checkpoint folder).
 *
 * GPU facts come from NVML, loaded at run time with dlopen so that
 * moeprobe runs (and says "no NVIDIA GPU") on machines without a driver;
 * nvidia-smi is the fallback. */
#include "report/fingerprint.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "buf.h"
#include "inspect/inspect.h"
#include "proc/proc.h"
#include "xalloc.h"

/* nvidia-smi answers in well under a second; a hung driver must not hang us */
#define SMI_TIMEOUT_S 30.0

/* Run a command (proc/: no shell, stderr to /dev/null) and return its
 * output (at most 16 KiB), or NULL when it cannot run, fails or says
 * nothing. */
static char *output_of(const char *const argv[])
{
    struct mp_capture c = {.argv = (char *const *)argv, .timeout_s = SMI_TIMEOUT_S, .max = 16384};
    struct buf b = BUF_INIT;
    int rc = mp_proc_run_capture(&c, &b, NULL);
    if (rc != 0 || b.len == 0) {
        buf_release(&b);
        return NULL;
    }
    return buf_detach(&b, NULL);
}

static char *trimdup(const char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r'))
        n--;
    return xstrndup(s, n);
}

int mp_fingerprint_from_nvml(const struct mp_nvml_api *api, struct mp_fingerprint *fp,
                             struct mp_fp_extra *x)
{
    if (!api->init || !api->count || !api->handle || !api->name || api->init() != 0)
        return -ENODEV;
    int rc = 0;
    unsigned n = 0;
    void *dev = NULL;
    char name[256] = "";
    if (api->count(&n) != 0 || n == 0 || api->handle(0, &dev) != 0 ||
        api->name(dev, name, sizeof(name)) != 0) {
        rc = -ENODEV;
        goto out;
    }
    free(fp->gpu);
    fp->gpu = n > 1 ? xasprintf("%u x %s", n, name) : xstrdup(name);
    int major = 0, minor = 0;
    if (api->cc && api->cc(dev, &major, &minor) == 0) {
        free(fp->compute_capability);
        fp->compute_capability = xasprintf("%d.%d", major, minor);
    }
    char drv[96] = "";
    if (api->driver_version && api->driver_version(drv, sizeof(drv)) == 0 && drv[0]) {
        free(fp->driver);
        fp->driver = xstrdup(drv);
    }
    int cv = 0;
    if (api->cuda_version && api->cuda_version(&cv) == 0 && cv > 0) {
        free(fp->cuda);
        fp->cuda = xasprintf("%d.%d", cv / 1000, (cv % 1000) / 10);
    }
    if (x) {
        unsigned long long mem[3] = {0, 0, 0};
        /* unified memory (GB10): NOT_SUPPORTED, or a zero total */
        x->gpu_memory_mib = api->memory && api->memory(dev, mem) == 0 && mem[0] > 0
                                ? (long)(mem[0] >> 20)
                                : -1;
        free(x->gpu_source);
        x->gpu_source = xstrdup("nvml");
    }
out:
    if (api->shutdown)
        api->shutdown();
    return rc;
}

static int nvml_detect(struct mp_fingerprint *fp, struct mp_fp_extra *x)
{
    const char *lib = getenv("MOEPROBE_NVML_LIB");
    if (lib && !strcmp(lib, "none"))
        return -ENOENT;
    void *h = dlopen(lib && *lib ? lib : "libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return -ENOENT;
    struct mp_nvml_api api;
    memset(&api, 0, sizeof(api));
#define SYM(field, a, b)                                                 \
    do {                                                                 \
        void *p_ = dlsym(h, a);                                          \
        if (!p_ && (b))                                                  \
            p_ = dlsym(h, (b) ? (b) : "");                               \
        memcpy(&api.field, &p_, sizeof(p_));                             \
    } while (0)
    SYM(init, "nvmlInit_v2", "nvmlInit");
    SYM(shutdown, "nvmlShutdown", NULL);
    SYM(driver_version, "nvmlSystemGetDriverVersion", NULL);
    SYM(cuda_version, "nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetCudaDriverVersion");
    SYM(count, "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount");
    SYM(handle, "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex");
    SYM(name, "nvmlDeviceGetName", NULL);
    SYM(cc, "nvmlDeviceGetCudaComputeCapability", NULL);
    SYM(memory, "nvmlDeviceGetMemoryInfo", NULL);
#undef SYM
    int rc = mp_fingerprint_from_nvml(&api, fp, x);
    dlclose(h);
    return rc;
}

static int smi_detect(struct mp_fingerprint *fp, struct mp_fp_extra *x)
{
    const char *q[] = {"nvidia-smi", "--query-gpu=name,compute_cap,driver_version,memory.total",
                       "--format=csv,noheader,nounits", NULL};
    char *out = output_of(q);
    if (!out)
        return -ENOENT;
    unsigned ngpu = 0;
    for (char *p = out; *p; p++)
        ngpu += *p == '\n';
    char *nl = strchr(out, '\n');
    if (nl)
        *nl = '\0';
    char *save = NULL;
    char *name = strtok_r(out, ",", &save);
    char *cc = strtok_r(NULL, ",", &save);
    char *drv = strtok_r(NULL, ",", &save);
    char *mem = strtok_r(NULL, ",", &save);
    if (!name) {
        free(out);
        return -ENOENT;
    }
    char *n = trimdup(name);
    free(fp->gpu);
    fp->gpu = ngpu > 1 ? xasprintf("%u x %s", ngpu, n) : xstrdup(n);
    free(n);
    if (cc) {
        free(fp->compute_capability);
        fp->compute_capability = trimdup(cc);
    }
    if (drv) {
        free(fp->driver);
        fp->driver = trimdup(drv);
    }
    if (x) {
        char *end = NULL;
        long m = mem ? strtol(mem, &end, 10) : -1;
        x->gpu_memory_mib = mem && end != mem && m > 0 ? m : -1; /* "[N/A]" on GB10 */
        free(x->gpu_source);
        x->gpu_source = xstrdup("nvidia-smi");
    }
    free(out);
    /* the CUDA version is only in the plain output's header */
    const char *plain[] = {"nvidia-smi", NULL};
    out = output_of(plain);
    const char *cv = out ? strstr(out, "CUDA Version:") : NULL;
    if (cv) {
        cv += strlen("CUDA Version:");
        while (*cv == ' ')
            cv++;
        size_t l = strspn(cv, "0123456789.");
        if (l) {
            free(fp->cuda);
            fp->cuda = xstrndup(cv, l);
        }
    }
    free(out);
    return 0;
}

void mp_fingerprint_detect_ex(struct mp_fingerprint *fp, struct mp_fp_extra *x)
{
    struct utsname u;
    if (x) {
        memset(x, 0, sizeof(*x));
        x->gpu_memory_mib = -1;
    }
    if (uname(&u) == 0) {
        free(fp->host_arch);
        fp->host_arch = xstrdup(u.machine); /* the machine name only (DESIGN.md) */
    }
    if (nvml_detect(fp, x) == 0 || smi_detect(fp, x) == 0)
        return;
    free(fp->gpu);
    fp->gpu = xstrdup("no NVIDIA GPU");
    if (x)
        x->gpu_source = xstrdup("none");
}

void mp_fingerprint_detect(struct mp_fingerprint *fp)
{
    mp_fingerprint_detect_ex(fp, NULL);
}

char *mp_fingerprint_model_dir(const char *dir)
{
    struct mp_inspect in;
    if (mp_inspect_dir(dir, &in, NULL) < 0) {
        mp_inspect_release(&in);
        return NULL;
    }
    char *q = mp_inspect_quantization(&in);
    mp_inspect_release(&in);
    return q;
}
