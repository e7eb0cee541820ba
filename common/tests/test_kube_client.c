#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <curl/curl.h>
#include <jansson.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "jsonx.h"
#include "kube_client.h"
#include "support/test_https.h"

static const struct kc_resource PODS = {"", "v1", "pods", 1};
static const struct kc_resource CONFIGMAPS = {"", "v1", "configmaps", 1};
static const struct kc_resource JOBS = {"batch", "v1", "jobs", 1};
static const struct kc_resource WORKLOADS = {"kueue.x-k8s.io", "v1beta1", "workloads", 1};
static const struct kc_resource NODES = {"", "v1", "nodes", 0};

/* ---- fixtures -------------------------------------------------------------- */

static struct kcfg *cfg_new(const char *server, const char *ca, int client_cert, const char *token)
{
    struct kcfg *cfg = calloc(1, sizeof(*cfg));
    assert_non_null(cfg);
    cfg->server = strdup(server);
    if (ca) {
        cfg->ca_pem = th_read_data(ca, &cfg->ca_len);
        assert_non_null(cfg->ca_pem);
    }
    if (client_cert) {
        cfg->cert_pem = th_read_data("client.pem", &cfg->cert_len);
        cfg->key_pem = th_read_data("client-key.pem", &cfg->key_len);
        assert_non_null(cfg->cert_pem);
        assert_non_null(cfg->key_pem);
    }
    if (token)
        cfg->token = strdup(token);
    pthread_mutex_init(&cfg->lock, NULL);
    return cfg;
}

static void cfg_free(struct kcfg *cfg)
{
    free(cfg->server);
    free(cfg->ca_pem);
    free(cfg->cert_pem);
    free(cfg->key_pem);
    free(cfg->token);
    free(cfg->tls_server_name);
    pthread_mutex_destroy(&cfg->lock);
    free(cfg);
}

struct env {
    struct th_server *s;
    struct kcfg *cfg;
    struct kc_client *c;
};

static const struct kc_options FAST = {.qps = -1, .timeout_ms = 5000};

static void env_up(struct env *e, const struct th_config *tc, const struct kc_options *o)
{
    e->s = th_start(tc);
    assert_non_null(e->s);
    e->cfg = cfg_new(th_url(e->s), "test-ca.pem", 0, "tok-1");
    char err[256] = "";
    e->c = kc_new(e->cfg, o ? o : &FAST, err, sizeof(err));
    if (!e->c)
        fail_msg("kc_new: %s", err);
}

static void env_down(struct env *e)
{
    kc_free(e->c);
    th_free(e->s);
    cfg_free(e->cfg);
}

static json_t *req_json(const struct th_request *r)
{
    json_t *j = json_loadb(r->body, r->body_len, 0, NULL);
    assert_non_null(j);
    return j;
}

/* ---- paths and escaping ---------------------------------------------------- */

static void test_path_and_escape(void **state)
{
    (void)state;
    char *p = kc_path(&PODS, "default", "p1", "status");
    assert_string_equal(p, "/api/v1/namespaces/default/pods/p1/status");
    free(p);
    p = kc_path(&JOBS, NULL, NULL, NULL);
    assert_string_equal(p, "/apis/batch/v1/jobs");
    free(p);
    p = kc_path(&WORKLOADS, "ns", NULL, NULL);
    assert_string_equal(p, "/apis/kueue.x-k8s.io/v1beta1/namespaces/ns/workloads");
    free(p);
    p = kc_path(&NODES, "ignored", "n1", NULL);
    assert_string_equal(p, "/api/v1/nodes/n1");
    free(p);
    p = kc_path(&CONFIGMAPS, "n?s", "a b/c", NULL);
    assert_string_equal(p, "/api/v1/namespaces/n%3Fs/configmaps/a%20b%2Fc");
    free(p);
    assert_null(kc_path(&PODS, "ns", "..", NULL));
    assert_null(kc_path(&PODS, "ns", ".", NULL));
    assert_null(kc_path(&PODS, "ns", "", NULL));
    assert_null(kc_path(&PODS, "..", "x", NULL));
    assert_null(kc_path(&PODS, "ns", NULL, "status"));
    assert_null(kc_path(NULL, "ns", "x", NULL));

    char *e = kc_escape("a b/c?d&e=f%\xc3\xbc~._-Z9");
    assert_string_equal(e, "a%20b%2Fc%3Fd%26e%3Df%25%C3%BC~._-Z9");
    free(e);
    assert_null(kc_escape(NULL));
}

static void test_new_rejects_bad_server(void **state)
{
    (void)state;
    char err[256] = "";
    struct kcfg *cfg = cfg_new("http://127.0.0.1:1", NULL, 0, NULL);
    assert_null(kc_new(cfg, NULL, err, sizeof(err)));
    assert_non_null(strstr(err, "https"));
    free(cfg->server);
    cfg->server = strdup("not a url");
    assert_null(kc_new(cfg, NULL, err, sizeof(err)));
    free(cfg->server);
    cfg->server = NULL;
    assert_null(kc_new(cfg, NULL, err, sizeof(err)));
    cfg_free(cfg);
    assert_null(kc_new(NULL, NULL, err, sizeof(err)));

    /* A trailing slash is dropped. */
    cfg = cfg_new("https://127.0.0.1:6443/", NULL, 0, NULL);
    struct kc_client *c = kc_new(cfg, NULL, err, sizeof(err));
    assert_non_null(c);
    assert_string_equal(kc_server(c), "https://127.0.0.1:6443");
    kc_free(c);
    cfg_free(cfg);
}

/* ---- requests -------------------------------------------------------------- */

static void test_get(void **state)
{
    (void)state;
    struct env e;
    env_up(&e, NULL, NULL);
    th_push_json(e.s, 200,
                 "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p1\",\"managedFields\":[{"
                 "\"manager\":\"kubectl\"}]}}");
    json_t *out = NULL;
    struct kc_status st;
    assert_int_equal(kc_get(e.c, &PODS, "default", "p1", &out, &st), MK_OK);
    assert_int_equal(st.http, 200);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(out, "metadata"), "name")), "p1");
    /* kc_unread: an answer comes without managedFields */
    assert_null(json_object_get(json_object_get(out, "metadata"), "managedFields"));
    json_decref(out);

    const struct th_request *r = th_request_at(e.s, 0);
    assert_non_null(r);
    assert_string_equal(r->method, "GET");
    assert_string_equal(r->target, "/api/v1/namespaces/default/pods/p1");
    assert_string_equal(th_req_header(r, "Accept"), "application/json");
    assert_string_equal(th_req_header(r, "Authorization"), "Bearer tok-1");
    assert_non_null(strstr(th_req_header(r, "User-Agent"), "mkueue/"));
    assert_null(th_req_header(r, "Content-Type"));
    assert_int_equal(r->body_len, 0);

    /* A namespaced object needs a namespace; nothing is sent. */
    assert_int_equal(kc_get(e.c, &PODS, NULL, "p1", &out, &st), MK_ERR_INVAL);
    assert_null(out);
    assert_int_equal(kc_get(e.c, &PODS, "ns", "..", &out, &st), MK_ERR_INVAL);
    assert_int_equal(th_nrequests(e.s), 1);
    env_down(&e);
}

