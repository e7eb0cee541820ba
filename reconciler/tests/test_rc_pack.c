/* Compact cache entries (pack.h): what the wrapper keeps, the round trip
 * to the full object, the remote variant. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/support/test_json.h"

#include "../pack.h"
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
    /* the wrapper: what handlers read, and the text */
    assert_string_equal(jx_str(packed, "metadata.name"), "j");
    assert_string_equal(jx_str(packed, "metadata.resourceVersion"), "7");
    assert_null(jx_get(packed, "metadata.labels"));
    assert_null(jx_get(packed, "spec"));
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
    json_t *wl =
        tj_parse("{\"kind\":\"Job\",\"metadata\":{\"name\":\"j\",\"namespace\":\"ns\","
                 "\"uid\":\"u1\",\"resourceVersion\":\"3\",\"deletionTimestamp\":\"t\","
                 "\"finalizers\":[\"f\"],\"labels\":{\"" MK_ORIGIN_LABEL "\":\"o\",\"x\":\"y\","
                 "\"" MK_PREBUILT "\":\"w1\"},\"annotations\":{\"" MK_PREBUILT "\":\"w2\","
                 "\"big\":\"z\"}},\"spec\":{\"a\":1}}");
    json_t *packed = rc_pack_remote(json_incref(wl), NULL);
    assert_non_null(packed);
    /* what the GC and the remote handlers read stays in the wrapper */
    assert_string_equal(jx_str(packed, "metadata.uid"), "u1");
    assert_string_equal(jx_str(packed, "metadata.deletionTimestamp"), "t");
    assert_string_equal(jx_str(packed, "metadata.finalizers[0]"), "f");
    assert_string_equal(jx_str(packed, "metadata.labels[" MK_ORIGIN_LABEL "]"), "o");
    assert_string_equal(jx_str(packed, "metadata.labels[" MK_PREBUILT "]"), "w1");
    assert_string_equal(jx_str(packed, "metadata.annotations[" MK_PREBUILT "]"), "w2");
    assert_null(jx_get(packed, "metadata.labels.x"));
    assert_null(jx_get(packed, "metadata.annotations.big"));
    assert_null(jx_get(packed, "spec"));
    json_t *full = rc_unwrap(packed);
    assert_true(json_equal(full, wl));
    json_decref(full);
    json_decref(packed);
    /* the manager variant keeps neither; no labels means none in the wrapper */
    packed = rc_pack(json_incref(wl), NULL);
    assert_null(jx_get(packed, "metadata.uid"));
    assert_null(jx_get(packed, "metadata.labels"));
    json_decref(packed);
    json_t *bare = tj_parse("{\"metadata\":{\"name\":\"n\"}}");
    packed = rc_pack_remote(json_incref(bare), NULL);
    assert_null(jx_get(packed, "metadata.labels"));
    assert_null(jx_get(packed, "metadata.annotations"));
    full = rc_unwrap(packed);
    assert_true(json_equal(full, bare));
    json_decref(full);
    json_decref(packed);
    json_decref(bare);
    json_decref(wl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pack_round_trip),
        cmocka_unit_test(test_pack_remote),
    };
    return cmocka_run_group_tests_name("rc_pack", tests, NULL, NULL);
}
