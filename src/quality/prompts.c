/* prompts.c - the built-in sanity prompts (placeholder set; the output-check
 * work replaces this with data/sanity-prompts.json). */
#include "quality/quality.h"

static const char *const prompts[] = {
    "The capital of France is",
    "2 + 2 =",
    "Repeat exactly: alpha beta gamma",
};

const char *const *mp_quality_prompts(size_t *n)
{
    *n = MP_ARRAY_SIZE(prompts);
    return prompts;
}
