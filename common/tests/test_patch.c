#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/support/test_json.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "jsonx.h"
#include "patch.h"

#define assert_json(j, expected)                                                                   \
    do {                                                                                           \
        char *s_ = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);                                  \
        assert_string_equal(s_, expected);                                                         \
        free(s_);                                                                                  \
    } while (0)

#define assert_ops(p, expected)                                                                    \
    do {                                                                                           \
        json_t *o_ = jp_ops(p);                                                                    \
        assert_json(o_, expected);                                                                 \
        json_decref(o_);                                                                           \
    } while (0)

/* Applying the built ops to the original must give jp_doc(), and building
 * the same change again on the result must give no ops. */
static void assert_round_trip(const json_t *orig, const struct jp *p)
{
    json_t *copy = json_deep_copy(orig);
    json_t *ops = jp_ops(p);
    char err[256] = "";
    assert_int_equal(jp_apply(copy, ops, err, sizeof(err)), 0);
    assert_true(json_equal(copy, jp_doc(p)));
    json_decref(ops);
    json_decref(copy);
}

static void test_escaping(void **state)
{
    (void)state;
    json_t *doc = tj_parse("{\"metadata\":{\"labels\":{}}}");
    struct jp *p = jp_new(doc);
    assert_non_null(p);
    assert_int_equal(
        jp_set(p, json_string("lq"), "metadata", "labels", "kueue.x-k8s.io/queue-name"), 0);
    assert_int_equal(jp_set(p, json_string("t"), "metadata", "labels", "a~b"), 0);
    /* '~' must be escaped before '/' or "/~" would come out as "~01~0" */
    assert_int_equal(jp_set(p, json_string("s"), "metadata", "labels", "a/~b"), 0);
    assert_ops(p, "[{\"op\":\"add\",\"path\":\"/metadata/labels/kueue.x-k8s.io~1queue-name\","
                  "\"value\":\"lq\"},"
                  "{\"op\":\"add\",\"path\":\"/metadata/labels/a~0b\",\"value\":\"t\"},"
                  "{\"op\":\"add\",\"path\":\"/metadata/labels/a~1~0b\",\"value\":\"s\"}]");
    assert_json(jp_doc(p), "{\"metadata\":{\"labels\":{\"kueue.x-k8s.io/queue-name\":\"lq\","
                           "\"a~b\":\"t\",\"a/~b\":\"s\"}}}");
    assert_round_trip(doc, p);

    struct buf b;
    buf_init(&b, BUF_CAP_JSON_PTR);
    jp_append_token(&b, "~1/");
    jp_append_token(&b, "");
    assert_string_equal(buf_cstr(&b), "/~01~1/");
    buf_free(&b);
    jp_free(p);
    json_decref(doc);
}

static void test_absent_parent_one_level(void **state)
{
    (void)state;
    json_t *doc = tj_parse("{\"metadata\":{\"name\":\"x\"}}");
    struct jp *p = jp_new(doc);
    assert_int_equal(jp_set(p, json_string("1"), "metadata", "labels", "a"), 0);
    assert_int_equal(jp_set(p, json_string("2"), "metadata", "labels", "b"), 0);
    assert_int_equal(jp_count(p), 2);
    assert_ops(p, "[{\"op\":\"add\",\"path\":\"/metadata/labels\",\"value\":{\"a\":\"1\"}},"
                  "{\"op\":\"add\",\"path\":\"/metadata/labels/b\",\"value\":\"2\"}]");
    assert_round_trip(doc, p);
    /* the original document is not touched */
    assert_json(doc, "{\"metadata\":{\"name\":\"x\"}}");
    jp_free(p);
    json_decref(doc);
}

static void test_absent_parent_two_levels(void **state)
{
    (void)state;
    json_t *doc = tj_parse("{\"spec\":{}}");
    struct jp *p = jp_new(doc);
    const char *segs[] = {"spec", "template", "metadata", "annotations", "x/y"};
    assert_int_equal(jp_set_path(p, segs, 5, json_string("v")), 0);
    assert_int_equal(jp_set(p, json_true(), "status", "ok"), 0);
    assert_ops(p, "[{\"op\":\"add\",\"path\":\"/spec/template\","
                  "\"value\":{\"metadata\":{\"annotations\":{\"x/y\":\"v\"}}}},"
                  "{\"op\":\"add\",\"path\":\"/status\",\"value\":{\"ok\":true}}]");
    assert_round_trip(doc, p);
    jp_free(p);
    json_decref(doc);
}

