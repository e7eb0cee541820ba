/* Compact cache entries (pack.h): what the record keeps, the round trip
 * to the full object, the cache reading a record's key and version. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tests/support/test_json.h"

#include "../ctx.h"
#include "../pack.h"
#include "../wlstatus.h"
#include "kube_cache.h"
#include "jsonx.h"
#include "kinds/kinds.h"

static void test_pack_round_trip(void **state)
{
    (void)state;
    json_t *job =
        tj_parse("{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":"
                 "\"j\",\"namespace\":\"ns\",\"uid\":\"u\",\"resourceVersion\":\"7\","
                 "\"generation\":2,\"labels\":{\"a\":\"b\"},\"managedFields\":[{\"x\":1}],"
                 "\"annotations\":{\"keep\":\"1\",\"kubectl.kubernetes.io/"
                 "last-applied-configuration\":\"{...}\"}},\"spec\":{\"suspend\":true},"
                 "\"status\":{\"active\":1}}");
    json_t *packed = rc_pack(json_incref(job), NULL);
    assert_non_null(packed);
    /* the record: what handlers read, and the text */
    assert_true(rc_packed(packed));
    assert_string_equal(rc_md(packed, RC_MD_NAME), "j");
    assert_string_equal(rc_md(packed, RC_MD_NAMESPACE), "ns");
    assert_string_equal(rc_md(packed, RC_MD_RV), "7");
    assert_string_equal(rc_md(packed, RC_MD_UID), "u");
    assert_null(rc_md(packed, RC_MD_DELETION));
    assert_null(rc_md(packed, RC_MD_QUEUE));
    assert_null(rc_md(packed, RC_MD_COUNT));
    /* the same answers from the full object */
    assert_string_equal(rc_md(job, RC_MD_NAME), "j");
    assert_string_equal(rc_md(job, RC_MD_RV), "7");
    assert_null(rc_md(job, RC_MD_DELETION));
    json_t *full = rc_unwrap(packed);
    assert_true(jx_bool(full, "spec.suspend", 0));
    assert_int_equal(jx_int(full, "status.active", 0), 1);
    assert_int_equal(jx_int(full, "metadata.generation", 0), 2);
    assert_string_equal(jx_str(full, "metadata.labels.a"), "b");
    assert_string_equal(jx_str(full, "kind"), "Job");
    assert_string_equal(jx_str(full, "metadata.annotations.keep"), "1");
    assert_null(jx_get(full, "metadata.managedFields"));
    assert_null(
        jx_get(full, "metadata.annotations[kubectl.kubernetes.io/last-applied-configuration]"));
    /* the input was not changed (it may be shared) */
    assert_non_null(jx_get(job, "metadata.managedFields"));
    /* a plain object unwraps to itself; packing twice is refused */
    json_t *same = rc_unwrap(job);
    assert_ptr_equal(same, job);
    json_decref(same);
    assert_null(rc_pack(json_incref(packed), NULL));
    assert_null(rc_unwrap(NULL));
    json_decref(full);
    json_decref(packed);
    json_decref(job);
}

