#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/support/test_json.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "errf.h"
#include "jsonx.h"
#include "kinds/kinds.h"
#include "kinds/podset.h"

static void test_every_kind_of_the_reference_is_registered(void **state)
{
    (void)state;
    const char *gvk[][2] = {
        {"batch/v1", "Job"},
        {"v1", "Pod"},
        {"apps/v1", "Deployment"},
        {"apps/v1", "StatefulSet"},
        {"jobset.x-k8s.io/v1alpha2", "JobSet"},
        {"kubeflow.org/v1", "PyTorchJob"},
        {"kubeflow.org/v1", "TFJob"},
        {"kubeflow.org/v1", "XGBoostJob"},
        {"kubeflow.org/v1", "PaddleJob"},
        {"kubeflow.org/v1", "JAXJob"},
        {"kubeflow.org/v2beta1", "MPIJob"},
        {"trainer.kubeflow.org/v1alpha1", "TrainJob"},
        {"ray.io/v1", "RayJob"},
        {"ray.io/v1", "RayCluster"},
        {"ray.io/v1", "RayService"},
        {"workload.codeflare.dev/v1beta2", "AppWrapper"},
        {"leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet"},
    };
    for (size_t i = 0; i < sizeof(gvk) / sizeof(gvk[0]); i++) {
        const struct mk_kind *k = mk_kind_by_gvk(gvk[i][0], gvk[i][1]);
        assert_non_null(k);
        assert_string_equal(k->kind, gvk[i][1]);
        assert_ptr_equal(mk_kind_by_resource(k->group, k->version, k->resource), k);
    }
    assert_null(mk_kind_by_gvk("batch/v2", "Job"));
    assert_null(mk_kind_by_gvk("v1", "Job"));
    assert_null(mk_kind_by_gvk("apps/v1", "Pod"));
}

static void test_webhook_paths_follow_kueue(void **state)
{
    (void)state;
    char p[256];
    assert_int_equal(mk_webhook_path(mk_kind_by_gvk("batch/v1", "Job"), "mutate", p, sizeof(p)), 0);
    assert_string_equal(p, "/mutate-batch-v1-job");
    assert_int_equal(mk_webhook_path(mk_kind_by_gvk("v1", "Pod"), "validate", p, sizeof(p)), 0);
    assert_string_equal(p, "/validate--v1-pod");
    assert_int_equal(mk_webhook_path(mk_kind_by_gvk("jobset.x-k8s.io/v1alpha2", "JobSet"), "mutate",
                                     p, sizeof(p)),
                     0);
    assert_string_equal(p, "/mutate-jobset-x-k8s-io-v1alpha2-jobset");
    int mutate = -1;
    const struct mk_kind *k =
        mk_kind_by_webhook_path("/validate-kubeflow-org-v2beta1-mpijob", &mutate);
    assert_non_null(k);
    assert_string_equal(k->kind, "MPIJob");
    assert_int_equal(mutate, 0);
    assert_null(mk_kind_by_webhook_path("/mutate-batch-v1-jobs", &mutate));
    assert_null(mk_kind_by_webhook_path("/mutate-batch-v1-jo", &mutate));
    assert_null(mk_kind_by_webhook_path("/mutate-batch.v1-job", &mutate));
    assert_null(mk_kind_by_webhook_path("mutate-batch-v1-job", &mutate));
    assert_null(mk_kind_by_webhook_path("/mutat-batch-v1-job", &mutate));
    assert_null(mk_kind_by_webhook_path("", &mutate));
    /* every kind's two paths, as mk_webhook_path writes them, find it */
    for (size_t i = 0; i < mk_kinds_count(); i++) {
        for (int v = 0; v < 2; v++) {
            char path[512];
            assert_int_equal(
                mk_webhook_path(mk_kind_at(i), v ? "mutate" : "validate", path, sizeof(path)), 0);
            assert_ptr_equal(mk_kind_by_webhook_path(path, &mutate), mk_kind_at(i));
            assert_int_equal(mutate, v);
        }
    }
}

static void test_workload_name_is_kueues(void **state)
{
    (void)state;
    char name[300];
    /* sha1("Job\nbatch\nsample\nuid-1") starts with 4502e */
    assert_int_equal(mk_workload_name("Job", "batch", "sample", "uid-1", name, sizeof(name)), 0);
    assert_string_equal(name, "job-sample-4502e");
    /* long names are truncated to 247 characters before the hash */
    char longname[300];
    memset(longname, 'a', 280);
    longname[280] = '\0';
    assert_int_equal(mk_workload_name("Job", "batch", longname, "u", name, sizeof(name)), 0);
    assert_int_equal(strlen(name), 253);
    assert_int_equal(mk_workload_name("Job", "batch", "", "u", name, sizeof(name)), -1);
    /* Kueue's GetWorkloadNameForPod: the core group is empty,
     * sha1("Pod\n\np1\n0b3c5a5e-1111-2222-3333-444455556666") starts with d44fc */
    assert_int_equal(mk_workload_name("Pod", "", "p1", "0b3c5a5e-1111-2222-3333-444455556666", name,
                                      sizeof(name)),
                     0);
    assert_string_equal(name, "pod-p1-d44fc");
}

