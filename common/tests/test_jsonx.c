#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/support/test_json.h"

#include <stdlib.h>
#include <string.h>

#include "jsonx.h"

static char *dump(const json_t *j)
{
    return json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
}

#define assert_json(j, expected)                                                                   \
    do {                                                                                           \
        char *s_ = dump(j);                                                                        \
        assert_string_equal(s_, expected);                                                         \
        free(s_);                                                                                  \
    } while (0)

static const char *const DOC =
    "{\"metadata\":{\"name\":\"job-1\",\"labels\":{\"kueue.x-k8s.io/queue-name\":\"lq\","
    "\"a.b\":\"dots\",\"7\":\"seven\"},\"generation\":3},"
    "\"spec\":{\"suspend\":true,\"containers\":[{\"image\":\"img0\"},{\"image\":\"img1\"}],"
    "\"ratio\":1.5,\"n\":null}}";

static void test_get_paths(void **state)
{
    (void)state;
    json_t *d = tj_parse(DOC);
    assert_string_equal(jx_str(d, "metadata.name"), "job-1");
    assert_string_equal(jx_str(d, "metadata.labels[kueue.x-k8s.io/queue-name]"), "lq");
    assert_string_equal(jx_str(d, "metadata.labels.[kueue.x-k8s.io/queue-name]"), "lq");
    assert_string_equal(jx_str(d, "metadata.labels[a.b]"), "dots");
    /* without brackets the dot splits the key */
    assert_null(jx_get(d, "metadata.labels.a.b"));
    assert_string_equal(jx_str(d, "spec.containers.1.image"), "img1");
    assert_string_equal(jx_str(d, "spec.containers[0].image"), "img0");
    /* digits are an object key when the node is an object */
    assert_string_equal(jx_str(d, "metadata.labels.7"), "seven");
    assert_ptr_equal(jx_get(d, ""), d);
    assert_true(json_is_array(jx_get(d, "spec.containers")));
    json_decref(d);
}

static void test_get_missing_and_invalid(void **state)
{
    (void)state;
    json_t *d = tj_parse(DOC);
    assert_null(jx_get(d, "metadata.nope"));
    assert_null(jx_get(d, "spec.containers.2.image")); /* out of range */
    assert_null(jx_get(d, "spec.containers.01"));      /* non-canonical index */
    assert_null(jx_get(d, "spec.containers.-1"));
    assert_null(jx_get(d, "metadata.name.x")); /* through a string */
    assert_null(jx_get(d, "metadata..name"));
    assert_null(jx_get(d, ".metadata"));
    assert_null(jx_get(d, "metadata."));
    assert_null(jx_get(d, "metadata.labels[unclosed"));
    assert_null(jx_get(d, "metadata.labels[x]y"));
    assert_null(jx_get(d, "metadata]"));
    assert_null(jx_get(NULL, "a"));
    assert_null(jx_get(d, NULL));
    json_decref(d);
}

static void test_typed_getters(void **state)
{
    (void)state;
    json_t *d = tj_parse(DOC);
    assert_int_equal(jx_int(d, "metadata.generation", -1), 3);
    assert_int_equal(jx_int(d, "spec.ratio", -1), -1); /* real is not an integer */
    assert_int_equal(jx_int(d, "metadata.name", -2), -2);
    assert_int_equal(jx_int(d, "missing", 42), 42);
    assert_int_equal(jx_bool(d, "spec.suspend", 0), 1);
    assert_int_equal(jx_bool(d, "spec.n", 7), 7); /* null is not a bool */
    assert_int_equal(jx_bool(d, "metadata.generation", 0), 0);
    assert_null(jx_str(d, "metadata.generation"));
    assert_null(jx_str(d, "spec.n"));
    json_decref(d);
}

static void test_getv(void **state)
{
    (void)state;
    json_t *d = tj_parse(DOC);
    const char *key = "kueue.x-k8s.io/queue-name";
    assert_string_equal(json_string_value(jx_getv(d, "metadata", "labels", key)), "lq");
    assert_string_equal(json_string_value(jx_getv(d, "spec", "containers", "1", "image")), "img1");
    /* raw keys: brackets and dots are not syntax */
    assert_null(jx_getv(d, "metadata.labels"));
    assert_null(jx_getv(d, "metadata", "nope", "x"));
    assert_ptr_equal(jx_getv(d), d);
    json_decref(d);
}

static void test_set_creates_parents(void **state)
{
    (void)state;
    json_t *d = tj_parse("{\"metadata\":{\"name\":\"x\"}}");
    assert_int_equal(jx_set_new_str(d, "metadata.labels[kueue.x-k8s.io/queue-name]", "lq"), 0);
    assert_int_equal(jx_set(d, "spec.a.b", json_integer(1)), 0);
    assert_int_equal(jx_set_new_str(d, "metadata.name", "y"), 0);
    assert_json(d, "{\"metadata\":{\"name\":\"y\",\"labels\":{\"kueue.x-k8s.io/queue-name\":"
                   "\"lq\"}},\"spec\":{\"a\":{\"b\":1}}}");
    json_decref(d);
}

