/* Unit tests: refengine world parser (valid files, defaults, every error
 * with its line number, the shipped worlds). */
#include "compat.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "world.h"

static int parse(const char *text, struct world *w, struct mp_diag *d)
{
    return world_parse(text, strlen(text), "t.ini", w, d);
}

static void test_valid_and_defaults(void **st)
{
    MP_UNUSED(st);
    struct world w;
    struct mp_diag d = MP_DIAG_INIT;
    const char *t = "# comment\n[engine]\nversion = 0.19.2rc1.dev8+g4b7f5ea1a   # inline\n"
                    "device = sm121\nmodel = a/b\nseed = 42\nchild_escapes_group = true\n\n"
                    "[backend FLASHINFER_CUTLASS]\ntokens_per_second = 120\nfailure = async-race\n"
                    "race_probability = 0.3\nsites = a, b ,c\nblocking_slowdown = 0.5\n"
                    "[knob VLLM_SCALED_MM_BACKEND]\nmarlin = MARLIN\n";
    assert_int_equal(parse(t, &w, &d), 0);
    assert_int_equal(w.ver_major, 0);
    assert_int_equal(w.ver_minor, 19);
    assert_int_equal(w.ver_patch, 2);
    assert_int_equal(w.device, WD_SM121);
    assert_string_equal(w.model, "a/b");
    assert_string_equal(w.quantization, "modelopt_fp4");
    assert_true(w.load_seconds == 0.5);
    assert_true(w.select_seconds == 0.0);
    assert_true(w.seed == 42);
    assert_true(w.child_escapes_group);
    assert_false(w.child_ignores_sigterm);
    const struct world_backend_cfg *b = &w.backends[WB_FLASHINFER_CUTLASS];
    assert_true(b->present);
    assert_int_equal(b->failure, WF_ASYNC_RACE);
    assert_int_equal(b->nsites, 3);
    assert_string_equal(b->sites[1], "b");
    assert_string_equal(b->sites[2], "c");
    /* a backend without a section gets the documented defaults */
    const struct world_backend_cfg *m = &w.backends[WB_MARLIN];
    assert_false(m->present);
    assert_true(m->supported);
    assert_true(m->tokens_per_second == 50.0);
    assert_true(m->contention == 0.1);
    assert_int_equal(m->failure, WF_NONE);
    assert_int_equal(w.nknobs, 1);
    assert_string_equal(w.knobs[0].name, "VLLM_SCALED_MM_BACKEND");
    assert_int_equal(w.knobs[0].values[0].backend, WB_MARLIN);
}

struct bad_case {
    const char *text;
    size_t line;
    const char *msg_part;
};

static void test_errors_with_line(void **st)
{
    MP_UNUSED(st);
    static const char head[] = "[engine]\nversion = 0.17.0\ndevice = sm121\nmodel = m\n";
    static const struct bad_case cases[] = {
        {"[engine]\nversion = 0.17.0\nbogus = 1\n", 3, "unknown key 'bogus'"},
        {"[engine]\nversion = 0.17.0\nversion = 0.18.0\n", 3, "duplicate key"},
        {"[engine]\nversion = banana\n", 2, "version"},
        {"[engine]\ndevice = sm80\n", 2, "device"},
        {"[engines]\n", 1, "unknown section"},
        {"version = 1\n", 1, "outside a section"},
        {"[engine]\nversion 0.17\n", 2, "expected 'key = value'"},
        {"[engine]\nversion = 0.17.0\ndevice = sm121\n", 0, "needs model"},
        {"", 0, "missing [engine]"},
        {"[engine\n", 1, "closing"},
        {"[engine]\nload_seconds = -1\n", 2, "load_seconds"},
        {"[engine]\nselect_seconds = x\n", 2, "select_seconds"},
        {"[engine]\nversion = 0.17.0\ndevice = sm121\nmodel = m\nselect_seconds = 2\nload_seconds = 1\n", 0, "exceeds load_seconds"},
        {"[engine]\nchild_ignores_sigterm = maybe\n", 2, "true or false"},
    };
    for (size_t i = 0; i < MP_ARRAY_SIZE(cases); i++) {
        struct world w;
        struct mp_diag d = MP_DIAG_INIT;
        assert_int_equal(parse(cases[i].text, &w, &d), MP_EPARSE);
        if (d.line != cases[i].line || !strstr(d.msg, cases[i].msg_part))
            fail_msg("case %zu: line %zu msg '%s'", i, d.line, d.msg);
        assert_string_equal(d.file, "t.ini");
    }
    /* backend-section errors, after a valid [engine] */
    static const struct bad_case bcases[] = {
        {"[backend NOPE]\n", 5, "unknown backend"},
        {"[backend MARLIN]\n[backend MARLIN]\n", 6, "duplicate section"},
        {"[backend MARLIN]\nfailure = explode\n", 6, "failure"},
        {"[backend MARLIN]\nrace_probability = 2\n", 6, "probability"},
        {"[backend MARLIN]\ncrash_after_requests = 0\n", 6, ">= 1"},
        {"[backend MARLIN]\ntokens_per_second = 0\n", 6, "tokens_per_second"},
        {"[backend MARLIN]\nfailure = async-race\n", 6, "crash_after_requests or race_probability"},
        {"[backend MARLIN]\nfailure = hang\n", 6, "hang_after_requests"},
        {"[backend MARLIN]\nfailure = kernel-fault\n", 6, "fault_after_requests"},
        {"[backend MARLIN]\nspeed = 3\n", 6, "unknown key 'speed' in [backend MARLIN]"},
        {"[knob lower]\n", 5, "environment variable name"},
        {"[knob VLLM_X]\nmarlin = MARLINN\n", 6, "unknown backend"},
    };
    for (size_t i = 0; i < MP_ARRAY_SIZE(bcases); i++) {
        char text[512];
        snprintf(text, sizeof(text), "%s%s", head, bcases[i].text);
        struct world w;
        struct mp_diag d = MP_DIAG_INIT;
        assert_int_equal(parse(text, &w, &d), MP_EPARSE);
        if (d.line != bcases[i].line || !strstr(d.msg, bcases[i].msg_part))
            fail_msg("bcase %zu: line %zu msg '%s'", i, d.line, d.msg);
    }
}