/* Kueue's own cases (jobframework's workload_names_test.go, a batch/v1 Job
 * of uid "uid"): with the ShortWorkloadNames gate the prefix is cut to 57,
 * so the name fits a label value; a name short enough is the same either
 * way. */
static void test_short_workload_names(void **state)
{
    (void)state;
    static const char owner[] =
        "marketing-campaign-autumn-2024-region-north-america-department-digital-strategy-sub-"
        "department-social-media-engagement-tracker-and-analytics-dashboard-v2-final-revision-"
        "by-engineering-team-lead-senior-architect-validation-checked-approved-by-legal-and-ops-"
        "dept";
    char name[300];
    assert_int_equal(mk_workload_name("Job", "batch", owner, "uid", name, sizeof(name)), 0);
    assert_int_equal(strlen(name), 253);
    assert_string_equal(name + 247, "-218b8");
    mk_set_short_workload_names(1);
    assert_int_equal(mk_workload_name("Job", "batch", owner, "uid", name, sizeof(name)), 0);
    assert_string_equal(name, "job-marketing-campaign-autumn-2024-region-north-america-d-218b8");
    assert_int_equal(strlen(name), MK_LABEL_VALUE_MAX);
    assert_int_equal(mk_workload_name("Job", "batch", "name", "uid", name, sizeof(name)), 0);
    assert_string_equal(name, "job-name-ef3a1");
    mk_set_short_workload_names(0);
    assert_int_equal(mk_workload_name("Job", "batch", "name", "uid", name, sizeof(name)), 0);
    assert_string_equal(name, "job-name-ef3a1");
}

/* A Workload name longer than a label value holds goes into the annotation
 * of the same name (Kueue's fallback), and a label the job had goes. */
static void test_remote_copy_long_prebuilt_name(void **state)
{
    (void)state;
    const struct mk_kind *k = mk_kind_by_gvk("batch/v1", "Job");
    json_t *job = tj_parse("{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{"
                           "\"name\":\"j\",\"namespace\":\"ns\",\"labels\":{"
                           "\"kueue.x-k8s.io/prebuilt-workload-name\":\"stale\"},"
                           "\"annotations\":{\"kueue.x-k8s.io/prebuilt-workload-name\":\"old\"}},"
                           "\"spec\":{\"template\":{}}}");
    char wl[MK_LABEL_VALUE_MAX + 2];
    memset(wl, 'w', sizeof(wl) - 1);
    wl[sizeof(wl) - 1] = '\0'; /* 64 characters */
    assert_false(mk_prebuilt_fits_label(wl));
    json_t *c = mk_remote_copy(k, job, "o", wl);
    assert_non_null(c);
    assert_string_equal(jx_str(c, "metadata.annotations[kueue.x-k8s.io/prebuilt-workload-name]"),
                        wl);
    assert_null(jx_get(c, "metadata.labels[kueue.x-k8s.io/prebuilt-workload-name]"));
    json_decref(c);
    wl[MK_LABEL_VALUE_MAX] = '\0'; /* 63: a label, the job's annotation gone */
    assert_true(mk_prebuilt_fits_label(wl));
    c = mk_remote_copy(k, job, "o", wl);
    assert_non_null(c);
    assert_string_equal(jx_str(c, "metadata.labels[kueue.x-k8s.io/prebuilt-workload-name]"), wl);
    assert_null(jx_get(c, "metadata.annotations[kueue.x-k8s.io/prebuilt-workload-name]"));
    json_decref(c);
    json_decref(job);
}

static void test_job_pod_sets_and_min_parallelism(void **state)
{
    (void)state;
    char err[256];
    const struct mk_kind *k = mk_kind_by_gvk("batch/v1", "Job");
    json_t *job = tj_parse("{\"metadata\":{\"name\":\"j\",\"annotations\":{"
                           "\"kueue.x-k8s.io/job-min-parallelism\":\"2\"}},"
                           "\"spec\":{\"parallelism\":4,\"completions\":3,"
                           "\"template\":{\"spec\":{\"containers\":[{\"name\":\"c\"}]}}}}");
    json_t *ps = mk_pod_sets(k, job, err, sizeof(err));
    assert_non_null(ps);
    assert_int_equal(json_array_size(ps), 1);
    assert_string_equal(jx_str(ps, "0.name"), "main");
    assert_int_equal(jx_int(ps, "0.count", -1), 3);
    assert_int_equal(jx_int(ps, "0.minCount", -1), 2);
    assert_string_equal(jx_str(ps, "0.template.spec.containers.0.name"), "c");
    json_decref(ps);
    jx_set_new_str(job, "metadata.annotations[kueue.x-k8s.io/job-min-parallelism]", "9");
    assert_null(mk_pod_sets(k, job, err, sizeof(err)));
    assert_non_null(strstr(err, "job-min-parallelism"));
    json_decref(job);
}

