/* Unit tests: the secret rule (base/secret.h) and the store's mask built on
 * it - names, values, arguments, structural matches, the line cut, and no
 * over-masking. */
#include "compat.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "escape.h"
#include "secret.h"
#include "store/store.h"
#include "xalloc.h"

static void test_names(void **state)
{
    (void)state;
    static const char *const yes[] = {"HF_TOKEN", "api-key", "api_key", "MY_SECRET", "DB_PASSWORD",
                                      "db_passwd", "use-auth-token", "AWS_CREDENTIALS", "MONKEY",
                                      /* a last word PASS, PWD or PAT after another word */
                                      "DB_PASS", "smtp-pass", "SMTP_PWD", "GITHUB_PAT",
                                      "gitlab.pat", "SSH_PASSPHRASE"};
    static const char *const no[] = {"VLLM_USE_V1", "max-num-batched-tokens", "tokenizer",
                                     "tokenizer-mode", "TOKENIZERS_PARALLELISM", "max_tokens",
                                     "moe-backend", "port",
                                     /* PASS/PWD/PAT inside a word, or alone */
                                     "PWD", "OLDPWD", "PATH", "LD_LIBRARY_PATH", "BYPASS",
                                     "COMPASS", "PASS_THROUGH", "pattern", "PAT", "PASS"};
    for (size_t i = 0; i < MP_ARRAY_SIZE(yes); i++)
        assert_true(mp_is_secret_name(yes[i], strlen(yes[i])));
    for (size_t i = 0; i < MP_ARRAY_SIZE(no); i++)
        assert_false(mp_is_secret_name(no[i], strlen(no[i])));
}

static void test_values(void **state)
{
    (void)state;
    static const char *const yes[] = {"sk-abcdef12", "hf_AbCdEfGhIj", "hunter2hunter2"};
    static const char *const no[] = {"false", "INFO", "true", "1234567890", "1.5e-3", "***",
                                     "short", "critical", "DISABLED", "a***bcdefgh"};
    for (size_t i = 0; i < MP_ARRAY_SIZE(yes); i++)
        assert_true(mp_secret_value_ok(yes[i], strlen(yes[i])));
    for (size_t i = 0; i < MP_ARRAY_SIZE(no); i++)
        assert_false(mp_secret_value_ok(no[i], strlen(no[i])));
    char *r = mp_redact_assignment("TOKENIZERS_PARALLELISM=false");
    assert_string_equal(r, "TOKENIZERS_PARALLELISM=false");
    free(r);
    r = mp_redact_assignment("MONKEY=INFO");
    assert_string_equal(r, "MONKEY=INFO");
    free(r);
}

struct found {
    struct mp_strv v;
};

static void on_found(void *ud, const char *v, size_t len)
{
    struct found *f = ud;
    mp_strv_push_owned(&f->v, xstrndup(v, len));
}

static void test_scan_args(void **state)
{
    (void)state;
    char *argv[] = {"docker", "run", "-e", "HF_TOKEN=hf_dockerenv1", "--env=MY_SECRET=envflag-secret",
                    "img", "env", "OTHER_KEY=envword-secret", "vllm", "serve", "--api-key",
                    "sk-spaceform1", "--hf-token=hf_eqform1234", "--tokenizer", "org/tok-model-x",
                    "--max-num-batched-tokens", "81920000", "--db-password", "--next-flag",
                    "--model-url", "https://u:urlpass99@h/x", "--kernel-config",
                    "{\"auth_token\": \"json-secret-1\", \"moe_backend\": \"cutlass\"}",
                    "MONKEY=INFO", "--api-key=short"};
    struct found f = {MP_STRV_INIT};
    mp_secret_scan_args(argv, MP_ARRAY_SIZE(argv), on_found, &f);
    static const char *const want[] = {"hf_dockerenv1", "envflag-secret", "envword-secret",
                                       "sk-spaceform1", "hf_eqform1234", "urlpass99",
                                       "json-secret-1"};
    assert_int_equal(f.v.n, MP_ARRAY_SIZE(want));
    for (size_t i = 0; i < MP_ARRAY_SIZE(want); i++)
        assert_string_equal(f.v.v[i], want[i]);
    mp_strv_release(&f.v);
}

static char *masked(const struct mp_store_mask *m, const char *s, unsigned flags)
{
    return mp_store_mask_apply_ex(m, s, strlen(s), flags, NULL, NULL);
}

#define EXPECT(m, in, flags, out)                                                                 \
    do {                                                                                          \
        char *o_ = masked(m, in, flags);                                                          \
        assert_string_equal(o_, out);                                                             \
        free(o_);                                                                                 \
    } while (0)

static void test_structural(void **state)
{
    (void)state;
    /* no known values: the text itself announces the credential */
    EXPECT(NULL, "GET / Authorization: Bearer abcdefghijk", 0, "GET / Authorization: Bearer ***");
    EXPECT(NULL, "headers={'authorization': 'Basic dXNlcjpwYXNzd29yZA=='}", 0,
           "headers={'authorization': '***'}");
    EXPECT(NULL, "authorization=tok_abcdefgh1 next", 0, "authorization=*** next");
    EXPECT(NULL, "pulling https://user:pw@host/x and http://host/y", 0,
           "pulling https://user:***@host/x and http://host/y");
    EXPECT(NULL, "non-default args: {'api_key': ['sk-abcdefgh12'], 'port': 8000}", 0,
           "non-default args: {'api_key': ['***'], 'port': 8000}");
    EXPECT(NULL, "{\"hf_token\": \"hf_abcdefghij\"}", 0, "{\"hf_token\": \"***\"}");
    /* not credentials */
    EXPECT(NULL, "Bearer token missing; 'tokenizer': 'org/model-name'", 0,
           "Bearer token missing; 'tokenizer': 'org/model-name'");
    EXPECT(NULL, "'max_num_batched_tokens': 8192, 'api_key': None", 0,
           "'max_num_batched_tokens': 8192, 'api_key': None");
    /* commands: NAME=VALUE and --name=VALUE words */
    EXPECT(NULL, "env MY_TOKEN=abcdefghij --hf-token=hf_abcdefgh --x=TOKENVALUE1", MP_MASK_WORDS,
           "env MY_TOKEN=*** --hf-token=*** --x=TOKENVALUE1");
    EXPECT(NULL, "TOKENIZERS_PARALLELISM=false MONKEY=INFO", MP_MASK_WORDS,
           "TOKENIZERS_PARALLELISM=false MONKEY=INFO");
}

