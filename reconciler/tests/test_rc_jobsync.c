/* Status sync from a worker's copy to the local job (jobsync.h): the patch,
 * the guard for a suspended local Job, finished jobs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/support/test_json.h"

#include "../jobsync.h"
#include "jsonx.h"
#include "patch.h"
#include "kinds/adapters.h"

static void test_job_status_patch(void **state)
{
    (void)state;
    json_t *local = tj_parse("{\"spec\":{\"suspend\":false},\"status\":{\"active\":0,\"old\":1}}");
    json_t *remote = tj_parse("{\"spec\":{},\"status\":{\"active\":1,\"startTime\":\"T\"}}");
    int deferred;
    json_t *p = rc_job_status_patch(&mk_kind_job, local, remote, 1, &deferred);
    assert_false(deferred);
    json_t *want = tj_parse("{\"status\":{\"active\":1,\"startTime\":\"T\",\"old\":null,"
                            "\"uncountedTerminatedPods\":{\"succeeded\":null,\"failed\":null}}}");
    assert_true(json_equal(p, want));
    json_decref(want);
    json_decref(p);
    /* equal: nothing to write */
    assert_null(rc_job_status_patch(&mk_kind_job, remote, remote, 1, &deferred));
    /* the guard: a suspended local Job and a running remote */
    jx_set(local, "spec.suspend", json_true());
    assert_null(rc_job_status_patch(&mk_kind_job, local, remote, 1, &deferred));
    assert_true(deferred);
    /* ... not when the remote finished, nor when managedBy is not honoured */
    assert_non_null(p = rc_job_status_patch(&mk_kind_job, local, remote, 0, &deferred));
    json_decref(p);
    jx_set(remote, "status.conditions", tj_parse("[{\"type\":\"Complete\",\"status\":\"True\"}]"));
    assert_true(rc_job_finished(remote));
    assert_non_null(p = rc_job_status_patch(&mk_kind_job, local, remote, 1, &deferred));
    assert_false(deferred);
    json_decref(p);
    /* JobSet has no such guard */
    jx_del(remote, "status.conditions");
    assert_non_null(p = rc_job_status_patch(&mk_kind_jobset, local, remote, 1, &deferred));
    json_decref(p);
    json_decref(local);
    json_decref(remote);

    /* a running Job's startTime stays: the terminal status of a copy
     * re-created elsewhere (another startTime) still gets through */
    local = tj_parse("{\"spec\":{\"suspend\":false},\"status\":{\"startTime\":\"T1\"}}");
    remote = tj_parse("{\"spec\":{},\"status\":{\"startTime\":\"T2\",\"succeeded\":1,"
                      "\"conditions\":[{\"type\":\"Complete\",\"status\":\"True\"}]}}");
    assert_non_null(p = rc_job_status_patch(&mk_kind_job, local, remote, 1, &deferred));
    assert_null(jx_get(p, "status.startTime"));
    assert_int_equal(jx_int(p, "status.succeeded", 0), 1);
    json_decref(p);
    jx_del(remote, "status.startTime"); /* nor is it cleared */
    assert_non_null(p = rc_job_status_patch(&mk_kind_job, local, remote, 1, &deferred));
    assert_null(json_object_get(json_object_get(p, "status"), "startTime"));
    json_decref(p);
    json_decref(local);
    json_decref(remote);

    /* a cache that never saw the uncounted pod the server still lists: the
     * finished status clears the lists all the same (a merge of {} would not) */
    local = tj_parse("{\"spec\":{\"suspend\":false},\"status\":{\"active\":1}}");
    remote = tj_parse("{\"spec\":{},\"status\":{\"succeeded\":1,\"uncountedTerminatedPods\":{},"
                      "\"conditions\":[{\"type\":\"Complete\",\"status\":\"True\"}]}}");
    assert_non_null(p = rc_job_status_patch(&mk_kind_job, local, remote, 1, &deferred));
    json_t *server =
        tj_parse("{\"active\":1,\"uncountedTerminatedPods\":{\"succeeded\":[\"u1\"]}}");
    assert_int_equal(jp_merge_apply(server, json_object_get(p, "status")), 0);
    assert_int_equal(json_array_size(jx_get(server, "uncountedTerminatedPods.succeeded")), 0);
    assert_null(jx_get(server, "uncountedTerminatedPods.succeeded"));
    assert_int_equal(jx_int(server, "succeeded", 0), 1);
    json_decref(server);
    json_decref(p);
    /* pods the remote still counts are sent as they are */
    jx_set(remote, "status.uncountedTerminatedPods", tj_parse("{\"failed\":[\"u2\"]}"));
    assert_non_null(p = rc_job_status_patch(&mk_kind_job, local, remote, 1, &deferred));
    assert_string_equal(jx_str(p, "status.uncountedTerminatedPods.failed[0]"), "u2");
    json_decref(p);
    json_decref(local);
    json_decref(remote);
}