static void test_pack_remote(void **state)
{
    (void)state;
    json_t *wl = tj_parse(
        "{\"kind\":\"Job\",\"metadata\":{\"name\":\"j\",\"namespace\":\"ns\","
        "\"uid\":\"u1\",\"resourceVersion\":\"3\",\"deletionTimestamp\":\"t\","
        "\"finalizers\":[\"f\",\"bad\\nname\",\"kueue.x-k8s.io/g\"],\"labels\":{\"" MK_ORIGIN_LABEL
        "\":\"o\",\"x\":\"y\",\"" MK_PREBUILT "\":\"w1\"},"
        "\"annotations\":{\"" MK_PREBUILT "\":\"w2\",\"big\":\"z\"}},\"spec\":{\"a\":1}}");
    json_t *packed = rc_pack(json_incref(wl), NULL);
    assert_non_null(packed);
    /* what the GC and the remote handlers read stays in the record */
    assert_string_equal(rc_md(packed, RC_MD_UID), "u1");
    assert_string_equal(rc_md(packed, RC_MD_DELETION), "t");
    assert_string_equal(rc_md(packed, RC_MD_ORIGIN), "o");
    assert_string_equal(rc_md(packed, RC_MD_PREBUILT_LABEL), "w1");
    assert_string_equal(rc_md(packed, RC_MD_PREBUILT_ANNOT), "w2");
    assert_string_equal(rc_prebuilt_name(packed), "w1");
    assert_true(rc_wl_deleting(packed));
    /* finalizers: whole names only, a name with a newline left out */
    assert_string_equal(rc_md(packed, RC_MD_FINALIZERS), "f\nkueue.x-k8s.io/g");
    assert_true(rc_has_finalizer(packed, "f"));
    assert_true(rc_has_finalizer(packed, "kueue.x-k8s.io/g"));
    assert_false(rc_has_finalizer(packed, "kueue.x-k8s.io"));
    assert_false(rc_has_finalizer(packed, "name"));
    assert_true(rc_has_finalizer(wl, "f"));
    json_t *full = rc_unwrap(packed);
    assert_true(json_equal(full, wl));
    json_decref(full);
    json_decref(packed);
    json_t *bare = tj_parse("{\"metadata\":{\"name\":\"n\"}}");
    packed = rc_pack(json_incref(bare), NULL);
    assert_null(rc_md(packed, RC_MD_NAMESPACE));
    assert_null(rc_md(packed, RC_MD_FINALIZERS));
    assert_null(rc_prebuilt_name(packed));
    assert_false(rc_wl_deleting(packed));
    assert_false(rc_has_finalizer(packed, "f"));
    full = rc_unwrap(packed);
    assert_true(json_equal(full, bare));
    json_decref(full);
    json_decref(packed);
    json_decref(bare);
    json_decref(wl);
}

/* The cache keys, versions and compares records as it does objects. */
static int adds, updates, deletes;
static void on_add(const char *key, json_t *o, void *ud)
{
    (void)ud;
    adds++;
    assert_true(rc_packed(o));
    assert_string_equal(key, "ns/a");
}
static void on_update(const char *key, json_t *old, json_t *o, void *ud)
{
    (void)key, (void)ud;
    updates++;
    assert_true(rc_packed(old) && rc_packed(o));
}
static void on_delete(const char *key, json_t *o, void *ud)
{
    (void)key, (void)o, (void)ud;
    deletes++;
}

static void test_pack_in_cache(void **state)
{
    (void)state;
    struct kcache *c = kcache_new();
    assert_non_null(c);
    kcache_set_transform(c, rc_pack, NULL);
    struct kcache_handlers h = {on_add, on_update, on_delete, NULL};
    assert_int_equal(kcache_add_handlers(c, &h), 0);
    const char *a1 = "{\"metadata\":{\"name\":\"a\",\"namespace\":\"ns\",\"resourceVersion\":"
                     "\"1\"},\"spec\":{\"x\":1}}";
    assert_int_equal(kcache_upsert(c, tj_parse(a1)), 0);
    json_t *full = rc_cache_get_nsname(c, "ns", "a");
    assert_int_equal(jx_int(full, "spec.x", 0), 1);
    json_decref(full);
    /* a relist with the same version: no update; a new version: one */
    json_t *items = json_pack("[o]", tj_parse(a1));
    assert_int_equal(kcache_replace(c, items), 0);
    json_decref(items);
    assert_int_equal(updates, 0);
    items = json_pack("[o]", tj_parse("{\"metadata\":{\"name\":\"a\",\"namespace\":\"ns\","
                                      "\"resourceVersion\":\"2\"}}"));
    assert_int_equal(kcache_replace(c, items), 0);
    json_decref(items);
    assert_int_equal(updates, 1);
    /* a record without a name has no key */
    char key[KCACHE_KEY_MAX];
    json_t *nameless = rc_pack(tj_parse("{\"metadata\":{\"namespace\":\"ns\"}}"), NULL);
    assert_int_equal(kcache_key(nameless, key, sizeof(key)), -1);
    json_decref(nameless);
    json_t *gone = tj_parse(a1);
    assert_int_equal(kcache_remove(c, gone), 1);
    json_decref(gone);
    assert_int_equal(adds, 1);
    assert_int_equal(deletes, 1);
    assert_int_equal(kcache_len(c), 0);
    /* bytes that are no record (a field without its end) read as nothing */
    json_t *odd = json_stringn_nocheck("abc", 3);
    assert_null(kcache_rec_field(odd, 0));
    assert_null(rc_unwrap(odd));
    json_decref(odd);
    kcache_free(c);
}

