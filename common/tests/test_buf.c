#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "buf.h"

static void test_append_and_cap(void **state)
{
    (void)state;
    struct buf b;
    buf_init(&b, 8);
    assert_int_equal(buf_append_str(&b, "abcd"), 0);
    assert_int_equal(buf_append_str(&b, "efgh"), 0);
    assert_true(buf_ok(&b));
    assert_int_equal(buf_append_str(&b, "i"), -1);
    assert_true(b.overflow);
    assert_string_equal(buf_cstr(&b), "abcdefgh");
    buf_free(&b);
}

static void test_json_string_escapes(void **state)
{
    (void)state;
    struct buf b;
    buf_init(&b, 0);
    buf_append_json_string(&b, "a\"b\\c\n\x01z");
    assert_string_equal(buf_cstr(&b), "\"a\\\"b\\\\c\\n\\u0001z\"");
    buf_free(&b);
}

static void test_printf_consume_steal(void **state)
{
    (void)state;
    struct buf b;
    buf_init(&b, 0);
    assert_int_equal(buf_printf(&b, "%d-%s", 42, "x"), 0);
    buf_consume(&b, 3);
    assert_string_equal(buf_cstr(&b), "x");
    char *s = buf_steal(&b);
    assert_string_equal(s, "x");
    free(s);
    assert_int_equal(b.len, 0);
    assert_string_equal(buf_cstr(&b), "");
    buf_free(&b);
}

static void test_printf_respects_cap(void **state)
{
    (void)state;
    struct buf b;
    buf_init(&b, 4);
    assert_int_equal(buf_printf(&b, "%s", "12345"), -1);
    assert_int_equal(b.len, 0);
    buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_append_and_cap),
        cmocka_unit_test(test_json_string_escapes),
        cmocka_unit_test(test_printf_consume_steal),
        cmocka_unit_test(test_printf_respects_cap),
    };
    return cmocka_run_group_tests_name("buf", tests, NULL, NULL);
}
