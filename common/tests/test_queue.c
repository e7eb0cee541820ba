#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "jsonx.h"
#include "queue.h"

struct fixture {
    struct mkq_caches c;
};

static void put(struct kcache *c, const char *json)
{
    json_error_t e;
    json_t *o = json_loads(json, 0, &e);
    if (!o)
        fail_msg("bad test JSON: %s", e.text);
    assert_int_equal(kcache_upsert(c, o), 0);
}

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    f->c.localqueues = kcache_new();
    f->c.clusterqueues = kcache_new();
    f->c.admissionchecks = kcache_new();
    f->c.configs = kcache_new();
    f->c.clusters = kcache_new();
    put(f->c.localqueues, "{\"metadata\":{\"namespace\":\"ml\",\"name\":\"team-a\","
                          "\"resourceVersion\":\"1\"},\"spec\":{\"clusterQueue\":\"cq-mk\"}}");
    put(f->c.localqueues, "{\"metadata\":{\"namespace\":\"ml\",\"name\":\"local\","
                          "\"resourceVersion\":\"1\"},\"spec\":{\"clusterQueue\":\"cq-local\"}}");
    put(f->c.localqueues, "{\"metadata\":{\"namespace\":\"ml\",\"name\":\"dangling\","
                          "\"resourceVersion\":\"1\"},\"spec\":{\"clusterQueue\":\"nope\"}}");
    put(f->c.localqueues, "{\"metadata\":{\"namespace\":\"ml\",\"name\":\"old\","
                          "\"resourceVersion\":\"1\"},\"spec\":{\"clusterQueue\":\"cq-v1beta1\"}}");
    put(f->c.clusterqueues, "{\"metadata\":{\"name\":\"cq-mk\",\"resourceVersion\":\"1\"},\"spec\":"
                            "{\"admissionChecksStrategy\":{\"admissionChecks\":[{\"name\":\"prov\"}"
                            ",{\"name\":\"mk\"}]}}}");
    put(f->c.clusterqueues,
        "{\"metadata\":{\"name\":\"cq-local\",\"resourceVersion\":\"1\"},\"spec\":{}}");
    put(f->c.clusterqueues, "{\"metadata\":{\"name\":\"cq-v1beta1\",\"resourceVersion\":\"1\"},"
                            "\"spec\":{\"admissionChecks\":[\"mk-bad\"]}}");
    put(f->c.admissionchecks,
        "{\"metadata\":{\"name\":\"prov\",\"resourceVersion\":\"1\"},\"spec\":"
        "{\"controllerName\":\"kueue.x-k8s.io/provisioning-request\"}}");
    put(f->c.admissionchecks,
        "{\"metadata\":{\"name\":\"mk\",\"resourceVersion\":\"1\"},\"spec\":{\"controllerName\":"
        "\"kueue.x-k8s.io/multikueue\",\"parameters\":{\"apiGroup\":\"kueue.x-k8s.io\","
        "\"kind\":\"MultiKueueConfig\",\"name\":\"cfg\"}}}");
    put(f->c.admissionchecks,
        "{\"metadata\":{\"name\":\"mk-bad\",\"resourceVersion\":\"1\"},\"spec\":{"
        "\"controllerName\":"
        "\"kueue.x-k8s.io/multikueue\",\"parameters\":{\"apiGroup\":\"kueue.x-k8s.io\","
        "\"kind\":\"MultiKueueConfig\",\"name\":\"missing\"}}}");
    put(f->c.configs, "{\"metadata\":{\"name\":\"cfg\",\"resourceVersion\":\"1\"},"
                      "\"spec\":{\"clusters\":[\"worker-2\",\"worker-1\"]}}");
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    kcache_free(f->c.localqueues);
    kcache_free(f->c.clusterqueues);
    kcache_free(f->c.admissionchecks);
    kcache_free(f->c.configs);
    kcache_free(f->c.clusters);
    free(f);
    return 0;
}

static void test_multikueue_queue_resolves_to_clusters_in_config_order(void **state)
{
    struct fixture *f = *state;
    struct mkq_resolution r;
    char msg[256] = "";
    assert_int_equal(mkq_resolve(&f->c, "ml", "team-a", &r, msg, sizeof(msg)), MKQ_MULTIKUEUE);
    assert_string_equal(r.cluster_queue, "cq-mk");
    assert_string_equal(r.admission_check, "mk");
    assert_string_equal(r.config, "cfg");
    assert_int_equal(json_array_size(r.clusters), 2);
    assert_string_equal(json_string_value(json_array_get(r.clusters, 0)), "worker-2");
    assert_string_equal(r.config_error, "");
    mkq_resolution_clear(&r);
}

