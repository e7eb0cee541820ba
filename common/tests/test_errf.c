#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "errf.h"
#include "kube_client.h"

/* errf fills the buffer (truncating) and hands the code back. */
static void test_errf_fills_and_returns(void **state)
{
    (void)state;
    char err[8];
    assert_int_equal(errf(err, sizeof(err), MK_ERR_INVAL, "bad %s", "field"), MK_ERR_INVAL);
    assert_string_equal(err, "bad fie");
    assert_int_equal(errf(NULL, 0, MK_ERR_NOMEM, "out of memory"), MK_ERR_NOMEM);
}

/* One value, one meaning: every code is distinct and named (the watch
 * decoder's -2 and the client's -2 once meant TOOBIG and HTTP). */
static void test_codes_distinct_and_named(void **state)
{
    (void)state;
    static const int codes[] = {MK_ERR,         MK_ERR_INVAL,   MK_ERR_NOMEM,     MK_ERR_TOOBIG,
                                MK_ERR_FULL,    MK_ERR_DECODE,  MK_ERR_TRANSPORT, MK_ERR_HTTP,
                                MK_ERR_STOPPED, MK_ERR_REFUSED, MK_ERR_CONFLICT,  MK_ERR_IO};
    size_t n = sizeof(codes) / sizeof(codes[0]);
    for (size_t i = 0; i < n; i++) {
        assert_true(codes[i] < 0);
        assert_string_not_equal(mk_err_name(codes[i]), "unknown");
        for (size_t j = i + 1; j < n; j++)
            assert_int_not_equal(codes[i], codes[j]);
    }
    assert_string_equal(mk_err_name(MK_OK), "ok");
    assert_string_equal(mk_err_name(MK_ERR_NOMEM), "nomem");
    assert_string_equal(mk_err_name(-1000), "unknown");
    assert_string_equal(mk_err_name(3), "unknown");
}

/* A curl option that cannot be set for lack of memory is out of memory, not
 * a bad argument (kube_client reported both as INVAL). */
static void test_kc_setup_status(void **state)
{
    (void)state;
    assert_int_equal(kc_setup_status(CURLE_OK), 0);
    assert_int_equal(kc_setup_status(CURLE_OUT_OF_MEMORY), MK_ERR_NOMEM);
    assert_int_equal(kc_setup_status(CURLE_UNKNOWN_OPTION), MK_ERR_INVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_errf_fills_and_returns),
        cmocka_unit_test(test_codes_distinct_and_named),
        cmocka_unit_test(test_kc_setup_status),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
