/* fingerprint.c - the fingerprint's release and comparison
 * (model/fingerprint.h). Detection is report/fingerprint.c. */
#include "model/fingerprint.h"

#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

void mp_fingerprint_release(struct mp_fingerprint *fp)
{
    free(fp->gpu);
    free(fp->compute_capability);
    free(fp->driver);
    free(fp->cuda);
    free(fp->engine);
    free(fp->engine_version);
    free(fp->model);
    free(fp->host_arch);
    memset(fp, 0, sizeof(*fp));
}

void mp_fp_extra_release(struct mp_fp_extra *x)
{
    free(x->quantization);
    free(x->gpu_source);
    free(x->model_dir);
    free(x->checkpoint_json);
    memset(x, 0, sizeof(*x));
    x->gpu_memory_mib = -1;
}

/* "x86_64 (Linux 6.8.0)" -> length of "x86_64" */
static size_t arch_len(const char *h)
{
    const char *sp = strchr(h, ' ');
    return sp ? (size_t)(sp - h) : strlen(h);
}

char *mp_fingerprint_mismatch(const struct mp_fingerprint *a, const struct mp_fingerprint *b,
                              bool history)
{
    struct {
        const char *what, *x, *y;
        bool hist; /* also checked for history */
    } f[] = {
        {"GPU", a->gpu, b->gpu, true},
        {"compute capability", a->compute_capability, b->compute_capability, true},
        {"driver", a->driver, b->driver, false},
        {"CUDA", a->cuda, b->cuda, false},
        {"engine version", a->engine_version, b->engine_version, false},
        {"model", a->model, b->model, true},
    };
    /* stores of older versions hold "x86_64 (Linux 6.8.0)": the machine name counts */
    if (a->host_arch && b->host_arch &&
        (arch_len(a->host_arch) != arch_len(b->host_arch) ||
         strncmp(a->host_arch, b->host_arch, arch_len(a->host_arch)) != 0))
        return xasprintf("different host architecture: '%s' vs '%s'", a->host_arch, b->host_arch);
    for (size_t i = 0; i < MP_ARRAY_SIZE(f); i++) {
        if (history && !f[i].hist)
            continue;
        if (f[i].x && f[i].y && strcmp(f[i].x, f[i].y) != 0)
            return xasprintf("different %s: '%s' vs '%s'", f[i].what, f[i].x, f[i].y);
    }
    return NULL;
}
