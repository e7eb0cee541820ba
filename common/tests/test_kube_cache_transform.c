/* kcache_set_transform: every stored and delivered object goes through it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "jsonx.h"
#include "kube_cache.h"

static int calls;

/* keeps metadata, drops spec, marks the result */
static json_t *slim(json_t *obj, void *ud)
{
    (void)ud;
    calls++;
    if (jx_get(obj, "metadata.annotations.fail")) {
        json_decref(obj);
        return NULL; /* the cache keeps the object as it came */
    }
    json_t *out = json_pack("{s:O,s:b}", "metadata", jx_get(obj, "metadata"), "slim", 1);
    json_decref(obj);
    return out;
}

static json_t *obj(const char *name, const char *rv)
{
    return json_pack("{s:{s:s,s:s,s:s},s:{s:s}}", "metadata", "name", name, "namespace", "ns",
                     "resourceVersion", rv, "spec", "big", "payload");
}

static int adds, updates, deletes, seen_slim;

static void on_add(const char *key, json_t *o, void *ud)
{
    (void)key, (void)ud;
    adds++;
    seen_slim += jx_bool(o, "slim", 0);
}

static void on_update(const char *key, json_t *old, json_t *o, void *ud)
{
    (void)key, (void)ud;
    updates++;
    seen_slim += jx_bool(o, "slim", 0) && jx_bool(old, "slim", 0);
}

static void on_delete(const char *key, json_t *o, void *ud)
{
    (void)key, (void)ud;
    deletes++;
    seen_slim += jx_bool(o, "slim", 0);
}

static void test_transform_everywhere(void **state)
{
    (void)state;
    struct kcache *c = kcache_new();
    struct kcache_handlers h = {on_add, on_update, on_delete, NULL};
    kcache_add_handlers(c, &h);
    kcache_set_transform(c, slim, NULL);
    assert_int_equal(kcache_upsert(c, obj("a", "1")), 0);
    json_t *got = kcache_get(c, "ns/a");
    assert_true(jx_bool(got, "slim", 0));
    assert_null(jx_get(got, "spec"));
    json_decref(got);
    /* a list: transformed too, and an unchanged resourceVersion is no update */
    json_t *items = json_pack("[o,o]", obj("a", "1"), obj("b", "5"));
    assert_int_equal(kcache_replace(c, items), 0);
    json_decref(items);
    assert_int_equal(adds, 2);
    assert_int_equal(updates, 0);
    got = kcache_get(c, "ns/b");
    assert_true(jx_bool(got, "slim", 0));
    json_decref(got);
    json_t *gone = obj("b", "6");
    assert_int_equal(kcache_remove(c, gone), 1);
    json_decref(gone);
    assert_int_equal(deletes, 1);
    assert_int_equal(kcache_upsert(c, obj("a", "2")), 0);
    assert_int_equal(updates, 1);
    assert_int_equal(seen_slim, 4);
    /* a transform that fails leaves the object as it is */
    json_t *f = obj("c", "1");
    jx_set_new_str(f, "metadata.annotations.fail", "1");
    assert_int_equal(kcache_upsert(c, f), 0);
    got = kcache_get(c, "ns/c");
    assert_string_equal(jx_str(got, "spec.big"), "payload");
    json_decref(got);
    assert_true(calls >= 6);
    kcache_free(c);
}

/* Items transformed one by one (as list pages arrive) are stored as they are. */
static void test_replace_prepared(void **state)
{
    (void)state;
    struct kcache *c = kcache_new();
    kcache_set_transform(c, slim, NULL);
    calls = 0;
    json_t *a = kcache_transform(c, obj("a", "1"));
    assert_int_equal(calls, 1);
    assert_true(jx_bool(a, "slim", 0));
    assert_null(jx_get(a, "spec"));
    json_t *items = json_pack("[o,o]", a, kcache_transform(c, obj("b", "2")));
    assert_int_equal(kcache_replace_prepared(c, items), 0);
    assert_int_equal(calls, 2); /* not transformed a second time */
    json_t *got = kcache_get(c, "ns/a");
    assert_ptr_equal(got, a);
    json_decref(got);
    json_decref(items);
    assert_int_equal(kcache_len(c), 2);
    assert_int_equal(kcache_replace_prepared(c, NULL), -1);
    assert_int_equal(kcache_len(c), 2);
    kcache_free(c);
    /* without a transform: the object itself */
    c = kcache_new();
    json_t *o = obj("x", "1");
    json_t *t = kcache_transform(c, json_incref(o));
    assert_ptr_equal(t, o);
    json_decref(t);
    json_decref(o);
    assert_null(kcache_transform(c, NULL));
    kcache_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_transform_everywhere),
        cmocka_unit_test(test_replace_prepared),
    };
    return cmocka_run_group_tests_name("kube_cache_transform", tests, NULL, NULL);
}