static void test_token_read_per_request(void **state)
{
    (void)state;
    struct env e;
    env_up(&e, NULL, NULL);
    th_push_json(e.s, 200, "{}");
    th_push_json(e.s, 200, "{}");
    th_push_json(e.s, 200, "{}");
    assert_int_equal(kc_get(e.c, &NODES, NULL, "n", NULL, NULL), MK_OK);
    pthread_mutex_lock(&e.cfg->lock);
    free(e.cfg->token);
    e.cfg->token = strdup("tok-2");
    pthread_mutex_unlock(&e.cfg->lock);
    assert_int_equal(kc_get(e.c, &NODES, NULL, "n", NULL, NULL), MK_OK);
    assert_string_equal(th_req_header(th_request_at(e.s, 1), "Authorization"), "Bearer tok-2");
    /* A token that could inject headers is refused. */
    pthread_mutex_lock(&e.cfg->lock);
    free(e.cfg->token);
    e.cfg->token = strdup("x\r\nX-Evil: 1");
    pthread_mutex_unlock(&e.cfg->lock);
    struct kc_status st;
    assert_int_equal(kc_get(e.c, &NODES, NULL, "n", NULL, &st), MK_ERR_INVAL);
    assert_int_equal(th_nrequests(e.s), 2);
    /* No token: no Authorization header. */
    pthread_mutex_lock(&e.cfg->lock);
    free(e.cfg->token);
    e.cfg->token = NULL;
    pthread_mutex_unlock(&e.cfg->lock);
    assert_int_equal(kc_get(e.c, &NODES, NULL, "n", NULL, NULL), MK_OK);
    assert_null(th_req_header(th_request_at(e.s, 2), "Authorization"));
    env_down(&e);
}

static void test_list_query(void **state)
{
    (void)state;
    struct env e;
    env_up(&e, NULL, NULL);
    th_push_json(e.s, 200, "{\"kind\":\"JobList\",\"items\":[]}");
    th_push_json(e.s, 200,
                 "{\"kind\":\"JobList\",\"items\":[{\"metadata\":{\"name\":\"a\","
                 "\"managedFields\":[{\"manager\":\"kubectl\"}]}}]}");
    struct kc_list_opts o = {.label_selector = "app=x,tier in (a,b)",
                             .field_selector = "metadata.name=foo",
                             .limit = 10,
                             .continue_token = "abc==",
                             .resource_version = "123"};
    json_t *out = NULL;
    assert_int_equal(kc_list(e.c, &JOBS, "ns1", &o, &out, NULL), MK_OK);
    assert_true(json_is_array(json_object_get(out, "items")));
    json_decref(out);
    const struct th_request *r = th_request_at(e.s, 0);
    assert_string_equal(r->method, "GET");
    assert_string_equal(r->path, "/apis/batch/v1/namespaces/ns1/jobs");
    assert_string_equal(r->query, "labelSelector=app%3Dx%2Ctier%20in%20%28a%2Cb%29&"
                                  "fieldSelector=metadata.name%3Dfoo&limit=10&"
                                  "continue=abc%3D%3D&resourceVersion=123");
    /* All namespaces, no options: no query. */
    assert_int_equal(kc_list(e.c, &JOBS, NULL, NULL, &out, NULL), MK_OK);
    /* kc_unread: a list's items come without managedFields */
    assert_string_equal(jx_str(out, "items[0].metadata.name"), "a");
    assert_null(jx_get(out, "items[0].metadata.managedFields"));
    json_decref(out);
    assert_string_equal(th_request_at(e.s, 1)->target, "/apis/batch/v1/jobs");
    env_down(&e);
}

static void test_create_update(void **state)
{
    (void)state;
    struct env e;
    env_up(&e, NULL, NULL);
    th_push_json(e.s, 201, "{\"kind\":\"Job\",\"metadata\":{\"uid\":\"u1\"}}");
    th_push_json(e.s, 200, "{\"kind\":\"Job\"}");
    json_t *obj = json_pack("{s:s, s:{s:s}}", "kind", "Job", "metadata", "name", "j1");
    json_t *out = NULL;
    struct kc_status st;
    assert_int_equal(kc_create(e.c, &JOBS, "ns", obj, &out, &st), MK_OK);
    assert_int_equal(st.http, 201);
    assert_string_equal(json_string_value(json_object_get(json_object_get(out, "metadata"), "uid")),
                        "u1");
    json_decref(out);
    const struct th_request *r = th_request_at(e.s, 0);
    assert_string_equal(r->method, "POST");
    assert_string_equal(r->target, "/apis/batch/v1/namespaces/ns/jobs");
    assert_string_equal(th_req_header(r, "Content-Type"), "application/json");
    json_t *sent = req_json(r);
    assert_true(json_equal(sent, obj));
    json_decref(sent);

    assert_int_equal(kc_update(e.c, &JOBS, "ns", "j1", NULL, obj, NULL, &st), MK_OK);
    r = th_request_at(e.s, 1);
    assert_string_equal(r->method, "PUT");
    assert_string_equal(r->target, "/apis/batch/v1/namespaces/ns/jobs/j1");
    assert_string_equal(th_req_header(r, "Content-Type"), "application/json");
    sent = req_json(r);
    assert_true(json_equal(sent, obj));
    json_decref(sent);

    assert_int_equal(kc_create(e.c, &JOBS, NULL, obj, &out, &st), MK_ERR_INVAL);
    assert_int_equal(kc_create(e.c, &JOBS, "ns", NULL, &out, &st), MK_ERR_INVAL);
    assert_int_equal(th_nrequests(e.s), 2);
    json_decref(obj);
    env_down(&e);
}

static void test_patch_types(void **state)
{
    (void)state;
    struct env e;
    env_up(&e, NULL, NULL);
    for (int i = 0; i < 3; i++)
        th_push_json(e.s, 200, "{\"kind\":\"Workload\"}");
    json_t *merge = json_pack("{s:{s:b}}", "status", "admitted", 1);
    json_t *jp = json_pack("[{s:s, s:s, s:s}]", "op", "replace", "path", "/metadata/labels/a~1b",
                           "value", "x");
    json_t *out = NULL;
    assert_int_equal(
        kc_patch(e.c, &WORKLOADS, "ns", "w1", "status", KC_PATCH_MERGE, merge, NULL, &out, NULL),
        MK_OK);
    assert_non_null(out);
    json_decref(out);
    assert_int_equal(
        kc_patch(e.c, &WORKLOADS, "ns", "w1", NULL, KC_PATCH_JSON, jp, NULL, NULL, NULL), MK_OK);
    assert_int_equal(
        kc_patch(e.c, &WORKLOADS, "ns", "w1", NULL, KC_PATCH_APPLY, merge, "mkueue", NULL, NULL),
        MK_OK);

    const struct th_request *r = th_request_at(e.s, 0);
    assert_string_equal(r->method, "PATCH");
    assert_string_equal(r->target,
                        "/apis/kueue.x-k8s.io/v1beta1/namespaces/ns/workloads/w1/status");
    assert_string_equal(th_req_header(r, "Content-Type"), "application/merge-patch+json");
    json_t *sent = req_json(r);
    assert_true(json_equal(sent, merge));
    json_decref(sent);

    r = th_request_at(e.s, 1);
    assert_string_equal(r->target, "/apis/kueue.x-k8s.io/v1beta1/namespaces/ns/workloads/w1");
    assert_string_equal(th_req_header(r, "Content-Type"), "application/json-patch+json");
    sent = req_json(r);
    assert_true(json_equal(sent, jp));
    json_decref(sent);

    r = th_request_at(e.s, 2);
    assert_string_equal(r->query, "fieldManager=mkueue&force=true");
    assert_string_equal(th_req_header(r, "Content-Type"), "application/apply-patch+yaml");

    /* Apply without a field manager is refused before sending. */
    struct kc_status st;
    assert_int_equal(
        kc_patch(e.c, &WORKLOADS, "ns", "w1", NULL, KC_PATCH_APPLY, merge, NULL, NULL, &st),
        MK_ERR_INVAL);
    assert_int_equal(th_nrequests(e.s), 3);
    json_decref(merge);
    json_decref(jp);
    env_down(&e);
}

