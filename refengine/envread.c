/* envread.c - how vLLM reads the environment, per era (re_int.h): 0/1
 * variables are bool(int(value)) (true or an empty value raise), the
 * FlashInfer MoE backend is env_with_choices, and from v0.22 on
 * envs.compile_factors reads every variable at engine start. */
#include "compat.h"

#include <string.h>

#include "re_int.h"

/* Python's int(): blanks, a sign, digits (single '_' between digits). */
static bool py_int(const char *s, long *out)
{
    long v = 0;
    int sign = 1;
    while (*s == ' ' || *s == '\t' || *s == '\n')
        s++;
    if (*s == '+' || *s == '-')
        sign = *s++ == '-' ? -1 : 1;
    if (*s < '0' || *s > '9')
        return false;
    for (; (*s >= '0' && *s <= '9') || (*s == '_' && s[1] >= '0' && s[1] <= '9'); s++)
        if (*s != '_' && v < 1000000)
            v = v * 10 + (*s - '0');
    while (*s == ' ' || *s == '\t' || *s == '\n')
        s++;
    *out = sign * v;
    return *s == 0;
}

int re_env_int(const struct re_inputs *in, const char *name, struct re_resolution *r,
               const char *frames)
{
    const char *v = re_env_get(in->env, name);
    long n;
    if (!v)
        return 0;
    if (!py_int(v, &n)) {
        re_fail(r, frames, "ValueError: invalid literal for int() with base 10: '%.200s'", v);
        return -1;
    }
    return n != 0;
}

const char *re_env_fi_backend(const struct re_inputs *in, struct re_resolution *r,
                              const char *frames)
{
    const char *v = re_env_get(in->env, "VLLM_FLASHINFER_MOE_BACKEND");
    if (!v || !strcmp(v, "throughput") || !strcmp(v, "latency") || !strcmp(v, "masked_gemm"))
        return v;
    re_fail(r, frames,
            "ValueError: Invalid value '%.200s' for VLLM_FLASHINFER_MOE_BACKEND. Valid options: "
            "['throughput', 'latency', 'masked_gemm'].",
            v);
    return NULL;
}

static const char eager_frames[] =
    RE_TB_HEAD "  File \"" RE_PY "/v1/engine/core.py\", line 124, in __init__\n"
               "    self.vllm_config.compute_hash()\n"
               "  File \"" RE_PY "/envs.py\", line 2144, in compile_factors\n"
               "    raw = getter()\n";

void re_env_eager(const struct world *w, const struct re_inputs *in, struct re_resolution *r)
{
    static const char *const ints[] = {"VLLM_USE_FLASHINFER_MOE_FP4", "VLLM_TEST_FORCE_FP8_MARLIN",
                                       "VLLM_USE_FBGEMM", "VLLM_USE_NVFP4_CT_EMULATIONS"};
    if (!re_ver_ge(w, 0, 22, 0) || !in->env)
        return;
    for (size_t i = 0; i < MP_ARRAY_SIZE(ints) && r->status == RE_OK; i++)
        if (re_env_live(w, ints[i]))
            re_env_int(in, ints[i], r, eager_frames);
    if (r->status == RE_OK && re_env_live(w, "VLLM_FLASHINFER_MOE_BACKEND"))
        re_env_fi_backend(in, r, eager_frames);
}
