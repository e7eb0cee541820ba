#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/support/test_json.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "jsonx.h"
#include "kinds/adapters.h"
#include "kinds/podgroup.h"

/* The expected hashes are Kueue's getRoleHash of the same pods, computed with
 * Go's encoding/json over k8s.io/api v0.37.2's PodSpec. The map-typed fields
 * come in unsorted (Go sorts them); the struct-typed ones in the API's field
 * order, as the apiserver writes them. */
static void test_role_hash_is_kueues(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        {"{\"containers\":[{\"name\":\"c\",\"image\":\"busybox\",\"resources\":{\"requests\":"
         "{\"cpu\":\"100m\",\"memory\":\"1Gi\"}},\"ports\":[{\"containerPort\":8080,\"protocol\":"
         "\"TCP\"}]}],\"restartPolicy\":\"Never\",\"priority\":0,\"tolerations\":[{\"key\":"
         "\"node.kubernetes.io/not-ready\",\"operator\":\"Exists\",\"effect\":\"NoExecute\","
         "\"tolerationSeconds\":300}],\"nodeSelector\":{\"z\":\"1\",\"a\":\"x<y&z\"}}",
         "2d79af29"},
        {"{\"containers\":[{\"name\":\"c\",\"image\":\"busybox\"}]}", "7aa6c7b8"},
        {"{\"initContainers\":[{\"name\":\"i\",\"image\":\"x\",\"resources\":{\"requests\":"
         "{\"cpu\":\"1\"}}}],\"containers\":[{\"name\":\"c\",\"image\":\"busybox\",\"resources\":"
         "{\"limits\":{\"cpu\":\"2\"},\"requests\":{\"nvidia.com/gpu\":\"1\",\"cpu\":\"500m\"}}}],"
         "\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":"
         "{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"k\",\"operator\":\"In\","
         "\"values\":[\"a\",\"b\"]}]}]}}},\"runtimeClassName\":\"rc\",\"priority\":100}",
         "d4cdc2d5"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *spec = tj_parse(cases[i][0]);
        char h[MK_ROLE_HASH_LEN + 1];
        assert_int_equal(mk_role_hash_of_spec(spec, h), 0);
        assert_string_equal(h, cases[i][1]);
        json_decref(spec);
    }
}

/* pod NAME ROLE-CPU [TOTAL] [PHASE]: a pod of group g, queue q */
static json_t *gpod(const char *name, const char *cpu, const char *total, const char *phase)
{
    char s[1024];
    snprintf(s, sizeof(s),
             "{\"metadata\":{\"name\":\"%s\",\"labels\":{\"kueue.x-k8s.io/pod-group-name\":\"g\","
             "\"kueue.x-k8s.io/queue-name\":\"q\"},\"annotations\":{"
             "\"kueue.x-k8s.io/pod-group-total-count\":\"%s\"}},\"spec\":{\"containers\":[{"
             "\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"%s\"}}}]},\"status\":{"
             "\"phase\":\"%s\"}}",
             name, total ? total : "3", cpu, phase ? phase : "Pending");
    return tj_parse(s);
}

static void test_group_pod_sets_by_role_sorted(void **state)
{
    (void)state;
    json_t *pods = json_array();
    json_array_append_new(pods, gpod("w2", "1", NULL, NULL));
    json_array_append_new(pods, gpod("driver", "2", NULL, NULL));
    json_array_append_new(pods, gpod("w1", "1", NULL, NULL));
    char err[256] = "";
    json_t *ps = mk_pod_group_pod_sets(pods, err, sizeof(err));
    assert_non_null(ps);
    assert_int_equal(json_array_size(ps), 2);
    char h1[16], h2[16];
    assert_int_equal(mk_pod_role(json_array_get(pods, 0), h1, sizeof(h1)), 0);
    assert_int_equal(mk_pod_role(json_array_get(pods, 1), h2, sizeof(h2)), 0);
    const char *first = strcmp(h1, h2) < 0 ? h1 : h2;
    assert_string_equal(jx_str(ps, "0.name"), first);
    assert_int_equal(jx_int(ps, "0.count", 0), first == h1 ? 2 : 1);
    assert_int_equal(jx_int(ps, "1.count", 0), first == h1 ? 1 : 2);
    assert_non_null(jx_get(ps, "0.template.spec.containers"));
    json_decref(ps);
    json_decref(pods);
}

