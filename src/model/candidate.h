/* candidate.h - a candidate (a name and its knobs) and the one definition of
 * "a knob". Plain data: parsing, copying, display; no I/O.
 *
 * A knob is either an environment assignment `NAME=VALUE` (NAME a shell
 * identifier) or a flag group: a command word and the words after it up to
 * the next word that starts with '-' ("--moe-backend cutlass"); the first
 * command word always starts a group. Every part of moeprobe that counts,
 * compares or lists knobs (the recommendation's tie-break, noop_knobs,
 * minimize) uses mp_candidate_knobs(). */
#ifndef MP_MODEL_CANDIDATE_H
#define MP_MODEL_CANDIDATE_H

#include "compat.h"

#include "err.h"
#include "strv.h"

struct mp_candidate {
    char *name;
    struct mp_strv env;  /* "NAME=VALUE" words, in order */
    struct mp_strv args; /* other words, in order */
};

/* True when word has the form NAME=VALUE with NAME a shell identifier. */
bool mp_is_env_word(const char *word);

/* Parse "NAME: KNOBS" (KNOBS may be empty). Candidate names are
 * [A-Za-z0-9._-]+. Returns 0 or MP_EPARSE with a message in d. */
int mp_candidate_parse(const char *spec, struct mp_candidate *out, struct mp_diag *d);
/* Build a candidate from a name and a KNOBS string (words split like a
 * shell, see mp_split_words). 0 or MP_EPARSE. */
int mp_candidate_from_knobs(const char *name, const char *knobs, struct mp_candidate *out,
                            struct mp_diag *d);
void mp_candidate_release(struct mp_candidate *c);
/* Deep copy into *dst (overwritten). */
void mp_candidate_copy(struct mp_candidate *dst, const struct mp_candidate *src);
/* Knobs as one display string, secrets redacted:
 * "VLLM_X=1 --moe-backend cutlass" (caller frees). */
char *mp_candidate_knobs_str(const struct mp_candidate *c);

struct mp_knob {
    bool env;
    char *key;             /* env: NAME; flag: the flag word ("--x" of "--x=1") */
    char *text;            /* the words joined by spaces, not redacted */
    struct mp_strv words;  /* env: the one word; flag: the group's words */
};
struct mp_knobs {
    struct mp_knob *k;
    size_t n, cap;
};
#define MP_KNOBS_INIT { NULL, 0, 0 }
/* Append c's knobs to out, env assignments first, in order. */
void mp_candidate_knobs(const struct mp_candidate *c, struct mp_knobs *out);
/* Number of knobs (the length of mp_candidate_knobs's list). */
size_t mp_candidate_nknobs(const struct mp_candidate *c);
/* Append one knob (words copied). */
void mp_knobs_add(struct mp_knobs *s, bool env, const char *key, char *const *words, size_t nw);
void mp_knobs_release(struct mp_knobs *s);

#endif