static void test_delete(void **state)
{
    (void)state;
    struct env e;
    env_up(&e, NULL, NULL);
    th_push_json(e.s, 200, "{\"kind\":\"Status\",\"status\":\"Success\"}");
    th_push_json(e.s, 200, "{\"kind\":\"Job\"}");
    struct kc_status st;
    assert_int_equal(kc_delete(e.c, &JOBS, "ns", "j1", "Background", "u-1", &st), MK_OK);
    const struct th_request *r = th_request_at(e.s, 0);
    assert_string_equal(r->method, "DELETE");
    assert_string_equal(r->target, "/apis/batch/v1/namespaces/ns/jobs/j1");
    assert_string_equal(th_req_header(r, "Content-Type"), "application/json");
    json_t *want =
        json_pack("{s:s, s:s, s:s, s:{s:s}}", "kind", "DeleteOptions", "apiVersion", "v1",
                  "propagationPolicy", "Background", "preconditions", "uid", "u-1");
    json_t *sent = req_json(r);
    assert_true(json_equal(sent, want));
    json_decref(sent);
    json_decref(want);

    assert_int_equal(kc_delete(e.c, &NODES, NULL, "n1", NULL, NULL, &st), MK_OK);
    r = th_request_at(e.s, 1);
    assert_string_equal(r->target, "/api/v1/nodes/n1");
    want = json_pack("{s:s, s:s}", "kind", "DeleteOptions", "apiVersion", "v1");
    sent = req_json(r);
    assert_true(json_equal(sent, want));
    json_decref(sent);
    json_decref(want);
    env_down(&e);
}

static void test_raw_request_validation(void **state)
{
    (void)state;
    struct env e;
    env_up(&e, NULL, NULL);
    struct kc_status st;
    assert_int_equal(kc_request(e.c, "GET", "version", NULL, NULL, NULL, 0, NULL, &st),
                     MK_ERR_INVAL);
    assert_int_equal(kc_request(e.c, "GET", "/a b", NULL, NULL, NULL, 0, NULL, &st), MK_ERR_INVAL);
    assert_int_equal(kc_request(e.c, "GET", "/a", "x=1\r\nHost: y", NULL, NULL, 0, NULL, &st),
                     MK_ERR_INVAL);
    assert_int_equal(kc_request(e.c, "TRACE", "/a", NULL, NULL, NULL, 0, NULL, &st), MK_ERR_INVAL);
    assert_int_equal(th_nrequests(e.s), 0);
    th_push_json(e.s, 200, "{\"major\":\"1\"}");
    json_t *out = NULL;
    assert_int_equal(kc_request(e.c, "GET", "/version", NULL, NULL, NULL, 0, &out, &st), MK_OK);
    assert_string_equal(json_string_value(json_object_get(out, "major")), "1");
    json_decref(out);
    /* A body without a content type is sent as JSON; no body, no type. */
    th_push_json(e.s, 200, "{}");
    th_push_json(e.s, 200, "{}");
    assert_int_equal(kc_request(e.c, "POST", "/x", NULL, NULL, "{}", 2, NULL, &st), MK_OK);
    assert_int_equal(kc_request(e.c, "PUT", "/x", NULL, NULL, NULL, 0, NULL, &st), MK_OK);
    assert_string_equal(th_req_header(th_request_at(e.s, 1), "Content-Type"), "application/json");
    assert_string_equal(th_request_at(e.s, 1)->body, "{}");
    assert_null(th_req_header(th_request_at(e.s, 2), "Content-Type"));
    assert_string_equal(th_request_at(e.s, 2)->method, "PUT");
    env_down(&e);
}

/* ---- errors ---------------------------------------------------------------- */

#define STATUS(code, reason, msg)                                                                  \
    "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"reason\":\"" reason       \
    "\",\"message\":\"" msg "\",\"code\":" #code "}"

static int get_with(struct env *e, const struct th_response *resp, struct kc_status *st)
{
    th_push(e->s, resp);
    json_t *out = (json_t *)1;
    int rc = kc_get(e->c, &JOBS, "ns", "j", &out, st);
    if (rc != MK_OK)
        assert_null(out);
    json_decref(rc == MK_OK ? out : NULL);
    return rc;
}