static void test_replace_add_noop(void **state)
{
    (void)state;
    json_t *doc =
        tj_parse("{\"spec\":{\"managedBy\":\"kueue.x-k8s.io/multikueue\",\"suspend\":false,"
                 "\"list\":[1,2],\"n\":null,\"s\":\"str\"}}");
    struct jp *p = jp_new(doc);
    /* equal: nothing */
    assert_int_equal(jp_set(p, json_string("kueue.x-k8s.io/multikueue"), "spec", "managedBy"), 0);
    assert_int_equal(jp_set(p, json_false(), "spec", "suspend"), 0);
    assert_int_equal(jp_count(p), 0);
    /* differs: replace; absent: add; array element by index */
    assert_int_equal(jp_set(p, json_true(), "spec", "suspend"), 0);
    assert_int_equal(jp_set(p, json_integer(3), "spec", "parallelism"), 0);
    assert_int_equal(jp_set(p, json_integer(9), "spec", "list", "1"), 0);
    assert_int_equal(jp_set(p, json_integer(3), "spec", "list", "2"), 0);
    /* a null where an object is needed is replaced */
    assert_int_equal(jp_set(p, json_string("b"), "spec", "n", "a"), 0);
    assert_ops(p, "[{\"op\":\"replace\",\"path\":\"/spec/suspend\",\"value\":true},"
                  "{\"op\":\"add\",\"path\":\"/spec/parallelism\",\"value\":3},"
                  "{\"op\":\"replace\",\"path\":\"/spec/list/1\",\"value\":9},"
                  "{\"op\":\"add\",\"path\":\"/spec/list/2\",\"value\":3},"
                  "{\"op\":\"replace\",\"path\":\"/spec/n\",\"value\":{\"a\":\"b\"}}]");
    /* errors record nothing: through a scalar, array index past the end */
    assert_int_equal(jp_set(p, json_integer(1), "spec", "s", "x"), -1);
    assert_int_equal(jp_set(p, json_integer(1), "spec", "list", "7"), -1);
    assert_int_equal(jp_set(p, json_integer(1), "spec", "list", "x", "y"), -1);
    assert_int_equal(jp_set(p, NULL, "spec", "x"), -1);
    assert_int_equal(jp_count(p), 5);
    assert_round_trip(doc, p);

    /* idempotency: the same changes against the result give no patch */
    struct jp *q = jp_new(jp_doc(p));
    jp_set(q, json_true(), "spec", "suspend");
    jp_set(q, json_integer(3), "spec", "parallelism");
    jp_set(q, json_string("b"), "spec", "n", "a");
    assert_int_equal(jp_count(q), 0);
    jp_free(q);
    jp_free(p);
    json_decref(doc);
}

/* The builder copies on write: the caller's document never changes, and a
 * subtree no op went through stays shared with it, not copied. */
static void test_copy_on_write(void **state)
{
    (void)state;
    const char *txt = "{\"metadata\":{\"labels\":{\"a\":\"1\"}},\"spec\":{\"suspend\":false,"
                      "\"template\":{\"spec\":{\"containers\":[{\"name\":\"c\"}]}},"
                      "\"list\":[{\"x\":1},{\"y\":2}]}}";
    json_t *doc = tj_parse(txt), *before = tj_parse(txt);
    struct jp *p = jp_new(doc);
    assert_non_null(p);
    assert_int_equal(jp_set(p, json_true(), "spec", "suspend"), 0);
    assert_int_equal(jp_set(p, json_string("2"), "metadata", "labels", "b"), 0);
    assert_int_equal(jp_set(p, json_integer(3), "spec", "list", "1", "y"), 0);
    assert_int_equal(jp_append(p, json_string("d"), "metadata", "finalizers"), 0);
    assert_int_equal(jp_remove(p, "spec", "list", "0", "x"), 0);
    assert_true(json_equal(doc, before));
    const json_t *d = jp_doc(p);
    assert_ptr_equal(json_object_get(json_object_get(d, "spec"), "template"),
                     json_object_get(json_object_get(doc, "spec"), "template"));
    assert_ptr_not_equal(json_object_get(d, "spec"), json_object_get(doc, "spec"));
    assert_int_equal(jx_int(d, "spec.list[1].y", 0), 3);
    assert_round_trip(doc, p);
    /* a second builder on the first one's document leaves that one alone */
    json_t *mid = json_deep_copy(d);
    struct jp *q = jp_new(d);
    assert_int_equal(
        jp_set(q, json_string("z"), "spec", "template", "spec", "containers", "0", "image"), 0);
    assert_true(json_equal(jp_doc(p), mid));
    assert_string_equal(jx_str(jp_doc(q), "spec.template.spec.containers[0].image"), "z");
    jp_free(q);
    jp_free(p);
    assert_true(json_equal(doc, before));
    json_decref(mid);
    json_decref(before);
    json_decref(doc);
}

