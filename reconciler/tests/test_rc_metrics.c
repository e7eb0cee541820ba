/* The reconciler's metrics and probe endpoint (rc_metrics.h) over HTTP. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_metrics_endpoint),
    };
    return cmocka_run_group_tests_name("rc_metrics", tests, NULL, NULL);
}
