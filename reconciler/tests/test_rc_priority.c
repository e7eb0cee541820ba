/* A job's Workload priority (priority.h), as Kueue's jobframework resolves
 * and updates it: the priority-class label's WorkloadPriorityClass before the
 * job's own PriorityClass (Kubeflow's runPolicy) and the pod's, the global default, errors for
 * missing classes, and when an existing Workload follows a label change. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/support/test_json.h"

#include <string.h>

#include "../priority.h"
#include "jsonx.h"

struct fx {
    struct kcache *wpcs, *pcs;
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    f->wpcs = kcache_new();
    f->pcs = kcache_new();
    kcache_upsert(f->wpcs, tj_parse("{\"metadata\":{\"name\":\"high\"},\"value\":1000}"));
    kcache_upsert(f->wpcs, tj_parse("{\"metadata\":{\"name\":\"low\"},\"value\":-5}"));
    kcache_upsert(f->pcs, tj_parse("{\"metadata\":{\"name\":\"pod-pc\"},\"value\":77}"));
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    kcache_free(f->wpcs);
    kcache_free(f->pcs);
    free(f);
    return 0;
}

static json_t *podsets(const char *pc)
{
    json_t *ps = tj_parse("[{\"name\":\"a\",\"template\":{\"spec\":{}}},"
                          "{\"name\":\"b\",\"template\":{\"spec\":{}}}]");
    if (pc) /* on the second pod set: the first non-empty one counts */
        jx_set_new_str(ps, "1.template.spec.priorityClassName", pc);
    return ps;
}

static void test_label_wins_over_pod_priority_class(void **state)
{
    struct fx *f = *state;
    json_t *ps = podsets("pod-pc");
    struct rc_priority p;
    char err[128];
    assert_int_equal(rc_priority_resolve("high", NULL, ps, f->wpcs, f->pcs, &p, err, sizeof(err)),
                     0);
    assert_string_equal(p.group, "kueue.x-k8s.io");
    assert_string_equal(p.kind, "WorkloadPriorityClass");
    assert_string_equal(p.name, "high");
    assert_int_equal(p.value, 1000);
    /* no label: the pod PriorityClass */
    assert_int_equal(rc_priority_resolve("", NULL, ps, f->wpcs, f->pcs, &p, err, sizeof(err)), 0);
    assert_string_equal(p.group, "scheduling.k8s.io");
    assert_string_equal(p.kind, "PriorityClass");
    assert_string_equal(p.name, "pod-pc");
    assert_int_equal(p.value, 77);
    json_decref(ps);
}

/* Kubeflow's and MPIJob's runPolicy.schedulingPolicy.priorityClass (kinds.h
 * priority_class_path): before the pod templates', after the label, and a
 * missing one an error as the pod's (Kueue's JobWithPriorityClass) */
static void test_job_class_before_pod_class(void **state)
{
    struct fx *f = *state;
    json_t *ps = podsets("gone-pc");
    struct rc_priority p;
    char err[128];
    kcache_upsert(f->pcs, tj_parse("{\"metadata\":{\"name\":\"job-pc\"},\"value\":55}"));
    assert_int_equal(rc_priority_resolve(NULL, "job-pc", ps, f->wpcs, f->pcs, &p, err, sizeof(err)),
                     0);
    assert_string_equal(p.kind, "PriorityClass");
    assert_string_equal(p.name, "job-pc");
    assert_int_equal(p.value, 55);
    assert_int_equal(
        rc_priority_resolve("low", "job-pc", ps, f->wpcs, f->pcs, &p, err, sizeof(err)), 0);
    assert_string_equal(p.name, "low");
    assert_int_equal(p.value, -5);
    /* empty: the pod templates' (here missing: its error) */
    assert_int_equal(rc_priority_resolve(NULL, "", ps, f->wpcs, f->pcs, &p, err, sizeof(err)),
                     MK_ERR);
    assert_string_equal(err, "priorityclasses.scheduling.k8s.io \"gone-pc\" not found");
    assert_int_equal(rc_priority_resolve(NULL, "nope", ps, f->wpcs, f->pcs, &p, err, sizeof(err)),
                     MK_ERR);
    assert_string_equal(err, "priorityclasses.scheduling.k8s.io \"nope\" not found");
    json_decref(ps);
}

