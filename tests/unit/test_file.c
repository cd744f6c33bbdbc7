/* Unit tests: writes into a run directory never go through a symbolic link
 * planted there - mp_write_file_atomic (a link at the name and at its
 * temporary's name), the store's lock and database - and the store records
 * where a run was started (run.cwd). */
#include "compat.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "file.h"
#include "store/store.h"
#include "xalloc.h"

const char mp_version[] = "0.0.0-test";

static char *tmpdir(void)
{
    char t[] = "/tmp/test-file.XXXXXX";
    assert_non_null(mkdtemp(t));
    return xstrdup(t);
}

static void rmtree(const char *d)
{
    char *cmd = xasprintf("rm -rf '%s'", d);
    assert_int_equal(system(cmd), 0);
    free(cmd);
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

static void assert_content(const char *path, const char *want)
{
    struct buf b = BUF_INIT;
    assert_int_equal(mp_read_file(path, 1 << 20, &b, NULL), 0);
    assert_string_equal(b.data, want);
    buf_release(&b);
}

static bool is_link(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0 && S_ISLNK(st.st_mode);
}

static void test_atomic_write_replaces_links(void **state)
{
    (void)state;
    char *dir = tmpdir();
    char *victim = xasprintf("%s/victim", dir);
    char *victim2 = xasprintf("%s/victim2", dir);
    char *run = xasprintf("%s/run", dir);
    assert_int_equal(mkdir(run, 0777), 0);
    write_text(victim, "precious\n");
    write_text(victim2, "precious too\n");
    /* a link at the name: replaced by the new file, the target untouched */
    char *name = xasprintf("%s/report.json", run);
    assert_int_equal(symlink(victim, name), 0);
    /* a link at the temporary's name (its pid is predictable) */
    char *tmp = xasprintf("%s/report.json.tmp.%ld", run, (long)getpid());
    assert_int_equal(symlink(victim2, tmp), 0);
    assert_int_equal(mp_write_file_atomic(run, "report.json", "{}\n", 3), 0);
    assert_false(is_link(name));
    assert_content(name, "{}\n");
    assert_content(victim, "precious\n");
    assert_content(victim2, "precious too\n");
    assert_int_equal(access(tmp, F_OK), -1);
    /* a dangling link is not followed into a new file either */
    char *dangling = xasprintf("%s/created-through-link", dir);
    assert_int_equal(symlink(dangling, tmp), 0);
    assert_int_equal(mp_write_file_atomic(run, "report.md", "x", 1), 0);
    assert_int_equal(access(dangling, F_OK), -1);
    rmtree(dir);
    free(dir), free(victim), free(victim2), free(run), free(name), free(tmp), free(dangling);
}

static void test_store_refuses_links(void **state)
{
    (void)state;
    char *dir = tmpdir();
    char *victim = xasprintf("%s/victim", dir);
    write_text(victim, "precious\n");
    char *run = xasprintf("%s/run", dir);
    assert_int_equal(mkdir(run, 0777), 0);
    /* the lock */
    char *lock = xasprintf("%s/lock", run);
    assert_int_equal(symlink(victim, lock), 0);
    struct mp_store *s = NULL;
    assert_true(mp_store_open(run, MP_STORE_CREATE | MP_STORE_LOCK, &s, NULL) < 0);
    assert_null(s);
    assert_int_equal(unlink(lock), 0);
    /* the database: never created or opened through a link */
    char *db = xasprintf("%s/%s", run, MP_STORE_DB_NAME);
    char *elsewhere = xasprintf("%s/elsewhere.db", dir);
    assert_int_equal(symlink(elsewhere, db), 0);
    assert_true(mp_store_open(run, MP_STORE_CREATE | MP_STORE_LOCK, &s, NULL) < 0);
    assert_null(s);
    assert_int_equal(access(elsewhere, F_OK), -1);
    assert_content(victim, "precious\n");
    rmtree(dir);
    free(dir), free(victim), free(run), free(lock), free(db), free(elsewhere);
}

static void test_run_cwd(void **state)
{
    (void)state;
    char *dir = tmpdir();
    char here[4096];
    assert_non_null(getcwd(here, sizeof(here)));
    struct mp_store *s = NULL;
    assert_int_equal(mp_store_open(dir, MP_STORE_CREATE | MP_STORE_LOCK, &s, NULL), 0);
    char *none = NULL;
    assert_int_equal(mp_store_run_cwd(s, &none), -ENOENT);
    char *argv[] = {"--", "./engine"};
    assert_int_equal(mp_store_run_begin(s, "qualify", argv, 2, "0", "now"), 0);
    char *cwd = NULL;
    assert_int_equal(mp_store_run_cwd(s, &cwd), 0);
    assert_non_null(cwd);
    assert_string_equal(cwd, here);
    free(cwd);
    mp_store_close(s);
    rmtree(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_atomic_write_replaces_links),
        cmocka_unit_test(test_store_refuses_links),
        cmocka_unit_test(test_run_cwd),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
