/* spec.c - the built-in candidate presets, expressed per vLLM era
 * (cli/spec.h). */
#include "cli/spec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "knowledge/knowledge.h"
#include "engine/shape.h"
#include "xalloc.h"

#define MAX_ROADS 3

/* A preset candidate: its roads to one destination, newest first. fixed:
 * the same knobs in every version (auto; a knob whose very point is to be
 * observed, such as a variable no upstream vLLM reads). later: left out of
 * versions where no road exists (a backend that arrives later) instead of
 * being not applicable. */
struct entry {
    const char *name;
    const char *roads[MAX_ROADS];
    bool fixed, later;
};

static const struct entry sm12x_nvfp4[] = {
    {"auto", {""}, true, false},
    {"cutlass", {"--moe-backend cutlass", "VLLM_USE_FLASHINFER_MOE_FP4=0"}, false, false},
    {"marlin", {"--moe-backend marlin", "VLLM_TEST_FORCE_FP8_MARLIN=1"}, false, false},
    {"flashinfer_cutlass",
     {"--moe-backend flashinfer_cutlass",
      "VLLM_USE_FLASHINFER_MOE_FP4=1 VLLM_FLASHINFER_MOE_BACKEND=throughput"},
     false, false},
    {"marlin-env", {"VLLM_SCALED_MM_BACKEND=marlin"}, true, false},
    {"flashinfer_b12x", {"--moe-backend flashinfer_b12x"}, false, true},
    {"b12x", {"--moe-backend b12x"}, false, true},
};

static bool has_value(char *const *v, size_t n, const char *want)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(v[i], want))
            return true;
    return false;
}

static bool status_is(const struct mp_kn_era *e, const char *s)
{
    return e && e->status && !strcmp(e->status, s);
}

static bool era_available(const struct mp_kn_era *e)
{
    return e && !status_is(e, "not-yet-available") && !status_is(e, "removed");
}

static bool env_acts(const struct mp_kn_era *e)
{
    return e && e->affects && !strcmp(e->affects, "moe") &&
           (status_is(e, "active") || status_is(e, "deprecated"));
}

static void ver_str(const struct mp_kn_ver *v, char *out, size_t n)
{
    snprintf(out, n, "%d.%d.%d", v->v[0], v->v[1], v->v[2]);
}

/* The values flag knob k takes in era e. */
static bool era_has_value(const struct mp_kn_knob *k, const struct mp_kn_era *e, const char *val)
{
    if (e->nvalues)
        return has_value(e->values, e->nvalues, val);
    return !k->nvalues || has_value(k->values, k->nvalues, val);
}

/* Does the flag group words[0..n) exist in version v? Else says since
 * which version it does (the knowledge's first era that has it). */
static bool flag_exists(const struct mp_knowledge *kn, const struct mp_kn_ver *v,
                        char *const *w, size_t n, struct buf *why)
{
    const struct mp_kn_knob *k = mp_kn_find_knob(kn, w[0]);
    if (!k)
        return true; /* not moeprobe's to judge */
    const struct mp_kn_era *e = mp_kn_knob_era(k, v);
    const char *val = n > 1 ? w[1] : NULL;
    if (era_available(e) && (!val || era_has_value(k, e, val)))
        return true;
    const struct mp_kn_era *first = NULL;
    for (size_t i = 0; i < k->neras && !first; i++)
        if (era_available(&k->eras[i]) && (!val || era_has_value(k, &k->eras[i], val)))
            first = &k->eras[i];
    char from[48] = "";
    if (first && first->has_from)
        ver_str(&first->from, from, sizeof(from));
    if (!era_available(e))
        buf_printf(why, "%s arrived in vLLM %s", w[0], from[0] ? from : "a later version");
    else
        buf_printf(why, "%s %s is among its choices from vLLM %s on", w[0], val,
                   from[0] ? from : "a later version");
    return false;
}

/* Does env assignment NAME=VALUE choose the NvFp4 MoE backend in version v?
 * Else says in which versions it does. */
static bool env_exists(const struct mp_knowledge *kn, const struct mp_kn_ver *v, const char *word,
                       struct buf *why)
{
    size_t nl = strcspn(word, "=");
    char *name = xstrndup(word, nl);
    const struct mp_kn_knob *k = mp_kn_find_knob(kn, name);
    bool ok = k && env_acts(mp_kn_knob_era(k, v));
    const struct mp_kn_era *lo = NULL, *hi = NULL;
    for (size_t i = 0; k && !ok && i < k->neras; i++) {
        if (env_acts(&k->eras[i])) {
            lo = lo ? lo : &k->eras[i];
            hi = &k->eras[i];
        }
    }
    char a[48] = "", b[48] = "";
    if (lo && lo->has_from)
        ver_str(&lo->from, a, sizeof(a));
    if (hi && hi->has_until)
        ver_str(&hi->until, b, sizeof(b));
    if (!ok && !lo)
        buf_printf(why, "%s does not choose the NvFp4 MoE backend in any vLLM moeprobe knows", name);
    else if (!ok)
        buf_printf(why, "%s chooses the NvFp4 MoE backend only %s%s%s%s", name,
                   a[0] ? "from vLLM " : "", a, b[0] ? " until " : "", b);
    free(name);
    return ok;
}

