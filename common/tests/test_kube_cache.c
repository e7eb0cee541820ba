#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube_cache.h"

static json_t *obj(const char *ns, const char *name, const char *rv)
{
    json_t *md = json_pack("{s:s, s:s}", "name", name, "resourceVersion", rv);
    if (ns)
        json_object_set_new(md, "namespace", json_string(ns));
    return json_pack("{s:s, s:o}", "kind", "Job", "metadata", md);
}

static const char *rv_of(json_t *o)
{
    return json_string_value(json_object_get(json_object_get(o, "metadata"), "resourceVersion"));
}

/* Handlers append "add ns/a 1", "update ns/a 1>2", "delete ns/a 2" lines. */
struct rec {
    char log[4096];
    int adds, updates, deletes;
    struct kcache *cache;
    int seen_in_cache; /* the handler found the new state already stored */
};

static void rec_line(struct rec *r, const char *fmt, const char *a, const char *b, const char *c)
{
    size_t n = strlen(r->log);
    snprintf(r->log + n, sizeof(r->log) - n, fmt, a, b, c);
}

static void on_add(const char *key, json_t *o, void *ud)
{
    struct rec *r = ud;
    r->adds++;
    rec_line(r, "add %s %s%s;", key, rv_of(o), "");
    if (r->cache) {
        json_t *got = kcache_get(r->cache, key);
        r->seen_in_cache += got == o;
        json_decref(got);
    }
}

static void on_update(const char *key, json_t *old, json_t *o, void *ud)
{
    struct rec *r = ud;
    r->updates++;
    rec_line(r, "update %s %s>%s;", key, rv_of(old), rv_of(o));
}

static void on_delete(const char *key, json_t *o, void *ud)
{
    struct rec *r = ud;
    r->deletes++;
    rec_line(r, "delete %s %s%s;", key, rv_of(o), "");
    if (r->cache) {
        json_t *got = kcache_get(r->cache, key);
        r->seen_in_cache += got == NULL;
        json_decref(got);
    }
}

static struct kcache *new_cache(struct rec *r)
{
    struct kcache *c = kcache_new();
    assert_non_null(c);
    memset(r, 0, sizeof(*r));
    struct kcache_handlers h = {on_add, on_update, on_delete, r};
    assert_int_equal(kcache_add_handlers(c, &h), 0);
    return c;
}

static void test_key(void **state)
{
    (void)state;
    char k[KCACHE_KEY_MAX];
    json_t *o = obj("ns1", "job-a", "1");
    assert_int_equal(kcache_key(o, k, sizeof(k)), 0);
    assert_string_equal(k, "ns1/job-a");
    json_decref(o);
    o = obj(NULL, "node-1", "1");
    assert_int_equal(kcache_key(o, k, sizeof(k)), 0);
    assert_string_equal(k, "node-1");
    assert_int_equal(kcache_key(o, k, 6), -1); /* does not fit */
    json_decref(o);
    o = obj("", "cluster-scoped", "1");
    assert_int_equal(kcache_key(o, k, sizeof(k)), 0);
    assert_string_equal(k, "cluster-scoped");
    json_decref(o);
    o = json_pack("{s:{s:s}}", "metadata", "namespace", "x");
    assert_int_equal(kcache_key(o, k, sizeof(k)), -1);
    json_decref(o);
    o = json_pack("{s:{s:s}}", "metadata", "name", "");
    assert_int_equal(kcache_key(o, k, sizeof(k)), -1);
    json_decref(o);
    o = json_string("not an object");
    assert_int_equal(kcache_key(o, k, sizeof(k)), -1);
    json_decref(o);
}

static void test_upsert_and_remove(void **state)
{
    (void)state;
    struct rec r;
    struct kcache *c = new_cache(&r);
    r.cache = c;
    assert_int_equal(kcache_upsert(c, obj("ns", "a", "1")), 0);
    assert_int_equal(kcache_upsert(c, obj("ns", "a", "2")), 0);
    assert_int_equal(kcache_upsert(c, obj("ns", "b", "3")), 0);
    assert_int_equal(kcache_upsert(c, json_pack("{s:{}}", "metadata")), -1);
    assert_int_equal(kcache_len(c), 2);
    json_t *got = kcache_get_nsname(c, "ns", "a");
    assert_non_null(got);
    assert_string_equal(rv_of(got), "2");
    json_decref(got);
    assert_null(kcache_get(c, "ns/zzz"));
    assert_null(kcache_get_nsname(c, "ns", NULL));

    json_t *gone = obj("ns", "a", "4"); /* the final state from a DELETED event */
    assert_int_equal(kcache_remove(c, gone), 1);
    assert_int_equal(kcache_remove(c, gone), 0); /* absent: no handler call */
    json_decref(gone);
    assert_int_equal(kcache_len(c), 1);
    assert_string_equal(r.log, "add ns/a 1;update ns/a 1>2;add ns/b 3;delete ns/a 4;");
    assert_int_equal(r.adds, 2);
    assert_int_equal(r.updates, 1);
    assert_int_equal(r.deletes, 1);
    /* Handlers ran after the change, without the lock (else kcache_get would
     * deadlock), and saw the new state. */
    assert_int_equal(r.seen_in_cache, 3);
    kcache_free(c);
}

