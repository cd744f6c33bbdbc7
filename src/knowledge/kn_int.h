/* kn_int.h - what the parts of src/knowledge share (not a public header).
 * knowledge.c loads the knobs, signatures and backends; extra.c the NGC
 * image table, the unknown-variable era and the known issues. */
#ifndef MP_KNOWLEDGE_KN_INT_H
#define MP_KNOWLEDGE_KN_INT_H

#include <cjson/cJSON.h>

#include "knowledge/knowledge.h"

/* Parse the top-level "ngc_images", "unknown_env_warning" and
 * "known_issues" of root into k. Returns 0, or MP_EPARSE with d set (the
 * first problem, naming the entry). */
int mp_kn_extra_parse(const cJSON *root, struct mp_knowledge *k, struct mp_diag *d);
/* Free what mp_kn_extra_parse filled (k itself stays). */
void mp_kn_extra_free(struct mp_knowledge *k);

/* Compile re ({Q} = any quote, as for signatures); NULL with msg filled
 * (at most n bytes) when it does not compile. */
/* The regex with {Q} expanded to any quote (' " or a curly one); caller
 * frees (kbase.c). */
char *mp_kn_expand_regex(const char *re);
pcre2_code *mp_kn_compile(const char *re, char *msg, size_t n);

#endif
