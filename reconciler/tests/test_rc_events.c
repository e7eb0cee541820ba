/* Kubernetes Events about a Workload (events.h): the object, and the
 * recorder against a scripted API server that holds its first answer, so
 * that every emit below happens while the sender is stuck in a post. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/support/test_https.h"
#include "tests/support/test_json.h"

#include "../events.h"
#include "buf.h"
#include "jsonx.h"
#include "kube_client.h"
#include "metrics.h"

static void test_event(void **state)
{
    (void)state;
    json_t *wl = tj_parse("{\"apiVersion\":\"kueue.x-k8s.io/v1beta2\",\"kind\":\"Workload\","
                          "\"metadata\":{\"name\":\"w\",\"namespace\":\"ns\",\"uid\":\"u\"}}");
    json_t *ev = rc_event_build(wl, "Normal", "MultiKueue", "msg", "T");
    assert_string_equal(jx_str(ev, "involvedObject.kind"), "Workload");
    assert_string_equal(jx_str(ev, "involvedObject.uid"), "u");
    assert_string_equal(jx_str(ev, "metadata.namespace"), "ns");
    assert_string_equal(jx_str(ev, "metadata.generateName"), "w.");
    assert_string_equal(jx_str(ev, "reason"), "MultiKueue");
    json_decref(ev);
    json_decref(wl);
}

/* An API server whose first answer waits until the test opens the gate. */
struct gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int open;
};

static int held_handler(const struct th_request *req, struct th_response *resp, void *ud)
{
    (void)req;
    struct gate *g = ud;
    pthread_mutex_lock(&g->mu);
    while (!g->open)
        pthread_cond_wait(&g->cv, &g->mu);
    pthread_mutex_unlock(&g->mu);
    resp->status = 201;
    resp->body = "{\"kind\":\"Event\"}";
    return 0;
}

static void emit_n(struct rc_events *e, const json_t *wl, int n)
{
    for (int i = 0; i < n; i++)
        rc_event_emit(e, wl, "Normal", i ? "Later" : "First", "m");
}

static double dropped_count(struct mt_registry *reg)
{
    struct buf b;
    buf_init(&b, 1 << 20);
    mt_render(reg, &b);
    const char *line = strstr(b.data ? b.data : "", "\nmkueue_events_dropped_total ");
    double v = line ? atof(line + strlen("\nmkueue_events_dropped_total ")) : -1;
    buf_free(&b);
    return v;
}

static void test_recorder_never_waits_and_drops_past_its_cap(void **state)
{
    (void)state;
    alarm(60); /* an emit that waited for the server would hang here */
    struct gate g = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
    struct th_server *s = th_start(NULL);
    assert_non_null(s);
    th_set_handler(s, held_handler, &g);
    struct kcfg cfg = {0};
    cfg.server = strdup(th_url(s));
    cfg.ca_pem = th_read_data("test-ca.pem", &cfg.ca_len);
    cfg.token = strdup("tok");
    pthread_mutex_init(&cfg.lock, NULL);
    struct kc_options o = {.qps = -1, .pool_size = 1};
    char err[256] = "";
    struct kc_client *c = kc_new(&cfg, &o, err, sizeof(err));
    assert_non_null(c);
    struct mt_registry *reg = mt_registry_new();
    struct mt_family *dropped = mt_counter(reg, "mkueue_events_dropped_total", "h", NULL);
    struct rc_events *e = rc_events_new(c, dropped);
    assert_non_null(e);
    json_t *wl = tj_parse("{\"apiVersion\":\"kueue.x-k8s.io/v1beta2\",\"kind\":\"Workload\","
                          "\"metadata\":{\"name\":\"w\",\"namespace\":\"ns\"}}");

    emit_n(e, wl, 1);
    assert_int_equal(th_wait_requests(s, 1, 10000), 0); /* the sender is in its first post */
    emit_n(e, wl, RC_EVENTS_QUEUE_MAX + 3);
    assert_int_equal(rc_events_queued(e), RC_EVENTS_QUEUE_MAX);
    assert_true(dropped_count(reg) == 3.0);

    pthread_mutex_lock(&g.mu);
    g.open = 1;
    pthread_cond_broadcast(&g.cv);
    pthread_mutex_unlock(&g.mu);
    assert_int_equal(th_wait_requests(s, RC_EVENTS_QUEUE_MAX + 1, 30000), 0);
    const struct th_request *first = th_request_at(s, 0);
    assert_string_equal(first->method, "POST");
    assert_string_equal(first->path, "/api/v1/namespaces/ns/events");
    json_t *body = json_loads(first->body, 0, NULL);
    assert_string_equal(jx_str(body, "reason"), "First");
    json_decref(body);
    /* the posts are what the queue held: no more */
    usleep(200 * 1000);
    assert_int_equal(th_nrequests(s), RC_EVENTS_QUEUE_MAX + 1);
    assert_int_equal(rc_events_queued(e), 0);

    rc_events_free(e);
    json_decref(wl);
    mt_registry_free(reg);
    th_free(s);
    free(cfg.server);
    free(cfg.ca_pem);
    free(cfg.token);
    pthread_mutex_destroy(&cfg.lock);
    alarm(0);
}

static void test_free_drops_what_waits(void **state)
{
    (void)state;
    alarm(60);
    struct gate g = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
    struct th_server *s = th_start(NULL);
    th_set_handler(s, held_handler, &g);
    struct kcfg cfg = {0};
    cfg.server = strdup(th_url(s));
    cfg.ca_pem = th_read_data("test-ca.pem", &cfg.ca_len);
    cfg.token = strdup("tok");
    pthread_mutex_init(&cfg.lock, NULL);
    struct kc_options o = {.qps = -1, .pool_size = 1};
    struct rc_events *e = rc_events_new(kc_new(&cfg, &o, NULL, 0), NULL);
    assert_non_null(e);
    json_t *wl = tj_parse("{\"metadata\":{\"name\":\"w\",\"namespace\":\"ns\"}}");
    emit_n(e, wl, 1);
    assert_int_equal(th_wait_requests(s, 1, 10000), 0);
    emit_n(e, wl, 5); /* waiting behind the held post */
    pthread_mutex_lock(&g.mu);
    g.open = 1; /* the held post ends; the sender stops after it */
    pthread_cond_broadcast(&g.cv);
    pthread_mutex_unlock(&g.mu);
    rc_events_free(e); /* ASan: the 5 queued Events are freed, not leaked */
    json_decref(wl);
    th_free(s);
    free(cfg.server);
    free(cfg.ca_pem);
    free(cfg.token);
    pthread_mutex_destroy(&cfg.lock);
    alarm(0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_event),
        cmocka_unit_test(test_recorder_never_waits_and_drops_past_its_cap),
        cmocka_unit_test(test_free_drops_what_waits),
    };
    return cmocka_run_group_tests_name("rc_events", tests, NULL, NULL);
}