static void test_status_errors(void **state)
{
    (void)state;
    struct env e;
    env_up(&e, NULL, NULL);
    struct kc_status st;
    struct th_response r = {.status = 404,
                            .body = STATUS(404, "NotFound", "jobs \\\"j\\\" not found")};
    assert_int_equal(get_with(&e, &r, &st), MK_ERR_HTTP);
    assert_true(kc_is_not_found(&st));
    assert_string_equal(st.reason, "NotFound");
    assert_string_equal(st.message, "jobs \"j\" not found");
    assert_false(kc_is_retryable(&st));

    r = (struct th_response){.status = 409, .body = STATUS(409, "AlreadyExists", "exists")};
    assert_int_equal(get_with(&e, &r, &st), MK_ERR_HTTP);
    assert_true(kc_is_already_exists(&st));
    assert_false(kc_is_conflict(&st));

    r = (struct th_response){.status = 409, .body = STATUS(409, "Conflict", "modified")};
    assert_int_equal(get_with(&e, &r, &st), MK_ERR_HTTP);
    assert_false(kc_is_already_exists(&st));
    assert_true(kc_is_conflict(&st));

    r = (struct th_response){.status = 410, .body = STATUS(410, "Expired", "too old")};
    assert_int_equal(get_with(&e, &r, &st), MK_ERR_HTTP);
    assert_true(kc_is_gone(&st));
    assert_string_equal(st.reason, "Expired");

    r = (struct th_response){.status = 422, .body = STATUS(422, "Invalid", "spec.x: Required")};
    assert_int_equal(get_with(&e, &r, &st), MK_ERR_HTTP);
    assert_int_equal(st.http, 422);
    assert_string_equal(st.reason, "Invalid");
    assert_string_equal(st.message, "spec.x: Required");

    r = (struct th_response){.status = 429,
                             .headers = "Retry-After: 7\r\n",
                             .body = STATUS(429, "TooManyRequests", "slow down")};
    assert_int_equal(get_with(&e, &r, &st), MK_ERR_HTTP);
    assert_int_equal(st.retry_after_s, 7);
    assert_true(kc_is_retryable(&st));

    r = (struct th_response){.status = 429,
                             .body = "{\"kind\":\"Status\",\"reason\":\"TooManyRequests\","
                                     "\"details\":{\"retryAfterSeconds\":3},\"code\":429}"};
    assert_int_equal(get_with(&e, &r, &st), MK_ERR_HTTP);
    assert_int_equal(st.retry_after_s, 3);
    assert_string_equal(st.message, "HTTP 429");

    r = (struct th_response){
        .status = 500, .headers = "Content-Type: text/html\r\n", .body = "<html>oops\n</html>"};
    assert_int_equal(get_with(&e, &r, &st), MK_ERR_HTTP);
    assert_int_equal(st.http, 500);
    assert_string_equal(st.reason, "InternalError");
    assert_string_equal(st.message, "HTTP 500: <html>oops </html>");
    assert_true(kc_is_retryable(&st));

    r = (struct th_response){.status = 503, .headers = "Retry-After: 2\r\n"};
    assert_int_equal(get_with(&e, &r, &st), MK_ERR_HTTP);
    assert_string_equal(st.message, "HTTP 503");
    assert_int_equal(st.retry_after_s, 2);

    /* A long non-Status body is cut. */
    char big[2000];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    r = (struct th_response){.status = 502, .body = big};
    assert_int_equal(get_with(&e, &r, &st), MK_ERR_HTTP);
    assert_true(strlen(st.message) < 300);
    assert_non_null(strstr(st.message, "xxx..."));

    /* A body that is not UTF-8 is quoted escaped (it goes into JSON status
     * conditions, and jansson refuses invalid strings), also when a Status'
     * message is cut in the middle of a character. */
    r = (struct th_response){.status = 502, .body = "bad \xff\xfe gateway \xc3"};
    assert_int_equal(get_with(&e, &r, &st), MK_ERR_HTTP);
    assert_string_equal(st.message, "HTTP 502: bad \xef\xbf\xbd\xef\xbf\xbd gateway \xef\xbf\xbd");
    json_t *js = json_string(st.message);
    assert_non_null(js);
    json_decref(js);
    char longmsg[1200];
    size_t off = (size_t)snprintf(longmsg, sizeof(longmsg),
                                  "{\"kind\":\"Status\",\"code\":500,\"message\":\"");
    for (int i = 0; i < 400; i++, off += 2)
        memcpy(longmsg + off, "\xc3\xa9", 2);
    memcpy(longmsg + off, "\"}", 3);
    r = (struct th_response){.status = 500, .body = longmsg};
    assert_int_equal(get_with(&e, &r, &st), MK_ERR_HTTP);
    js = json_string(st.message);
    assert_non_null(js);
    json_decref(js);

    /* All on one kept-alive connection, errors included. */
    assert_int_equal(th_connections(e.s), 1);
    env_down(&e);
}

static void test_status_from_json(void **state)
{
    (void)state;
    json_t *j = json_loads(STATUS(410, "Expired", "too old resource version"), 0, NULL);
    struct kc_status st = {0};
    kc_status_from_json(j, 0, &st);
    assert_int_equal(st.http, 410);
    assert_true(kc_is_gone(&st));
    assert_string_equal(st.message, "too old resource version");
    json_decref(j);
}

static void test_invalid_json(void **state)
{
    (void)state;
    struct env e;
    env_up(&e, NULL, NULL);
    struct kc_status st;
    struct th_response r = {.status = 200, .body = "{\"kind\": not json"};
    assert_int_equal(get_with(&e, &r, &st), MK_ERR_DECODE);
    assert_int_equal(st.http, 200);
    r = (struct th_response){.status = 200};
    assert_int_equal(get_with(&e, &r, &st), MK_ERR_DECODE);
    env_down(&e);
}

static void test_truncated_body(void **state)
{
    (void)state;
    struct env e;
    env_up(&e, NULL, NULL);
    struct kc_status st;
    struct th_response r = {.status = 200,
                            .body = "{\"kind\":\"Job\",\"metadata\":{\"name\":\"j\"}}",
                            .truncate = 1,
                            .truncate_at = 10};
    assert_int_equal(get_with(&e, &r, &st), MK_ERR_TRANSPORT);
    assert_int_equal(st.http, 0);
    assert_int_equal(st.transport_code, CURLE_PARTIAL_FILE);
    assert_true(strlen(st.message) > 0);
    assert_true(kc_is_retryable(&st));
    /* The client recovers on a new connection. */
    th_push_json(e.s, 200, "{}");
    assert_int_equal(kc_get(e.c, &JOBS, "ns", "j", NULL, &st), MK_OK);
    assert_int_equal(th_connections(e.s), 2);
    env_down(&e);
}

static void test_timeout(void **state)
{
    (void)state;
    struct env e;
    struct kc_options o = {.qps = -1, .timeout_ms = 300};
    env_up(&e, NULL, &o);
    struct kc_status st;
    struct th_response r = {.status = 200, .body = "{}", .delay_ms = 3000};
    long long t0 = th_now_ms();
    assert_int_equal(get_with(&e, &r, &st), MK_ERR_TRANSPORT);
    long long took = th_now_ms() - t0;
    assert_int_equal(st.transport_code, CURLE_OPERATION_TIMEDOUT);
    assert_true(took >= 250);
    assert_true(took < 2000);
    env_down(&e);
}

static void test_connect_refused(void **state)
{
    (void)state;
    /* A port nobody listens on: bind one, then close it. */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t alen = sizeof(a);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &alen), 0);
    close(fd);
    char url[64];
    snprintf(url, sizeof(url), "https://127.0.0.1:%d", ntohs(a.sin_port));
    struct kcfg *cfg = cfg_new(url, "test-ca.pem", 0, NULL);
    struct kc_client *c = kc_new(cfg, &FAST, NULL, 0);
    assert_non_null(c);
    struct kc_status st;
    assert_int_equal(kc_get(c, &NODES, NULL, "n", NULL, &st), MK_ERR_TRANSPORT);
    assert_int_equal(st.transport_code, CURLE_COULDNT_CONNECT);
    assert_int_equal(st.http, 0);
    kc_free(c);
    cfg_free(cfg);
}

static void test_too_big(void **state)
{
    (void)state;
    struct env e;
    struct kc_options o = {.qps = -1, .max_body = 1024};
    env_up(&e, NULL, &o);
    char big[4096];
    memset(big, ' ', sizeof(big) - 3);
    big[0] = '{';
    big[sizeof(big) - 3] = '}';
    big[sizeof(big) - 2] = '\0';
    struct kc_status st;
    /* Declared Content-Length over the cap. */
    struct th_response r = {.status = 200, .body = big};
    assert_int_equal(get_with(&e, &r, &st), MK_ERR_TOOBIG);
    /* Chunked: no length known up front, the cap aborts mid-transfer. */
    const char *chunks[] = {big, big};
    r = (struct th_response){.status = 200, .chunks = chunks, .nchunks = 2};
    assert_int_equal(get_with(&e, &r, &st), MK_ERR_TOOBIG);
    assert_non_null(strstr(st.message, "1024"));
    /* Under the cap is fine. */
    th_push_json(e.s, 200, "{\"a\":1}");
    assert_int_equal(kc_get(e.c, &JOBS, "ns", "j", NULL, &st), MK_OK);
    env_down(&e);
}