static void test_local_and_missing_queues(void **state)
{
    struct fixture *f = *state;
    struct mkq_resolution r;
    char msg[256] = "";
    assert_int_equal(mkq_resolve(&f->c, "ml", "local", &r, msg, sizeof(msg)), MKQ_LOCAL);
    assert_null(r.clusters);
    mkq_resolution_clear(&r);
    assert_int_equal(mkq_resolve(&f->c, "ml", "nope", &r, msg, sizeof(msg)), MKQ_NO_LOCALQUEUE);
    assert_string_equal(msg, "LocalQueue nope does not exist in namespace ml");
    mkq_resolution_clear(&r);
    assert_int_equal(mkq_resolve(&f->c, "other", "team-a", &r, msg, sizeof(msg)),
                     MKQ_NO_LOCALQUEUE);
    mkq_resolution_clear(&r);
    assert_int_equal(mkq_resolve(&f->c, "ml", "dangling", &r, msg, sizeof(msg)),
                     MKQ_NO_CLUSTERQUEUE);
    assert_non_null(strstr(msg, "ClusterQueue nope"));
    mkq_resolution_clear(&r);
}

static void test_v1beta1_flat_checks_and_missing_config(void **state)
{
    struct fixture *f = *state;
    struct mkq_resolution r;
    char msg[256] = "";
    assert_int_equal(mkq_resolve(&f->c, "ml", "old", &r, msg, sizeof(msg)), MKQ_MULTIKUEUE);
    assert_string_equal(r.admission_check, "mk-bad");
    assert_null(r.clusters);
    assert_string_equal(r.config_error, "MultiKueueConfig.kueue.x-k8s.io \"missing\" not found");
    mkq_resolution_clear(&r);
}

static void test_bad_parameters_use_kueues_messages(void **state)
{
    struct fixture *f = *state;
    put(f->c.admissionchecks,
        "{\"metadata\":{\"name\":\"mk-bad\",\"resourceVersion\":\"2\"},\"spec\":{"
        "\"controllerName\":"
        "\"kueue.x-k8s.io/multikueue\",\"parameters\":{\"apiGroup\":\"example.com\","
        "\"kind\":\"MultiKueueConfig\",\"name\":\"cfg\"}}}");
    struct mkq_resolution r;
    char msg[256] = "";
    assert_int_equal(mkq_resolve(&f->c, "ml", "old", &r, msg, sizeof(msg)), MKQ_MULTIKUEUE);
    assert_string_equal(r.config_error,
                        "wrong group \"example.com\", expecting \"kueue.x-k8s.io\": bad parameters "
                        "reference");
    mkq_resolution_clear(&r);
    put(f->c.admissionchecks, "{\"metadata\":{\"name\":\"mk-bad\",\"resourceVersion\":\"3\"},"
                              "\"spec\":{\"controllerName\":\"kueue.x-k8s.io/multikueue\"}}");
    assert_int_equal(mkq_resolve(&f->c, "ml", "old", &r, msg, sizeof(msg)), MKQ_MULTIKUEUE);
    assert_string_equal(r.config_error, "missing parameters reference");
    mkq_resolution_clear(&r);
}

static void test_kubeconfig_source_both_layouts(void **state)
{
    (void)state;
    const char *type, *loc;
    json_t *v2 = json_loads("{\"spec\":{\"clusterSource\":{\"kubeConfig\":{\"location\":\"s1\"}}}}",
                            0, NULL);
    assert_int_equal(mkq_kubeconfig_source(v2, &type, &loc), 0);
    assert_string_equal(type, "Secret");
    assert_string_equal(loc, "s1");
    json_t *v1 = json_loads("{\"spec\":{\"kubeConfig\":{\"location\":\"/etc/k\","
                            "\"locationType\":\"Path\"}}}",
                            0, NULL);
    assert_int_equal(mkq_kubeconfig_source(v1, &type, &loc), 0);
    assert_string_equal(type, "Path");
    json_t *prof = json_loads("{\"spec\":{\"clusterProfileRef\":{\"name\":\"p\"}}}", 0, NULL);
    assert_int_equal(mkq_kubeconfig_source(prof, &type, &loc), -1);
    json_decref(v2);
    json_decref(v1);
    json_decref(prof);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_multikueue_queue_resolves_to_clusters_in_config_order,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_local_and_missing_queues, setup, teardown),
        cmocka_unit_test_setup_teardown(test_v1beta1_flat_checks_and_missing_config, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_bad_parameters_use_kueues_messages, setup, teardown),
        cmocka_unit_test(test_kubeconfig_source_both_layouts),
    };
    return cmocka_run_group_tests_name("queue", tests, NULL, NULL);
}
