/* Unit tests: struct buf's optional hard cap (base/buf.h) - adds past it
 * refused whole with toobig set and the contents unchanged, buf_add_some
 * keeping what fits, the cap surviving reset/release/detach and buf_init
 * removing it, and a buffer without a cap never refusing. */
#include "compat.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"

static void test_no_cap(void **state)
{
    (void)state;
    struct buf b = BUF_INIT;
    assert_int_equal(b.max, 0);
    assert_false(b.toobig);
    for (int i = 0; i < 10000; i++)
        assert_true(buf_add(&b, "0123456789", 10));
    assert_true(buf_fits(&b, (size_t)-1));
    assert_int_equal(buf_add_some(&b, "abc", 3), 3);
    assert_true(buf_printf(&b, "%d", 42));
    assert_int_equal(b.len, 100005);
    assert_false(b.toobig);
    buf_release(&b);
}

static void test_refused_whole(void **state)
{
    (void)state;
    struct buf b = BUF_INIT;
    buf_set_max(&b, 8);
    assert_true(buf_adds(&b, "abcde"));
    assert_true(buf_fits(&b, 3));
    assert_false(buf_fits(&b, 4));
    assert_false(buf_add(&b, "wxyz", 4)); /* 9 > 8: refused, not cut */
    assert_true(b.toobig);
    assert_string_equal(b.data, "abcde");
    assert_int_equal(b.len, 5);
    assert_true(buf_add(&b, "xyz", 3)); /* exactly the cap: taken */
    assert_string_equal(b.data, "abcdexyz");
    assert_true(b.toobig);                /* stays set until a reset */
    assert_false(buf_addc(&b, '!'));
    assert_false(buf_printf(&b, "%s", "more"));
    assert_true(buf_add(&b, "", 0));      /* nothing to add: nothing refused */
    assert_string_equal(b.data, "abcdexyz");
    buf_reset(&b);
    assert_false(b.toobig);
    assert_int_equal(b.max, 8);
    assert_false(buf_printf(&b, "%s", "123456789"));
    assert_true(buf_printf(&b, "%s", "12345678"));
    assert_string_equal(b.data, "12345678");
    buf_release(&b);
}

static void test_add_some(void **state)
{
    (void)state;
    struct buf b = BUF_INIT;
    buf_set_max(&b, 6);
    assert_int_equal(buf_add_some(&b, "abcd", 4), 4);
    assert_false(b.toobig);
    assert_int_equal(buf_add_some(&b, "efgh", 4), 2);
    assert_true(b.toobig);
    assert_string_equal(b.data, "abcdef");
    assert_int_equal(buf_add_some(&b, "ij", 2), 0);
    assert_int_equal(b.len, 6);
    /* contents already past a cap set later are kept, nothing more fits */
    buf_set_max(&b, 3);
    assert_int_equal(b.len, 6);
    assert_false(buf_fits(&b, 0) && buf_fits(&b, 1));
    assert_int_equal(buf_add_some(&b, "k", 1), 0);
    assert_false(buf_addc(&b, 'k'));
    buf_release(&b);
}

static void test_cap_lifetime(void **state)
{
    (void)state;
    struct buf b = BUF_INIT;
    buf_set_max(&b, 4);
    assert_false(buf_adds(&b, "toolong"));
    assert_true(buf_adds(&b, "ok"));
    size_t n = 0;
    char *s = buf_detach(&b, &n);
    assert_string_equal(s, "ok");
    assert_int_equal(n, 2);
    free(s);
    assert_int_equal(b.max, 4); /* the cap is the buffer's, not its contents' */
    assert_false(b.toobig);
    assert_false(buf_adds(&b, "12345"));
    buf_release(&b);
    assert_int_equal(b.max, 4);
    assert_false(b.toobig);
    assert_string_equal(b.data, "");
    buf_init(&b);
    assert_int_equal(b.max, 0);
    assert_true(buf_adds(&b, "12345"));
    buf_release(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_cap),
        cmocka_unit_test(test_refused_whole),
        cmocka_unit_test(test_add_some),
        cmocka_unit_test(test_cap_lifetime),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
