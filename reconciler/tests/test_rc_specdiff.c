/* Comparing a manager Workload's spec with a worker's copy the way Kueue
 * does (specdiff.h): what a worker's schema prunes, defaults or renders
 * differently is no difference; a real change is, with its path. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/support/test_json.h"

#include <string.h>

#include "../specdiff.h"
#include "jsonx.h"

/* What mkueue writes on the manager for a batch Job with one container. */
static const char *const MANAGER =
    "{\"queueName\":\"team-a\",\"priority\":0,\"podSets\":[{\"name\":\"main\",\"count\":2,"
    "\"template\":{\"metadata\":{\"creationTimestamp\":null,\"labels\":{\"app\":\"x\"}},"
    "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"busybox:1.36\","
    "\"args\":[\"sleep\",\"1\"],\"env\":[],\"ports\":[{\"containerPort\":80}],"
    "\"resources\":{\"requests\":{\"cpu\":\"1000m\",\"memory\":\"1Gi\"},"
    "\"limits\":{\"nvidia.com/gpu\":1}}}],\"nodeSelector\":null,\"restartPolicy\":\"Never\","
    "\"volumes\":[{\"name\":\"scratch\",\"emptyDir\":{\"sizeLimit\":\"0.5Gi\"}}]}}}]}";

/* The same as a worker's Kueue stores it: nulls and creationTimestamp
 * pruned, empty lists dropped, defaults added, quantities re-rendered. */
static const char *const WORKER =
    "{\"active\":true,\"queueName\":\"team-a\",\"priority\":0,\"podSets\":[{\"name\":\"main\","
    "\"count\":2,\"template\":{\"metadata\":{\"labels\":{\"app\":\"x\"}},"
    "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"busybox:1.36\","
    "\"args\":[\"sleep\",\"1\"],\"ports\":[{\"containerPort\":80,\"protocol\":\"TCP\"}],"
    "\"imagePullPolicy\":\"IfNotPresent\",\"terminationMessagePath\":\"/dev/termination-log\","
    "\"resources\":{\"requests\":{\"cpu\":\"1\",\"memory\":\"1073741824\"},"
    "\"limits\":{\"nvidia.com/gpu\":\"1\"}}}],\"restartPolicy\":\"Never\","
    "\"volumes\":[{\"name\":\"scratch\",\"emptyDir\":{\"sizeLimit\":\"512Mi\"}}]}}}],"
    "\"preemptionGates\":[{\"name\":\"kueue.x-k8s.io/multikueue\"}]}";

#define C0 "spec.podSets[0].template.spec.containers[0]"

struct pair {
    json_t *mgr, *wrk;
};

static int setup(void **state)
{
    struct pair *p = test_malloc(sizeof(*p));
    p->mgr = tj_parse(MANAGER);
    p->wrk = tj_parse(WORKER);
    *state = p;
    return 0;
}

static int teardown(void **state)
{
    struct pair *p = *state;
    json_decref(p->mgr);
    json_decref(p->wrk);
    test_free(p);
    return 0;
}

/* Equal? With the path and prio flag of the answer. */
static int eq(const json_t *l, const json_t *r, char *path, int *prio)
{
    int dummy;
    return rc_spec_equal(l, r, prio ? prio : &dummy, path, RC_SPEC_PATH_MAX);
}

static void test_worker_rendering_is_equal(void **state)
{
    struct pair *p = *state;
    char path[RC_SPEC_PATH_MAX] = "x";
    int prio = 1;
    assert_true(eq(p->mgr, p->wrk, path, &prio));
    assert_string_equal(path, "");
    assert_false(prio);
    /* and the manager's own copy, of course */
    assert_true(eq(p->mgr, p->mgr, path, NULL));
}

static void test_pruned_and_defaulted_one_by_one(void **state)
{
    struct pair *p = *state;
    char path[RC_SPEC_PATH_MAX];
    json_t *w = json_deep_copy(p->mgr);
    /* creationTimestamp: null pruned (the whole metadata when it was all) */
    jx_del(w, "podSets.0.template.metadata.creationTimestamp");
    assert_true(eq(p->mgr, w, path, NULL));
    /* nulls and [] dropped */
    jx_del(w, "podSets.0.template.spec.nodeSelector");
    jx_del(w, "podSets.0.template.spec.containers.0.env");
    assert_true(eq(p->mgr, w, path, NULL));
    /* defaults on the worker */
    jx_set_new_str(w, "podSets.0.template.spec.containers.0.ports.0.protocol", "TCP");
    jx_set(w, "active", json_true());
    jx_set(w, "podSets.0.minCount", json_null());
    assert_true(eq(p->mgr, w, path, NULL));
    /* a podSet count the manager left out is defaulted to 1 by the worker */
    json_t *m = json_deep_copy(p->mgr);
    jx_del(m, "podSets.0.count");
    assert_true(eq(m, p->wrk, path, NULL));
    /* a null on the worker side is as absent as a missing member */
    jx_set(w, "podSets.0.template.spec.containers.0.env", json_null());
    assert_true(eq(p->mgr, w, path, NULL));
    json_decref(w);
    json_decref(m);
}

