/* spec.h - the built-in candidate presets (`--preset`). Candidates
 * themselves are model/candidate.h. */
#ifndef MP_SPEC_H
#define MP_SPEC_H

#include "compat.h"

#include "model/candidate.h"

/* Presets: fills *out (array of *n candidates, caller releases each and frees
 * the array). Returns 0, or MP_EUSAGE for an unknown preset name. */
int mp_preset_load(const char *name, struct mp_candidate **out, size_t *n);
/* Name list for --help ("sm12x-nvfp4"). */
const char *mp_preset_names(void);

#endif
