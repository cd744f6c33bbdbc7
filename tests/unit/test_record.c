/* Unit tests: the server.log lines an attempt's finish keeps as evidence
 * (store/record.c) - read through the bounded line splitter, so a line of
 * any length costs a bounded amount of memory (a 20 MB line and a final
 * 50 MB line without '\n' raise the peak RSS by far less than either), is
 * kept as its first 4096 bytes, and the lines after it keep their numbers. */
#include "compat.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model/report.h"
#include "store/store.h"
#include "xalloc.h"

#define MB (1024L * 1024L)

/* n bytes of c to f, from a small buffer (the test itself stays small) */
static void put_run(FILE *f, char c, long n)
{
    char blk[65536];
    memset(blk, c, sizeof(blk));
    for (long left = n; left > 0; left -= (long)sizeof(blk))
        assert_int_equal(fwrite(blk, 1, (size_t)MP_MIN(left, (long)sizeof(blk)), f),
                         (size_t)MP_MIN(left, (long)sizeof(blk)));
}

static long peak_rss_kb(void)
{
    struct rusage ru;
    assert_int_equal(getrusage(RUSAGE_SELF, &ru), 0);
    return ru.ru_maxrss;
}

static void test_huge_lines(void **state)
{
    MP_UNUSED(state);
    char run[] = "/tmp/test_record_XXXXXX";
    assert_non_null(mkdtemp(run));
    char *adir = xasprintf("%s/attempts", run);
    assert_int_equal(mkdir(adir, 0755), 0);
    free(adir);
    adir = xasprintf("%s/attempts/x-1", run);
    assert_int_equal(mkdir(adir, 0755), 0);
    /* 1 "first", 2: 20 MB of 'a', 3..9 "line N", 10: 50 MB of 'b', no '\n' */
    char *logp = xasprintf("%s/server.log", adir);
    FILE *f = fopen(logp, "w");
    assert_non_null(f);
    fputs("first\n", f);
    put_run(f, 'a', 20 * MB);
    fputc('\n', f);
    for (int i = 3; i <= 9; i++)
        fprintf(f, "line %d\n", i);
    put_run(f, 'b', 50 * MB);
    assert_int_equal(fclose(f), 0);

    struct mp_store *s = NULL;
    assert_int_equal(mp_store_open(run, MP_STORE_CREATE | MP_STORE_LOCK, &s, NULL), 0);
    char *argv[] = { "qualify", NULL };
    assert_int_equal(mp_store_run_begin(s, "qualify", argv, 1, "9.9", "t0"), 0);
    struct mp_candidate c;
    assert_int_equal(mp_candidate_from_knobs("x", "", &c, NULL), 0);
    assert_int_equal(mp_store_candidate(s, 0, &c), 0);
    int64_t id = 0;
    assert_int_equal(mp_store_attempt_begin(s, 0, 1, false, adir, &id), 0);
    struct mp_attempt_result r;
    memset(&r, 0, sizeof(r));
    r.dir = adir;
    r.index = 1;
    r.outcome = MP_OUT_CRASH;
    r.res.moe_backend_line = 2; /* the 20 MB line: context 1..4 */
    r.fail_line = 10;           /* the final 50 MB line: context 8, 9 (11, 12 do not exist) */
    long before = peak_rss_kb();
    assert_int_equal(mp_store_attempt_finish(s, id, &r), 0);
    long grew = peak_rss_kb() - before;
    assert_true(grew < 8 * 1024); /* KiB: far below either line */
    assert_int_equal(mp_store_candidate_done(s, 0, NULL, NULL), 0);
    assert_int_equal(mp_store_run_finish(s, "t1", false), 0);
    mp_store_close(s);
    mp_candidate_release(&c);

    assert_int_equal(mp_store_open(run, MP_STORE_READONLY, &s, NULL), 0);
    struct mp_report rep;
    mp_report_init(&rep, run);
    assert_int_equal(mp_store_load(s, &rep, NULL), 0);
    mp_store_close(s);
    assert_int_equal(rep.n, 1);
    assert_int_equal(rep.c[0].nattempts, 1);
    const struct mp_evidence *ev = rep.c[0].attempts[0].evidence;
    assert_non_null(ev);
    const long want[] = { 1, 2, 3, 4, 8, 9, 10 };
    assert_int_equal(ev->nlines, MP_ARRAY_SIZE(want));
    for (size_t i = 0; i < MP_ARRAY_SIZE(want); i++)
        assert_int_equal(ev->lines[i].no, want[i]);
    assert_string_equal(ev->lines[0].text, "first");
    assert_int_equal(strlen(ev->lines[1].text), 4096);
    assert_int_equal(strspn(ev->lines[1].text, "a"), 4096);
    assert_string_equal(ev->lines[2].text, "line 3");
    assert_string_equal(ev->lines[3].text, "line 4");
    assert_string_equal(ev->lines[5].text, "line 9");
    assert_int_equal(strlen(ev->lines[6].text), 4096);
    assert_int_equal(strspn(ev->lines[6].text, "b"), 4096);
    mp_report_release(&rep);

    unlink(logp);
    free(logp);
    const char *names[] = { "moeprobe.db", "moeprobe.db-wal", "moeprobe.db-shm", "lock" };
    for (size_t i = 0; i < MP_ARRAY_SIZE(names); i++) {
        char *p = xasprintf("%s/%s", run, names[i]);
        unlink(p);
        free(p);
    }
    assert_int_equal(rmdir(adir), 0);
    free(adir);
    char *p = xasprintf("%s/attempts", run);
    assert_int_equal(rmdir(p), 0);
    free(p);
    assert_int_equal(rmdir(run), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_huge_lines),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