/* Does every knob of road (a KNOBS string) exist in version v? */
static bool road_exists(const struct mp_knowledge *kn, const struct mp_kn_ver *v, const char *road,
                        struct buf *why)
{
    struct mp_candidate c;
    if (mp_candidate_from_knobs("road", road, &c, NULL) < 0)
        return false;
    struct mp_knobs ks = MP_KNOBS_INIT;
    mp_candidate_knobs(&c, &ks);
    bool ok = true;
    for (size_t i = 0; i < ks.n && ok; i++)
        ok = ks.k[i].env ? env_exists(kn, v, ks.k[i].text, why)
                         : flag_exists(kn, v, ks.k[i].words.v, ks.k[i].words.n, why);
    mp_knobs_release(&ks);
    mp_candidate_release(&c);
    return ok;
}

/* Entry e for version ver (NULL: its newest road). Returns false when it is
 * to be left out (a later backend not there yet). */
static bool express_one(const struct mp_knowledge *kn, const struct entry *e, const char *ver,
                        struct mp_preset_cand *out)
{
    memset(out, 0, sizeof(*out));
    struct mp_kn_ver v;
    bool known = ver && mp_kn_ver_parse(ver, &v) == 0;
    const char *road = e->roads[0];
    struct buf why = BUF_INIT;
    if (!known && e->later)
        return false;
    if (known && !e->fixed) {
        road = NULL;
        for (size_t r = 0; r < MAX_ROADS && e->roads[r] && !road; r++) {
            if (why.len)
                buf_adds(&why, ", and ");
            if (road_exists(kn, &v, e->roads[r], &why))
                road = e->roads[r];
        }
    }
    if (!road && e->later) {
        buf_release(&why);
        return false;
    }
    mp_candidate_from_knobs(e->name, road ? road : e->roads[0], &out->cand, NULL);
    if (!road)
        out->not_applicable = xasprintf("not applicable to vLLM %s: %s", ver, why.data);
    buf_release(&why);
    return true;
}

int mp_preset_express(const struct mp_knowledge *kn, const char *name, const char *version,
                      struct mp_preset_cand **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    if (strcmp(name, "sm12x-nvfp4") != 0)
        return MP_EUSAGE;
    struct mp_preset_cand *p = xcalloc(MP_ARRAY_SIZE(sm12x_nvfp4), sizeof(*p));
    for (size_t i = 0; i < MP_ARRAY_SIZE(sm12x_nvfp4); i++)
        if (express_one(kn, &sm12x_nvfp4[i], version, &p[*n]))
            (*n)++;
    *out = p;
    return 0;
}

void mp_preset_free(struct mp_preset_cand *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        mp_candidate_release(&p[i].cand);
        free(p[i].not_applicable);
    }
    free(p);
}

int mp_preset_load(const char *name, struct mp_candidate **out, size_t *n)
{
    struct mp_preset_cand *p = NULL;
    size_t pn = 0;
    *out = NULL;
    *n = 0;
    if (mp_preset_express(mp_knowledge_builtin(), name, NULL, &p, &pn) < 0)
        return MP_EUSAGE;
    struct mp_candidate *c = xcalloc(pn + 1, sizeof(*c));
    for (size_t i = 0; i < pn; i++) {
        c[i] = p[i].cand;
        free(p[i].not_applicable);
    }
    free(p);
    *out = c;
    *n = pn;
    return 0;
}

const char *mp_preset_names(void)
{
    return "sm12x-nvfp4";
}

bool mp_image_engine_version(const struct mp_knowledge *kn, char *const *cmd, size_t ncmd,
                             char *out, size_t n)
{
    struct mp_shape sh;
    mp_shape_parse(cmd, ncmd, &sh);
    if (sh.kind != MP_SHAPE_DOCKER || sh.image >= ncmd)
        return false;
    /* upstream images name the version in the tag, NGC's are looked up in
     * the knowledge's table (NVIDIA's release notes): never guessed */
    struct mp_kn_image_version iv;
    mp_kn_image_version(kn, cmd[sh.image], &iv);
    if (!iv.version[0])
        return false;
    snprintf(out, n, "%s", iv.version);
    return true;
}