static void test_replace(void **state)
{
    (void)state;
    struct rec r;
    struct kcache *c = new_cache(&r);
    kcache_upsert(c, obj("ns", "same", "1"));
    kcache_upsert(c, obj("ns", "changed", "1"));
    kcache_upsert(c, obj("ns", "vanished", "1"));
    r.log[0] = 0;
    r.adds = 0;

    json_t *items = json_array();
    json_array_append_new(items, obj("ns", "same", "1"));
    json_array_append_new(items, obj("ns", "changed", "5"));
    json_array_append_new(items, obj("ns", "new", "6"));
    json_array_append_new(items, json_pack("{s:{}}", "metadata")); /* skipped */
    assert_int_equal(kcache_replace(c, items), 0);
    assert_string_equal(r.log, "update ns/changed 1>5;add ns/new 6;delete ns/vanished 1;");
    assert_int_equal(kcache_len(c), 3);
    json_t *got = kcache_get(c, "ns/changed");
    assert_ptr_equal(got, json_array_get(items, 1)); /* stored by reference */
    json_decref(got);
    assert_null(kcache_get(c, "ns/vanished"));
    json_decref(items);

    /* Not an array: refused, content unchanged, no handler call. */
    r.log[0] = 0;
    json_t *bad = json_object();
    assert_int_equal(kcache_replace(c, bad), -1);
    json_decref(bad);
    assert_int_equal(kcache_len(c), 3);
    assert_string_equal(r.log, "");

    /* An empty list deletes everything. */
    r.deletes = 0;
    items = json_array();
    assert_int_equal(kcache_replace(c, items), 0);
    json_decref(items);
    assert_int_equal(kcache_len(c), 0);
    assert_int_equal(r.deletes, 3);
    kcache_free(c);
}

static void test_replace_duplicate_items(void **state)
{
    (void)state;
    struct rec r;
    struct kcache *c = new_cache(&r);
    json_t *items = json_array();
    json_array_append_new(items, obj("ns", "a", "1"));
    json_array_append_new(items, obj("ns", "a", "2"));
    assert_int_equal(kcache_replace(c, items), 0);
    json_decref(items);
    /* One add, with the later item. */
    assert_string_equal(r.log, "add ns/a 2;");
    kcache_free(c);
}

static void test_resync(void **state)
{
    (void)state;
    struct rec r;
    struct kcache *c = new_cache(&r);
    kcache_upsert(c, obj("ns", "a", "1"));
    kcache_upsert(c, obj(NULL, "b", "2"));
    r.log[0] = 0;
    kcache_resync(c);
    assert_int_equal(r.updates, 2);
    /* old == obj: same version on both sides, in either order. */
    assert_non_null(strstr(r.log, "update ns/a 1>1;"));
    assert_non_null(strstr(r.log, "update b 2>2;"));
    assert_int_equal(kcache_len(c), 2);
    kcache_free(c);
}

static int count_fn(const char *key, json_t *o, void *ud)
{
    (void)key;
    (void)o;
    return ++*(int *)ud >= 100;
}

static int stop_after_two(const char *key, json_t *o, void *ud)
{
    (void)key;
    (void)o;
    return ++*(int *)ud == 2;
}

static void test_foreach_and_list(void **state)
{
    (void)state;
    struct kcache *c = kcache_new();
    kcache_upsert(c, obj("a", "x", "1"));
    kcache_upsert(c, obj("a", "y", "1"));
    kcache_upsert(c, obj("ab", "z", "1"));
    kcache_upsert(c, obj(NULL, "a", "1")); /* cluster-scoped "a" is not namespace a */
    int n = 0;
    kcache_foreach(c, "a", count_fn, &n);
    assert_int_equal(n, 2);
    n = 0;
    kcache_foreach(c, NULL, count_fn, &n);
    assert_int_equal(n, 4);
    n = 0;
    kcache_foreach(c, NULL, stop_after_two, &n);
    assert_int_equal(n, 2);
    json_t *l = kcache_list(c, "ab");
    assert_int_equal(json_array_size(l), 1);
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_array_get(l, 0), "metadata"), "name")),
                        "z");
    json_decref(l);
    l = kcache_list(c, NULL);
    assert_int_equal(json_array_size(l), 4);
    json_decref(l);
    l = kcache_list(c, "none");
    assert_int_equal(json_array_size(l), 0);
    json_decref(l);
    kcache_free(c);
}