static void test_quantities_by_value(void **state)
{
    struct pair *p = *state;
    char path[RC_SPEC_PATH_MAX];
    json_t *w = json_deep_copy(p->wrk);
    jx_set_new_str(w, "podSets.0.template.spec.containers.0.resources.requests.cpu", "2");
    assert_false(eq(p->mgr, w, path, NULL));
    assert_string_equal(path, C0 ".resources.requests.cpu");
    jx_set_new_str(w, "podSets.0.template.spec.containers.0.resources.requests.cpu", "1.0");
    assert_true(eq(p->mgr, w, path, NULL));
    /* a number against a string, and a key that is not a plain name */
    jx_set(w, "podSets.0.template.spec.containers.0.resources.limits[nvidia.com/gpu]",
           json_integer(2));
    assert_false(eq(p->mgr, w, path, NULL));
    assert_string_equal(path, C0 ".resources.limits[nvidia.com/gpu]");
    jx_set(w, "podSets.0.template.spec.containers.0.resources.limits[nvidia.com/gpu]",
           json_integer(1));
    assert_true(eq(p->mgr, w, path, NULL));
    jx_set_new_str(w, "podSets.0.template.spec.volumes.0.emptyDir.sizeLimit", "1Gi");
    assert_false(eq(p->mgr, w, path, NULL));
    assert_string_equal(path, "spec.podSets[0].template.spec.volumes[0].emptyDir.sizeLimit");
    json_decref(w);

    /* only quantities compare by value: elsewhere "1000m" is not "1" */
    json_t *l = tj_parse("{\"podSets\":[{\"template\":{\"spec\":{\"containers\":[{\"env\":[{"
                         "\"name\":\"N\",\"value\":\"1000m\"}]}]}}}]}");
    json_t *r = tj_parse("{\"podSets\":[{\"template\":{\"spec\":{\"containers\":[{\"env\":[{"
                         "\"name\":\"N\",\"value\":\"1\"}]}]}}}]}");
    assert_false(eq(l, r, path, NULL));
    assert_string_equal(path, C0 ".env[0].value");
    json_decref(l);
    json_decref(r);
}

static void test_real_changes_are_found(void **state)
{
    struct pair *p = *state;
    char path[RC_SPEC_PATH_MAX];
    int prio;
    json_t *w = json_deep_copy(p->wrk);
    jx_set_new_str(w, "podSets.0.template.spec.containers.0.image", "busybox:1.35");
    assert_false(eq(p->mgr, w, path, &prio));
    assert_false(prio);
    assert_string_equal(path, C0 ".image");
    json_decref(w);

    w = json_deep_copy(p->wrk);
    jx_set(w, "podSets.0.count", json_integer(3));
    assert_false(eq(p->mgr, w, path, NULL));
    assert_string_equal(path, "spec.podSets[0].count");
    json_decref(w);

    /* a field the worker's (older) schema does not know is pruned there */
    json_t *m = json_deep_copy(p->mgr);
    jx_set(m, "podSets.0.topologyRequest", tj_parse("{\"required\":\"rack\"}"));
    assert_false(eq(m, p->wrk, path, NULL));
    assert_string_equal(path, "spec.podSets[0].topologyRequest");
    json_decref(m);

    /* false is a value, not an absence */
    m = json_deep_copy(p->mgr);
    jx_set(m, "active", json_false());
    assert_false(eq(m, p->wrk, path, NULL));
    assert_string_equal(path, "spec.active");
    jx_del(p->wrk, "active");
    assert_false(eq(m, p->wrk, path, NULL));
    assert_string_equal(path, "spec.active");
    json_decref(m);

    /* lists: length and order count */
    w = json_deep_copy(p->wrk);
    json_array_append_new(jx_get(w, "podSets.0.template.spec.containers.0.args"), json_string("x"));
    assert_false(eq(p->mgr, w, path, NULL));
    assert_string_equal(path, C0 ".args");
    jx_set(w, "podSets.0.template.spec.containers.0.args", tj_parse("[\"1\",\"sleep\"]"));
    assert_false(eq(p->mgr, w, path, NULL));
    assert_string_equal(path, C0 ".args[0]");
    /* a type change */
    jx_set(w, "podSets.0.template.spec.containers.0.args", json_string("sleep 1"));
    assert_false(eq(p->mgr, w, path, NULL));
    assert_string_equal(path, C0 ".args");
    json_decref(w);

    /* the remote lost everything */
    assert_false(eq(p->mgr, NULL, path, NULL));
    assert_string_equal(path, "spec.queueName");
    assert_true(eq(NULL, p->wrk, path, NULL));
    assert_true(eq(NULL, NULL, path, NULL));
}