static void test_partial_or_inconsistent_groups_wait(void **state)
{
    (void)state;
    char err[256] = "";
    json_t *pods = json_array();
    json_array_append_new(pods, gpod("a", "1", NULL, NULL));
    json_array_append_new(pods, gpod("b", "1", NULL, NULL));
    assert_null(mk_pod_group_pod_sets(pods, err, sizeof(err)));
    assert_string_equal(err, "'g' group has fewer runnable pods than expected");
    /* a Failed pod does not count */
    json_array_append_new(pods, gpod("c", "1", NULL, "Failed"));
    assert_null(mk_pod_group_pod_sets(pods, err, sizeof(err)));
    assert_string_equal(err, "'g' group has fewer runnable pods than expected");
    json_array_append_new(pods, gpod("d", "1", NULL, "Running"));
    json_t *ps = mk_pod_group_pod_sets(pods, err, sizeof(err));
    assert_non_null(ps);
    assert_int_equal(jx_int(ps, "0.count", 0), 3);
    json_decref(ps);
    json_array_append_new(pods, gpod("e", "1", "4", NULL));
    assert_null(mk_pod_group_pod_sets(pods, err, sizeof(err)));
    assert_string_equal(err,
                        "pods 'a' and 'e' has different 'kueue.x-k8s.io/pod-group-total-count' "
                        "values: 3!=4");
    json_decref(pods);
    json_t *p = gpod("x", "1", "0", NULL);
    assert_int_equal(mk_pod_group_total(p, err, sizeof(err)), -1);
    assert_string_equal(err, "incorrect annotation value 'kueue.x-k8s.io/pod-group-total-count=0': "
                             "group total count should be greater than zero");
    json_decref(p);
}

static void test_role_annotation_and_workload_name(void **state)
{
    (void)state;
    json_t *p = gpod("a", "1", NULL, NULL);
    char h[64], w[320];
    assert_int_equal(mk_pod_role(p, h, sizeof(h)), 0);
    assert_int_equal((int)strlen(h), MK_ROLE_HASH_LEN);
    jx_set_new_str(p, "metadata.annotations[" MK_ROLE_HASH_ANNOTATION "]", "cafe0001");
    assert_int_equal(mk_pod_role(p, h, sizeof(h)), 0);
    assert_string_equal(h, "cafe0001");
    /* a grouped pod's Workload is named after its group; a single pod's as Kueue names it */
    assert_int_equal(mk_job_workload_name(&mk_kind_pod, p, w, sizeof(w)), 0);
    assert_string_equal(w, "g");
    jx_del(p, "metadata.labels[" MK_POD_GROUP_LABEL "]");
    jx_set_new_str(p, "metadata.uid", "u1");
    assert_int_equal(mk_job_workload_name(&mk_kind_pod, p, w, sizeof(w)), 0);
    assert_int_equal(strncmp(w, "pod-a-", 6), 0);
    json_decref(p);
}

/* gpod with a creation time and, when gated, Kueue's admission gate */
static json_t *tpod(const char *name, const char *cpu, const char *total, const char *created,
                    int gated)
{
    json_t *p = gpod(name, cpu, total, NULL);
    jx_set_new_str(p, "metadata.creationTimestamp", created);
    if (gated)
        json_object_set_new(json_object_get(p, "spec"), "schedulingGates",
                            tj_parse("[{\"name\":\"kueue.x-k8s.io/admission\"}]"));
    return p;
}

/* the names of the pods in arr, space-separated */
static const char *names(const json_t *arr)
{
    static char out[256];
    out[0] = 0;
    size_t i;
    json_t *p;
    json_array_foreach(arr, i, p)
    {
        size_t n = strlen(out);
        snprintf(out + n, sizeof(out) - n, "%s%s", n ? " " : "", jx_str(p, "metadata.name"));
    }
    return out;
}