/* A cached object keeps every field but the two dropped on purpose
 * (managedFields, kubectl's last-applied-configuration): a field dropped
 * by mistake, which some reader needs, fails here. */
static void test_pack_keeps_everything_else(void **state)
{
    (void)state;
    json_t *wl = tj_parse(
        "{\"apiVersion\":\"kueue.x-k8s.io/v1beta2\",\"kind\":\"Workload\",\"metadata\":{"
        "\"name\":\"job-a-1\",\"namespace\":\"ns\",\"uid\":\"u\",\"resourceVersion\":\"9\","
        "\"generation\":1,\"finalizers\":[\"kueue.x-k8s.io/resource-in-use\"],"
        "\"labels\":{\"kueue.x-k8s.io/job-uid\":\"j\"},\"annotations\":{\"a\":\"\u00e9\","
        "\"kubectl.kubernetes.io/last-applied-configuration\":\"{}\"},"
        "\"managedFields\":[{\"manager\":\"m\"}],\"ownerReferences\":[{\"kind\":\"Job\","
        "\"name\":\"a\",\"uid\":\"j\",\"controller\":true}]},\"spec\":{\"active\":true,"
        "\"queueName\":\"q\",\"priority\":-3,\"podSets\":[{\"name\":\"main\",\"count\":2,"
        "\"template\":{\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\",\"resources\":"
        "{\"requests\":{\"cpu\":\"1500m\"}}}]}}}]},\"status\":{\"conditions\":[{\"type\":"
        "\"QuotaReserved\",\"status\":\"True\",\"reason\":\"QuotaReserved\",\"message\":\"m\","
        "\"lastTransitionTime\":\"2026-01-01T00:00:00Z\"}],\"admission\":{\"clusterQueue\":"
        "\"cq\"},\"x\":[null,true,false,1.5,0]}}");
    json_t *want = json_deep_copy(wl);
    json_object_del(json_object_get(want, "metadata"), "managedFields");
    json_object_del(jx_get(want, "metadata.annotations"),
                    "kubectl.kubernetes.io/last-applied-configuration");
    json_t *packed = rc_pack(json_incref(wl), NULL);
    json_t *full = rc_unwrap(packed);
    assert_non_null(full);
    assert_true(json_equal(full, want));
    json_decref(full);
    json_decref(packed);
    json_decref(want);
    json_decref(wl);
}

/* The text is kept deflated: smaller than the text, any size, and a
 * damaged entry unwraps to NULL, never to garbage. */
static void test_pack_deflated(void **state)
{
    (void)state;
    json_t *obj = tj_parse("{\"metadata\":{\"name\":\"n\",\"namespace\":\"ns\"},\"spec\":{}}");
    /* larger than the window, not repetitive */
    char *big = malloc(200001);
    assert_non_null(big);
    unsigned x = 12345;
    for (int i = 0; i < 200000; i++) {
        x = x * 1103515245u + 12345u;
        big[i] = (char)('a' + (x >> 16) % 26);
    }
    big[200000] = '\0';
    json_object_set_new(json_object_get(obj, "spec"), "big", json_string(big));
    json_object_set_new(json_object_get(obj, "spec"), "rep", json_string("terminationMessagePath"));
    json_t *packed = rc_pack(json_incref(obj), NULL);
    assert_non_null(packed);
    json_t *full = rc_unwrap(packed);
    assert_true(json_equal(full, obj));
    json_decref(full);
    /* a typical Job: its deflated text is a fraction of the text */
    json_t *job = tj_parse(
        "{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"j\","
        "\"namespace\":\"ns\",\"resourceVersion\":\"1\"},\"spec\":{\"backoffLimit\":6,"
        "\"completionMode\":\"NonIndexed\",\"completions\":1,\"parallelism\":1,\"suspend\":true,"
        "\"template\":{\"spec\":{\"containers\":[{\"name\":\"main\",\"image\":\"busybox\","
        "\"imagePullPolicy\":\"Always\",\"terminationMessagePath\":\"/dev/termination-log\","
        "\"terminationMessagePolicy\":\"File\"}],\"dnsPolicy\":\"ClusterFirst\","
        "\"restartPolicy\":\"Never\",\"schedulerName\":\"default-scheduler\",\"securityContext\":{}"
        ","
        "\"terminationGracePeriodSeconds\":30}}}}");
    json_t *pj = rc_pack(json_incref(job), NULL);
    char *text = json_dumps(job, JSON_COMPACT);
    assert_true(rc_packed(pj));
    assert_true(json_string_length(pj) * 3 < strlen(text));
    free(text);
    json_decref(pj);
    json_decref(job);
    /* damaged: cut short, or a wrong length */
    const char *b = json_string_value(packed);
    size_t blen = json_string_length(packed), zlen = 0;
    const char *z = kcache_rec_tail(packed, RC_MD_COUNT, &zlen);
    assert_non_null(z);
    size_t head = (size_t)(z - b);
    json_t *cut = json_stringn_nocheck(b, head + zlen / 2);
    assert_null(rc_unwrap(cut));
    json_decref(cut);
    char *lied = malloc(blen);
    assert_non_null(lied);
    memcpy(lied, b, blen);
    lied[head] = (char)(lied[head] + 1);
    cut = json_stringn_nocheck(lied, blen);
    assert_null(rc_unwrap(cut));
    json_decref(cut);
    cut = json_stringn_nocheck(b, head + 2);
    assert_null(rc_unwrap(cut));
    json_decref(cut);
    free(lied);
    json_decref(packed);
    json_decref(obj);
    free(big);
}