/* mk_pod_sets hands out copies to edit; mk_pod_sets_shared the job's own
 * templates, equal to the copies, for reading. */
static void test_pod_sets_copied_or_shared(void **state)
{
    (void)state;
    char err[256];
    const struct mk_kind *k = mk_kind_by_gvk("batch/v1", "Job");
    json_t *job = tj_parse("{\"metadata\":{\"name\":\"j\"},\"spec\":{\"template\":"
                           "{\"spec\":{\"containers\":[{\"name\":\"c\"}]}}}}");
    json_t *before = json_deep_copy(job);
    json_t *copied = mk_pod_sets(k, job, err, sizeof(err));
    json_t *shared = mk_pod_sets_shared(k, job, err, sizeof(err));
    assert_non_null(copied);
    assert_non_null(shared);
    assert_true(json_equal(copied, shared));
    assert_ptr_equal(jx_get(shared, "0.template"), jx_get(job, "spec.template"));
    assert_ptr_not_equal(jx_get(copied, "0.template"), jx_get(job, "spec.template"));
    assert_int_equal(jx_set_new_str(copied, "0.template.spec.containers.0.name", "edited"), 0);
    json_object_clear(jx_get(copied, "0.template"));
    assert_true(json_equal(job, before)); /* the copy's edits stay in the copy */
    json_decref(copied);
    json_decref(shared);
    assert_true(json_equal(job, before)); /* and the shared sets did not change it */
    json_decref(before);
    json_decref(job);
}

static void test_jobset_pod_sets(void **state)
{
    (void)state;
    char err[256];
    const struct mk_kind *k = mk_kind_by_gvk("jobset.x-k8s.io/v1alpha2", "JobSet");
    json_t *js = tj_parse("{\"spec\":{\"replicatedJobs\":["
                          "{\"name\":\"Driver\",\"template\":{\"spec\":{\"template\":{}}}},"
                          "{\"name\":\"workers\",\"replicas\":2,\"template\":{\"spec\":"
                          "{\"parallelism\":3,\"template\":{\"spec\":{}}}}}]}}");
    json_t *ps = mk_pod_sets(k, js, err, sizeof(err));
    assert_non_null(ps);
    assert_string_equal(jx_str(ps, "0.name"), "driver");
    assert_int_equal(jx_int(ps, "0.count", -1), 1);
    assert_string_equal(jx_str(ps, "1.name"), "workers");
    assert_int_equal(jx_int(ps, "1.count", -1), 6);
    json_decref(ps);
    json_decref(js);
    js = tj_parse("{\"spec\":{\"replicatedJobs\":[]}}");
    assert_null(mk_pod_sets(k, js, err, sizeof(err)));
    assert_non_null(strstr(err, "spec.replicatedJobs"));
    json_decref(js);
}

static void test_kubeflow_pod_sets_in_operator_order(void **state)
{
    (void)state;
    char err[256];
    const struct mk_kind *k = mk_kind_by_gvk("kubeflow.org/v1", "TFJob");
    json_t *tf = tj_parse("{\"spec\":{\"tfReplicaSpecs\":{\"Worker\":{\"replicas\":4},"
                          "\"PS\":{\"replicas\":2},\"Chief\":{}}}}");
    json_t *ps = mk_pod_sets(k, tf, err, sizeof(err));
    assert_non_null(ps);
    assert_int_equal(json_array_size(ps), 3);
    assert_string_equal(jx_str(ps, "0.name"), "chief");
    assert_int_equal(jx_int(ps, "0.count", -1), 1);
    assert_string_equal(jx_str(ps, "1.name"), "ps");
    assert_string_equal(jx_str(ps, "2.name"), "worker");
    assert_int_equal(jx_int(ps, "2.count", -1), 4);
    json_decref(ps);
    json_decref(tf);
    assert_string_equal(mk_kind_by_gvk("kubeflow.org/v2beta1", "MPIJob")->managed_by_path,
                        "spec.runPolicy.managedBy");
    /* their own priority class before the templates' (Kueue's PriorityClass()) */
    assert_string_equal(k->priority_class_path, "spec.runPolicy.schedulingPolicy.priorityClass");
    assert_string_equal(mk_kind_by_gvk("kubeflow.org/v2beta1", "MPIJob")->priority_class_path,
                        "spec.runPolicy.schedulingPolicy.priorityClass");
    assert_null(mk_kind_by_gvk("batch/v1", "Job")->priority_class_path);
}

