#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "quantity.h"

static int64_t q(const char *s)
{
    int64_t v = -42;
    assert_int_equal(qty_parse(s, &v), 0);
    return v;
}

static void test_decimal_and_binary_suffixes(void **state)
{
    (void)state;
    assert_int_equal(q("1"), 1000);
    assert_int_equal(q("500m"), 500);
    assert_int_equal(q("1.5"), 1500);
    assert_int_equal(q("2k"), 2000000);
    assert_int_equal(q("1Ki"), 1024000);
    assert_int_equal(q("16Gi"), 16LL * 1024 * 1024 * 1024 * 1000);
    assert_int_equal(q("1e3"), 1000000);
    assert_int_equal(q("1E-3"), 1);
    assert_int_equal(q("-2"), -2000);
    assert_int_equal(q("+3"), 3000);
    assert_int_equal(q("0"), 0);
}

static void test_rounds_up_below_milli(void **state)
{
    (void)state;
    assert_int_equal(q("1u"), 1);
    assert_int_equal(q("1500u"), 2);
    assert_int_equal(q("0.0001"), 1);
}

static void test_rejects_malformed(void **state)
{
    (void)state;
    int64_t v;
    const char *bad[] = {"",      "m",   "1.2.3", "1X", "1Kii", "1e",
                         "1e400", "--1", "1 ",    "Gi", "1.5e", "99999999999999999999999999999999",
                         "9E"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(qty_parse(bad[i], &v), -1);
    assert_int_equal(qty_parse(NULL, &v), -1);
}

static void test_format(void **state)
{
    (void)state;
    char out[32];
    qty_format(8000, out, sizeof(out));
    assert_string_equal(out, "8");
    qty_format(1500, out, sizeof(out));
    assert_string_equal(out, "1500m");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decimal_and_binary_suffixes),
        cmocka_unit_test(test_rounds_up_below_milli),
        cmocka_unit_test(test_rejects_malformed),
        cmocka_unit_test(test_format),
    };
    return cmocka_run_group_tests_name("quantity", tests, NULL, NULL);
}
