/* The reconciler's metrics and probe endpoint (rc_metrics.h) over HTTP. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../rc_metrics.h"
#include "buf.h"
#include "tests/support/test_http.h"

static int ready_flag;
static int is_ready(void *ud)
{
    (void)ud;
    return ready_flag;
}

static void test_metrics_endpoint(void **state)
{
    (void)state;
    struct rc_metrics m;
    char err[256];
    assert_int_equal(rc_metrics_init(&m), 0);
    rc_metrics_set_role("leader");
    rc_metric_dispatched(&m, "team-a", "worker-1");
    rc_metric_admitted(&m, "team-a", "worker-1");
    rc_metric_remote_error(&m, "worker-2", 0);
    rc_metric_remote_error(&m, "worker-2", 503);
    struct rc_http *h = rc_http_start("127.0.0.1:0", &m, is_ready, NULL, NULL, err, sizeof(err));
    assert_non_null(h);
    int port = rc_http_port(h);
    assert_true(port > 0);
    struct buf b;
    buf_init(&b, BUF_CAP_METRICS);
    assert_int_equal(th_http_get(port, "/metrics", &b, NULL, 0), 200);
    const char *text = buf_cstr(&b);
    assert_non_null(strstr(text, "multikueue_workloads_dispatched_total{cluster_queue=\"team-a\","
                                 "cluster=\"worker-1\",replica_role=\"leader\"} 1"));
    assert_non_null(strstr(text, "multikueue_workloads_admitted_total{cluster_queue=\"team-a\","
                                 "cluster=\"worker-1\",replica_role=\"leader\"} 1"));
    assert_non_null(
        strstr(text, "mkueue_remote_api_errors_total{cluster=\"worker-2\",code=\"transport\"} 1"));
    assert_non_null(
        strstr(text, "mkueue_remote_api_errors_total{cluster=\"worker-2\",code=\"503\"} 1"));
    buf_reset(&b);
    assert_int_equal(th_http_get(port, "/healthz", &b, NULL, 0), 200);
    ready_flag = 0;
    assert_int_equal(th_http_get(port, "/readyz", &b, NULL, 0), 503);
    ready_flag = 1;
    assert_int_equal(th_http_get(port, "/readyz", &b, NULL, 0), 200);
    assert_int_equal(th_http_get(port, "/nope", &b, NULL, 0), 404);
    buf_free(&b);
    rc_http_stop(h);
    assert_null(rc_http_start("nonsense", &m, NULL, NULL, NULL, err, sizeof(err)));
    assert_null(rc_http_start("example.com:80", &m, NULL, NULL, NULL, err, sizeof(err)));
    rc_metrics_set_role("standalone");
    rc_metrics_free(&m);
}

static double value_of(struct mt_family *f, const char *kind)
{
    const char *v[] = {kind, kind, ""};
    double d = -1;
    assert_int_equal(mt_value(f, v, &d), 0);
    return d;
}

/* A work queue wired as main.c wires its two: client-go's workqueue_*
 * series by kind of key, in the text a dashboard reads. */