/* ---- TLS ------------------------------------------------------------------- */

static void test_connection_reuse(void **state)
{
    (void)state;
    struct env e;
    env_up(&e, NULL, NULL);
    for (int i = 0; i < 5; i++) {
        th_push_json(e.s, 200, "{}");
        assert_int_equal(kc_get(e.c, &NODES, NULL, "n", NULL, NULL), MK_OK);
    }
    assert_int_equal(th_connections(e.s), 1);
    assert_int_equal(th_request_at(e.s, 4)->conn, 1);
    env_down(&e);
}

static void test_client_cert(void **state)
{
    (void)state;
    char *ca = th_data_path("test-ca.pem");
    struct th_config tc = {.client_ca_file = ca};
    struct env e;
    env_up(&e, &tc, NULL);
    struct kc_status st;
    /* No client certificate: the handshake fails. */
    assert_int_equal(kc_get(e.c, &NODES, NULL, "n", NULL, &st), MK_ERR_TRANSPORT);
    assert_int_equal(th_nrequests(e.s), 0);

    struct kcfg *cfg = cfg_new(th_url(e.s), "test-ca.pem", 1, NULL);
    struct kc_client *c = kc_new(cfg, &FAST, NULL, 0);
    assert_non_null(c);
    th_push_json(e.s, 200, "{}");
    assert_int_equal(kc_get(c, &NODES, NULL, "n", NULL, &st), MK_OK);
    assert_string_equal(th_request_at(e.s, 0)->client_cn, "test-client");
    kc_free(c);
    cfg_free(cfg);
    env_down(&e);
    free(ca);
}

static void test_untrusted_server(void **state)
{
    (void)state;
    struct th_server *s = th_start(NULL);
    assert_non_null(s);
    struct kcfg *cfg = cfg_new(th_url(s), "other-ca.pem", 0, "secret");
    struct kc_client *c = kc_new(cfg, &FAST, NULL, 0);
    struct kc_status st;
    assert_int_equal(kc_get(c, &NODES, NULL, "n", NULL, &st), MK_ERR_TRANSPORT);
    assert_int_equal(st.transport_code, CURLE_PEER_FAILED_VERIFICATION);
    assert_true(strlen(st.message) > 0);
    assert_int_equal(th_nrequests(s), 0); /* the token never left */
    kc_free(c);
    cfg_free(cfg);
    th_free(s);
}

static void test_tls_server_name(void **state)
{
    (void)state;
    struct env e;
    env_up(&e, NULL, NULL);
    kc_free(e.c);
    e.cfg->tls_server_name = strdup("localhost");
    e.c = kc_new(e.cfg, &FAST, NULL, 0);
    assert_non_null(e.c);
    th_push_json(e.s, 200, "{}");
    struct kc_status st;
    assert_int_equal(kc_get(e.c, &NODES, NULL, "n", NULL, &st), MK_OK);
    char host[64];
    snprintf(host, sizeof(host), "127.0.0.1:%d", th_port(e.s));
    assert_string_equal(th_req_header(th_request_at(e.s, 0), "Host"), host);
    kc_free(e.c);
    /* A name the certificate does not carry fails verification. */
    free(e.cfg->tls_server_name);
    e.cfg->tls_server_name = strdup("wrong.example");
    e.c = kc_new(e.cfg, &FAST, NULL, 0);
    assert_non_null(e.c);
    assert_int_equal(kc_get(e.c, &NODES, NULL, "n", NULL, &st), MK_ERR_TRANSPORT);
    assert_int_equal(st.transport_code, CURLE_PEER_FAILED_VERIFICATION);
    assert_int_equal(th_nrequests(e.s), 1);
    env_down(&e);
}

/* ---- list_all -------------------------------------------------------------- */

/* Serves 3 pages chosen by the continue token; fail_page answers 410. */
static int pages_handler(const struct th_request *req, struct th_response *resp, void *ud)
{
    int fail_page = *(int *)ud;
    int page = strstr(req->query, "continue=c2") ? 3 : strstr(req->query, "continue=c1") ? 2 : 1;
    resp->status = 200;
    if (page == fail_page) {
        resp->status = 410;
        resp->body = STATUS(410, "Expired", "continue token expired");
    } else if (page == 1) {
        resp->body = "{\"kind\":\"PodList\",\"metadata\":{\"continue\":\"c1\",\"resourceVersion\":"
                     "\"10\"},\"items\":[{\"n\":\"a\"},{\"n\":\"b\"}]}";
    } else if (page == 2) {
        resp->body = "{\"kind\":\"PodList\",\"metadata\":{\"continue\":\"c2\",\"resourceVersion\":"
                     "\"10\"},\"items\":[{\"n\":\"c\"}]}";
    } else {
        resp->body = "{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"99\"},"
                     "\"items\":[{\"n\":\"d\"}]}";
    }
    return 0;
}

static void test_list_all(void **state)
{
    (void)state;
    struct env e;
    env_up(&e, NULL, NULL);
    int fail_page = 0;
    th_set_handler(e.s, pages_handler, &fail_page);
    json_t *out = NULL;
    struct kc_status st;
    assert_int_equal(kc_list_all(e.c, &PODS, "ns", "app=x", NULL, 2, &out, &st), MK_OK);
    json_t *items = json_object_get(out, "items");
    assert_int_equal(json_array_size(items), 4);
    const char *want[] = {"a", "b", "c", "d"};
    for (size_t i = 0; i < 4; i++)
        assert_string_equal(json_string_value(json_object_get(json_array_get(items, i), "n")),
                            want[i]);
    json_t *meta = json_object_get(out, "metadata");
    assert_string_equal(json_string_value(json_object_get(meta, "resourceVersion")), "99");
    assert_null(json_object_get(meta, "continue"));
    json_decref(out);
    assert_int_equal(th_nrequests(e.s), 3);
    assert_string_equal(th_request_at(e.s, 0)->query, "labelSelector=app%3Dx&limit=2");
    assert_string_equal(th_request_at(e.s, 1)->query, "labelSelector=app%3Dx&limit=2&continue=c1");

    /* An expired continue token mid-way fails the whole list. */
    fail_page = 2;
    out = (json_t *)1;
    assert_int_equal(kc_list_all(e.c, &PODS, "ns", NULL, NULL, 0, &out, &st), MK_ERR_HTTP);
    assert_null(out);
    assert_true(kc_is_gone(&st));
    assert_string_equal(th_request_at(e.s, 3)->query, "limit=500");
    env_down(&e);
}

struct pages_seen {
    int pages, items;
    char last_rv[16];
    int stop_at; /* page number whose callback fails, 0 = none */
};

