/* spec.h - candidates and knobs: parsing `NAME: KNOBS` specs, presets, and
 * building the engine's command line for one candidate.
 *
 * A knob is one word of KNOBS: `NAME=VALUE` (NAME a shell identifier) is an
 * environment assignment; every other word is appended to the server
 * command. Words are split like a shell does (spaces; '...' and "..." quote;
 * backslash escapes outside single quotes). */
#ifndef MP_SPEC_H
#define MP_SPEC_H

#include "compat.h"

#include "err.h"
#include "secret.h"

/* A growable NULL-terminated vector of owned strings (value type). */
struct mp_strv {
    char **v;
    size_t n, cap;
};
#define MP_STRV_INIT { NULL, 0, 0 }
void mp_strv_push(struct mp_strv *s, const char *str);      /* copies str */
void mp_strv_push_owned(struct mp_strv *s, char *owned_str); /* takes ownership */
void mp_strv_release(struct mp_strv *s);
/* v as a NULL-terminated array (never NULL; valid until the next push/release) */
char **mp_strv_array(struct mp_strv *s);

/* Split text into shell-like words appended to out. Returns 0, or MP_EPARSE
 * with d->msg/col set for an unterminated quote. */
int mp_split_words(const char *text, struct mp_strv *out, struct mp_diag *d);

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
/* Build a candidate from a name and a KNOBS string. */
int mp_candidate_from_knobs(const char *name, const char *knobs, struct mp_candidate *out,
                            struct mp_diag *d);
void mp_candidate_release(struct mp_candidate *c);
/* Deep copy. */
void mp_candidate_copy(struct mp_candidate *dst, const struct mp_candidate *src);
/* Knobs as one display string: "VLLM_X=1 --moe-backend cutlass" (caller frees). */
char *mp_candidate_knobs_str(const struct mp_candidate *c);
size_t mp_candidate_nknobs(const struct mp_candidate *c);

/* Presets: fills *out (array of *n candidates, caller releases each and frees
 * the array). Returns 0, or MP_EUSAGE for an unknown preset name. */
int mp_preset_load(const char *name, struct mp_candidate **out, size_t *n);
/* Name list for --help ("sm12x-nvfp4"). */
const char *mp_preset_names(void);

/* How the engine is started for one attempt. */
struct mp_launch {
    struct mp_strv argv;   /* final command */
    struct mp_strv env;    /* environment additions (empty for containers) */
    char *container_runtime; /* "docker"/"podman" or NULL */
    char *container_name;    /* the --name we set, or NULL */
};
/* Build the launch for server command cmd (argc words) with candidate c,
 * port substitution ("{port}" in any word, else "--port N" appended after
 * the candidate's args), extra environment extra_env (e.g.
 * CUDA_LAUNCH_BLOCKING=1; may be NULL) and a container name to use when the
 * command is `docker run` / `podman run` (env knobs become -e NAME=VALUE
 * right after `run`, and `--name NAME` is added unless present). */
void mp_launch_build(struct mp_launch *out, char *const *cmd, size_t argc,
                     const struct mp_candidate *c, int port, const char *const *extra_env,
                     const char *container_name);
void mp_launch_release(struct mp_launch *l);
/* Render argv as a copy-pasteable shell line with env prefix, secrets
 * redacted (caller frees). */
char *mp_launch_display(const struct mp_launch *l);

#endif
