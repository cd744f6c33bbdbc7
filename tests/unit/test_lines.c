/* Unit tests: the bounded line splitter (base/lines.h) - the same lines
 * whatever the chunk boundaries (a sample stream split at every offset and
 * every pair of offsets, and fed a byte at a time), "\n" and "\r\n" endings,
 * an over-long line cut once at the bound and delivered as soon as it
 * passes it, a final partial line only from mp_lines_finish, NUL bytes kept,
 * and no copy of a line wholly inside a chunk. */
#include "compat.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "lines.h"

/* Every line as "T|len|bytes\n" (T: 't' truncated, '-' not). */
struct rec {
    struct buf log;
    size_t n;
    const char *lo, *hi; /* the chunk being fed: was the view in it? */
    size_t in_chunk;
};

static void on_line(void *ud, const char *line, size_t len, bool truncated)
{
    struct rec *r = ud;
    buf_printf(&r->log, "%c|%zu|", truncated ? 't' : '-', len);
    buf_add(&r->log, line, len);
    buf_addc(&r->log, '\n');
    r->n++;
    if (r->lo && line >= r->lo && line + len <= r->hi)
        r->in_chunk++;
}

static void feed(struct mp_lines *l, struct rec *r, const char *p, size_t n)
{
    r->lo = p;
    r->hi = p + n;
    mp_lines_feed(l, p, n, on_line, r);
    r->lo = r->hi = NULL;
}

/* bound 8: a line of exactly 8, one of 8 + CR (over), an over-long one, a
 * CR in the middle, an empty CRLF line, NULs, a partial last line with CR */
static const char sample[] = "alpha\n"
                             "12345678\n"
                             "1234567\r\n"
                             "1234567\r\r\n"
                             "abcdefghijklmnop\n"
                             "\r\n"
                             "\n"
                             "a\rb\r\n"
                             "n\0l\0\n"
                             "\0\n"
                             "tail\r";
#define SAMPLE_LEN (sizeof(sample) - 1)
#define BOUND 8

static const char expect[] = "-|5|alpha\n"
                             "-|8|12345678\n"
                             "-|7|1234567\n"
                             "t|8|1234567\r\n"
                             "t|8|abcdefgh\n"
                             "-|0|\n"
                             "-|0|\n"
                             "-|3|a\rb\n"
                             "-|4|n\0l\0\n"
                             "-|1|\0\n"
                             "-|4|tail\n";
#define EXPECT_LEN (sizeof(expect) - 1)

/* Lines of sample fed in the pieces [0,a) [a,b) [b,end), then finished. */
static void split_run(size_t a, size_t b, struct buf *out)
{
    struct mp_lines l;
    struct rec r = {BUF_INIT, 0, NULL, NULL, 0};
    mp_lines_init(&l, BOUND);
    feed(&l, &r, sample, a);
    feed(&l, &r, sample + a, b - a);
    feed(&l, &r, sample + b, SAMPLE_LEN - b);
    mp_lines_finish(&l, on_line, &r);
    mp_lines_release(&l);
    *out = r.log;
}

static void assert_expected(const struct buf *got)
{
    if (got->len != EXPECT_LEN || memcmp(got->data, expect, EXPECT_LEN) != 0) {
        fprintf(stderr, "got %zu bytes:\n", got->len);
        fwrite(got->data, 1, got->len, stderr);
        fail();
    }
}

static void test_split_anywhere(void **state)
{
    (void)state;
    for (size_t a = 0; a <= SAMPLE_LEN; a++) {
        for (size_t b = a; b <= SAMPLE_LEN; b++) {
            struct buf got;
            split_run(a, b, &got);
            assert_expected(&got);
            buf_release(&got);
        }
    }
    /* a byte at a time */
    struct mp_lines l;
    struct rec r = {BUF_INIT, 0, NULL, NULL, 0};
    mp_lines_init(&l, BOUND);
    for (size_t i = 0; i < SAMPLE_LEN; i++)
        feed(&l, &r, sample + i, 1);
    assert_int_equal(mp_lines_finish(&l, on_line, &r), 1);
    assert_expected(&r.log);
    mp_lines_release(&l);
    buf_release(&r.log);
}

static void test_crlf(void **state)
{
    (void)state;
    struct mp_lines l;
    struct rec r = {BUF_INIT, 0, NULL, NULL, 0};
    mp_lines_init(&l, 64);
    const char s[] = "a\r\nb\n\r\n\r\r\nc\rd\n";
    assert_int_equal(mp_lines_feed(&l, s, sizeof(s) - 1, on_line, &r), 5);
    const char want[] = "-|1|a\n-|1|b\n-|0|\n-|1|\r\n-|3|c\rd\n";
    assert_int_equal(r.log.len, sizeof(want) - 1);
    assert_memory_equal(r.log.data, want, sizeof(want) - 1);
    /* a CR and its LF in different chunks */
    buf_reset(&r.log);
    feed(&l, &r, "x\r", 2);
    assert_int_equal(r.n, 5);
    feed(&l, &r, "\n", 1);
    assert_string_equal(r.log.data, "-|1|x\n");
    mp_lines_release(&l);
    buf_release(&r.log);
}