/* Fails naming both sides unless `got` equals the JSON literal `want`. */
static void assert_json_is(const json_t *got, const char *want)
{
    json_t *w = tj_parse(want);
    if (!json_equal(got, w)) {
        char *g = json_dumps(got, JSON_SORT_KEYS | JSON_COMPACT);
        char *e = json_dumps(w, JSON_SORT_KEYS | JSON_COMPACT);
        print_error("got  %s\nwant %s\n", g ? g : "(null)", e ? e : "(null)");
        free(g);
        free(e);
        json_decref(w);
        fail();
    }
    json_decref(w);
}

static void test_ray_and_lws_pod_sets(void **state)
{
    (void)state;
    char err[256];
    json_t *rj = tj_parse("{\"spec\":{\"rayClusterSpec\":{\"headGroupSpec\":{\"template\":{"
                          "\"spec\":{\"containers\":[{\"name\":\"h\",\"image\":\"ray:2.9\"}]}}},"
                          "\"workerGroupSpecs\":[{\"groupName\":\"GPU\",\"replicas\":2,"
                          "\"numOfHosts\":2,\"template\":{}},{\"groupName\":\"z\",\"replicas\":3,"
                          "\"numOfHosts\":0,\"template\":{}}]}}}");
    json_t *ps = mk_pod_sets(mk_kind_by_gvk("ray.io/v1", "RayJob"), rj, err, sizeof(err));
    assert_non_null(ps);
    assert_int_equal(json_array_size(ps), 4);
    assert_string_equal(jx_str(ps, "1.name"), "gpu");
    assert_int_equal(jx_int(ps, "1.count", -1), 4);
    /* Kueue multiplies by numOfHosts only above 1 */
    assert_int_equal(jx_int(ps, "2.count", -1), 3);
    /* Kueue's getSubmitterTemplate, image taken from the head */
    assert_json_is(
        json_array_get(ps, 3),
        "{\"name\":\"submitter\",\"count\":1,\"template\":{\"spec\":{"
        "\"restartPolicy\":\"Never\",\"containers\":[{\"name\":\"ray-job-submitter\","
        "\"image\":\"ray:2.9\",\"resources\":{\"limits\":{\"cpu\":\"1\","
        "\"memory\":\"1Gi\"},\"requests\":{\"cpu\":\"500m\",\"memory\":\"200Mi\"}}}]}}}");
    json_decref(ps);
    /* a submitter template given is taken as it is; other modes have none */
    json_object_set_new(json_object_get(rj, "spec"), "submitterPodTemplate",
                        tj_parse("{\"spec\":{\"containers\":[{\"name\":\"s\"}]}}"));
    ps = mk_pod_sets(mk_kind_by_gvk("ray.io/v1", "RayJob"), rj, err, sizeof(err));
    assert_json_is(jx_get(ps, "3.template"), "{\"spec\":{\"containers\":[{\"name\":\"s\"}]}}");
    json_decref(ps);
    json_object_set_new(json_object_get(rj, "spec"), "submissionMode", json_string("HTTPMode"));
    ps = mk_pod_sets(mk_kind_by_gvk("ray.io/v1", "RayJob"), rj, err, sizeof(err));
    assert_int_equal(json_array_size(ps), 3);
    json_decref(ps);
    json_decref(rj);
    /* no head image to give the default submitter */
    rj = tj_parse("{\"spec\":{\"rayClusterSpec\":{\"headGroupSpec\":{\"template\":{}}}}}");
    assert_null(mk_pod_sets(mk_kind_by_gvk("ray.io/v1", "RayJob"), rj, err, sizeof(err)));
    assert_non_null(strstr(err, "headGroupSpec.template.spec.containers[0].image"));
    json_decref(rj);

    json_t *lws = tj_parse("{\"spec\":{\"leaderWorkerTemplate\":{\"size\":4,"
                           "\"leaderTemplate\":{},\"workerTemplate\":{}}}}");
    ps = mk_pod_sets(mk_kind_by_gvk("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet"), lws, err,
                     sizeof(err));
    assert_non_null(ps);
    assert_string_equal(jx_str(ps, "0.name"), "leader");
    assert_int_equal(jx_int(ps, "1.count", -1), 3);
    json_decref(ps);
    json_decref(lws);
}