/* Kueue keeps ungated pods first, then the oldest; the rest past the count go */
static void test_group_excess_before_and_after_the_workload(void **state)
{
    (void)state;
    json_t *pods = json_array();
    json_array_append_new(pods, tpod("a", "1", "2", "2026-01-01T00:00:01Z", 1));
    json_array_append_new(pods, tpod("b", "1", "2", "2026-01-01T00:00:03Z", 0));
    json_array_append_new(pods, tpod("c", "1", "2", "2026-01-01T00:00:02Z", 1));
    json_t *failed = tpod("d", "1", "2", "2026-01-01T00:00:00Z", 1);
    jx_set_new_str(failed, "status.phase", "Failed");
    json_array_append_new(pods, failed);
    /* no Workload yet: past the total count, the Failed pod not counted */
    json_t *ex = mk_pod_group_excess(pods, NULL);
    assert_non_null(ex);
    assert_string_equal(names(ex), "c");
    assert_ptr_equal(json_array_get(ex, 0), json_array_get(pods, 2));
    json_decref(ex);
    /* the pod sets count the pods kept (the older c and b), not the first by name */
    json_t *older = json_array();
    json_array_append_new(older, tpod("a", "1", "2", "2026-01-01T00:00:03Z", 1));
    json_array_append_new(older, tpod("b", "1", "2", "2026-01-01T00:00:02Z", 1));
    json_array_append_new(older, tpod("c", "2", "2", "2026-01-01T00:00:01Z", 1));
    char err[256] = "";
    json_t *ps = mk_pod_group_pod_sets(older, err, sizeof(err));
    assert_non_null(ps);
    assert_int_equal(json_array_size(ps), 2);
    assert_int_equal(jx_int(ps, "0.count", 0) + jx_int(ps, "1.count", 0), 2);
    json_decref(ps);
    json_decref(older);
    /* same time: by name */
    jx_set_new_str(json_array_get(pods, 2), "metadata.creationTimestamp", "2026-01-01T00:00:01Z");
    ex = mk_pod_group_excess(pods, NULL);
    assert_string_equal(names(ex), "c");
    json_decref(ex);
    json_array_clear(pods);

    /* a Workload: per role, past its count; a pod of no listed role stays */
    json_array_append_new(pods, tpod("x2", "1", "3", "2026-01-01T00:00:02Z", 1));
    json_array_append_new(pods, tpod("x1", "1", "3", "2026-01-01T00:00:01Z", 1));
    json_array_append_new(pods, tpod("y1", "2", "3", "2026-01-01T00:00:03Z", 1));
    json_array_append_new(pods, tpod("y2", "2", "3", "2026-01-01T00:00:04Z", 1));
    json_array_append_new(pods, tpod("z1", "3", "3", "2026-01-01T00:00:05Z", 1));
    char rx[16], ry[16];
    assert_int_equal(mk_pod_role(json_array_get(pods, 0), rx, sizeof(rx)), 0);
    assert_int_equal(mk_pod_role(json_array_get(pods, 2), ry, sizeof(ry)), 0);
    json_t *sets =
        json_pack("[{s:s,s:i},{s:s,s:i}]", "name", rx, "count", 1, "name", ry, "count", 2);
    ex = mk_pod_group_excess(pods, sets);
    assert_string_equal(names(ex), "x2");
    json_decref(ex);
    /* nothing past its count: none */
    json_object_set_new(json_array_get(sets, 0), "count", json_integer(2));
    ex = mk_pod_group_excess(pods, sets);
    assert_int_equal(json_array_size(ex), 0);
    json_decref(ex);
    json_decref(sets);
    json_decref(pods);
}

/* Kueue's absentPods: per role, its count less its runnable pods; a Failed
 * pod, or one deleted before it was bound, is missing; extra pods of one
 * role do not make up for another's */
static void test_group_absent_pods(void **state)
{
    (void)state;
    json_t *pods = json_array();
    json_array_append_new(pods, gpod("x1", "1", "3", "Running"));
    json_array_append_new(pods, gpod("x2", "1", "3", "Succeeded"));
    json_array_append_new(pods, gpod("y1", "2", "3", "Running"));
    char rx[16], ry[16];
    assert_int_equal(mk_pod_role(json_array_get(pods, 0), rx, sizeof(rx)), 0);
    assert_int_equal(mk_pod_role(json_array_get(pods, 2), ry, sizeof(ry)), 0);
    json_t *sets =
        json_pack("[{s:s,s:i},{s:s,s:i}]", "name", rx, "count", 2, "name", ry, "count", 1);
    assert_int_equal(mk_pod_group_absent(pods, sets), 0);

    jx_set_new_str(json_array_get(pods, 2), "status.phase", "Failed");
    assert_int_equal(mk_pod_group_absent(pods, sets), 1);
    /* a third x does not stand in for the failed y */
    json_array_append_new(pods, gpod("x3", "1", "3", "Pending"));
    assert_int_equal(mk_pod_group_absent(pods, sets), 1);
    /* the replacement y */
    json_array_append_new(pods, gpod("y2", "2", "3", "Pending"));
    assert_int_equal(mk_pod_group_absent(pods, sets), 0);
    /* deleted before it was bound: missing again */
    jx_set_new_str(json_array_get(pods, 4), "metadata.deletionTimestamp", "2026-01-01T00:00:09Z");
    assert_int_equal(mk_pod_group_absent(pods, sets), 1);
    jx_set_new_str(json_array_get(pods, 4), "spec.nodeName", "node-1");
    assert_int_equal(mk_pod_group_absent(pods, sets), 0);
    /* no pods at all: every count */
    json_t *none = json_array();
    assert_int_equal(mk_pod_group_absent(none, sets), 3);
    /* a role that cannot be read: unknown */
    json_object_set_new(json_object_get(json_array_get(pods, 0), "metadata"), "annotations",
                        tj_parse("{\"kueue.x-k8s.io/role-hash\":\"\"}"));
    assert_int_equal(mk_pod_group_absent(pods, sets), -1);
    json_decref(none);
    json_decref(sets);
    json_decref(pods);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_role_hash_is_kueues),
        cmocka_unit_test(test_group_pod_sets_by_role_sorted),
        cmocka_unit_test(test_partial_or_inconsistent_groups_wait),
        cmocka_unit_test(test_role_annotation_and_workload_name),
        cmocka_unit_test(test_group_excess_before_and_after_the_workload),
        cmocka_unit_test(test_group_absent_pods),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