static void test_overlong(void **state)
{
    (void)state;
    struct mp_lines l;
    struct rec r = {BUF_INIT, 0, NULL, NULL, 0};
    mp_lines_init(&l, 4);
    /* delivered as soon as it passes the bound, before its newline */
    feed(&l, &r, "abc", 3);
    assert_int_equal(r.n, 0);
    assert_false(mp_lines_skipping(&l));
    feed(&l, &r, "de", 2);
    assert_int_equal(r.n, 1);
    assert_string_equal(r.log.data, "t|4|abcd\n");
    assert_true(mp_lines_skipping(&l));
    assert_true(mp_lines_pending(&l));
    /* the rest, however long, is dropped up to its newline */
    for (int i = 0; i < 1000; i++)
        feed(&l, &r, "xxxxxxxxxx", 10);
    assert_int_equal(r.n, 1);
    feed(&l, &r, "yy\nok\n", 6);
    assert_false(mp_lines_skipping(&l));
    assert_string_equal(r.log.data, "t|4|abcd\n-|2|ok\n");
    /* exactly at the bound: whole; at the bound with a CR: the CR counts */
    buf_reset(&r.log);
    feed(&l, &r, "abcd\nabcd\r\nab\rcd\n", 17);
    assert_string_equal(r.log.data, "-|4|abcd\nt|4|abcd\nt|4|ab\rc\n");
    /* no allocation beyond the one buffer of the bound */
    assert_true(l.buf == NULL || l.len <= l.max);
    mp_lines_release(&l);
    buf_release(&r.log);
}

static void test_final_partial(void **state)
{
    (void)state;
    struct mp_lines l;
    struct rec r = {BUF_INIT, 0, NULL, NULL, 0};
    mp_lines_init(&l, 16);
    assert_int_equal(mp_lines_feed(&l, "one\ntw", 6, on_line, &r), 1);
    assert_true(mp_lines_pending(&l));
    feed(&l, &r, "o\r", 2);
    assert_int_equal(r.n, 1); /* partial input: held */
    assert_int_equal(mp_lines_finish(&l, on_line, &r), 1);
    assert_string_equal(r.log.data, "-|3|one\n-|3|two\n");
    assert_false(mp_lines_pending(&l));
    assert_int_equal(mp_lines_finish(&l, on_line, &r), 0); /* nothing left */
    /* an empty stream, and one ending in a newline: nothing to finish */
    feed(&l, &r, "x\n", 2);
    assert_int_equal(mp_lines_finish(&l, on_line, &r), 0);
    /* an over-long partial line was delivered once, at the bound */
    mp_lines_release(&l);
    mp_lines_init(&l, 2);
    buf_reset(&r.log);
    r.n = 0;
    feed(&l, &r, "abcdef", 6);
    assert_int_equal(r.n, 1);
    assert_int_equal(mp_lines_finish(&l, on_line, &r), 0);
    assert_false(mp_lines_skipping(&l)); /* reset for a new stream */
    feed(&l, &r, "z\n", 2);
    assert_string_equal(r.log.data, "t|2|ab\n-|1|z\n");
    mp_lines_release(&l);
    buf_release(&r.log);
}

static void test_nul_kept(void **state)
{
    (void)state;
    struct mp_lines l;
    struct rec r = {BUF_INIT, 0, NULL, NULL, 0};
    mp_lines_init(&l, 8);
    const char s[] = "\0a\0\n\0\0\0\0\0\0\0\0\0\n";
    feed(&l, &r, s, sizeof(s) - 1);
    const char want[] = "-|3|\0a\0\nt|8|\0\0\0\0\0\0\0\0\n";
    assert_int_equal(r.log.len, sizeof(want) - 1);
    assert_memory_equal(r.log.data, want, sizeof(want) - 1);
    mp_lines_release(&l);
    buf_release(&r.log);
}

static void test_no_copy_no_cb(void **state)
{
    (void)state;
    struct mp_lines l;
    struct rec r = {BUF_INIT, 0, NULL, NULL, 0};
    mp_lines_init(&l, 8);
    /* lines wholly in the chunk are views of it: nothing allocated */
    feed(&l, &r, "a\nbb\nabcdefghij\n", 16);
    assert_int_equal(r.n, 3);
    assert_int_equal(r.in_chunk, 3);
    assert_null(l.buf);
    /* a line across chunks is assembled in the one buffer */
    feed(&l, &r, "cd", 2);
    feed(&l, &r, "e\n", 2);
    assert_non_null(l.buf);
    assert_int_equal(r.in_chunk, 3);
    /* cb NULL: lines counted and dropped */
    assert_int_equal(mp_lines_feed(&l, "1\n2\n3", 5, NULL, NULL), 2);
    assert_int_equal(mp_lines_finish(&l, NULL, NULL), 1);
    mp_lines_release(&l);
    assert_null(l.buf);
    assert_int_equal(l.max, 8);
    buf_release(&r.log);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split_anywhere), cmocka_unit_test(test_crlf),
        cmocka_unit_test(test_overlong),       cmocka_unit_test(test_final_partial),
        cmocka_unit_test(test_nul_kept),       cmocka_unit_test(test_no_copy_no_cb),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