static void test_appwrapper_pod_sets_as_the_library_builds_them(void **state)
{
    (void)state;
    char err[256];
    const struct mk_kind *k = mk_kind_by_gvk("workload.codeflare.dev/v1beta2", "AppWrapper");
    /* a declared pod set: only the fields the AppWrapper library copies,
     * defaults filled in, quantities rounded up to milli-units */
    json_t *aw = tj_parse(
        "{\"metadata\":{\"name\":\"aw\"},\"spec\":{\"components\":[{\"podSets\":[{\"replicas\":2,"
        "\"path\":\"template.spec.template\"}],\"template\":{\"apiVersion\":\"batch/v1\","
        "\"kind\":\"Job\",\"spec\":{\"template\":{\"metadata\":{\"labels\":{\"a\":\"b\"},"
        "\"name\":\"x\"},\"spec\":{\"restartPolicy\":\"Never\","
        "\"terminationGracePeriodSeconds\":5,\"tolerations\":[{\"key\":\"t\"}],"
        "\"containers\":[{\"name\":\"c\",\"image\":\"busybox\",\"env\":[{\"name\":\"E\"}],"
        "\"ports\":[{\"containerPort\":80}],\"resources\":{\"requests\":{\"cpu\":\"100m\","
        "\"memory\":\"0.0001\"}}},{\"name\":\"d\",\"image\":\"reg.io:5000/x/y:1.2\","
        "\"command\":[\"sh\"]}]}}}}}]}}");
    json_t *ps = mk_pod_sets(k, aw, err, sizeof(err));
    assert_non_null(ps);
    assert_json_is(
        ps, "[{\"name\":\"aw-0\",\"count\":2,\"template\":{\"metadata\":{\"labels\":{\"a\":\"b\"}},"
            "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"busybox\",\"resources\":{"
            "\"requests\":{\"cpu\":\"100m\",\"memory\":\"1m\"}},"
            "\"terminationMessagePath\":\"/dev/termination-log\","
            "\"terminationMessagePolicy\":\"File\",\"imagePullPolicy\":\"Always\"},"
            "{\"name\":\"d\",\"image\":\"reg.io:5000/x/y:1.2\",\"command\":[\"sh\"],"
            "\"resources\":{},\"terminationMessagePath\":\"/dev/termination-log\","
            "\"terminationMessagePolicy\":\"File\",\"imagePullPolicy\":\"IfNotPresent\"}],"
            "\"restartPolicy\":\"Never\",\"dnsPolicy\":\"ClusterFirst\",\"securityContext\":{},"
            "\"schedulerName\":\"default-scheduler\",\"tolerations\":[{\"key\":\"t\"}],"
            "\"preemptionPolicy\":\"PreemptLowerPriority\"}}}]");
    json_decref(ps);
    json_decref(aw);

    /* no podSets declared: inferred for a JobSet (replicas x min(parallelism,
     * completions)) and a bare Pod, numbered across components */
    aw = tj_parse(
        "{\"metadata\":{\"name\":\"w\"},\"spec\":{\"components\":[{\"template\":{"
        "\"apiVersion\":\"jobset.x-k8s.io/v1alpha2\",\"kind\":\"JobSet\",\"spec\":{"
        "\"replicatedJobs\":[{\"name\":\"a\",\"replicas\":3,\"template\":{\"spec\":{"
        "\"parallelism\":4,\"completions\":2,\"template\":{\"spec\":{\"containers\":[]}}}}},"
        "{\"name\":\"b\",\"template\":{\"spec\":{\"template\":{\"spec\":{}}}}}]}}},"
        "{\"template\":{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"spec\":{\"containers\":[{"
        "\"name\":\"p\",\"image\":\"img@sha256:abc\"}]}}}]}}");
    ps = mk_pod_sets(k, aw, err, sizeof(err));
    assert_non_null(ps);
    assert_int_equal(json_array_size(ps), 3);
    assert_string_equal(jx_str(ps, "0.name"), "w-0");
    assert_int_equal(jx_int(ps, "0.count", -1), 6);
    assert_string_equal(jx_str(ps, "1.name"), "w-1");
    assert_int_equal(jx_int(ps, "1.count", -1), 1);
    assert_int_equal(jx_int(ps, "1.template.spec.terminationGracePeriodSeconds", -1), 30);
    assert_string_equal(jx_str(ps, "2.name"), "w-2");
    assert_string_equal(jx_str(ps, "2.template.spec.restartPolicy"), "Always");
    /* a digest and no tag: not "latest" */
    assert_string_equal(jx_str(ps, "2.template.spec.containers.0.imagePullPolicy"), "IfNotPresent");
    json_decref(ps);
    json_decref(aw);

    /* a path that names no pod template, and nothing to infer */
    aw = tj_parse("{\"metadata\":{\"name\":\"aw\"},\"spec\":{\"components\":[{\"podSets\":[{"
                  "\"path\":\"template.spec.nope\"}],\"template\":{\"spec\":{}}}]}}");
    assert_null(mk_pod_sets(k, aw, err, sizeof(err)));
    assert_non_null(strstr(err, "components[0].podSets[0].path"));
    json_decref(aw);
    aw = tj_parse("{\"metadata\":{\"name\":\"aw\"},\"spec\":{\"components\":[{\"template\":{"
                  "\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\"}}]}}");
    assert_null(mk_pod_sets(k, aw, err, sizeof(err)));
    assert_non_null(strstr(err, "none can be inferred"));
    json_decref(aw);
}

