/* The MultiKueue AdmissionCheck's Active condition (admissioncheck.h) from
 * its MultiKueueConfig and the MultiKueueClusters. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/support/test_json.h"

#include "../admissioncheck.h"
#include "jsonx.h"
#include "kube_cache.h"

static void test_admission_check_status(void **state)
{
    (void)state;
    struct kcache *mkcs = kcache_new();
    kcache_upsert(mkcs, tj_parse("{\"metadata\":{\"name\":\"w1\"},\"status\":{\"conditions\":"
                                 "[{\"type\":\"Active\",\"status\":\"True\"}]}}"));
    kcache_upsert(mkcs, tj_parse("{\"metadata\":{\"name\":\"w2\"},\"status\":{\"conditions\":"
                                 "[{\"type\":\"Active\",\"status\":\"False\"}]}}"));
    json_t *ac = tj_parse("{\"spec\":{\"controllerName\":\"kueue.x-k8s.io/multikueue\","
                          "\"parameters\":{\"apiGroup\":\"kueue.x-k8s.io\",\"kind\":"
                          "\"MultiKueueConfig\",\"name\":\"cfg\"}}}");
    json_t *cfg = tj_parse("{\"spec\":{\"clusters\":[\"w1\"]}}");
    struct rc_ac_state s;
    rc_ac_compute(ac, cfg, mkcs, &s);
    assert_string_equal(s.status, "True");
    assert_string_equal(s.reason, "Active");
    assert_string_equal(s.message, "The admission check is active");
    json_decref(cfg);
    cfg = tj_parse("{\"spec\":{\"clusters\":[\"w1\",\"w2\",\"w3\"]}}");
    rc_ac_compute(ac, cfg, mkcs, &s);
    assert_string_equal(s.status, "True");
    assert_string_equal(s.reason, "SomeActiveClusters");
    assert_string_equal(s.message, "Missing clusters: [w3], Inactive clusters: [w2]");
    json_decref(cfg);
    cfg = tj_parse("{\"spec\":{\"clusters\":[\"w2\"]}}");
    rc_ac_compute(ac, cfg, mkcs, &s);
    assert_string_equal(s.status, "False");
    assert_string_equal(s.reason, "NoUsableClusters");
    assert_string_equal(s.message, "Inactive clusters: [w2]");
    rc_ac_compute(ac, NULL, mkcs, &s);
    assert_string_equal(s.reason, "BadConfig");
    assert_string_equal(s.message, "Cannot load the AdmissionChecks parameters: "
                                   "MultiKueueConfig.kueue.x-k8s.io \"cfg\" not found");
    jx_set_new_str(ac, "spec.parameters.kind", "Other");
    rc_ac_compute(ac, cfg, mkcs, &s);
    assert_string_equal(s.message, "Cannot load the AdmissionChecks parameters: wrong kind "
                                   "\"Other\", expecting \"MultiKueueConfig\": bad parameters "
                                   "reference");
    jx_del(ac, "spec.parameters");
    rc_ac_compute(ac, cfg, mkcs, &s);
    assert_string_equal(s.message,
                        "Cannot load the AdmissionChecks parameters: missing parameters reference");
    json_decref(cfg);
    json_decref(ac);
    kcache_free(mkcs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_admission_check_status),
    };
    return cmocka_run_group_tests_name("rc_admissioncheck", tests, NULL, NULL);
}