static int count_page(json_t *page, void *ud)
{
    struct pages_seen *ps = ud;
    ps->pages++;
    ps->items += (int)json_array_size(json_object_get(page, "items"));
    json_t *meta = json_object_get(page, "metadata");
    const char *rv = json_string_value(json_object_get(meta, "resourceVersion"));
    snprintf(ps->last_rv, sizeof(ps->last_rv), "%s", rv ? rv : "");
    /* a continue token is left on every page but the last */
    assert_true((json_object_get(meta, "continue") != NULL) == (ps->pages < 3));
    json_array_clear(json_object_get(page, "items")); /* the callback may change it */
    return ps->pages == ps->stop_at ? MK_ERR_NOMEM : MK_OK;
}

static void test_list_pages(void **state)
{
    (void)state;
    struct env e;
    env_up(&e, NULL, NULL);
    int fail_page = 0;
    th_set_handler(e.s, pages_handler, &fail_page);
    struct kc_status st;
    struct pages_seen ps = {0};
    assert_int_equal(kc_list_pages(e.c, &PODS, "ns", NULL, NULL, 2, count_page, &ps, &st), MK_OK);
    assert_int_equal(ps.pages, 3);
    assert_int_equal(ps.items, 4);
    assert_string_equal(ps.last_rv, "99");
    /* a failing callback stops the list: no further page is fetched */
    int before = th_nrequests(e.s);
    ps = (struct pages_seen){.stop_at = 1};
    assert_int_equal(kc_list_pages(e.c, &PODS, "ns", NULL, NULL, 2, count_page, &ps, &st),
                     MK_ERR_NOMEM);
    assert_int_equal(th_nrequests(e.s), before + 1);
    assert_int_equal(kc_list_pages(e.c, &PODS, "ns", NULL, NULL, 2, NULL, NULL, &st), MK_ERR_INVAL);
    env_down(&e);
}

static int not_a_list_handler(const struct th_request *req, struct th_response *resp, void *ud)
{
    (void)req;
    (void)ud;
    resp->body = "{\"items\":\"nope\"}";
    return 0;
}

static void test_list_all_rejects_non_list(void **state)
{
    (void)state;
    struct env e;
    env_up(&e, NULL, NULL);
    th_set_handler(e.s, not_a_list_handler, NULL);
    json_t *out = NULL;
    struct kc_status st;
    assert_int_equal(kc_list_all(e.c, &PODS, "ns", NULL, NULL, 0, &out, &st), MK_ERR_DECODE);
    assert_null(out);
    env_down(&e);
}

/* ---- limiter and concurrency ----------------------------------------------- */

/* on_done's view of each request: its method, status and limiter wait */
struct done_log {
    int n;
    long http[8];
    double throttled_s[8];
    double duration_s[8];
    char method[8][8];
    char host[64];
};

static void note_done(void *ud, const char *host, const char *method, const struct kc_status *st)
{
    struct done_log *d = ud;
    if (d->n >= 8)
        return;
    snprintf(d->host, sizeof(d->host), "%s", host);
    d->duration_s[d->n] = st->duration_s;
    d->http[d->n] = st->http;
    d->throttled_s[d->n] = st->throttled_s;
    snprintf(d->method[d->n], sizeof(d->method[0]), "%s", method);
    d->n++;
}

static void test_qps_limiter(void **state)
{
    (void)state;
    struct env e;
    struct kc_options o = {.qps = 20, .burst = 1};
    env_up(&e, NULL, &o);
    long long t0 = th_now_ms();
    for (int i = 0; i < 5; i++) {
        th_push_json(e.s, 200, "{}");
        assert_int_equal(kc_get(e.c, &NODES, NULL, "n", NULL, NULL), MK_OK);
    }
    /* 4 waits of 50 ms after the first token. */
    assert_true(th_now_ms() - t0 >= 150);
    env_down(&e);
}

/* on_done hears of each request with the wait it had for the budget
 * (client-go's rest_client_rate_limiter_duration_seconds): at 2 queries a
 * second, the first none, the second the rest of the half second the first
 * began (the first's own time, a TLS handshake under ASan too, is the
 * other part), a write's as a read's. */
static void test_qps_wait_reported(void **state)
{
    (void)state;
    struct env e;
    struct done_log d = {0};
    struct kc_options o = {.qps = 2, .burst = 1, .on_done = note_done, .on_done_ud = &d};
    env_up(&e, NULL, &o);
    th_push_json(e.s, 200, "{}");
    long long t0 = th_now_ms();
    assert_int_equal(kc_get(e.c, &NODES, NULL, "n", NULL, NULL), MK_OK);
    double first_s = (double)(th_now_ms() - t0) / 1000;
    th_push_json(e.s, 404, "{\"kind\":\"Status\",\"reason\":\"NotFound\"}");
    assert_int_equal(kc_delete(e.c, &NODES, NULL, "n", NULL, NULL, NULL), MK_ERR_HTTP);
    assert_int_equal(d.n, 2);
    assert_string_equal(d.method[0], "GET");
    assert_int_equal(d.http[0], 200);
    assert_true(d.throttled_s[0] == 0);
    assert_string_equal(d.method[1], "DELETE");
    assert_int_equal(d.http[1], 404);
    assert_true(d.throttled_s[1] <= 0.5);
    assert_true(first_s + d.throttled_s[1] >= 0.45);
    env_down(&e);
}

/* on_done hears how long each answer took, the wait for the budget apart
 * (client-go's rest_client_request_duration_seconds), and the server's
 * host:port (their `host` label) */
static void test_request_duration_reported(void **state)
{
    (void)state;
    struct env e;
    struct done_log d = {0};
    struct kc_options o = {.qps = -1, .on_done = note_done, .on_done_ud = &d};
    env_up(&e, NULL, &o);
    th_push(e.s, &(struct th_response){.status = 200, .body = "{}", .delay_ms = 300});
    th_push_json(e.s, 200, "{}");
    assert_int_equal(kc_get(e.c, &NODES, NULL, "n", NULL, NULL), MK_OK);
    assert_int_equal(kc_get(e.c, &NODES, NULL, "n", NULL, NULL), MK_OK);
    assert_int_equal(d.n, 2);
    assert_true(d.duration_s[0] >= 0.3);
    assert_true(d.duration_s[1] < 0.3);
    char want[64];
    snprintf(want, sizeof(want), "127.0.0.1:%d", th_port(e.s));
    assert_string_equal(d.host, want);
    env_down(&e);
}

struct worker {
    struct kc_client *c;
    int ok;
};

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    for (int i = 0; i < 10; i++) {
        json_t *out = NULL;
        if (kc_get(w->c, &NODES, NULL, "n", &out, NULL) == MK_OK &&
            json_integer_value(json_object_get(out, "v")) == 1)
            w->ok++;
        json_decref(out);
    }
    return NULL;
}

static int ok_handler(const struct th_request *req, struct th_response *resp, void *ud)
{
    (void)req;
    (void)ud;
    resp->body = "{\"v\":1}";
    resp->delay_ms = 2; /* let requests overlap */
    return 0;
}