static void test_bad_counts_are_refused(void **state)
{
    (void)state;
    char err[256];
    json_t *job = tj_parse("{\"spec\":{\"parallelism\":\"many\"}}");
    assert_null(mk_pod_sets(mk_kind_by_gvk("batch/v1", "Job"), job, err, sizeof(err)));
    assert_non_null(strstr(err, "parallelism"));
    json_decref(job);
    json_t *d = tj_parse("{\"spec\":{}}");
    assert_null(mk_pod_sets(mk_kind_by_gvk("apps/v1", "Deployment"), d, err, sizeof(err)));
    json_decref(d);
}

static void test_job_remote_copy(void **state)
{
    (void)state;
    const struct mk_kind *k = mk_kind_by_gvk("batch/v1", "Job");
    json_t *job = tj_parse(
        "{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"j\","
        "\"namespace\":\"ns\",\"uid\":\"u1\",\"resourceVersion\":\"7\",\"finalizers\":[\"x\"],"
        "\"ownerReferences\":[{}],\"managedFields\":[{}],\"labels\":{\"kueue.x-k8s.io/queue-name\":"
        "\"team-a\"}},\"spec\":{\"managedBy\":\"kueue.x-k8s.io/multikueue\",\"suspend\":true,"
        "\"ttlSecondsAfterFinished\":60,\"selector\":{\"matchLabels\":{}},\"template\":{"
        "\"metadata\":"
        "{\"labels\":{\"controller-uid\":\"u1\",\"batch.kubernetes.io/controller-uid\":\"u1\","
        "\"job-name\":\"j\",\"batch.kubernetes.io/job-name\":\"j\",\"app\":\"x\"}}}},"
        "\"status\":{\"active\":1}}");
    json_t *c = mk_remote_copy(k, job, "multikueue", "job-j-abcde");
    assert_non_null(c);
    json_t *meta = json_object_get(c, "metadata");
    assert_int_equal(json_object_size(meta), 3); /* name, namespace, labels */
    assert_string_equal(jx_str(c, "metadata.labels[kueue.x-k8s.io/multikueue-origin]"),
                        "multikueue");
    assert_string_equal(jx_str(c, "metadata.labels[kueue.x-k8s.io/queue-name]"), "team-a");
    /* a label, as Kueue's jobframework reads it (constants.PrebuiltWorkloadLabel) */
    assert_string_equal(jx_str(c, "metadata.labels[kueue.x-k8s.io/prebuilt-workload-name]"),
                        "job-j-abcde");
    assert_null(jx_get(c, "metadata.annotations[kueue.x-k8s.io/prebuilt-workload-name]"));
    assert_null(jx_get(c, "spec.managedBy"));
    assert_null(jx_get(c, "spec.ttlSecondsAfterFinished"));
    assert_null(jx_get(c, "spec.selector"));
    assert_null(jx_get(c, "status"));
    assert_true(jx_bool(c, "spec.suspend", 0));
    json_t *labels = jx_get(c, "spec.template.metadata.labels");
    assert_int_equal(json_object_size(labels), 2);
    assert_string_equal(jx_str(labels, "[batch.kubernetes.io/job-name]"), "j");
    /* the original is untouched */
    assert_string_equal(jx_str(job, "spec.managedBy"), MK_MANAGED_BY);
    assert_true(mk_is_managed(k, job));
    assert_false(mk_is_managed(k, c));
    json_decref(c);
    json_decref(job);
}

/* As Kueue's pod MultiKueue adapter: metadata cloned for creation, spec
 * kept, the prebuilt-workload and origin labels added; mkueue also drops
 * the manager's admission gate (other gates stay). */