static void test_limits_and_binary(void **st)
{
    MP_UNUSED(st);
    struct world w;
    struct mp_diag d = MP_DIAG_INIT;
    char nul[] = "[engine]\nversion = 0.17.0\0\n";
    assert_int_equal(world_parse(nul, sizeof(nul) - 1, "t.ini", &w, &d), MP_EPARSE);
    assert_int_equal(d.line, 2);
    char *big = malloc(5000);
    memset(big, 'a', 4999);
    big[4999] = 0;
    assert_int_equal(parse(big, &w, &d), MP_ELIMIT);
    assert_int_equal(d.line, 1);
    free(big);
    assert_int_equal(world_load("/nonexistent/w.ini", &w, &d), -2);
    assert_string_equal(d.file, "/nonexistent/w.ini");
}

static void test_shipped_worlds_parse(void **st)
{
    MP_UNUSED(st);
    static const char *const files[] = {
        "worlds/demo-nemotron-super.ini", "worlds/mistral-small-4.ini",
        "worlds/era-0.13-preoracle.ini",  "worlds/era-0.15-oracle.ini",
        "worlds/era-0.17-flag.ini",       "worlds/era-0.19-unknown-env.ini",
        "worlds/era-0.23-removed-env.ini", "tests/worlds/race.ini",
        "tests/worlds/fault.ini",         "tests/worlds/hang.ini",
        "tests/worlds/garbage.ini",       "tests/worlds/hostile.ini",
        "tests/worlds/fast.ini",          "worlds/spark-nemotron-super-scaled.ini",
    };
    const char *root = getenv("ROOT");
    for (size_t i = 0; i < MP_ARRAY_SIZE(files); i++) {
        char path[1024];
        snprintf(path, sizeof(path), "%s/%s", root ? root : ".", files[i]);
        struct world w;
        struct mp_diag d = MP_DIAG_INIT;
        int rc = world_load(path, &w, &d);
        if (rc != 0) {
            char m[600];
            mp_diag_format(&d, m, sizeof(m));
            fail_msg("%s", m);
        }
    }
}

static void test_version_parse(void **st)
{
    MP_UNUSED(st);
    int a, b, c;
    assert_int_equal(world_parse_version("0.11.1rc4.dev6+g66a168a19", &a, &b, &c), 0);
    assert_int_equal(b, 11);
    assert_int_equal(c, 1);
    assert_int_equal(world_parse_version("0.17", &a, &b, &c), 0);
    assert_int_equal(c, 0);
    assert_int_equal(world_parse_version("v0.17.0", &a, &b, &c), MP_EPARSE);
    assert_int_equal(world_parse_version("0.17.0 x", &a, &b, &c), MP_EPARSE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_and_defaults),
        cmocka_unit_test(test_errors_with_line),
        cmocka_unit_test(test_limits_and_binary),
        cmocka_unit_test(test_shipped_worlds_parse),
        cmocka_unit_test(test_version_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
