#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_yajl.h"
#include "jsonx.h"

/* jy_decode's tree (with prune, or NULL), checked to be jansson's own
 * (values, types, key order) with jy_prune applied, and jx_loadb to give
 * it too. */
static json_t *as_jansson(const char *text, size_t flags, const struct jy_prune *prune)
{
    size_t len = strlen(text);
    json_t *fast = jy_decode(text, len, flags, prune);
    assert_non_null(fast);
    json_t *ref = json_loadb(text, len, flags, NULL);
    assert_non_null(ref);
    jy_prune(ref, prune);
    json_t *either = jx_loadb(text, len, flags, prune, NULL);
    char *x = json_dumps(fast, JSON_COMPACT), *y = json_dumps(ref, JSON_COMPACT),
         *z = json_dumps(either, JSON_COMPACT);
    assert_string_equal(x, y);
    assert_string_equal(x, z);
    free(x);
    free(y);
    free(z);
    json_decref(ref);
    json_decref(either);
    return fast;
}

static json_t *fast_as_jansson(const char *text, size_t flags)
{
    return as_jansson(text, flags, NULL);
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
        json_t *fast = jy_decode(c->text, len, c->flags, NULL);
        if (fast)
            fail_msg("case %zu (%s): yajl decoded what jansson must decide", i, c->text);
        json_error_t e;
        json_t *j = jx_loadb(c->text, len, c->flags, NULL, &e);
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
        json_t *fast = jy_decode(doc, 2 * (size_t)n, 0, NULL);
        json_t *j = jx_loadb(doc, 2 * (size_t)n, 0, NULL, NULL);
        assert_non_null(j); /* jansson's own limit is deeper */
        if (n == JY_MAX_DEPTH)
            assert_true(json_equal(fast, j));
        else
            assert_null(fast); /* left to jansson */
        json_decref(fast);
        json_decref(j);
    }
}

/* The members of the webhook's and the API client's lists, in the shapes
 * they take: an object's, a list's items', a watch event's, and a path
 * that ends in JY_EACH. */
static const struct jy_path paths[] = {
    {{"metadata", "managedFields"}},
    {{"items", JY_EACH, "metadata", "managedFields"}},
    {{"object", "metadata", "managedFields"}},
    {{"drop", "all", JY_EACH}},
    {{0}}, /* no keys: prunes nothing */
};
static const struct jy_prune prune = JY_PRUNE_OF(paths);

static json_t *pruned_as_jansson(const char *text, size_t flags)
{
    return as_jansson(text, flags, &prune);
}

static void test_pruned_members_are_left_out(void **state)
{
    (void)state;
    static const char mf[] =
        "[{\"manager\":\"kubectl\",\"time\":\"2026-01-01T00:00:00Z\",\"n\":-1.5e3,\"t\":true,"
        "\"z\":null,\"fieldsV1\":{\"f:metadata\":{\"f:labels\":{\".\":{},\"f:x\":{}}}}}]";
    char doc[1024];
    snprintf(doc, sizeof(doc),
             "{\"kind\":\"Job\",\"metadata\":{\"name\":\"j\",\"managedFields\":%s,\"uid\":\"u\"},"
             "\"spec\":{\"metadata\":{\"managedFields\":[1]}},\"managedFields\":2}",
             mf);
    json_t *j = pruned_as_jansson(doc, JSON_REJECT_DUPLICATES);
    assert_null(jx_get(j, "metadata.managedFields"));
    assert_string_equal(json_string_value(jx_get(j, "metadata.uid")), "u"); /* after it */
    /* only at the path's place */
    assert_int_equal(json_integer_value(jx_get(j, "spec.metadata.managedFields.0")), 1);
    assert_int_equal(json_integer_value(json_object_get(j, "managedFields")), 2);
    json_decref(j);

    snprintf(
        doc, sizeof(doc),
        "{\"kind\":\"JobList\",\"items\":[{\"metadata\":{\"managedFields\":%s,\"name\":\"a\"}},"
        "{\"metadata\":{\"name\":\"b\"}},7,[{\"metadata\":{\"managedFields\":3}}]],"
        "\"drop\":{\"all\":[1,{\"a\":[]},\"s\"],\"not\":[1]}}",
        mf);
    j = pruned_as_jansson(doc, 0);
    assert_null(jx_get(j, "items.0.metadata.managedFields"));
    assert_string_equal(json_string_value(jx_get(j, "items.0.metadata.name")), "a");
    assert_int_equal(json_integer_value(jx_get(j, "items.2")), 7);
    /* an array inside the array is not an item */
    assert_int_equal(json_integer_value(jx_get(j, "items.3.0.metadata.managedFields")), 3);
    assert_int_equal(json_array_size(jx_get(j, "drop.all")), 0);
    assert_int_equal(json_array_size(jx_get(j, "drop.not")), 1);
    json_decref(j);

    snprintf(doc, sizeof(doc),
             "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"managedFields\":%s}}}", mf);
    j = pruned_as_jansson(doc, 0);
    assert_int_equal(json_object_size(jx_get(j, "object.metadata")), 0);
    json_decref(j);
    /* a top-level array: no key matches */
    json_decref(pruned_as_jansson("[{\"metadata\":{\"managedFields\":1}}]", 0));
}