static void test_synced_and_handler_limit(void **state)
{
    (void)state;
    struct kcache *c = kcache_new();
    assert_false(kcache_synced(c));
    kcache_set_synced(c, 1);
    assert_true(kcache_synced(c));
    struct rec r[KCACHE_MAX_HANDLERS];
    for (int i = 0; i < KCACHE_MAX_HANDLERS; i++) {
        memset(&r[i], 0, sizeof(r[i]));
        struct kcache_handlers h = {on_add, NULL, NULL, &r[i]};
        assert_int_equal(kcache_add_handlers(c, &h), 0);
    }
    struct kcache_handlers h = {on_add, NULL, NULL, NULL};
    assert_int_equal(kcache_add_handlers(c, &h), -1);
    kcache_upsert(c, obj("ns", "a", "1"));
    kcache_upsert(c, obj("ns", "a", "2")); /* no on_update set: skipped */
    for (int i = 0; i < KCACHE_MAX_HANDLERS; i++)
        assert_int_equal(r[i].adds, 1);
    kcache_free(c);
}

/* A handler woken by the initial list already finds the cache synced (a
 * reader it wakes must not take the list's only event for "not yet"). */
static struct kcache *seen_cache;
static int seen_synced;
static void on_add_sees_synced(const char *key, json_t *o, void *ud)
{
    (void)key, (void)o, (void)ud;
    seen_synced = kcache_synced(seen_cache);
}

static void test_replace_is_synced_before_events(void **state)
{
    (void)state;
    struct kcache *c = kcache_new();
    seen_cache = c;
    seen_synced = -1;
    struct kcache_handlers h = {on_add_sees_synced, NULL, NULL, NULL};
    assert_int_equal(kcache_add_handlers(c, &h), 0);
    json_t *items = json_pack("[o]", obj("ns", "a", "1"));
    assert_int_equal(kcache_replace(c, items), 0);
    json_decref(items);
    assert_int_equal(seen_synced, 1);
    kcache_free(c);
}

/* Readers run concurrently with the writer and always see whole objects. */
struct reader_ctx {
    struct kcache *c;
    volatile int stop;
    int bad;
    long reads;
};

static void *reader(void *arg)
{
    struct reader_ctx *rc = arg;
    while (!rc->stop) {
        json_t *o = kcache_get(rc->c, "ns/hot");
        if (o && !rv_of(o))
            rc->bad = 1;
        json_decref(o);
        json_t *l = kcache_list(rc->c, "ns");
        json_decref(l);
        rc->reads++;
    }
    return NULL;
}

static void test_concurrent_readers(void **state)
{
    (void)state;
    struct reader_ctx rc = {.c = kcache_new()};
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, reader, &rc);
    char rv[16];
    for (int i = 0; i < 2000; i++) {
        snprintf(rv, sizeof(rv), "%d", i);
        kcache_upsert(rc.c, obj("ns", "hot", rv));
        if (i % 100 == 0) {
            json_t *items = json_array();
            json_array_append_new(items, obj("ns", "hot", rv));
            kcache_replace(rc.c, items);
            json_decref(items);
        }
    }
    rc.stop = 1;
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    assert_int_equal(rc.bad, 0);
    json_t *o = kcache_get(rc.c, "ns/hot");
    assert_string_equal(rv_of(o), "1999");
    json_decref(o);
    kcache_free(rc.c);
}

/* The object cap: new keys and long lists are refused, updates pass. */
static void test_max_objects(void **state)
{
    (void)state;
    struct kcache *c = kcache_new();
    assert_non_null(c);
    kcache_set_max_objects(c, 2);
    assert_int_equal(kcache_max_objects(c), 2);
    assert_int_equal(kcache_upsert(c, json_pack("{s:{s:s,s:s}}", "metadata", "name", "a",
                                                "resourceVersion", "1")),
                     0);
    assert_int_equal(kcache_upsert(c, json_pack("{s:{s:s,s:s}}", "metadata", "name", "b",
                                                "resourceVersion", "1")),
                     0);
    assert_int_equal(kcache_upsert(c, json_pack("{s:{s:s,s:s}}", "metadata", "name", "c",
                                                "resourceVersion", "1")),
                     MK_ERR_FULL);
    assert_int_equal(kcache_upsert(c, json_pack("{s:{s:s,s:s}}", "metadata", "name", "a",
                                                "resourceVersion", "2")),
                     0);
    assert_int_equal(kcache_len(c), 2);
    json_t *three = json_pack("[{s:{s:s}},{s:{s:s}},{s:{s:s}}]", "metadata", "name", "x",
                              "metadata", "name", "y", "metadata", "name", "z");
    assert_int_equal(kcache_replace(c, three), MK_ERR_FULL);
    json_t *a = kcache_get(c, "a"); /* unchanged */
    assert_non_null(a);
    json_decref(a);
    json_array_remove(three, 2);
    assert_int_equal(kcache_replace(c, three), 0);
    assert_int_equal(kcache_len(c), 2);
    json_decref(three);
    kcache_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_key),
        cmocka_unit_test(test_max_objects),
        cmocka_unit_test(test_upsert_and_remove),
        cmocka_unit_test(test_replace),
        cmocka_unit_test(test_replace_duplicate_items),
        cmocka_unit_test(test_resync),
        cmocka_unit_test(test_foreach_and_list),
        cmocka_unit_test(test_synced_and_handler_limit),
        cmocka_unit_test(test_replace_is_synced_before_events),
        cmocka_unit_test(test_concurrent_readers),
    };
    return cmocka_run_group_tests_name("kube_cache", tests, NULL, NULL);
}