static void test_concurrent_requests(void **state)
{
    (void)state;
    struct env e;
    struct kc_options o = {.qps = -1, .pool_size = 2};
    env_up(&e, NULL, &o);
    th_set_handler(e.s, ok_handler, NULL);
    pthread_t t[8];
    struct worker w[8];
    for (int i = 0; i < 8; i++) {
        w[i] = (struct worker){.c = e.c};
        assert_int_equal(pthread_create(&t[i], NULL, worker_main, &w[i]), 0);
    }
    int total = 0;
    for (int i = 0; i < 8; i++) {
        pthread_join(t[i], NULL);
        total += w[i].ok;
    }
    assert_int_equal(total, 80);
    assert_int_equal(th_nrequests(e.s), 80);
    /* Handles beyond the pool are freed, so at most 8 connections were
     * opened concurrently, but some were reused. */
    assert_true(th_connections(e.s) < 80);
    env_down(&e);
}

/* ---- streams --------------------------------------------------------------- */

struct sink {
    struct buf data;
    int calls;
    int stop_after; /* return non-zero after this many calls (0 = never) */
};

static int on_data(const char *data, size_t len, void *ud)
{
    struct sink *s = ud;
    buf_append(&s->data, data, len);
    s->calls++;
    return s->stop_after && s->calls >= s->stop_after;
}

static void test_stream_chunks(void **state)
{
    (void)state;
    struct env e;
    env_up(&e, NULL, NULL);
    const char *chunks[] = {"{\"type\":\"ADDED\"}\n", "{\"type\":\"MODIFIED\"}\n",
                            "{\"type\":\"DELETED\"}\n"};
    struct th_response r = {.chunks = chunks, .nchunks = 3, .chunk_delay_ms = 30};
    th_push(e.s, &r);
    struct sink s = {0};
    buf_init(&s.data, BUF_CAP_REPLY);
    struct kc_status st;
    struct kc_stop stop;
    kc_stop_init(&stop);
    assert_int_equal(
        kc_stream(e.c, "/api/v1/pods", "watch=1&resourceVersion=5", 10, &stop, on_data, &s, &st),
        MK_OK);
    kc_stop_destroy(&stop);
    assert_int_equal(st.http, 200);
    assert_string_equal(buf_cstr(&s.data),
                        "{\"type\":\"ADDED\"}\n{\"type\":\"MODIFIED\"}\n{\"type\":\"DELETED\"}\n");
    assert_true(s.calls >= 3); /* delivered as they came, not at the end */
    const struct th_request *req = th_request_at(e.s, 0);
    assert_string_equal(req->target, "/api/v1/pods?watch=1&resourceVersion=5");
    assert_string_equal(th_req_header(req, "Authorization"), "Bearer tok-1");
    buf_free(&s.data);
    env_down(&e);
}

/* Metadata-only informers (issue 13): the apiserver refuses a list asked as
 * PartialObjectMetadata and closes a watch asked as a List, so lists and
 * streams carry their own Accept. */
static void test_accept_metadata(void **state)
{
    (void)state;
    struct env e;
    struct kc_options o = {.accept = KC_ACCEPT_METADATA_LIST, .accept_stream = KC_ACCEPT_METADATA};
    env_up(&e, NULL, &o);
    th_push_json(e.s, 200, "{\"kind\":\"PartialObjectMetadataList\",\"items\":[]}");
    assert_int_equal(kc_list(e.c, &PODS, NULL, NULL, NULL, NULL), MK_OK);
    const char *chunks[] = {"{\"type\":\"ADDED\"}\n"};
    struct th_response r = {.chunks = chunks, .nchunks = 1};
    th_push(e.s, &r);
    struct sink s = {0};
    buf_init(&s.data, 0);
    struct kc_status st;
    assert_int_equal(kc_stream(e.c, "/api/v1/pods", "watch=1", 10, NULL, on_data, &s, &st), MK_OK);
    assert_string_equal(th_req_header(th_request_at(e.s, 0), "Accept"), KC_ACCEPT_METADATA_LIST);
    assert_string_equal(th_req_header(th_request_at(e.s, 1), "Accept"), KC_ACCEPT_METADATA);
    buf_free(&s.data);
    env_down(&e);
}

struct stopper {
    struct th_server *s;
    struct kc_stop *stop;
    long long stopped_at;
};

static void *stopper_main(void *arg)
{
    struct stopper *sp = arg;
    if (th_wait_requests(sp->s, 1, 5000) == 0) {
        th_live_send(sp->s, "{\"type\":\"ADDED\"}\n");
        struct timespec ts = {0, 300 * 1000000L};
        nanosleep(&ts, NULL);
    }
    sp->stopped_at = th_now_ms();
    kc_stop_request(sp->stop);
    return NULL;
}

static void test_stream_stop(void **state)
{
    (void)state;
    struct env e;
    env_up(&e, NULL, NULL);
    struct th_response r = {.live = 1};
    th_push(e.s, &r);
    struct kc_stop stop;
    kc_stop_init(&stop);
    struct stopper sp = {.s = e.s, .stop = &stop};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, stopper_main, &sp), 0);
    struct sink s = {0};
    buf_init(&s.data, BUF_CAP_REPLY);
    struct kc_status st;
    int rc = kc_stream(e.c, "/api/v1/pods", "watch=1", 0, &stop, on_data, &s, &st);
    long long done = th_now_ms();
    pthread_join(t, NULL);
    assert_int_equal(rc, MK_ERR_STOPPED);
    assert_string_equal(buf_cstr(&s.data), "{\"type\":\"ADDED\"}\n");
    /* woken, not left to the stream's 5 s wait */
    assert_true(done - sp.stopped_at < 1000);
    kc_stop_destroy(&stop);
    buf_free(&s.data);
    env_down(&e);
}

/* a stop requested before a stream starts ends it before any request */
static void test_stream_stopped_before(void **state)
{
    (void)state;
    struct env e;
    env_up(&e, NULL, NULL);
    struct kc_stop stop;
    kc_stop_init(&stop);
    kc_stop_request(&stop);
    struct sink s = {0};
    buf_init(&s.data, BUF_CAP_REPLY);
    assert_int_equal(kc_stream(e.c, "/api/v1/pods", "watch=1", 10, &stop, on_data, &s, NULL),
                     MK_ERR_STOPPED);
    assert_string_equal(buf_cstr(&s.data), "");
    assert_int_equal(th_nrequests(e.s), 0);
    kc_stop_destroy(&stop);
    buf_free(&s.data);
    env_down(&e);
}

static void test_stream_callback_stop(void **state)
{
    (void)state;
    struct env e;
    env_up(&e, NULL, NULL);
    const char *chunks[] = {"one\n", "two\n", "three\n"};
    struct th_response r = {.chunks = chunks, .nchunks = 3, .chunk_delay_ms = 20, .hold_ms = 5000};
    th_push(e.s, &r);
    struct sink s = {.stop_after = 2};
    buf_init(&s.data, BUF_CAP_REPLY);
    struct kc_status st;
    long long t0 = th_now_ms();
    assert_int_equal(kc_stream(e.c, "/w", NULL, 0, NULL, on_data, &s, &st), MK_ERR_STOPPED);
    assert_true(th_now_ms() - t0 < 2000);
    assert_int_equal(s.calls, 2);
    assert_string_equal(buf_cstr(&s.data), "one\ntwo\n");
    buf_free(&s.data);
    env_down(&e);
}