static void test_set_errors_and_arrays(void **state)
{
    (void)state;
    json_t *d = tj_parse("{\"s\":\"str\",\"arr\":[{\"x\":1},2]}");
    /* intermediate is a string: refused, value freed (ASan checks) */
    assert_int_equal(jx_set(d, "s.x", json_integer(1)), -1);
    assert_int_equal(jx_set(d, "arr.x", json_integer(1)), -1);
    assert_int_equal(jx_set(d, "arr.2", json_integer(1)), -1); /* no append by index */
    assert_int_equal(jx_set(d, "", json_integer(1)), -1);
    assert_int_equal(jx_set(d, "a..b", json_integer(1)), -1);
    assert_int_equal(jx_set(d, "a", NULL), -1);
    /* an invalid path must not leave half-created parents behind */
    assert_int_equal(jx_set(d, "new.x[bad", json_integer(1)), -1);
    assert_null(jx_get(d, "new"));
    assert_int_equal(jx_set(d, "arr.0.y", json_true()), 0);
    assert_int_equal(jx_set(d, "arr.1", json_string("two")), 0);
    assert_json(d, "{\"s\":\"str\",\"arr\":[{\"x\":1,\"y\":true},\"two\"]}");
    json_decref(d);
}

static void test_del(void **state)
{
    (void)state;
    json_t *d = tj_parse(DOC);
    assert_int_equal(jx_del(d, "metadata.labels[kueue.x-k8s.io/queue-name]"), 0);
    assert_null(jx_get(d, "metadata.labels[kueue.x-k8s.io/queue-name]"));
    assert_int_equal(jx_del(d, "metadata.labels[kueue.x-k8s.io/queue-name]"), -1);
    assert_int_equal(jx_del(d, "spec.containers.0"), 0);
    assert_string_equal(jx_str(d, "spec.containers.0.image"), "img1");
    assert_int_equal(jx_del(d, "spec.containers.5"), -1);
    assert_int_equal(jx_del(d, "nope.deeper"), -1);
    assert_null(jx_get(d, "nope")); /* del never creates */
    assert_int_equal(jx_del(d, ""), -1);
    json_decref(d);
}

static char errbuf[256];

static json_t *load(const char *s, size_t max_bytes, int depth)
{
    errbuf[0] = '\0';
    return jx_loadb_bounded(s, strlen(s), max_bytes, depth, errbuf, sizeof(errbuf));
}

static void test_bounded_depth(void **state)
{
    (void)state;
    json_t *j = load("{\"a\":[{\"b\":1}]}", 1024, 3);
    assert_non_null(j);
    json_decref(j);
    assert_null(load("{\"a\":[{\"b\":[]}]}", 1024, 3));
    assert_string_equal(errbuf, "JSON nesting deeper than 3 levels");
    /* brackets inside strings do not count, escaped quotes do not end them */
    j = load("{\"a\":\"[[[[{{{{\",\"b\":\"q\\\"[[[[\\\\\",\"c\":[1]}", 1024, 2);
    assert_non_null(j);
    assert_string_equal(jx_str(j, "b"), "q\"[[[[\\");
    json_decref(j);
    /* an escaped backslash before a quote ends the string: the [[ counts */
    assert_null(load("{\"a\":\"x\\\\\",\"b\":[[1]]}", 1024, 2));
    assert_int_equal(jx_scan_depth("[[[]]]", 6, 100), 3);
    assert_int_equal(jx_scan_depth("\"[[\"", 4, 100), 0);
    /* pathological depth stops early and never reaches jansson */
    size_t n = 100000;
    char *deep = malloc(n + 1);
    assert_non_null(deep);
    memset(deep, '[', n);
    deep[n] = '\0';
    assert_null(jx_loadb_bounded(deep, n, n, 64, errbuf, sizeof(errbuf)));
    assert_int_equal(jx_scan_depth(deep, n, 64), 65);
    free(deep);
}

static void test_bounded_size_and_errors(void **state)
{
    (void)state;
    const char *doc = "{\"a\":1}";
    json_t *j = load(doc, strlen(doc), 8);
    assert_non_null(j);
    json_decref(j);
    assert_null(load(doc, strlen(doc) - 1, 8));
    assert_string_equal(errbuf, "JSON document too large: 7 bytes (limit 6)");

    assert_null(load("{\"a\":[1,2", 1024, 8));
    assert_non_null(strstr(errbuf, "invalid JSON at line 1"));
    assert_non_null(strstr(errbuf, "']' expected near end of file"));

    assert_null(load("{\"a\":1,\"a\":2}", 1024, 8));
    assert_non_null(strstr(errbuf, "duplicate object key"));
    assert_null(load("{\"a\":\"x\\u0000y\"}", 1024, 8));
    assert_null(load("", 1024, 8));
    assert_non_null(strstr(errbuf, "invalid JSON"));
    assert_null(load("42", 1024, 8)); /* top level must be a container */
    assert_null(jx_loadb_bounded(NULL, 3, 10, 4, errbuf, sizeof(errbuf)));
    /* a NULL error buffer is allowed with errlen 0 */
    assert_null(jx_loadb_bounded("[", 1, 10, 4, NULL, 0));
}

