/* secret.h - what counts as a secret, found in names, arguments and text.
 *
 * One rule for every file and message moeprobe writes (docs/store.md
 * "Secrets"):
 *  - a NAME is secret when it contains TOKEN, KEY, SECRET, PASSWORD, PASSWD,
 *    PASSPHRASE, AUTH or CREDENTIAL (any case; TOKEN inside TOKENS or
 *    TOKENIZER does not count: max_num_batched_tokens, --tokenizer are no
 *    secrets), or when its last word (after '_', '-' or '.', with a word
 *    before it) is PASS, PWD or PAT: DB_PASS, SMTP_PWD, GITHUB_PAT,
 *    --db-pass; not PATH, BYPASS, PWD or OLDPWD (the shell's directories);
 *  - the value of a secret name is a secret only when it looks like one
 *    (mp_secret_value_ok): at least 8 bytes, not a number, not a common word
 *    (true, false, auto, none, a log level...), not already "***";
 *  - names come from environment words NAME=VALUE, flags --name VALUE and
 *    --name=VALUE, and JSON/Python-dict pairs "name": "value";
 *  - a URL's password (scheme://user:PASSWORD@host) is always a secret.
 *
 * These are pure functions over buffers (fuzzed by tests/fuzz/fuzz_secret.c
 * through the store's mask). */
#ifndef MP_SECRET_H
#define MP_SECRET_H

#include "compat.h"

/* True when NAME (len bytes; an environment variable, a flag without its
 * dashes, a JSON key) holds a secret by the name rule above. */
bool mp_is_secret_name(const char *name, size_t len);
/* True when v (len bytes) is long and unusual enough to be a secret value
 * (>= MP_SECRET_MIN_LEN bytes, not a number, not a common word). */
#define MP_SECRET_MIN_LEN 8
bool mp_secret_value_ok(const char *v, size_t len);
/* Copy of "NAME=VALUE" with VALUE replaced by *** when NAME is secret and
 * VALUE looks like a secret (caller frees). */
char *mp_redact_assignment(const char *assign);

/* Called with each secret value found (value points into the scanned text,
 * len bytes; not NUL-terminated). */
typedef void (*mp_secret_cb)(void *ud, const char *value, size_t len);

/* Secret values in an argument vector: --flag VALUE / --flag=VALUE / -flag
 * VALUE with a secret flag name, NAME=VALUE words (also after -e/--env, as
 * in `docker run -e HF_TOKEN=...` and `env MY_TOKEN=...`), and within every
 * word what mp_secret_scan_text finds. Only values passing
 * mp_secret_value_ok are reported (URL passwords: any non-empty one). */
void mp_secret_scan_args(char *const *argv, size_t argc, mp_secret_cb cb, void *ud);
/* Secret values inside one text: URL passwords, and the values of quoted
 * pairs "secret_name": "value" / 'secret_name': 'value'. */
void mp_secret_scan_text(const char *s, size_t len, mp_secret_cb cb, void *ud);

/* Structural matches at s (the start of a candidate match inside a text that
 * ends at end): when s starts a credential the text itself announces - the
 * password of a URL's user:password@, the credential after "Bearer " or
 * "Authorization:"/"authorization=" (with or without a scheme word such as
 * Basic), the value of a quoted secret pair - returns true with *skip =
 * bytes to copy unchanged from s and *vlen = bytes of the value after them
 * to replace by ***. begin is the start of the whole text (for word
 * boundaries). */
bool mp_secret_match_at(const char *begin, const char *s, const char *end, size_t *skip,
                        size_t *vlen);

#endif
