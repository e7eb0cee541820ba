#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "json_yajl.h"
#include "jsonx.h"

/* jy_decode's tree, checked to be jansson's own (values, types, key order). */
static json_t *fast_as_jansson(const char *text, size_t flags)
{
    size_t len = strlen(text);
    json_t *fast = jy_decode(text, len, flags);
    assert_non_null(fast);
    json_t *ref = json_loadb(text, len, flags, NULL);
    assert_non_null(ref);
    char *a = json_dumps(fast, JSON_COMPACT), *b = json_dumps(ref, JSON_COMPACT);
    assert_string_equal(a, b);
    free(a);
    free(b);
    json_decref(ref);
    return fast;
}

static void test_kubernetes_object(void **state)
{
    (void)state;
    /* what the apiserver sends: HTML-escaped '<', '>', '&', non-ASCII raw */
    json_t *j = fast_as_jansson(
        "{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"j\","
        "\"labels\":{\"kueue.x-k8s.io/queue-name\":\"lq\"},\"generation\":1,"
        "\"annotations\":{\"note\":\"caf\xc3\xa9 \\u0026 \\u003ctea\\u003e\"}},"
        "\"spec\":{\"parallelism\":-3,\"ratio\":1.5e3,\"small\":-2.0E-2,\"zero\":-0,"
        "\"suspend\":false,\"managedBy\":null,\"template\":{\"spec\":{\"containers\":[{"
        "\"command\":[\"sh\",\"-c\",\"a \\u0026\\u0026 b\\n\\t\\\"q\\\" \\\\ \\/\"],"
        "\"resources\":{}}],\"volumes\":[]}}}}",
        JSON_REJECT_DUPLICATES);
    assert_string_equal(json_string_value(jx_get(j, "metadata.annotations.note")),
                        "caf\xc3\xa9 & <tea>");
    assert_true(json_is_integer(jx_get(j, "spec.parallelism")));
    assert_true(json_is_real(jx_get(j, "spec.ratio")));
    assert_true(json_is_null(jx_get(j, "spec.managedBy")));
    assert_string_equal(json_string_value(jx_get(j, "spec.template.spec.containers.0.command.2")),
                        "a && b\n\t\"q\" \\ /");
    json_decref(j);
    /* an escaped backslash before "u0000" is text, not an escape */
    j = fast_as_jansson("[\"\\\\u0000\", \"\\\\\\\\ud800\"]", 0);
    assert_string_equal(json_string_value(json_array_get(j, 0)), "\\u0000");
    json_decref(j);
    /* the last duplicate wins without JSON_REJECT_DUPLICATES, in the first's place */
    j = fast_as_jansson("{\"a\":1,\"b\":2,\"a\":3}", 0);
    assert_int_equal(json_integer_value(json_object_get(j, "a")), 3);
    json_decref(j);
    j = fast_as_jansson("[9223372036854775807,-9223372036854775808,1e-400]", 0);
    json_decref(j);
}

struct declined {
    const char *text;
    size_t len; /* 0: strlen */
    size_t flags;
    const char *jansson_error; /* NULL: jansson decodes it */
};

static void test_declines_where_jansson_decides(void **state)
{
    (void)state;
    static const struct declined cases[] = {
        {"{\"a\":\"\\u0000\"}", 0, 0, "\\u0000 is not allowed"},
        {"{\"a\":\"\\ud800\"}", 0, 0, "invalid Unicode"},
        {"{\"a\":\"\\uDC00x\"}", 0, 0, "invalid Unicode"},
        {"{\"\\ud800\\u0041\":1}", 0, 0, "invalid Unicode"},
        {"{\"a\":\"\\ud83d\\ude00\"}", 0, 0, NULL}, /* a valid pair: jansson's */
        {"{\f}", 0, 0, "string or '}' expected"},
        {"[1,\v2]", 0, 0, "invalid token"},
        {"{\"a\":1,\"a\":2}", 0, JSON_REJECT_DUPLICATES, "duplicate object key"},
        {"[9223372036854775808]", 0, 0, "too big integer"},
        {"[-9223372036854775809]", 0, 0, "too big negative integer"},
        {"[1e999]", 0, 0, "real number overflow"},
        {"[12345678901234567890123456789012345678901234567890123456789012345.5]", 0, 0, NULL},
        {"5", 0, 0, "'[' or '{' expected"},
        {"\"s\"", 0, 0, "'[' or '{' expected"},
        {"{} \"x", 0, 0, "premature end of input"},
        {"{} 1", 0, 0, "end of file expected"},
        {"[] tr", 0, 0, "end of file expected"},
        {"[\"\xc3\x28\"]", 0, 0, "unable to decode byte"},
        {"[\"\xc0\xaf\"]", 0, 0, "unable to decode byte"},
        {"[\"\xed\xa0\x80\"]", 0, 0, "unable to decode byte"},
        {"{\"\xff\":1}", 0, 0, "unable to decode byte"},
        {"[\"a\tb\"]", 0, 0, "control character"},
        {"[\"a\0b\"]", 6, 0, "control character"},
        {"[1,]", 0, 0, "unexpected token"},
        {"[01]", 0, 0, "invalid token"},
        {"{\"a\":1", 0, 0, "'}' expected"},
        {"", 0, 0, "'[' or '{' expected"},
        {"[1]", 0, JSON_DECODE_ANY, NULL}, /* flags other than JSON_REJECT_DUPLICATES */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct declined *c = &cases[i];
        size_t len = c->len ? c->len : strlen(c->text);
        json_t *fast = jy_decode(c->text, len, c->flags);
        if (fast)
            fail_msg("case %zu (%s): yajl decoded what jansson must decide", i, c->text);
        json_error_t e;
        json_t *j = jx_loadb(c->text, len, c->flags, &e);
        if (c->jansson_error) {
            assert_null(j);
            if (!strstr(e.text, c->jansson_error))
                fail_msg("case %zu: \"%s\" lacks \"%s\"", i, e.text, c->jansson_error);
        } else {
            assert_non_null(j);
            json_decref(j);
        }
    }
}

static void test_depth(void **state)
{
    (void)state;
    char doc[2 * (JY_MAX_DEPTH + 1) + 1];
    for (int n = JY_MAX_DEPTH; n <= JY_MAX_DEPTH + 1; n++) {
        memset(doc, '[', (size_t)n);
        memset(doc + n, ']', (size_t)n);
        json_t *fast = jy_decode(doc, 2 * (size_t)n, 0);
        json_t *j = jx_loadb(doc, 2 * (size_t)n, 0, NULL);
        assert_non_null(j); /* jansson's own limit is deeper */
        if (n == JY_MAX_DEPTH)
            assert_true(json_equal(fast, j));
        else
            assert_null(fast); /* left to jansson */
        json_decref(fast);
        json_decref(j);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kubernetes_object),
        cmocka_unit_test(test_declines_where_jansson_decides),
        cmocka_unit_test(test_depth),
    };
    return cmocka_run_group_tests_name("json_yajl", tests, NULL, NULL);
}
