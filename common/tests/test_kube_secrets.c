/* The kubeconfig Secret poller: only named Secrets, only their kubeconfig key. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "jsonx.h"
#include "kube_cache.h"
#include "kube_client.h"
#include "kube_secrets.h"
#include "log.h"
#include "support/test_https.h"

#define SECRET(name, rv, data)                                                                     \
    "{\"kind\":\"Secret\",\"metadata\":{\"name\":\"" name "\",\"namespace\":\"mk\","               \
    "\"resourceVersion\":\"" rv "\",\"labels\":{\"a\":\"b\"}},\"type\":\"Opaque\","                \
    "\"data\":" data "}"

static void test_slim_keeps_only_the_kubeconfig(void **state)
{
    (void)state;
    json_t *s = json_loads(SECRET("w1", "7",
                                  "{\"kubeconfig\":\"a2M=\",\"ca.key\":\"c2VjcmV0\","
                                  "\"token\":\"dG9r\"}"),
                           0, NULL);
    assert_non_null(s);
    json_t *slim = ksec_slim(s); /* takes s */
    assert_non_null(slim);
    json_t *want = json_loads("{\"metadata\":{\"name\":\"w1\",\"namespace\":\"mk\","
                              "\"resourceVersion\":\"7\"},\"data\":{\"kubeconfig\":\"a2M=\"}}",
                              0, NULL);
    assert_true(json_equal(slim, want));
    json_decref(want);
    json_decref(slim);
    /* No kubeconfig key: metadata only. */
    slim = ksec_slim(json_loads(SECRET("ca", "8", "{\"ca.key\":\"c2VjcmV0\"}"), 0, NULL));
    assert_non_null(slim);
    assert_null(json_object_get(slim, "data"));
    json_decref(slim);
    assert_null(ksec_slim(json_loads("{\"metadata\":{}}", 0, NULL)));
}

static void test_wanted_names(void **state)
{
    (void)state;
    json_t *mkcs =
        json_loads("[{\"spec\":{\"clusterSource\":{\"kubeConfig\":{\"location\":\"b\","
                   "\"locationType\":\"Secret\"}}}},"
                   "{\"spec\":{\"kubeConfig\":{\"location\":\"a\"}}},"
                   "{\"spec\":{\"kubeConfig\":{\"location\":\"/x/y\",\"locationType\":\"Path\"}}},"
                   "{\"spec\":{\"kubeConfig\":{\"location\":\"b\"}}},"
                   "{\"spec\":{\"kubeConfig\":{\"location\":\"\"}}},{\"spec\":{}}]",
                   0, NULL);
    json_t *w = ksec_wanted(mkcs);
    char *d = json_dumps(w, JSON_COMPACT);
    assert_string_equal(d, "[\"a\",\"b\"]");
    free(d);
    json_decref(w);
    json_decref(mkcs);
}

static int handler(const struct th_request *req, struct th_response *resp, void *ud)
{
    (void)ud;
    if (strcmp(req->path, "/api/v1/namespaces/mk/secrets/w1") == 0) {
        resp->body = SECRET("w1", "7", "{\"kubeconfig\":\"a2M=\",\"ca.key\":\"c2VjcmV0\"}");
    } else if (strcmp(req->path, "/api/v1/namespaces/mk/secrets/w2") == 0) {
        resp->status = 403;
        resp->body = "{\"kind\":\"Status\",\"code\":403,\"reason\":\"Forbidden\","
                     "\"message\":\"secrets \\\"w2\\\" is forbidden\"}";
    } else {
        resp->status = 404;
        resp->body = "{\"kind\":\"Status\",\"code\":404,\"reason\":\"NotFound\"}";
    }
    return 0;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Against a server: GET by name only (never a list), slim copies, a stub
 * saying why for a forbidden one, nothing for a missing one. */
static void test_poller(void **state)
{
    (void)state;
    struct th_server *s = th_start(NULL);
    assert_non_null(s);
    th_set_handler(s, handler, NULL);
    struct kcfg *cfg = calloc(1, sizeof(*cfg));
    cfg->server = strdup(th_url(s));
    cfg->ca_pem = th_read_data("test-ca.pem", &cfg->ca_len);
    pthread_mutex_init(&cfg->lock, NULL);
    char err[256] = "";
    struct kc_options ko = {.qps = -1, .timeout_ms = 5000};
    struct kc_client *c = kc_new(cfg, &ko, err, sizeof(err));
    assert_non_null(c);
    struct kcache *mkc = kcache_new(), *out = kcache_new();
    json_t *items = json_loads(
        "[{\"metadata\":{\"name\":\"c1\"},\"spec\":{\"kubeConfig\":{\"location\":\"w1\"}}},"
        "{\"metadata\":{\"name\":\"c2\"},\"spec\":{\"kubeConfig\":{\"location\":\"w2\"}}},"
        "{\"metadata\":{\"name\":\"c3\"},\"spec\":{\"kubeConfig\":{\"location\":\"w3\"}}}]",
        0, NULL);
    assert_int_equal(kcache_replace(mkc, items), 0);
    json_decref(items);
    kcache_set_synced(mkc, 1);
    struct ksec_options so = {.ns = "mk", .interval_ms = 60000};
    struct ksec *k = ksec_start(c, mkc, out, &so, err, sizeof(err));
    assert_non_null(k);
    for (int i = 0; i < 500 && !kcache_synced(out); i++)
        sleep_ms(10);
    assert_true(kcache_synced(out));
    assert_int_equal(kcache_len(out), 2);
    json_t *w1 = kcache_get_nsname(out, "mk", "w1");
    assert_string_equal(jx_str(w1, "data.kubeconfig"), "a2M=");
    assert_int_equal(json_object_size(json_object_get(w1, "data")), 1); /* no ca.key */
    assert_null(json_object_get(w1, "type"));
    json_decref(w1);
    json_t *w2 = kcache_get_nsname(out, "mk", "w2");
    assert_non_null(strstr(jx_str(w2, KSEC_ERROR_FIELD), "is forbidden"));
    assert_null(json_object_get(w2, "data"));
    json_decref(w2);
    /* A kick polls again at once (the interval is a minute). */
    int before = th_nrequests(s);
    ksec_kick(k);
    assert_int_equal(th_wait_requests(s, before + 3, 5000), 0);
    ksec_stop(k);
    for (int i = 0; i < th_nrequests(s); i++) {
        const struct th_request *r = th_request_at(s, i);
        assert_string_equal(r->method, "GET");
        assert_non_null(strstr(r->path, "/secrets/w")); /* by name, never the collection */
    }
    kcache_free(out);
    kcache_free(mkc);
    kc_free(c);
    th_free(s);
    free(cfg->server);
    free(cfg->ca_pem);
    pthread_mutex_destroy(&cfg->lock);
    free(cfg);
}

static int quiet(void **state)
{
    (void)state;
    log_set_level(LOG_ERROR);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_slim_keeps_only_the_kubeconfig),
        cmocka_unit_test(test_wanted_names),
        cmocka_unit_test(test_poller),
    };
    return cmocka_run_group_tests_name("kube_secrets", tests, quiet, NULL);
}