static void test_replace_root(void **state)
{
    (void)state;
    json_t *doc = tj_parse("{\"a\":1}");
    struct jp *p = jp_new(doc);
    assert_int_equal(jp_set(p, tj_parse("{\"a\":1}")), 0);
    assert_int_equal(jp_count(p), 0);
    assert_int_equal(jp_set(p, tj_parse("{\"b\":2}")), 0);
    assert_ops(p, "[{\"op\":\"replace\",\"path\":\"\",\"value\":{\"b\":2}}]");
    assert_round_trip(doc, p);
    jp_free(p);
    json_decref(doc);
}

static void test_remove(void **state)
{
    (void)state;
    json_t *doc =
        tj_parse("{\"metadata\":{\"labels\":{\"q/n\":\"x\"},\"s\":\"v\"},\"list\":[\"a\",\"b\"]}");
    struct jp *p = jp_new(doc);
    assert_int_equal(jp_remove(p, "metadata", "labels", "absent"), 0);
    assert_int_equal(jp_remove(p, "metadata", "annotations", "x"), 0);
    assert_int_equal(jp_remove(p, "metadata", "s", "x"), 0); /* through a scalar */
    assert_int_equal(jp_remove(p, "list", "2"), 0);
    assert_int_equal(jp_count(p), 0);
    assert_int_equal(jp_remove(p), -1);
    assert_int_equal(jp_remove(p, "metadata", "labels", "q/n"), 0);
    assert_int_equal(jp_remove(p, "metadata", "labels", "q/n"), 0); /* already gone */
    assert_int_equal(jp_remove(p, "list", "0"), 0);
    assert_ops(p, "[{\"op\":\"remove\",\"path\":\"/metadata/labels/q~1n\"},"
                  "{\"op\":\"remove\",\"path\":\"/list/0\"}]");
    assert_json(jp_doc(p), "{\"metadata\":{\"labels\":{},\"s\":\"v\"},\"list\":[\"b\"]}");
    assert_round_trip(doc, p);
    jp_free(p);
    json_decref(doc);
}

static void test_append(void **state)
{
    (void)state;
    json_t *doc = tj_parse("{\"spec\":{\"gates\":[{\"name\":\"a\"}],\"s\":1}}");
    struct jp *p = jp_new(doc);
    assert_int_equal(jp_append(p, tj_parse("{\"name\":\"b\"}"), "spec", "gates"), 0);
    assert_int_equal(jp_append(p, json_string("x"), "metadata", "finalizers"), 0);
    assert_int_equal(jp_append(p, json_string("y"), "metadata", "finalizers"), 0);
    assert_int_equal(jp_append(p, json_string("z"), "spec", "s"), -1);
    assert_ops(p, "[{\"op\":\"add\",\"path\":\"/spec/gates/-\",\"value\":{\"name\":\"b\"}},"
                  "{\"op\":\"add\",\"path\":\"/metadata\",\"value\":{\"finalizers\":[\"x\"]}},"
                  "{\"op\":\"add\",\"path\":\"/metadata/finalizers/-\",\"value\":\"y\"}]");
    assert_json(jp_doc(p), "{\"spec\":{\"gates\":[{\"name\":\"a\"},{\"name\":\"b\"}],\"s\":1},"
                           "\"metadata\":{\"finalizers\":[\"x\",\"y\"]}}");
    assert_round_trip(doc, p);
    jp_free(p);
    json_decref(doc);
}

static char err[256];