static void test_stream_http_error(void **state)
{
    (void)state;
    struct env e;
    env_up(&e, NULL, NULL);
    th_push_json(e.s, 410, STATUS(410, "Expired", "too old resource version: 5 (10)"));
    struct sink s = {0};
    buf_init(&s.data, BUF_CAP_REPLY);
    struct kc_status st;
    assert_int_equal(kc_stream(e.c, "/api/v1/pods", "watch=1", 5, NULL, on_data, &s, &st),
                     MK_ERR_HTTP);
    assert_true(kc_is_gone(&st));
    assert_string_equal(st.reason, "Expired");
    assert_string_equal(st.message, "too old resource version: 5 (10)");
    assert_int_equal(s.calls, 0);
    buf_free(&s.data);
    env_down(&e);
}

static void test_stream_timeout(void **state)
{
    (void)state;
    struct env e;
    env_up(&e, NULL, NULL);
    struct th_response r = {.live = 1};
    th_push(e.s, &r);
    th_live_send(e.s, "{}\n");
    struct sink s = {0};
    buf_init(&s.data, BUF_CAP_REPLY);
    struct kc_status st;
    long long t0 = th_now_ms();
    assert_int_equal(kc_stream(e.c, "/w", NULL, 1, NULL, on_data, &s, &st), MK_ERR_TRANSPORT);
    long long took = th_now_ms() - t0;
    assert_int_equal(st.transport_code, CURLE_OPERATION_TIMEDOUT);
    assert_true(took >= 900 && took < 3000);
    assert_string_equal(buf_cstr(&s.data), "{}\n");
    buf_free(&s.data);
    env_down(&e);
}

static void test_stream_live_end(void **state)
{
    (void)state;
    struct env e;
    env_up(&e, NULL, NULL);
    struct th_response r = {.live = 1};
    th_push(e.s, &r);
    th_live_send(e.s, "a\n");
    th_live_end(e.s);
    struct sink s = {0};
    buf_init(&s.data, BUF_CAP_REPLY);
    assert_int_equal(kc_stream(e.c, "/w", NULL, 5, NULL, on_data, &s, NULL), MK_OK);
    assert_string_equal(buf_cstr(&s.data), "a\n");
    buf_free(&s.data);
    env_down(&e);
}

/* ---- the write guard and the per-request timeout ------------------------------ */

struct guard {
    int asked, refuse;
    char method[16], path[256];
};

static int guard_fn(void *ud, const char *method, const char *path)
{
    struct guard *g = ud;
    g->asked++;
    snprintf(g->method, sizeof(g->method), "%s", method);
    snprintf(g->path, sizeof(g->path), "%s", path);
    return g->refuse;
}

static void test_may_write_guards_writes_only(void **state)
{
    (void)state;
    struct guard g = {0};
    struct kc_options o = FAST;
    o.may_write = guard_fn;
    o.may_write_ud = &g;
    struct env e;
    env_up(&e, NULL, &o);
    struct kc_status st;
    th_push_json(e.s, 200, "{\"kind\":\"Pod\"}");
    assert_int_equal(kc_get(e.c, &PODS, "ns", "p", NULL, &st), MK_OK);
    assert_int_equal(g.asked, 0); /* reads are never asked about */
    th_push_json(e.s, 201, "{}");
    json_t *obj = json_pack("{s:s}", "kind", "Pod");
    assert_int_equal(kc_create(e.c, &PODS, "ns", obj, NULL, &st), MK_OK);
    assert_int_equal(g.asked, 1);
    assert_string_equal(g.method, "POST");
    assert_string_equal(g.path, "/api/v1/namespaces/ns/pods");
    /* refused: nothing reaches the server */
    g.refuse = 1;
    int before = th_nrequests(e.s);
    assert_int_equal(kc_create(e.c, &PODS, "ns", obj, NULL, &st), MK_ERR_REFUSED);
    assert_int_equal(
        kc_patch(e.c, &PODS, "ns", "p", "status", KC_PATCH_MERGE, obj, NULL, NULL, &st),
        MK_ERR_REFUSED);
    assert_string_equal(g.method, "PATCH");
    assert_int_equal(kc_update(e.c, &PODS, "ns", "p", NULL, obj, NULL, &st), MK_ERR_REFUSED);
    assert_int_equal(kc_delete(e.c, &PODS, "ns", "p", "Background", NULL, &st), MK_ERR_REFUSED);
    assert_string_equal(g.method, "DELETE");
    assert_int_equal(th_nrequests(e.s), before);
    assert_int_equal(g.asked, 5);
    json_decref(obj);
    env_down(&e);
}

static void test_set_timeout_caps_requests(void **state)
{
    (void)state;
    struct env e;
    env_up(&e, NULL, NULL);
    struct th_response slow = {.status = 200, .body = "{}", .delay_ms = 3000};
    th_push(e.s, &slow);
    kc_set_timeout(e.c, 100); /* the client's own is 5 s */
    struct kc_status st;
    assert_int_equal(kc_get(e.c, &PODS, "ns", "p", NULL, &st), MK_ERR_TRANSPORT);
    assert_int_equal(st.http, 0);
    kc_set_timeout(e.c, 0); /* back to a default */
    th_push_json(e.s, 200, "{}");
    assert_int_equal(kc_get(e.c, &PODS, "ns", "p", NULL, &st), MK_OK);
    kc_set_timeout(NULL, 5); /* no-op */
    env_down(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_path_and_escape),
        cmocka_unit_test(test_new_rejects_bad_server),
        cmocka_unit_test(test_get),
        cmocka_unit_test(test_token_read_per_request),
        cmocka_unit_test(test_list_query),
        cmocka_unit_test(test_create_update),
        cmocka_unit_test(test_patch_types),
        cmocka_unit_test(test_delete),
        cmocka_unit_test(test_raw_request_validation),
        cmocka_unit_test(test_status_errors),
        cmocka_unit_test(test_status_from_json),
        cmocka_unit_test(test_invalid_json),
        cmocka_unit_test(test_truncated_body),
        cmocka_unit_test(test_timeout),
        cmocka_unit_test(test_connect_refused),
        cmocka_unit_test(test_too_big),
        cmocka_unit_test(test_connection_reuse),
        cmocka_unit_test(test_client_cert),
        cmocka_unit_test(test_untrusted_server),
        cmocka_unit_test(test_tls_server_name),
        cmocka_unit_test(test_list_all),
        cmocka_unit_test(test_list_pages),
        cmocka_unit_test(test_list_all_rejects_non_list),
        cmocka_unit_test(test_qps_limiter),
        cmocka_unit_test(test_qps_wait_reported),
        cmocka_unit_test(test_request_duration_reported),
        cmocka_unit_test(test_concurrent_requests),
        cmocka_unit_test(test_stream_chunks),
        cmocka_unit_test(test_accept_metadata),
        cmocka_unit_test(test_stream_stop),
        cmocka_unit_test(test_stream_stopped_before),
        cmocka_unit_test(test_stream_callback_stop),
        cmocka_unit_test(test_stream_http_error),
        cmocka_unit_test(test_stream_timeout),
        cmocka_unit_test(test_stream_live_end),
        cmocka_unit_test(test_may_write_guards_writes_only),
        cmocka_unit_test(test_set_timeout_caps_requests),
    };
    return cmocka_run_group_tests_name("kube_client", tests, NULL, NULL);
}
