/* images.c - which vLLM a container image runs (knowledge.h): upstream
 * images name it in the tag, NGC images (YY.MM) are looked up in the
 * knowledge's ngc_images (NVIDIA's release notes), never guessed. */
#include "compat.h"

#include <stdio.h>
#include <string.h>

#include "knowledge/knowledge.h"

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* "26.03", "26.03-py3", "26.03-py3-igpu": an NGC release tag (YY.MM). */
static bool ngc_style(const char *tag, size_t n)
{
    if (n < 5 || !is_digit(tag[0]) || !is_digit(tag[1]) || tag[2] != '.' || !is_digit(tag[3]) ||
        !is_digit(tag[4]))
        return false;
    return n == 5 || tag[5] == '-';
}

const char *mp_kn_ngc_vllm(const struct mp_knowledge *k, const char *ngc_tag, const char **source)
{
    size_t n = strlen(ngc_tag);
    if (!ngc_style(ngc_tag, n))
        return NULL;
    for (size_t i = 0; i < k->nimages; i++) {
        if (!strncmp(k->images[i].tag, ngc_tag, 5) && strlen(k->images[i].tag) == 5) {
            if (source)
                *source = k->images[i].source;
            return k->images[i].vllm;
        }
    }
    return NULL;
}

/* The repository part and the tag of an image reference (digest dropped):
 * the tag is after the last ':' that follows the last '/'. */
static void split_ref(const char *image, const char **repo, size_t *repolen, const char **tag,
                      size_t *taglen)
{
    size_t n = strcspn(image, "@");
    const char *slash = NULL;
    for (size_t i = 0; i < n; i++)
        if (image[i] == '/')
            slash = image + i;
    const char *from = slash ? slash : image;
    const char *colon = memchr(from, ':', n - (size_t)(from - image));
    *repo = image;
    *repolen = colon ? (size_t)(colon - image) : n;
    *tag = colon ? colon + 1 : image + n;
    *taglen = colon ? n - *repolen - 1 : 0;
}

/* The last two path components of the repository ("vllm/vllm-openai" in
 * "docker.io/vllm/vllm-openai"): owner and name, NUL-terminated copies. */
static void owner_name(const char *repo, size_t n, char *owner, char *name, size_t cap)
{
    size_t end = n, slash = n;
    while (slash > 0 && repo[slash - 1] != '/')
        slash--;
    snprintf(name, cap, "%.*s", (int)(end - slash), repo + slash);
    owner[0] = 0;
    if (slash == 0)
        return;
    size_t oend = slash - 1, o = oend;
    while (o > 0 && repo[o - 1] != '/')
        o--;
    snprintf(owner, cap, "%.*s", (int)(oend - o), repo + o);
}

/* Only vLLM's own images name the vLLM version in the tag (vllm/vllm-openai,
 * vllm/vllm-openai-rocm, ...); another project's image with "vllm" in its
 * name (lmcache/vllm-openai:v0.3.9) tags its own version. */
static bool upstream_repo(const char *owner, const char *name)
{
    return !strcmp(owner, "vllm") && !strncmp(name, "vllm-openai", 11);
}

/* NVIDIA's vLLM container (nvcr.io/nvidia/vllm, or a mirror of it). */
static bool ngc_repo(const char *owner, const char *name)
{
    return !strcmp(owner, "nvidia") && !strcmp(name, "vllm");
}

/* "v0.17.0-cu130" -> "0.17.0": digits and dots after an optional 'v', at
 * least major.minor. */
static bool upstream_version(const char *tag, size_t n, char *out, size_t cap)
{
    size_t i = tag[0] == 'v' || tag[0] == 'V' ? 1 : 0, j = i, dots = 0;
    while (j < n && (is_digit(tag[j]) || tag[j] == '.')) {
        dots += tag[j] == '.';
        j++;
    }
    while (j > i && tag[j - 1] == '.') {
        j--;
        dots--;
    }
    if (j == i || !is_digit(tag[i]) || dots < 1 || j - i >= cap)
        return false;
    memcpy(out, tag + i, j - i);
    out[j - i] = 0;
    return true;
}

enum mp_kn_image_kind mp_kn_image_version(const struct mp_knowledge *k, const char *image,
                                          struct mp_kn_image_version *out)
{
    memset(out, 0, sizeof(*out));
    if (!image)
        return out->kind;
    const char *repo, *tag;
    size_t rn, tn;
    split_ref(image, &repo, &rn, &tag, &tn);
    char owner[128], name[128];
    owner_name(repo, rn, owner, name, sizeof(owner));
    bool ngc = ngc_repo(owner, name), upstream = upstream_repo(owner, name);
    if (!tn || (!ngc && !upstream)) {
        /* another image: a tag is never read as a vLLM version */
        out->kind = tn && strstr(name, "vllm") ? MP_KN_IMAGE_OTHER : MP_KN_IMAGE_NONE;
        if (out->kind == MP_KN_IMAGE_OTHER)
            snprintf(out->tag, sizeof(out->tag), "%.*s", (int)tn, tag);
        return out->kind;
    }
    snprintf(out->tag, sizeof(out->tag), "%.*s", (int)tn, tag);
    if (ngc) {
        /* YY.MM is NVIDIA's release, not a vLLM version; any other tag of
         * NVIDIA's image is not one either */
        const char *v = mp_kn_ngc_vllm(k, out->tag, &out->source);
        out->kind = v ? MP_KN_IMAGE_NGC : MP_KN_IMAGE_NGC_UNKNOWN;
        if (v)
            snprintf(out->version, sizeof(out->version), "%s", v);
        return out->kind;
    }
    if (upstream_version(tag, tn, out->version, sizeof(out->version)))
        out->kind = MP_KN_IMAGE_UPSTREAM;
    else
        out->tag[0] = 0;
    return out->kind;
}

bool mp_kn_version_is_ngc_tag(const struct mp_knowledge *k, const char *version, char *why,
                              size_t n)
{
    const char *v = version[0] == 'v' || version[0] == 'V' ? version + 1 : version;
    if (!ngc_style(v, strlen(v)) || (v[0] - '0') * 10 + (v[1] - '0') < 23)
        return false;
    const char *source = NULL, *ships = mp_kn_ngc_vllm(k, v, &source);
    if (ships)
        snprintf(why, n,
                 "'%s' is an NGC container release (nvcr.io/nvidia/vllm:%.5s-py3), not a vLLM "
                 "version: it ships vLLM %s (%s); pass %s",
                 version, v, ships, source, ships);
    else
        snprintf(why, n,
                 "'%s' looks like an NGC container release (nvcr.io/nvidia/vllm:%.5s-py3), not a "
                 "vLLM version, and moeprobe does not know which vLLM it ships; pass the version "
                 "`vllm --version` prints inside the container",
                 version, v);
    return true;
}