static void test_known_and_cut(void **state)
{
    (void)state;
    struct mp_store_mask m;
    struct mp_candidate c = {0};
    mp_strv_push(&c.env, "TOKENIZERS_PARALLELISM=false");
    mp_strv_push(&c.env, "MONKEY=INFO");
    mp_strv_push(&c.args, "--db-password");
    mp_strv_push(&c.args, "knob-secret-77");
    mp_store_mask_init(&m, &c, 1, NULL);
    char *cmd[] = {"vllm", "serve", "--api-key", "sk-0123456789abcdef0123456789abcdef0123"};
    mp_store_mask_add_args(&m, cmd, MP_ARRAY_SIZE(cmd));
    /* no over-masking of common values of secret names */
    EXPECT(&m, "INFO 12-01 loading; parallel=false", 0, "INFO 12-01 loading; parallel=false");
    EXPECT(&m, "args: knob-secret-77 sk-0123456789abcdef0123456789abcdef0123", 0, "args: *** ***");
    /* a known value inside the part a structural match keeps (its JSON
     * key): replaced too (fuzz_secret's finding) */
    EXPECT(&m, "{\"my_knob-secret-77_token\": \"abcdefghijkl\"}", 0,
           "{\"my_***_token\": \"***\"}");
    /* a line cut in the middle of the key: the tail is masked */
    EXPECT(&m, "xxxx sk-0123456789abcdef", MP_MASK_CUT, "xxxx ***");
    EXPECT(&m, "xxxx sk-0123456789abcdef", 0, "xxxx sk-0123456789abcdef");
    /* NUL bytes are kept, the length is returned */
    size_t n = 0;
    const char in[] = "a\0knob-secret-77\0b";
    char *o = mp_store_mask_apply_ex(&m, in, sizeof(in) - 1, 0, NULL, &n);
    assert_int_equal(n, 7);
    assert_memory_equal(o, "a\0***\0b", 7);
    free(o);
    mp_store_mask_release(&m);
    mp_candidate_release(&c);
}

/* The second layer: whatever reaches the terminal (mp_term_dup and
 * mp_term_write, which every message, progress and live line goes through)
 * and a --gpus task's log (sched/local.c applies the process mask to each
 * line, MP_MASK_CUT for a cut one) is masked by the process's mask even
 * when the text was never masked before: secret values of the server
 * command after "--", of the environment by name, values added later (the
 * API key), and structural matches. Off again after _end. */
static void test_process_mask_second_layer(void **state)
{
    (void)state;
    setenv("V252_DB_PASS", "pL4nt-env-dbpass-01", 1);
    char *argv[] = {"moeprobe", "qualify", "--out", "d", "--", "vllm", "serve", "m",
                    "--hf-token", "pL4nt-arg-token-02"};
    assert_null(mp_store_mask_process());
    mp_store_mask_process_init(argv, MP_ARRAY_SIZE(argv));
    assert_non_null(mp_store_mask_process());
    mp_store_mask_add(mp_store_mask_process(), "pL4nt-apikey-03");
    char *t = mp_term_dup("engine: pL4nt-env-dbpass-01 pL4nt-arg-token-02 pL4nt-apikey-03 "
                          "Authorization: Bearer zzzz9999yyyy8888 SMTP_PWD=xq7-mail-pw-99");
    assert_null(strstr(t, "pL4nt"));
    assert_null(strstr(t, "zzzz9999"));
    assert_null(strstr(t, "xq7-mail"));
    assert_non_null(strstr(t, "engine: *** *** ***"));
    free(t);
    /* mp_term_write: the same mask on the way to a stream */
    char *out = NULL;
    size_t outn = 0;
    FILE *f = open_memstream(&out, &outn);
    assert_non_null(f);
    const char line[] = "last log line: pL4nt-arg-token-02\n";
    mp_term_write(f, line, sizeof(line) - 1);
    fclose(f);
    assert_null(strstr(out, "pL4nt"));
    assert_non_null(strstr(out, "***"));
    free(out);
    /* a task.log line cut inside a value: its beginning is masked too */
    size_t n = 0;
    char *m = mp_store_mask_apply_ex(mp_store_mask_process(), "cut pL4nt-env-db", 16,
                                     MP_MASK_WORDS | MP_MASK_CUT, NULL, &n);
    assert_null(strstr(m, "pL4nt"));
    free(m);
    mp_store_mask_process_end();
    assert_null(mp_store_mask_process());
    t = mp_term_dup("pL4nt-arg-token-02");
    assert_string_equal(t, "pL4nt-arg-token-02");
    free(t);
    unsetenv("V252_DB_PASS");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_values),
        cmocka_unit_test(test_scan_args),
        cmocka_unit_test(test_structural),
        cmocka_unit_test(test_known_and_cut),
        cmocka_unit_test(test_process_mask_second_layer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