/* A stopped Job (suspended, its copy removed) shows what the Job controller
 * shows: Kubernetes lets Kueue restore its pod template only then. */
static void test_job_stopped_patch(void **state)
{
    (void)state;
    const char *now = "2026-01-01T00:00:09Z";
    json_t *ran =
        tj_parse("{\"spec\":{\"suspend\":true},\"status\":{\"active\":1,\"ready\":1,"
                 "\"startTime\":\"2026-01-01T00:00:01Z\",\"conditions\":[{\"type\":\"Suspended\","
                 "\"status\":\"False\",\"reason\":\"JobResumed\",\"message\":\"Job resumed\"}]}}");
    json_t *p = rc_job_stopped_patch(&mk_kind_job, ran, now);
    json_t *want = tj_parse(
        "{\"status\":{\"active\":null,\"ready\":0,\"terminating\":0,"
        "\"startTime\":null,\"conditions\":[{\"type\":\"Suspended\","
        "\"status\":\"True\",\"reason\":\"JobSuspended\","
        "\"message\":\"Job suspended\",\"lastTransitionTime\":\"2026-01-01T00:00:09Z\"}]}}");
    assert_true(json_equal(p, want));
    json_decref(want);
    json_decref(p);
    /* running, finished, or already shown stopped: nothing */
    json_t *running = tj_parse("{\"spec\":{\"suspend\":false},\"status\":{\"active\":1}}");
    json_t *done = tj_parse("{\"spec\":{\"suspend\":true},\"status\":{\"active\":1,"
                            "\"conditions\":[{\"type\":\"Complete\",\"status\":\"True\"}]}}");
    json_t *stopped = tj_parse("{\"spec\":{\"suspend\":true},\"status\":{\"ready\":0}}");
    assert_null(rc_job_stopped_patch(&mk_kind_job, running, now));
    assert_null(rc_job_stopped_patch(&mk_kind_job, done, now));
    assert_null(rc_job_stopped_patch(&mk_kind_job, stopped, now));
    assert_null(rc_job_stopped_patch(&mk_kind_jobset, ran, now)); /* batch/Job only */
    json_decref(ran);
    json_decref(running);
    json_decref(done);
    json_decref(stopped);
}

/* RayService: serveConfigV2 edited on the manager goes to the worker's copy;
 * nothing else of the spec, nothing for kinds without such fields */
static void patch_is(json_t *p, const char *want)
{
    json_t *w = tj_parse(want);
    assert_true(json_equal(p, w));
    json_decref(w);
    json_decref(p);
}

static void test_remote_spec_patch(void **state)
{
    (void)state;
    json_t *local = tj_parse("{\"spec\":{\"serveConfigV2\":\"v2\",\"rayClusterConfig\":{"
                             "\"suspend\":false}}}");
    json_t *remote = tj_parse("{\"spec\":{\"serveConfigV2\":\"v1\",\"rayClusterConfig\":{"
                              "\"suspend\":true}},\"status\":{}}");
    json_t *p = rc_remote_spec_patch(&mk_kind_rayservice, local, remote);
    patch_is(p, "{\"spec\":{\"serveConfigV2\":\"v2\"}}");
    assert_null(rc_remote_spec_patch(&mk_kind_raycluster, local, remote));
    jx_set_new_str(remote, "spec.serveConfigV2", "v2");
    assert_null(rc_remote_spec_patch(&mk_kind_rayservice, local, remote));
    /* removed on the manager: removed on the worker */
    jx_del(local, "spec.serveConfigV2");
    p = rc_remote_spec_patch(&mk_kind_rayservice, local, remote);
    patch_is(p, "{\"spec\":{\"serveConfigV2\":null}}");
    json_decref(local);
    json_decref(remote);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_job_status_patch),
        cmocka_unit_test(test_job_stopped_patch),
        cmocka_unit_test(test_remote_spec_patch),
    };
    return cmocka_run_group_tests_name("rc_jobsync", tests, NULL, NULL);
}
