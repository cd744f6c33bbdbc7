/* spec.c - the built-in candidate presets. */
#include "cli/spec.h"

#include <string.h>

#include "xalloc.h"

static const struct {
    const char *name;
    const char *knobs;
} sm12x_nvfp4[] = {
    {"auto", ""},
    {"cutlass", "--moe-backend cutlass"},
    {"marlin", "--moe-backend marlin"},
    {"flashinfer_cutlass", "--moe-backend flashinfer_cutlass"},
    {"marlin-env", "VLLM_SCALED_MM_BACKEND=marlin"},
};

int mp_preset_load(const char *name, struct mp_candidate **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    if (strcmp(name, "sm12x-nvfp4") != 0)
        return MP_EUSAGE;
    struct mp_candidate *c = xcalloc(MP_ARRAY_SIZE(sm12x_nvfp4), sizeof(*c));
    for (size_t i = 0; i < MP_ARRAY_SIZE(sm12x_nvfp4); i++)
        mp_candidate_from_knobs(sm12x_nvfp4[i].name, sm12x_nvfp4[i].knobs, &c[i], NULL);
    *out = c;
    *n = MP_ARRAY_SIZE(sm12x_nvfp4);
    return 0;
}

const char *mp_preset_names(void)
{
    return "sm12x-nvfp4";
}