static int apply(json_t *doc, const char *ops)
{
    json_t *o = tj_parse(ops);
    err[0] = '\0';
    int rc = jp_apply(doc, o, err, sizeof(err));
    json_decref(o);
    return rc;
}

static void test_apply_ops(void **state)
{
    (void)state;
    json_t *doc = tj_parse("{\"a\":{\"b\":[1,2,3]},\"c\":\"x\",\"k/~\":1}");
    assert_int_equal(apply(doc, "[{\"op\":\"add\",\"path\":\"/a/b/1\",\"value\":9},"
                                "{\"op\":\"add\",\"path\":\"/a/b/-\",\"value\":4},"
                                "{\"op\":\"add\",\"path\":\"/a/b/5\",\"value\":5},"
                                "{\"op\":\"remove\",\"path\":\"/a/b/0\"},"
                                "{\"op\":\"replace\",\"path\":\"/c\",\"value\":\"y\"},"
                                "{\"op\":\"test\",\"path\":\"/k~1~0\",\"value\":1},"
                                "{\"op\":\"copy\",\"from\":\"/a/b\",\"path\":\"/d\"},"
                                "{\"op\":\"move\",\"from\":\"/c\",\"path\":\"/a/c\"},"
                                "{\"op\":\"move\",\"from\":\"/a/c\",\"path\":\"/a/c\"}]"),
                     0);
    assert_json(doc, "{\"a\":{\"b\":[9,2,3,4,5],\"c\":\"y\"},\"k/~\":1,\"d\":[9,2,3,4,5]}");
    /* copy is deep: changing the copy leaves the source alone */
    assert_int_equal(apply(doc, "[{\"op\":\"replace\",\"path\":\"/d/0\",\"value\":0}]"), 0);
    assert_json(json_object_get(json_object_get(doc, "a"), "b"), "[9,2,3,4,5]");
    /* root replacement keeping the type */
    assert_int_equal(apply(doc, "[{\"op\":\"replace\",\"path\":\"\",\"value\":{\"z\":1}}]"), 0);
    assert_json(doc, "{\"z\":1}");
    json_decref(doc);
}

