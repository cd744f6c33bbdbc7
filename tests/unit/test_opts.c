/* Unit tests: the run commands' option table (cli/opts.c, optparse.c):
 * per-command --help and validation, the refusals with their reasons, the
 * table's own consistency, --only naming the candidates it knows. */
#include "compat.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/opt_int.h"

static const enum mp_cmd all_cmds[] = {MP_CMD_QUALIFY, MP_CMD_DIAGNOSE, MP_CMD_RESOLVE,
                                       MP_CMD_MINIMIZE, MP_CMD_SOAK};

/* Parse words (NULL-terminated) for cmd with stderr captured into err.
 * Returns mp_opts_parse's result; o is released. */
static int parse(enum mp_cmd cmd, char *err, size_t errsz, ...)
{
    char *argv[64];
    int argc = 0;
    argv[argc++] = (char *)mp_cmd_name(cmd);
    va_list ap;
    va_start(ap, errsz);
    for (char *w; (w = va_arg(ap, char *)) != NULL && argc < 63;)
        argv[argc++] = w;
    va_end(ap);
    argv[argc] = NULL;
    fflush(stderr);
    FILE *tmp = tmpfile();
    assert_non_null(tmp);
    int saved = dup(2);
    dup2(fileno(tmp), 2);
    struct mp_opts o;
    int rc = mp_opts_parse(&o, cmd, argc, argv, "", "");
    mp_opts_release(&o);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    rewind(tmp);
    size_t n = fread(err, 1, errsz - 1, tmp);
    err[n] = '\0';
    fclose(tmp);
    return rc;
}

static char *help_of(enum mp_cmd cmd)
{
    char *s = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&s, &n);
    mp_opts_help(f, cmd);
    fclose(f);
    return s;
}

/* The cases: resolve drives no load, so --seq and --conc are
 * refused with that reason (they were accepted and ignored). */
static void test_resolve_refuses_load_options(void **state)
{
    (void)state;
    char err[1024];
    assert_true(parse(MP_CMD_RESOLVE, err, sizeof(err), "--seq", "3", "--", "vllm", NULL) < 0);
    assert_non_null(strstr(err, "resolve does not take --seq"));
    assert_non_null(strstr(err, "no load"));
    assert_true(parse(MP_CMD_RESOLVE, err, sizeof(err), "--conc", "4:16", "--", "vllm", NULL) < 0);
    assert_non_null(strstr(err, "--conc"));
    assert_int_equal(parse(MP_CMD_RESOLVE, err, sizeof(err), "--out", "x", "--", "vllm", NULL), 0);
    /* the same options are qualify's */
    assert_int_equal(parse(MP_CMD_QUALIFY, err, sizeof(err), "--seq", "3", "--conc", "4:16", "--",
                           "vllm", NULL),
                     0);
}

/* minimize --preset says what minimize wants (--from/--to), not a word
 * about --candidate. */
static void test_minimize_preset(void **state)
{
    (void)state;
    char err[1024];
    assert_true(parse(MP_CMD_MINIMIZE, err, sizeof(err), "--preset", "sm12x-nvfp4", "--from", "",
                      "--to", "A=1", "--", "vllm", NULL) < 0);
    assert_non_null(strstr(err, "minimize does not take --preset"));
    assert_non_null(strstr(err, "--from"));
    assert_null(strstr(err, "--candidate cannot"));
    assert_int_equal(parse(MP_CMD_MINIMIZE, err, sizeof(err), "--from", "", "--to", "A=1", "--",
                           "vllm", NULL),
                     0);
}

/* soak's --conc is refused as --conc (pointing at --concurrency), not read
 * as an abbreviation of soak's --concurrency. */
static void test_soak_conc_not_abbreviation(void **state)
{
    (void)state;
    char err[1024];
    assert_true(parse(MP_CMD_SOAK, err, sizeof(err), "--duration", "1", "--conc", "4:16", "--",
                      "v", NULL) < 0);
    assert_non_null(strstr(err, "soak does not take --conc"));
    assert_non_null(strstr(err, "--concurrency N"));
    assert_int_equal(parse(MP_CMD_SOAK, err, sizeof(err), "--dur", "1", "--concurrency", "2",
                           "--", "v", NULL),
                     0);
    assert_true(parse(MP_CMD_SOAK, err, sizeof(err), "--", "v", NULL) < 0);
    assert_non_null(strstr(err, "--duration"));
}

