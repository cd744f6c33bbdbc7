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

static bool repo_has(const char *repo, size_t n, const char *word)
{
    size_t w = strlen(word);
    for (size_t i = 0; i + w <= n; i++)
        if (!strncmp(repo + i, word, w))
            return true;
    return false;
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
    if (!tn || !repo_has(repo, rn, "vllm"))
        return out->kind;
    snprintf(out->tag, sizeof(out->tag), "%.*s", (int)tn, tag);
    if (ngc_style(tag, tn)) {
        /* YY.MM is NVIDIA's release, not a vLLM version */
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