/* A Workload's record names its queue, so the gate and the event
 * handlers find its ClusterQueue without unwrapping it: the same answer as
 * from the full Workload, before and after admission. */
static void test_pack_workload_queue(void **state)
{
    (void)state;
    struct rc_ctx x;
    memset(&x, 0, sizeof(x));
    x.localqueues = kcache_new();
    assert_non_null(x.localqueues);
    assert_int_equal(
        kcache_upsert(x.localqueues, tj_parse("{\"metadata\":{\"name\":\"lq\",\"namespace\":"
                                              "\"ns\",\"resourceVersion\":\"1\"},\"spec\":{"
                                              "\"clusterQueue\":\"cq-a\"}}")),
        0);
    json_t *wl = tj_parse("{\"metadata\":{\"name\":\"w\",\"namespace\":\"ns\","
                          "\"resourceVersion\":\"1\"},\"spec\":{\"queueName\":\"lq\"}}");
    json_t *p = rc_pack(json_incref(wl), NULL);
    char a[64], b[64];
    assert_int_equal(rc_cq_of(&x, wl, a, sizeof(a)), 0);
    assert_int_equal(rc_cq_of(&x, p, b, sizeof(b)), 0);
    assert_string_equal(a, "cq-a");
    assert_string_equal(b, "cq-a");
    assert_string_equal(rc_md(p, RC_MD_QUEUE), "lq");
    assert_null(rc_md(p, RC_MD_ADMISSION_CQ));
    json_t *full = rc_unwrap(p);
    assert_true(json_equal(full, wl));
    json_decref(full);
    json_decref(p);
    /* admitted: the admission's ClusterQueue wins, as rc_cq_of reads it */
    assert_int_equal(jx_set(wl, "status.admission.clusterQueue", json_string("cq-b")), 0);
    p = rc_pack(json_incref(wl), NULL);
    assert_int_equal(rc_cq_of(&x, p, b, sizeof(b)), 0);
    assert_string_equal(b, "cq-b");
    json_decref(p);
    /* no queue: none either way */
    json_object_del(json_object_get(wl, "status"), "admission");
    json_object_del(json_object_get(wl, "spec"), "queueName");
    p = rc_pack(json_incref(wl), NULL);
    assert_int_equal(rc_cq_of(&x, p, b, sizeof(b)), -1);
    assert_null(rc_md(p, RC_MD_QUEUE));
    json_decref(p);
    json_decref(wl);
    kcache_free(x.localqueues);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pack_round_trip), cmocka_unit_test(test_pack_remote),
        cmocka_unit_test(test_pack_in_cache),   cmocka_unit_test(test_pack_keeps_everything_else),
        cmocka_unit_test(test_pack_deflated),   cmocka_unit_test(test_pack_workload_queue),
    };
    return cmocka_run_group_tests_name("rc_pack", tests, NULL, NULL);
}