static void test_priority_and_gates(void **state)
{
    struct pair *p = *state;
    char path[RC_SPEC_PATH_MAX];
    int prio;
    json_t *w = json_deep_copy(p->wrk);
    jx_set(w, "priority", json_integer(100));
    jx_set(w, "priorityClassRef",
           tj_parse("{\"group\":\"kueue.x-k8s.io\",\"kind\":\"WorkloadPriorityClass\","
                    "\"name\":\"high\"}"));
    /* a remote-only priorityClassRef is a default like any other; priority is not */
    assert_false(eq(p->mgr, w, path, &prio));
    assert_true(prio);
    assert_string_equal(path, "spec.priority");
    /* with another difference, that one is named */
    jx_set_new_str(w, "podSets.0.template.spec.containers.0.image", "busybox:1.35");
    assert_false(eq(p->mgr, w, path, &prio));
    assert_false(prio);
    assert_string_equal(path, C0 ".image");
    json_decref(w);

    /* preemptionGates are the worker's, on either side */
    json_t *m = json_deep_copy(p->mgr);
    jx_set(m, "preemptionGates", tj_parse("[{\"name\":\"other\"}]"));
    assert_true(eq(m, p->wrk, path, NULL));
    json_decref(m);
}

static void test_times_by_instant(void **state)
{
    (void)state;
    char path[RC_SPEC_PATH_MAX];
    json_t *l = tj_parse("{\"podSets\":[{\"template\":{\"metadata\":{\"creationTimestamp\":"
                         "\"2024-01-01T00:00:00Z\"}}}]}");
    json_t *r = tj_parse("{\"podSets\":[{\"template\":{\"metadata\":{\"creationTimestamp\":"
                         "\"2024-01-01T00:00:00.000Z\"}}}]}");
    assert_true(eq(l, r, path, NULL));
    jx_set_new_str(r, "podSets.0.template.metadata.creationTimestamp", "2024-01-01T00:00:01Z");
    assert_false(eq(l, r, path, NULL));
    assert_string_equal(path, "spec.podSets[0].template.metadata.creationTimestamp");
    json_decref(l);
    json_decref(r);
}

static void test_long_paths_are_cut(void **state)
{
    (void)state;
    char key[120];
    memset(key, 'k', sizeof(key) - 1);
    key[sizeof(key) - 1] = '\0';
    /* {"k..":{"k..":{"k..":{"k..":1}}}} against the same with 2 */
    json_t *l = json_integer(1), *r = json_integer(2);
    for (int i = 0; i < 4; i++) {
        l = json_pack("{s:o}", key, l);
        r = json_pack("{s:o}", key, r);
    }
    char path[RC_SPEC_PATH_MAX];
    int prio;
    assert_false(rc_spec_equal(l, r, &prio, path, sizeof(path)));
    assert_true(strlen(path) < sizeof(path));
    assert_int_equal(strncmp(path, "spec.kkk", 8), 0);
    assert_string_equal(path + strlen(path) - 3, "...");
    char small[12];
    assert_false(rc_spec_equal(l, r, &prio, small, sizeof(small)));
    assert_string_equal(small, "spec.kkkkkk");
    assert_false(rc_spec_equal(l, r, &prio, NULL, 0));
    json_decref(l);
    json_decref(r);
}

/* rc_spec_equal: preemption gates are no difference; a priority change is
 * told apart from other changes. */
static void test_spec_equal(void **state)
{
    (void)state;
    json_t *s1 =
        tj_parse("{\"podSets\":[1],\"priority\":1,\"preemptionGates\":[{\"name\":\"g\"}]}");
    json_t *s2 = tj_parse("{\"podSets\":[1],\"priority\":1}");
    json_t *s3 = tj_parse("{\"podSets\":[1],\"priority\":5}");
    json_t *s4 = tj_parse("{\"podSets\":[2],\"priority\":1}");
    int prio;
    assert_true(rc_spec_equal(s1, s2, &prio, NULL, 0));
    assert_false(rc_spec_equal(s2, s3, &prio, NULL, 0));
    assert_true(prio);
    assert_false(rc_spec_equal(s2, s4, &prio, NULL, 0));
    assert_false(prio);
    json_decref(s1);
    json_decref(s2);
    json_decref(s3);
    json_decref(s4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_worker_rendering_is_equal, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pruned_and_defaulted_one_by_one, setup, teardown),
        cmocka_unit_test_setup_teardown(test_quantities_by_value, setup, teardown),
        cmocka_unit_test_setup_teardown(test_real_changes_are_found, setup, teardown),
        cmocka_unit_test_setup_teardown(test_priority_and_gates, setup, teardown),
        cmocka_unit_test(test_times_by_instant),
        cmocka_unit_test(test_long_paths_are_cut),
        cmocka_unit_test(test_spec_equal),
    };
    return cmocka_run_group_tests_name("rc_specdiff", tests, NULL, NULL);
}