static void test_apply_errors(void **state)
{
    (void)state;
    json_t *doc = tj_parse("{\"a\":{\"b\":[1]},\"s\":\"x\"}");
    struct {
        const char *ops, *msg;
    } cases[] = {
        {"[{\"op\":\"add\",\"path\":\"/m/x\",\"value\":1}]",
         "operation 0: add operation does not apply: doc is missing path: \"/m/x\""},
        {"[{\"op\":\"add\",\"path\":\"/s/x\",\"value\":1}]", "doc is missing path: \"/s/x\""},
        {"[{\"op\":\"add\",\"path\":\"/a/b/2\",\"value\":1}]", "invalid array index"},
        {"[{\"op\":\"add\",\"path\":\"/a/b/01\",\"value\":1}]", "invalid array index"},
        {"[{\"op\":\"remove\",\"path\":\"/a/x\"}]",
         "remove operation does not apply: doc is missing path: \"/a/x\""},
        {"[{\"op\":\"remove\",\"path\":\"/a/b/1\"}]", "doc is missing path"},
        {"[{\"op\":\"remove\",\"path\":\"\"}]", "cannot remove the document root"},
        {"[{\"op\":\"replace\",\"path\":\"/a/x\",\"value\":1}]",
         "replace operation does not apply: doc is missing path: \"/a/x\""},
        {"[{\"op\":\"replace\",\"path\":\"/a/b/-\",\"value\":1}]", "doc is missing path"},
        {"[{\"op\":\"test\",\"path\":\"/s\",\"value\":\"y\"}]",
         "test operation failed: value at \"/s\" differs"},
        {"[{\"op\":\"test\",\"path\":\"/q\",\"value\":\"y\"}]", "doc is missing path"},
        {"[{\"op\":\"move\",\"from\":\"/a\",\"path\":\"/a/b/0\"}]", "is inside"},
        {"[{\"op\":\"copy\",\"from\":\"/zz\",\"path\":\"/y\"}]", "missing from path: \"/zz\""},
        {"[{\"op\":\"add\",\"path\":\"a\",\"value\":1}]", "bad JSON pointer \"a\""},
        {"[{\"op\":\"add\",\"path\":\"/a~2\",\"value\":1}]", "bad JSON pointer"},
        {"[{\"op\":\"add\",\"path\":\"/x\"}]", "missing \"value\""},
        {"[{\"op\":\"move\",\"path\":\"/x\"}]", "missing \"from\""},
        {"[{\"path\":\"/x\"}]", "missing \"op\""},
        {"[{\"op\":\"add\"}]", "missing \"path\""},
        {"[{\"op\":\"frob\",\"path\":\"/x\"}]", "unknown operation \"frob\""},
        {"[1]", "missing \"op\""},
        {"{}", "patch must be a JSON array"},
        {"[{\"op\":\"replace\",\"path\":\"\",\"value\":[1]}]", "different type"},
        /* all or nothing: the first op applied, the second failed */
        {"[{\"op\":\"add\",\"path\":\"/new\",\"value\":1},{\"op\":\"remove\",\"path\":\"/no\"}]",
         "operation 1: remove"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        assert_int_equal(apply(doc, cases[i].ops), MK_ERR_INVAL);
        if (!strstr(err, cases[i].msg))
            fail_msg("case %zu: got \"%s\", want \"%s\"", i, err, cases[i].msg);
        assert_json(doc, "{\"a\":{\"b\":[1]},\"s\":\"x\"}");
    }
    json_t *scalar = json_integer(1);
    json_t *ops = tj_parse("[]");
    assert_int_equal(jp_apply(scalar, ops, err, sizeof(err)), MK_ERR_INVAL);
    json_decref(ops);
    json_decref(scalar);
    json_decref(doc);
}

static void test_merge_diff_apply(void **state)
{
    (void)state;
    json_t *from = tj_parse("{\"a\":1,\"b\":{\"c\":2,\"d\":3,\"e\":{\"f\":1}},\"g\":[1,2],"
                            "\"h\":\"x\",\"i\":{\"j\":1}}");
    json_t *to = tj_parse("{\"a\":1,\"b\":{\"c\":2,\"d\":4,\"e\":{\"f\":1}},\"g\":[1],"
                          "\"i\":\"now a string\",\"k\":{\"l\":null}}");
    json_t *d = jp_merge_diff(from, to);
    assert_json(d, "{\"h\":null,\"b\":{\"d\":4},\"g\":[1],\"i\":\"now a string\","
                   "\"k\":{\"l\":null}}");
    json_t *t = json_deep_copy(from);
    assert_int_equal(jp_merge_apply(t, d), 0);
    /* a new member's nested null means "absent" under merge semantics */
    assert_json(t, "{\"a\":1,\"b\":{\"c\":2,\"d\":4,\"e\":{\"f\":1}},\"g\":[1],"
                   "\"i\":\"now a string\",\"k\":{}}");
    json_decref(t);
    json_decref(d);

    d = jp_merge_diff(from, from);
    assert_json(d, "{}");
    json_decref(d);
    d = jp_merge_diff(from, json_object_get(to, "g"));
    assert_json(d, "[1]");
    assert_int_equal(jp_merge_apply(from, d), -1);
    json_decref(d);
    json_t *obj = tj_parse("{\"x\":{\"y\":1}}");
    t = tj_parse("{\"x\":5}");
    assert_int_equal(jp_merge_apply(t, obj), 0); /* scalar replaced by an object */
    assert_json(t, "{\"x\":{\"y\":1}}");
    json_decref(t);
    json_decref(obj);
    json_decref(from);
    json_decref(to);
}

static void test_null_args(void **state)
{
    (void)state;
    assert_null(jp_new(NULL));
    assert_int_equal(jp_set(NULL, json_integer(1), "a"), -1);
    assert_int_equal(jp_count(NULL), 0);
    assert_null(jp_ops(NULL));
    jp_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_escaping),
        cmocka_unit_test(test_absent_parent_one_level),
        cmocka_unit_test(test_absent_parent_two_levels),
        cmocka_unit_test(test_replace_add_noop),
        cmocka_unit_test(test_copy_on_write),
        cmocka_unit_test(test_replace_root),
        cmocka_unit_test(test_remove),
        cmocka_unit_test(test_append),
        cmocka_unit_test(test_apply_ops),
        cmocka_unit_test(test_apply_errors),
        cmocka_unit_test(test_merge_diff_apply),
        cmocka_unit_test(test_null_args),
    };
    return cmocka_run_group_tests_name("patch", tests, NULL, NULL);
}
