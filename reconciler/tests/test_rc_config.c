#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../config.h"
#include "errf.h"
#include "kinds/kinds.h"

static void test_durations(void **state)
{
    (void)state;
    long ms;
    assert_int_equal(rc_parse_duration("0", &ms), 0);
    assert_int_equal(ms, 0);
    assert_int_equal(rc_parse_duration("90s", &ms), 0);
    assert_int_equal(ms, 90000);
    assert_int_equal(rc_parse_duration("1m30s", &ms), 0);
    assert_int_equal(ms, 90000);
    assert_int_equal(rc_parse_duration("1h2m3s", &ms), 0);
    assert_int_equal(ms, 3723000);
    assert_int_equal(rc_parse_duration("250ms", &ms), 0);
    assert_int_equal(ms, 250);
    assert_int_equal(rc_parse_duration("1.5s", &ms), 0);
    assert_int_equal(ms, 1500);
    const char *bad[] = {"", "10", "s", "-1s", "1x", "1s2", "1e3s", "99999999999999999h", " 1s"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(rc_parse_duration(bad[i], &ms), -1);
    assert_int_equal(rc_parse_duration(NULL, &ms), -1);
}

static void test_defaults_are_kueues(void **state)
{
    (void)state;
    struct rc_config c;
    char err[256];
    rc_config_defaults(&c);
    assert_string_equal(c.origin, "multikueue");
    assert_int_equal(c.gc_interval_ms, 60000);
    assert_int_equal(c.worker_lost_timeout_ms, 15 * 60000);
    assert_int_equal(c.dispatcher, RC_DISPATCH_ALL_AT_ONCE);
    assert_int_equal(c.step_size, 3);
    assert_int_equal(c.round_ms, 5 * 60000);
    assert_int_equal(c.mode, RC_MODE_STANDALONE);
    assert_int_equal(c.leader_elect, 1);
    assert_int_equal(c.data_aware, 1);
    /* not Kueue's: 8 reconcile threads (docs/performance.md, session 26) */
    assert_int_equal(c.workers, 8);
    assert_int_equal(rc_config_validate(&c, err, sizeof(err)), 0);
    /* every managedBy kind of the registry, Pod, StatefulSet (Kueue's
     * names "pod", "statefulset") and LeaderWorkerSet, not Deployment */
    assert_int_equal(c.nintegrations, 16); /* RayService too */
    int job = 0, pytorch = 0, pod = 0, sts = 0;
    for (int i = 0; i < c.nintegrations; i++) {
        job |= strcmp(c.integrations[i], "batch/job") == 0;
        pytorch |= strcmp(c.integrations[i], "kubeflow.org/pytorchjob") == 0;
        pod |= strcmp(c.integrations[i], "pod") == 0;
        sts |= strcmp(c.integrations[i], "statefulset") == 0;
        assert_null(strstr(c.integrations[i], "deployment"));
    }
    assert_true(job && pytorch && pod && sts);
}

static const char *yaml = "origin: team-x\n"
                          "namespace: mk\n"
                          "mode: with-kueue\n"
                          "gcInterval: 30s\n"
                          "workerLostTimeout: 5m\n"
                          "dataAwareDispatch: false\n"
                          "dispatcher: kueue.x-k8s.io/multikueue-dispatcher-incremental\n"
                          "incrementalDispatcher:\n"
                          "  stepSize: 1\n"
                          "  roundTimeout: 2m\n"
                          "integrations: [batch/job]\n"
                          "clientConnection: {qps: 20.5, burst: 40}\n"
                          "workers: 8\n"
                          "logLevel: debug\n"
                          "metricsAddress: 127.0.0.1:9090\n"
                          "leaderElection:\n"
                          "  leaderElect: false\n"
                          "  leaseName: my-lease\n";

static void test_yaml(void **state)
{
    (void)state;
    struct rc_config c;
    char err[256] = "";
    rc_config_defaults(&c);
    assert_int_equal(rc_config_apply_yaml(&c, yaml, strlen(yaml), err, sizeof(err)), 0);
    assert_string_equal(c.origin, "team-x");
    assert_string_equal(c.namespace, "mk");
    assert_int_equal(c.mode, RC_MODE_WITH_KUEUE);
    assert_int_equal(c.gc_interval_ms, 30000);
    assert_int_equal(c.worker_lost_timeout_ms, 300000);
    assert_int_equal(c.data_aware, 0);
    assert_int_equal(c.dispatcher, RC_DISPATCH_INCREMENTAL);
    assert_int_equal(c.step_size, 1);
    assert_int_equal(c.round_ms, 120000);
    assert_int_equal(c.nintegrations, 1);
    assert_string_equal(c.integrations[0], "batch/job");
    assert_true(c.qps > 20.4 && c.qps < 20.6);
    assert_int_equal(c.burst, 40);
    assert_int_equal(c.workers, 8);
    assert_int_equal(c.log_level, LOG_DEBUG);
    assert_string_equal(c.metrics_addr, "127.0.0.1:9090");
    assert_int_equal(c.leader_elect, 0);
    assert_string_equal(c.lease_name, "my-lease");
    assert_int_equal(rc_config_validate(&c, err, sizeof(err)), 0);
}

static void expect_yaml_error(const char *doc, const char *needle)
{
    struct rc_config c;
    char err[256] = "";
    rc_config_defaults(&c);
    assert_int_equal(rc_config_apply_yaml(&c, doc, strlen(doc), err, sizeof(err)), MK_ERR_INVAL);
    if (!strstr(err, needle))
        fail_msg("error \"%s\" does not mention \"%s\"", err, needle);
}

static void test_yaml_errors(void **state)
{
    (void)state;
    expect_yaml_error("orign: x\n", "unknown key orign");
    expect_yaml_error("leaderElection: {leaseNme: x}\n", "leaderElection.leaseNme");
    expect_yaml_error("gcInterval: soon\n", "gcInterval");
    expect_yaml_error("mode: sometimes\n", "mode");
    expect_yaml_error("workers: -1\n", "workers");
    expect_yaml_error("origin: [a, b]\n", "origin must be a scalar");
    expect_yaml_error("a: &x 1\nb: *x\n", "aliases");
    expect_yaml_error("origin: a\norigin: b\n", "twice");
    expect_yaml_error("- a\n- b\n", "mapping");
    expect_yaml_error("origin: [unterminated\n", "YAML");
    expect_yaml_error("integrations: [a, [b]]\n", "integrations");
    expect_yaml_error("workerConnection: {timeout: 10}\n", "workerConnection.timeout");
    expect_yaml_error("leaderElection: {leaderElect: maybe}\n", "leaderElection.leaderElect");
    /* deep nesting is bounded */
    char deep[400] = "";
    memset(deep, '[', 40);
    expect_yaml_error(deep, "YAML");
    /* an empty document is fine */
    struct rc_config c;
    char err[256];
    rc_config_defaults(&c);
    assert_int_equal(rc_config_apply_yaml(&c, "", 0, err, sizeof(err)), 0);
    assert_int_equal(rc_config_apply_yaml(&c, "# nothing\n", 10, err, sizeof(err)), 0);
}

/* Kueue's mapping form ({name}) with mkueue's keys, and plain names */
static void test_external_frameworks(void **state)
{
    (void)state;
    struct rc_config c;
    char err[256] = "";
    const char *doc = "externalFrameworks:\n"
                      "- name: PipelineRun.v1.tekton.dev\n"
                      "- {name: MyJob.v1.example.com, podTemplatePath: spec.pod, countPath: "
                      "spec.n, resource: myjobz}\n"
                      "- Other.v1alpha1.x.io\n";
    rc_config_defaults(&c);
    assert_int_equal(rc_config_apply_yaml(&c, doc, strlen(doc), err, sizeof(err)), 0);
    assert_int_equal(c.nexternal, 3);
    assert_string_equal(c.external[0], "PipelineRun.v1.tekton.dev");
    assert_string_equal(c.external[1], "MyJob.v1.example.com;resource=myjobz;"
                                       "podTemplatePath=spec.pod;countPath=spec.n");
    assert_string_equal(c.external[2], "Other.v1alpha1.x.io");
    assert_int_equal(rc_config_validate(&c, err, sizeof(err)), 0);
    expect_yaml_error("externalFrameworks: [{name: A.v1.x.io, colour: red}]\n",
                      "externalFrameworks");
    expect_yaml_error("externalFrameworks: [{resource: r}]\n", "externalFrameworks");
    char *argv[] = {"rc", "--external-frameworks=Bad.v1", NULL};
    rc_config_defaults(&c);
    assert_int_equal(rc_config_from_args(&c, 2, argv, err, sizeof(err)), 0);
    assert_int_equal(rc_config_validate(&c, err, sizeof(err)), MK_ERR_INVAL);
    assert_non_null(strstr(err, "Kind.version.group"));
}

static void test_flags_override_file(void **state)
{
    (void)state;
    char path[] = "/tmp/rc-config-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, yaml, strlen(yaml)), (ssize_t)strlen(yaml));
    close(fd);
    char *argv[] = {"rc",
                    "--origin=flag-origin",
                    "--config",
                    path,
                    "--workers",
                    "2",
                    "--leader-elect",
                    "--dispatcher=External-x",
                    NULL};
    struct rc_config c;
    char err[256] = "";
    rc_config_defaults(&c);
    assert_int_equal(rc_config_from_args(&c, 8, argv, err, sizeof(err)), 0);
    unlink(path);
    assert_string_equal(c.origin, "flag-origin"); /* the flag wins although it comes first */
    assert_string_equal(c.namespace, "mk");       /* from the file */
    assert_int_equal(c.workers, 2);
    assert_int_equal(c.leader_elect, 1); /* a bare boolean flag */
    assert_int_equal(c.dispatcher, RC_DISPATCH_EXTERNAL);
    assert_string_equal(c.dispatcher_name, "External-x");
}

static void test_flag_errors(void **state)
{
    (void)state;
    struct rc_config c;
    char err[256];
    char *a1[] = {"rc", "--nope", NULL};
    rc_config_defaults(&c);
    assert_int_equal(rc_config_from_args(&c, 2, a1, err, sizeof(err)), MK_ERR_INVAL);
    assert_non_null(strstr(err, "unknown flag --nope"));
    char *a2[] = {"rc", "--workers", NULL};
    assert_int_equal(rc_config_from_args(&c, 2, a2, err, sizeof(err)), MK_ERR_INVAL);
    char *a3[] = {"rc", "--config", "/nonexistent/rc.yaml", NULL};
    assert_int_equal(rc_config_from_args(&c, 3, a3, err, sizeof(err)), MK_ERR_INVAL);
    assert_non_null(strstr(err, "/nonexistent/rc.yaml"));
    char *a4[] = {"rc", "positional", NULL};
    assert_int_equal(rc_config_from_args(&c, 2, a4, err, sizeof(err)), MK_ERR_INVAL);
    char *a5[] = {"rc", "--gc-interval=3", NULL};
    assert_int_equal(rc_config_from_args(&c, 2, a5, err, sizeof(err)), MK_ERR_INVAL);
    assert_non_null(strstr(err, "--gc-interval"));
    char *a6[] = {"rc", "--workers=many", NULL};
    assert_int_equal(rc_config_from_args(&c, 2, a6, err, sizeof(err)), MK_ERR_INVAL);
    assert_non_null(strstr(err, "--workers"));
    char *a7[] = {"rc", "--mode", "sometimes", NULL};
    assert_int_equal(rc_config_from_args(&c, 3, a7, err, sizeof(err)), MK_ERR_INVAL);
    assert_non_null(strstr(err, "--mode"));
}

static void test_flag_forms(void **state)
{
    (void)state;
    struct rc_config c;
    char err[256] = "";
    rc_config_defaults(&c);
    char *a1[] = {"rc",
                  "--leader-elect=false",
                  "--gc-interval",
                  "0",
                  "--mode",
                  "with-kueue",
                  "--integrations",
                  "batch/job, jobset.x-k8s.io/jobset",
                  "--qps=7.5",
                  NULL};
    assert_int_equal(rc_config_from_args(&c, 9, a1, err, sizeof(err)), 0);
    assert_int_equal(c.leader_elect, 0);
    assert_int_equal(c.gc_interval_ms, 0);
    assert_int_equal(c.mode, RC_MODE_WITH_KUEUE);
    assert_int_equal(c.nintegrations, 2);
    assert_string_equal(c.integrations[1], "jobset.x-k8s.io/jobset");
    assert_true(c.qps > 7.4 && c.qps < 7.6);
    char *a2[] = {"rc", "--leader-elect", "--no-leader-elect", NULL};
    assert_int_equal(rc_config_from_args(&c, 3, a2, err, sizeof(err)), 0);
    assert_int_equal(c.leader_elect, 0);
    char *a3[] = {"rc", "--leader-elect", "true", "--dispatcher", "Incremental", NULL};
    assert_int_equal(rc_config_from_args(&c, 5, a3, err, sizeof(err)), 0);
    assert_int_equal(c.leader_elect, 1);
    assert_int_equal(c.dispatcher, RC_DISPATCH_INCREMENTAL);
    assert_string_equal(c.dispatcher_name, RC_DISPATCHER_INCREMENTAL_NAME);
}

static void expect_invalid(void (*mutate)(struct rc_config *), const char *needle)
{
    struct rc_config c;
    char err[256] = "";
    rc_config_defaults(&c);
    mutate(&c);
    assert_int_equal(rc_config_validate(&c, err, sizeof(err)), MK_ERR_INVAL);
    if (!strstr(err, needle))
        fail_msg("error \"%s\" does not mention \"%s\"", err, needle);
}

static void bad_origin(struct rc_config *c)
{
    snprintf(c->origin, sizeof(c->origin), "-bad-");
}
static void bad_step(struct rc_config *c)
{
    c->step_size = 0;
}
static void bad_lease(struct rc_config *c)
{
    c->renew_deadline_ms = c->lease_duration_ms;
}
static void bad_kind(struct rc_config *c)
{
    snprintf(c->integrations[0], sizeof(c->integrations[0]), "batch/cronjob");
}
static void pod_kind(struct rc_config *c)
{
    snprintf(c->integrations[0], sizeof(c->integrations[0]), "/pod");
}
static void no_kinds(struct rc_config *c)
{
    c->nintegrations = 0;
}
static void bad_workers(struct rc_config *c)
{
    c->workers = 65;
}

static void test_validate(void **state)
{
    (void)state;
    expect_invalid(bad_origin, "origin");
    expect_invalid(bad_step, "stepSize");
    expect_invalid(bad_lease, "leaderElection");
    expect_invalid(bad_kind, "unknown job kind batch/cronjob");
    expect_invalid(pod_kind, "integrations");
    expect_invalid(no_kinds, "at least one");
    expect_invalid(bad_workers, "workers");
}

static void test_integration_kinds(void **state)
{
    (void)state;
    char why[256];
    const struct mk_kind *k = rc_integration_kind("batch/job", why, sizeof(why));
    assert_non_null(k);
    assert_string_equal(k->kind, "Job");
    k = rc_integration_kind("jobset.x-k8s.io/JobSet", why, sizeof(why));
    assert_non_null(k);
    assert_string_equal(k->resource, "jobsets");
    assert_non_null(rc_integration_kind("kubeflow.org/pytorchjob", why, sizeof(why)));
    assert_non_null(rc_integration_kind("apps/statefulset", why, sizeof(why)));
    assert_non_null(rc_integration_kind("statefulset", why, sizeof(why)));
    assert_non_null(
        rc_integration_kind("leaderworkerset.x-k8s.io/leaderworkerset", why, sizeof(why)));
    assert_null(rc_integration_kind("job", why, sizeof(why)));
    /* Kueue's name for Pod carries no group */
    k = rc_integration_kind("pod", why, sizeof(why));
    assert_non_null(k);
    assert_string_equal(k->kind, "Pod");
    assert_null(rc_integration_kind("deployment", why, sizeof(why)));
    assert_non_null(strstr(why, "not supported"));
    assert_null(rc_integration_kind("/pod", why, sizeof(why)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_durations),
        cmocka_unit_test(test_defaults_are_kueues),
        cmocka_unit_test(test_yaml),
        cmocka_unit_test(test_yaml_errors),
        cmocka_unit_test(test_external_frameworks),
        cmocka_unit_test(test_flags_override_file),
        cmocka_unit_test(test_flag_errors),
        cmocka_unit_test(test_flag_forms),
        cmocka_unit_test(test_validate),
        cmocka_unit_test(test_integration_kinds),
    };
    return cmocka_run_group_tests_name("rc_config", tests, NULL, NULL);
}