/* A left-out member is not built but still read as jansson reads it: what
 * jansson refuses there is refused, in jansson's words. */
static void test_pruned_members_are_still_checked(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "{\"metadata\":{\"managedFields\":[\"\xc0\x80\"]}}",         /* overlong */
        "{\"metadata\":{\"managedFields\":[\"\xed\xa0\x80\"]}}",     /* a surrogate */
        "{\"metadata\":{\"managedFields\":[\"\xf4\x90\x80\x80\"]}}", /* past U+10FFFF */
        "{\"metadata\":{\"managedFields\":[\"\xe2\x82\"]}}",         /* cut short */
        "{\"metadata\":{\"managedFields\":{\"\xff\":1}}}",           /* a key */
        "{\"metadata\":{\"managedFields\":\"\xc3\x28\"}}",           /* the value itself */
        "{\"metadata\":{\"managedFields\":[9223372036854775808]}}",
        "{\"metadata\":{\"managedFields\":[1e999]}}",
        "{\"metadata\":{\"managedFields\":[1,]}}",
        "{\"metadata\":{\"managedFields\":[}}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        size_t len = strlen(bad[i]);
        json_t *fast = jy_decode(bad[i], len, 0, &prune);
        if (fast)
            fail_msg("case %zu: a bad left-out member was accepted", i);
        json_error_t e;
        assert_null(jx_loadb(bad[i], len, 0, &prune, &e));
    }
    /* valid multi-byte text is accepted there */
    json_decref(pruned_as_jansson(
        "{\"metadata\":{\"managedFields\":[\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"]}}", 0));
    /* duplicate keys inside are not looked for (documented): nothing reads them */
    const char *dup = "{\"metadata\":{\"managedFields\":{\"a\":1,\"a\":2}}}";
    json_t *j = jy_decode(dup, strlen(dup), JSON_REJECT_DUPLICATES, &prune);
    assert_non_null(j);
    assert_int_equal(json_object_size(json_object_get(j, "metadata")), 0);
    json_decref(j);
    /* but outside it they are */
    dup = "{\"metadata\":{\"managedFields\":{},\"a\":1,\"a\":2}}";
    assert_null(jy_decode(dup, strlen(dup), JSON_REJECT_DUPLICATES, &prune));
}

/* Where yajl declines, jansson's tree is pruned the same way; nesting inside
 * a left-out member counts towards JY_MAX_DEPTH. */
static void test_pruned_by_either_decoder(void **state)
{
    (void)state;
    const char *text = "{\"metadata\":{\"managedFields\":[\"\\ud83d\\ude00\"],\"name\":\"n\"}}";
    assert_null(jy_decode(text, strlen(text), 0, &prune)); /* a surrogate pair: jansson's */
    json_t *j = jx_loadb(text, strlen(text), 0, &prune, NULL);
    assert_non_null(j);
    assert_null(jx_get(j, "metadata.managedFields"));
    assert_string_equal(json_string_value(jx_get(j, "metadata.name")), "n");
    json_decref(j);

    char doc[2 * JY_MAX_DEPTH + 64];
    for (int n = JY_MAX_DEPTH - 2; n <= JY_MAX_DEPTH - 1; n++) {
        int k = snprintf(doc, sizeof(doc), "{\"metadata\":{\"managedFields\":");
        memset(doc + k, '[', (size_t)n);
        memset(doc + k + n, ']', (size_t)n);
        snprintf(doc + k + 2 * n, sizeof(doc) - (size_t)(k + 2 * n), "}}");
        json_t *fast = jy_decode(doc, strlen(doc), 0, &prune);
        if (n == JY_MAX_DEPTH - 2)
            assert_non_null(fast); /* depth JY_MAX_DEPTH in all */
        else
            assert_null(fast);
        json_decref(fast);
        j = jx_loadb(doc, strlen(doc), 0, &prune, NULL);
        assert_non_null(j);
        assert_int_equal(json_object_size(json_object_get(j, "metadata")), 0);
        json_decref(j);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kubernetes_object),
        cmocka_unit_test(test_declines_where_jansson_decides),
        cmocka_unit_test(test_depth),
        cmocka_unit_test(test_pruned_members_are_left_out),
        cmocka_unit_test(test_pruned_members_are_still_checked),
        cmocka_unit_test(test_pruned_by_either_decoder),
    };
    return cmocka_run_group_tests_name("json_yajl", tests, NULL, NULL);
}