/* Each command's --help lists exactly the options it takes; an option it
 * does not take is refused (exit 2 in the caller), whatever its argument. */
static void test_help_matches_parser(void **state)
{
    (void)state;
    char err[1024];
    for (size_t c = 0; c < MP_ARRAY_SIZE(all_cmds); c++) {
        char *help = help_of(all_cmds[c]);
        for (size_t i = 0; i < mp_noptdefs; i++) {
            const struct mp_optdef *r = &mp_optdefs[i];
            char needle[64];
            snprintf(needle, sizeof(needle), "  --%s%s", r->name, r->arg ? " " : "");
            bool listed = strstr(help, needle) != NULL;
            bool takes = false;
            for (size_t k = 0; k < mp_noptdefs; k++)
                takes |= !strcmp(mp_optdefs[k].name, r->name) && (mp_optdefs[k].cmds & all_cmds[c]);
            if (listed != takes)
                fail_msg("%s --help %s --%s", mp_cmd_name(all_cmds[c]),
                         listed ? "lists" : "does not list", r->name);
            if (!takes) {
                char word[64];
                snprintf(word, sizeof(word), "--%s", r->name);
                int rc = r->arg ? parse(all_cmds[c], err, sizeof(err), word, "1", "--", "v", NULL)
                                : parse(all_cmds[c], err, sizeof(err), word, "--", "v", NULL);
                assert_true(rc < 0);
                if (!strstr(err, "does not take"))
                    fail_msg("%s %s: %s", mp_cmd_name(all_cmds[c]), word, err);
            }
        }
        free(help);
    }
}

/* The table itself: rows of one name never share a command (the parser
 * would silently use the first), every refusal is of an option in the
 * table and for a command that does not take it (else it is dead), and
 * every row has help. */
static void test_table_consistent(void **state)
{
    (void)state;
    for (size_t i = 0; i < mp_noptdefs; i++) {
        assert_non_null(mp_optdefs[i].help);
        assert_true(mp_optdefs[i].help[0] != '\0');
        for (size_t k = i + 1; k < mp_noptdefs; k++)
            if (!strcmp(mp_optdefs[i].name, mp_optdefs[k].name) &&
                (mp_optdefs[i].cmds & mp_optdefs[k].cmds))
                fail_msg("two rows of --%s for one command", mp_optdefs[i].name);
    }
    for (size_t j = 0; j < mp_noptrefusals; j++) {
        unsigned takers = 0;
        bool known = false;
        for (size_t i = 0; i < mp_noptdefs; i++) {
            if (!strcmp(mp_optdefs[i].name, mp_optrefusals[j].name)) {
                known = true;
                takers |= mp_optdefs[i].cmds;
            }
        }
        if (!known || (takers & mp_optrefusals[j].cmds))
            fail_msg("refusal of --%s is dead", mp_optrefusals[j].name);
    }
}

/* --only with a typo names the candidates there are (it was "matches no
 * candidate" alone, and a typo beside a good name was silently dropped). */
static void test_only_lists_names(void **state)
{
    (void)state;
    char err[1024];
    assert_true(parse(MP_CMD_QUALIFY, err, sizeof(err), "--only", "cutlas", "--", "v", NULL) < 0);
    assert_non_null(strstr(err, "matches no candidate"));
    assert_non_null(strstr(err, "auto, cutlass, marlin, flashinfer_cutlass, marlin-env"));
    assert_true(parse(MP_CMD_QUALIFY, err, sizeof(err), "--only", "marlin,cutlas", "--", "v",
                      NULL) < 0);
    assert_non_null(strstr(err, "'cutlas'"));
    assert_int_equal(parse(MP_CMD_QUALIFY, err, sizeof(err), "--only", "marlin,cutlass", "--", "v",
                           NULL),
                     0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resolve_refuses_load_options),
        cmocka_unit_test(test_minimize_preset),
        cmocka_unit_test(test_soak_conc_not_abbreviation),
        cmocka_unit_test(test_help_matches_parser),
        cmocka_unit_test(test_table_consistent),
        cmocka_unit_test(test_only_lists_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