static void test_pod_remote_copy(void **state)
{
    (void)state;
    const struct mk_kind *k = mk_kind_by_gvk("v1", "Pod");
    json_t *pod = tj_parse(
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"namespace\":"
        "\"ns\",\"uid\":\"u1\",\"labels\":{\"kueue.x-k8s.io/managed\":\"true\"}},\"spec\":{"
        "\"schedulingGates\":[{\"name\":\"kueue.x-k8s.io/admission\"}],\"containers\":[{"
        "\"name\":\"c\"}]},\"status\":{\"phase\":\"Pending\"}}");
    json_t *c = mk_remote_copy(k, pod, "multikueue", "pod-p-abcde");
    assert_non_null(c);
    assert_string_equal(jx_str(c, "metadata.labels[kueue.x-k8s.io/prebuilt-workload-name]"),
                        "pod-p-abcde");
    assert_string_equal(jx_str(c, "metadata.labels[kueue.x-k8s.io/multikueue-origin]"),
                        "multikueue");
    assert_null(jx_get(c, "spec.schedulingGates"));
    assert_null(jx_get(c, "metadata.uid"));
    assert_null(jx_get(c, "status"));
    assert_string_equal(jx_str(c, "spec.containers[0].name"), "c");
    /* the manager's pod keeps its gate; a pod without managedBy is Kueue's */
    assert_int_equal(json_array_size(jx_get(pod, "spec.schedulingGates")), 1);
    json_decref(c);
    json_t *two = tj_parse("{\"spec\":{\"schedulingGates\":[{\"name\":\"other\"},{\"name\":"
                           "\"kueue.x-k8s.io/admission\"}]}}");
    mk_pod_drop_admission_gate(json_object_get(two, "spec"));
    assert_int_equal(json_array_size(jx_get(two, "spec.schedulingGates")), 1);
    assert_string_equal(jx_str(two, "spec.schedulingGates[0].name"), "other");
    json_decref(two);
    json_decref(pod);
}

static void test_statefulset_copy_carries_origin_uid(void **state)
{
    (void)state;
    json_t *sts = tj_parse("{\"metadata\":{\"name\":\"s\",\"uid\":\"u9\"},\"spec\":{}}");
    json_t *c = mk_remote_copy(mk_kind_by_gvk("apps/v1", "StatefulSet"), sts, "o", "wl");
    assert_string_equal(jx_str(c, "metadata.annotations[kueue.x-k8s.io/multikueue-origin-uid]"),
                        "u9");
    json_decref(c);
    json_t *lws = tj_parse("{\"metadata\":{\"name\":\"l\",\"uid\":\"u8\"},\"spec\":{}}");
    c = mk_remote_copy(mk_kind_by_gvk("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet"), lws, "o",
                       "wl");
    assert_null(jx_get(c, "metadata.labels[kueue.x-k8s.io/prebuilt-workload-name]"));
    json_decref(c);
    json_decref(sts);
    json_decref(lws);
}

static void test_rayservice_pod_sets_suspend_and_spec_sync(void **state)
{
    (void)state;
    char err[256];
    const struct mk_kind *k = mk_kind_by_gvk("ray.io/v1", "RayService");
    json_t *rs = tj_parse("{\"spec\":{\"managedBy\":\"kueue.x-k8s.io/multikueue\","
                          "\"serveConfigV2\":\"applications: []\",\"rayClusterConfig\":{"
                          "\"suspend\":true,\"headGroupSpec\":{\"template\":{}},"
                          "\"workerGroupSpecs\":[{\"groupName\":\"Cpu\",\"replicas\":3,"
                          "\"template\":{}}]}}}");
    json_t *ps = mk_pod_sets(k, rs, err, sizeof(err));
    assert_non_null(ps);
    assert_int_equal(json_array_size(ps), 2); /* head and the group: no submitter */
    assert_string_equal(jx_str(ps, "0.name"), "head");
    assert_string_equal(jx_str(ps, "1.name"), "cpu");
    assert_int_equal(jx_int(ps, "1.count", -1), 3);
    json_decref(ps);
    /* Kueue suspends the RayService's cluster, not the service */
    assert_string_equal(k->suspend_path, "spec.rayClusterConfig.suspend");
    assert_string_equal(k->spec_sync_paths[0], "spec.serveConfigV2");
    assert_null(k->spec_sync_paths[1]);
    json_t *c = mk_remote_copy(k, rs, "o", "wl");
    assert_null(jx_get(c, "spec.managedBy"));
    assert_string_equal(jx_str(c, "spec.serveConfigV2"), "applications: []");
    json_decref(c);
    json_decref(rs);
}