/* The pre-scan counts what jansson would build, and the budget refuses a
 * document of many cheap-to-send, costly-to-decode values before decoding. */
static void test_scan_budget(void **state)
{
    (void)state;
    struct jx_scan sc;
    const char *doc = "{\"a\": [1, true, null, \"x:[{\"], \"b\": {}, \"c\": -2.5e3}";
    jx_scan(doc, strlen(doc), &sc);
    assert_int_equal(sc.objects, 2);
    assert_int_equal(sc.arrays, 1);
    assert_int_equal(sc.members, 3);
    assert_int_equal(sc.strings, 4); /* three keys and "x:[{" */
    assert_int_equal(sc.literals, 4);
    assert_int_equal(sc.depth, 2);
    assert_int_equal(jx_scan_values(&sc), 2 + 1 + 1 + 4);
    assert_true(jx_scan_cost(&sc) > strlen(doc));

    /* 3 MiB of empty objects: about 1M values, far over a 24 MiB budget */
    size_t n = 3u * 1024 * 1024;
    char *hostile = malloc(n);
    assert_non_null(hostile);
    hostile[0] = '{';
    memcpy(hostile + 1, "\"a\":[", 5);
    size_t l = 6;
    while (l + 7 <= n) {
        memcpy(hostile + l, "{},", 3);
        l += 3;
    }
    memcpy(hostile + l, "{}]}", 4);
    l += 4;
    jx_scan(hostile, l, &sc);
    assert_true(jx_scan_values(&sc) > 1000000);
    assert_true(jx_scan_cost(&sc) > 200u * 1024 * 1024);
    size_t budget = 24u * 1024 * 1024;
    assert_null(jx_loadb_budget(hostile, l, n, 8, budget, errbuf, sizeof(errbuf)));
    assert_non_null(strstr(errbuf, "JSON document too costly to decode"));
    assert_non_null(strstr(errbuf, "(limit 24576 KiB)"));
    /* without a cost limit the same document decodes (what the budget avoids) */
    json_t *j = jx_loadb_bounded(hostile, l, n, 8, errbuf, sizeof(errbuf));
    assert_non_null(j);
    json_decref(j);

    /* a big string is cheap: 3 MiB of one annotation fits the budget */
    memcpy(hostile, "{\"a\":\"", 6);
    memset(hostile + 6, 'x', n - 8);
    memcpy(hostile + n - 2, "\"}", 2);
    j = jx_loadb_budget(hostile, n, n, 8, budget, errbuf, sizeof(errbuf));
    assert_non_null(j);
    json_decref(j);
    /* nesting is still refused when a budget is given */
    assert_null(jx_loadb_budget("[[[1]]]", 7, 100, 2, budget, errbuf, sizeof(errbuf)));
    assert_string_equal(errbuf, "JSON nesting deeper than 2 levels");
    free(hostile);
}

/* A caller's own scan decides, as jx_loadb_budget's would: the same
 * refusals from it, and the document decoded without a second read. */
static void test_loadb_scanned(void **state)
{
    (void)state;
    struct jx_scan sc;
    const char *deep = "[[[1]]]";
    jx_scan(deep, 7, &sc);
    assert_null(jx_loadb_scanned(deep, 7, &sc, 100, 2, 0, NULL, errbuf, sizeof(errbuf)));
    assert_string_equal(errbuf, "JSON nesting deeper than 2 levels");
    assert_null(jx_loadb_scanned(deep, 7, &sc, 6, 8, 0, NULL, errbuf, sizeof(errbuf)));
    assert_string_equal(errbuf, "JSON document too large: 7 bytes (limit 6)");
    assert_null(jx_loadb_scanned(deep, 7, &sc, 100, 8, 1, NULL, errbuf, sizeof(errbuf)));
    assert_non_null(strstr(errbuf, "JSON document too costly to decode: 4 values"));
    json_t *j = jx_loadb_scanned(deep, 7, &sc, 100, 8, 1u << 20, NULL, errbuf, sizeof(errbuf));
    assert_non_null(j);
    assert_int_equal(json_integer_value(json_array_get(json_array_get(json_array_get(j, 0), 0), 0)),
                     1);
    json_decref(j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_get_paths),
        cmocka_unit_test(test_get_missing_and_invalid),
        cmocka_unit_test(test_typed_getters),
        cmocka_unit_test(test_getv),
        cmocka_unit_test(test_set_creates_parents),
        cmocka_unit_test(test_set_errors_and_arrays),
        cmocka_unit_test(test_del),
        cmocka_unit_test(test_bounded_depth),
        cmocka_unit_test(test_bounded_size_and_errors),
        cmocka_unit_test(test_scan_budget),
        cmocka_unit_test(test_loadb_scanned),
    };
    return cmocka_run_group_tests_name("jsonx", tests, NULL, NULL);
}