static void test_queue_metrics(void **state)
{
    (void)state;
    struct rc_metrics m;
    assert_int_equal(rc_metrics_init(&m), 0);
    struct wq_observer o;
    rc_metrics_queue_observer(&m, &o);
    struct wq_options qo = {.base_delay_ms = 10, .observer = &o};
    struct wq *q = wq_new(&qo);
    assert_non_null(q);
    assert_int_equal(value_of(m.wq_depth, "quota"), 0); /* every kind from the start */
    wq_add(q, "w/ns/a");
    wq_add(q, "w/ns/a");
    wq_add(q, "w/ns/b");
    wq_add(q, "q/cq");
    assert_int_equal(value_of(m.wq_adds, "workload"), 2);
    assert_int_equal(value_of(m.wq_depth, "workload"), 2);
    assert_int_equal(value_of(m.wq_depth, "quota"), 1);
    usleep(20000);
    char *k = NULL;
    assert_int_equal(wq_get_timeout(q, &k, 1000), 0);
    assert_string_equal(k, "w/ns/a");
    assert_int_equal(value_of(m.wq_depth, "workload"), 1);
    usleep(30000);
    struct wq *const queues[] = {q, NULL};
    rc_metrics_queue_progress(&m, queues, 2);
    assert_true(value_of(m.wq_longest, "workload") >= 0.03);
    assert_true(value_of(m.wq_unfinished, "workload") >= 0.03);
    assert_true(value_of(m.wq_longest, "quota") == 0);
    wq_add_rate_limited(q, k);
    wq_done(q, k);
    free(k);
    rc_metrics_queue_progress(&m, queues, 2);
    assert_true(value_of(m.wq_longest, "workload") == 0);
    assert_int_equal(value_of(m.wq_retries, "workload"), 1);
    struct buf b;
    buf_init(&b, BUF_CAP_METRICS);
    assert_int_equal(mt_render(m.reg, &b), 0);
    const char *text = buf_cstr(&b);
    /* waited 20 ms or more: not in the 10 ms bucket, in the 100 ms one */
    assert_non_null(strstr(text, "workqueue_queue_duration_seconds_bucket{name=\"workload\","
                                 "controller=\"workload\",le=\"0.01\"} 0"));
    assert_non_null(strstr(text, "workqueue_queue_duration_seconds_bucket{name=\"workload\","
                                 "controller=\"workload\",le=\"0.1\"} 1"));
    assert_non_null(strstr(text, "workqueue_work_duration_seconds_count{name=\"workload\","
                                 "controller=\"workload\"} 1"));
    assert_non_null(strstr(text, "workqueue_depth{name=\"job\",controller=\"job\","
                                 "priority=\"\"} 0"));
    assert_non_null(strstr(text, "workqueue_retries_total{name=\"workload\","
                                 "controller=\"workload\"} 1"));
    buf_free(&b);
    wq_free(q);
    rc_metrics_free(&m);
}

/* A request to each cluster: counted and timed under its own host, the
 * time only for a request that went out */
static void test_request_metrics(void **state)
{
    (void)state;
    struct rc_metrics m;
    assert_int_equal(rc_metrics_init(&m), 0);
    struct kc_status created = {.http = 201, .duration_s = 0.3};
    struct kc_status refused = {.http = 0, .throttled_s = 0.01};
    rc_metric_request(&m, "manager:6443", "POST", &created);
    rc_metric_request(&m, "worker-1:6443", "POST", &created);
    rc_metric_request(&m, "worker-1:6443", "POST", &refused);
    struct buf b;
    buf_init(&b, BUF_CAP_METRICS);
    assert_int_equal(mt_render(m.reg, &b), 0);
    const char *text = buf_cstr(&b);
    assert_non_null(strstr(text, "rest_client_requests_total{code=\"201\",host=\"manager:6443\","
                                 "method=\"POST\"} 1"));
    assert_non_null(strstr(text, "rest_client_requests_total{code=\"<error>\","
                                 "host=\"worker-1:6443\",method=\"POST\"} 1"));
    /* 0.3 s: over the 0.25 bucket, in the 0.5 one; the refused one not timed */
    assert_non_null(strstr(text, "rest_client_request_duration_seconds_bucket{verb=\"POST\","
                                 "host=\"worker-1:6443\",le=\"0.25\"} 0"));
    assert_non_null(strstr(text, "rest_client_request_duration_seconds_bucket{verb=\"POST\","
                                 "host=\"worker-1:6443\",le=\"0.5\"} 1"));
    assert_non_null(strstr(text, "rest_client_request_duration_seconds_count{verb=\"POST\","
                                 "host=\"worker-1:6443\"} 1"));
    assert_non_null(strstr(text, "rest_client_rate_limiter_duration_seconds_count{verb=\"POST\","
                                 "host=\"worker-1:6443\"} 2"));
    buf_free(&b);
    rc_metrics_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_metrics_endpoint),
        cmocka_unit_test(test_queue_metrics),
        cmocka_unit_test(test_request_metrics),
    };
    return cmocka_run_group_tests_name("rc_metrics", tests, NULL, NULL);
}