static void test_external_kind(void **state)
{
    (void)state;
    char err[256];
    assert_int_equal(mk_kinds_add_external("Bad", err, sizeof(err)), MK_ERR_INVAL);
    assert_int_equal(mk_kinds_add_external("Kind.v1", err, sizeof(err)), MK_ERR_INVAL);
    assert_int_equal(mk_kinds_add_external("Kind.v1.", err, sizeof(err)), MK_ERR_INVAL);
    assert_int_equal(mk_external_check("K.v1.x.io;color=red", err, sizeof(err)), MK_ERR_INVAL);
    assert_int_equal(mk_external_check("K.v1.x.io;resource=", err, sizeof(err)), MK_ERR_INVAL);
    assert_int_equal(mk_external_check("K.v1.x.io;resource=a/b", err, sizeof(err)), MK_ERR_INVAL);
    /* a built-in kind cannot be taken over */
    assert_int_equal(mk_kinds_add_external("Job.v1.batch", err, sizeof(err)), MK_ERR_INVAL);
    assert_int_equal(mk_kinds_add_external("MyJob.v1.example.com", err, sizeof(err)), 0);
    const struct mk_kind *k = mk_kind_by_gvk("example.com/v1", "MyJob");
    assert_non_null(k);
    assert_string_equal(k->resource, "myjobs");
    assert_string_equal(k->managed_by_path, "spec.managedBy");
    assert_null(k->suspend_path);
    assert_int_equal(k->status_sync, MK_STATUS_WHOLE);
    assert_int_equal(mk_kinds_add_external("MyJob.v1.example.com", err, sizeof(err)),
                     MK_ERR_INVAL); /* twice */
    char p[128];
    assert_int_equal(mk_webhook_path(k, "mutate", p, sizeof(p)), 0);
    assert_string_equal(p, "/mutate-example-com-v1-myjob");

    /* one pod set from spec.template, count 1 */
    json_t *j = tj_parse("{\"spec\":{\"managedBy\":\"kueue.x-k8s.io/multikueue\",\"replicas\":4,"
                         "\"template\":{\"spec\":{\"containers\":[{\"name\":\"c\"}]}}},"
                         "\"status\":{\"phase\":\"Running\"}}");
    json_t *ps = mk_pod_sets(k, j, err, sizeof(err));
    assert_json_is(ps, "[{\"name\":\"main\",\"count\":1,\"template\":{\"spec\":{\"containers\":["
                       "{\"name\":\"c\"}]}}}]");
    json_decref(ps);
    /* the generic copy: managedBy cleared, status dropped, the rest kept */
    json_t *c = mk_remote_copy(k, j, "o", "wl");
    assert_null(jx_get(c, "spec.managedBy"));
    assert_null(jx_get(c, "status"));
    assert_int_equal(jx_int(c, "spec.replicas", 0), 4);
    assert_string_equal(jx_str(c, "metadata.labels[kueue.x-k8s.io/prebuilt-workload-name]"), "wl");
    json_decref(c);

    /* a configured template path, count path and resource */
    assert_int_equal(mk_kinds_add_external("Pipe.v1beta1.tekton.dev;resource=pipez;"
                                           "podTemplatePath=spec.pod;countPath=spec.replicas",
                                           err, sizeof(err)),
                     0);
    k = mk_kind_by_resource("tekton.dev", "v1beta1", "pipez");
    assert_non_null(k);
    assert_string_equal(k->kind, "Pipe");
    json_t *pj = tj_parse("{\"spec\":{\"replicas\":3,\"pod\":{\"spec\":{}}}}");
    ps = mk_pod_sets(k, pj, err, sizeof(err));
    assert_int_equal(jx_int(ps, "0.count", -1), 3);
    json_decref(ps);
    /* a job without a template there gets a message naming the path */
    assert_null(mk_pod_sets(k, j, err, sizeof(err)));
    assert_non_null(strstr(err, "spec.pod"));
    json_decref(pj);
    json_decref(j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_kind_of_the_reference_is_registered),
        cmocka_unit_test(test_webhook_paths_follow_kueue),
        cmocka_unit_test(test_workload_name_is_kueues),
        cmocka_unit_test(test_short_workload_names),
        cmocka_unit_test(test_remote_copy_long_prebuilt_name),
        cmocka_unit_test(test_job_pod_sets_and_min_parallelism),
        cmocka_unit_test(test_pod_sets_copied_or_shared),
        cmocka_unit_test(test_jobset_pod_sets),
        cmocka_unit_test(test_kubeflow_pod_sets_in_operator_order),
        cmocka_unit_test(test_ray_and_lws_pod_sets),
        cmocka_unit_test(test_appwrapper_pod_sets_as_the_library_builds_them),
        cmocka_unit_test(test_bad_counts_are_refused),
        cmocka_unit_test(test_job_remote_copy),
        cmocka_unit_test(test_pod_remote_copy),
        cmocka_unit_test(test_statefulset_copy_carries_origin_uid),
        cmocka_unit_test(test_rayservice_pod_sets_suspend_and_spec_sync),
        cmocka_unit_test(test_external_kind),
    };
    return cmocka_run_group_tests_name("kinds", tests, NULL, NULL);
}