static void test_missing_classes_are_errors_with_kueues_text(void **state)
{
    struct fx *f = *state;
    json_t *ps = podsets("gone-pc");
    struct rc_priority p;
    char err[128];
    assert_int_equal(rc_priority_resolve("nope", NULL, ps, f->wpcs, f->pcs, &p, err, sizeof(err)),
                     MK_ERR);
    assert_string_equal(err, "workloadpriorityclasses.kueue.x-k8s.io \"nope\" not found");
    /* no cache at all (CRD missing): the same answer, never a guess */
    assert_int_equal(rc_priority_resolve("high", NULL, ps, NULL, f->pcs, &p, err, sizeof(err)),
                     MK_ERR);
    assert_int_equal(rc_priority_resolve(NULL, NULL, ps, f->wpcs, f->pcs, &p, err, sizeof(err)),
                     MK_ERR);
    assert_string_equal(err, "priorityclasses.scheduling.k8s.io \"gone-pc\" not found");
    json_decref(ps);
}

static void test_global_default_then_nothing(void **state)
{
    struct fx *f = *state;
    json_t *ps = podsets(NULL);
    struct rc_priority p;
    char err[128];
    assert_int_equal(rc_priority_resolve(NULL, NULL, ps, f->wpcs, f->pcs, &p, err, sizeof(err)), 0);
    assert_null(p.group);
    assert_string_equal(p.name, "");
    assert_int_equal(p.value, 0);
    /* two global defaults (a race of their creators): the lowest value */
    kcache_upsert(f->pcs,
                  tj_parse("{\"metadata\":{\"name\":\"d1\"},\"value\":9,\"globalDefault\":true}"));
    kcache_upsert(f->pcs,
                  tj_parse("{\"metadata\":{\"name\":\"d2\"},\"value\":3,\"globalDefault\":true}"));
    assert_int_equal(rc_priority_resolve(NULL, NULL, ps, f->wpcs, f->pcs, &p, err, sizeof(err)), 0);
    assert_string_equal(p.kind, "PriorityClass");
    assert_string_equal(p.name, "d2");
    assert_int_equal(p.value, 3);
    json_decref(ps);
}

static void test_needs_update_as_kueue(void **state)
{
    (void)state;
    json_t *none = tj_parse("{\"spec\":{\"priority\":0}}");
    json_t *wpc = tj_parse("{\"spec\":{\"priorityClassRef\":{\"group\":\"kueue.x-k8s.io\","
                           "\"kind\":\"WorkloadPriorityClass\",\"name\":\"high\"}}}");
    json_t *pc = tj_parse("{\"spec\":{\"priorityClassRef\":{\"group\":\"scheduling.k8s.io\","
                          "\"kind\":\"PriorityClass\",\"name\":\"pod-pc\"}}}");
    assert_int_equal(rc_priority_needs_update(none, NULL), 0);
    assert_int_equal(rc_priority_needs_update(none, ""), 0);
    assert_int_equal(rc_priority_needs_update(none, "high"), 1); /* added */
    assert_int_equal(rc_priority_needs_update(wpc, "high"), 0);
    assert_int_equal(rc_priority_needs_update(wpc, "low"), 1); /* changed */
    assert_int_equal(rc_priority_needs_update(wpc, NULL), 1);  /* removed */
    assert_int_equal(rc_priority_needs_update(pc, "high"), 0); /* a pod class is kept */
    assert_int_equal(rc_priority_needs_update(pc, NULL), 0);
    json_decref(none);
    json_decref(wpc);
    json_decref(pc);
}

static void test_apply_and_patch(void **state)
{
    (void)state;
    struct rc_priority p = {"kueue.x-k8s.io", "WorkloadPriorityClass", "high", 1000};
    json_t *wl = tj_parse("{\"spec\":{\"priority\":0}}");
    assert_int_equal(rc_priority_apply(wl, &p), 0);
    assert_int_equal(jx_int(wl, "spec.priority", -1), 1000);
    assert_string_equal(jx_str(wl, "spec.priorityClassRef.kind"), "WorkloadPriorityClass");
    json_t *patch = rc_priority_patch(&p, "42");
    assert_string_equal(jx_str(patch, "metadata.resourceVersion"), "42");
    assert_true(json_equal(jx_get(patch, "spec"), jx_get(wl, "spec")));
    json_decref(patch);
    /* no class: the reference goes (null in the merge patch) */
    struct rc_priority none = {0};
    assert_int_equal(rc_priority_apply(wl, &none), 0);
    assert_null(jx_get(wl, "spec.priorityClassRef"));
    assert_int_equal(jx_int(wl, "spec.priority", -1), 0);
    patch = rc_priority_patch(&none, "43");
    assert_true(json_is_null(jx_get(patch, "spec.priorityClassRef")));
    json_decref(patch);
    json_decref(wl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_label_wins_over_pod_priority_class, setup, teardown),
        cmocka_unit_test_setup_teardown(test_job_class_before_pod_class, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_classes_are_errors_with_kueues_text, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_global_default_then_nothing, setup, teardown),
        cmocka_unit_test(test_needs_update_as_kueue),
        cmocka_unit_test(test_apply_and_patch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
