/* Unit tests: the typed vector and the growth rule (base/vec.h), and the
 * string vector built on it (base/strv.h) - pushes keep order and values
 * across growth, reserve leaves room for a push without moving the array,
 * release resets to the empty state, mp_grow works on arrays with their own
 * field names and leaves a big enough array alone, the string vector stays
 * NULL-terminated through push and clear and finds what it holds; the
 * shell quoters beside it (buf_add_shell_word, buf_add_shell_quoted). */
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
#include "strv.h"
#include "vec.h"

struct pt {
    int x, y;
};
MP_VEC(ptvec, struct pt);

static void test_push_grows(void **state)
{
    (void)state;
    struct mp_dvec d = MP_VEC_INIT;
    assert_null(d.v);
    assert_int_equal(d.n, 0);
    for (int i = 0; i < 1000; i++) {
        mp_vec_push(&d, i * 0.5);
        assert_true(d.n <= d.cap);
    }
    assert_int_equal(d.n, 1000);
    for (int i = 0; i < 1000; i++)
        assert_true(d.v[i] == i * 0.5);
    mp_vec_release(&d);
    assert_null(d.v);
    assert_int_equal(d.n, 0);
    assert_int_equal(d.cap, 0);
    mp_vec_release(&d); /* twice is harmless */

    struct ptvec p = MP_VEC_INIT;
    mp_vec_push(&p, ((struct pt){ 1, 2 }));
    mp_vec_push(&p, ((struct pt){ 3, 4 }));
    assert_int_equal(p.n, 2);
    assert_int_equal(p.v[1].x, 3);
    assert_int_equal(p.v[1].y, 4);
    mp_vec_release(&p);
}

static void test_push_evaluates_once(void **state)
{
    (void)state;
    struct mp_dvec d = MP_VEC_INIT;
    int k = 0;
    for (int i = 0; i < 40; i++)
        mp_vec_push(&d, (double)k++);
    assert_int_equal(k, 40);
    assert_int_equal(d.n, 40);
    assert_true(d.v[39] == 39.0);
    mp_vec_release(&d);
}

static void test_reserve(void **state)
{
    (void)state;
    struct mp_dvec d = MP_VEC_INIT;
    mp_vec_reserve(&d, 100);
    assert_true(d.cap >= 100);
    assert_int_equal(d.n, 0);
    double *before = d.v;
    for (int i = 0; i < 100; i++)
        mp_vec_push(&d, 1.0);
    assert_ptr_equal(d.v, before); /* the room was there: no move */
    size_t cap = d.cap;
    mp_vec_reserve(&d, 0);
    assert_int_equal(d.cap, cap);
    mp_vec_release(&d);
}

static void test_grow_own_fields(void **state)
{
    (void)state;
    struct {
        long *items;
        size_t nitems, capitems;
    } s = { NULL, 0, 0 };
    for (long i = 0; i < 77; i++) {
        mp_grow(s.items, s.capitems, s.nitems + 1);
        s.items[s.nitems++] = i;
    }
    assert_true(s.capitems >= 77);
    for (long i = 0; i < 77; i++)
        assert_int_equal(s.items[i], i);
    /* big enough: same array, same capacity */
    long *p = s.items;
    size_t cap = s.capitems;
    mp_grow(s.items, s.capitems, 10);
    assert_ptr_equal(s.items, p);
    assert_int_equal(s.capitems, cap);
    /* a jump past double the capacity still gets enough room */
    mp_grow(s.items, s.capitems, cap * 5 + 3);
    assert_true(s.capitems >= cap * 5 + 3);
    s.items[cap * 5 + 2] = 1; /* in bounds (ASan would say otherwise) */
    free(s.items);
}

static void test_strv(void **state)
{
    (void)state;
    struct mp_strv s = MP_STRV_INIT;
    assert_false(mp_strv_has(&s, "a"));
    char **arr = mp_strv_array(&s); /* empty: a NULL-terminated empty array */
    assert_non_null(arr);
    assert_null(arr[0]);
    char word[16];
    for (int i = 0; i < 50; i++) {
        snprintf(word, sizeof(word), "w%d", i);
        mp_strv_push(&s, word);
        assert_null(s.v[s.n]);
    }
    mp_strv_push_owned(&s, strdup("owned"));
    assert_int_equal(s.n, 51);
    assert_string_equal(s.v[0], "w0");
    assert_string_equal(s.v[49], "w49");
    assert_true(mp_strv_has(&s, "w17"));
    assert_true(mp_strv_has(&s, "owned"));
    assert_false(mp_strv_has(&s, "w50"));
    mp_strv_clear(&s);
    assert_int_equal(s.n, 0);
    assert_non_null(s.v); /* kept for reuse */
    assert_null(s.v[0]);
    assert_false(mp_strv_has(&s, "w17"));
    mp_strv_push(&s, "again");
    assert_string_equal(mp_strv_array(&s)[0], "again");
    assert_null(mp_strv_array(&s)[1]);
    mp_strv_release(&s);
    assert_null(s.v);
    assert_int_equal(s.n, 0);
    mp_strv_clear(&s); /* on an empty vector: nothing */
    assert_null(s.v);
}

/* the two shell quoters: as needed (for readers) and always (for scripts) */
static void test_shell_words(void **state)
{
    (void)state;
    struct buf b = BUF_INIT;
    buf_add_shell_word(&b, "--moe-backend=marlin");
    buf_addc(&b, ' ');
    buf_add_shell_word(&b, "two words");
    buf_addc(&b, ' ');
    buf_add_shell_word(&b, "it's");
    buf_addc(&b, ' ');
    buf_add_shell_word(&b, "");
    assert_string_equal(b.data, "--moe-backend=marlin 'two words' 'it'\\''s' ''");
    buf_reset(&b);
    buf_add_shell_quoted(&b, "a");
    buf_addc(&b, ' ');
    buf_add_shell_quoted(&b, "it's $HOME");
    buf_addc(&b, ' ');
    buf_add_shell_quoted(&b, "");
    assert_string_equal(b.data, "'a' 'it'\\''s $HOME' ''");
    buf_release(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_push_grows), cmocka_unit_test(test_push_evaluates_once),
        cmocka_unit_test(test_reserve),    cmocka_unit_test(test_grow_own_fields),
        cmocka_unit_test(test_strv),       cmocka_unit_test(test_shell_words),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
