#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "app.h"
#include "certs.h"
#include "config.h"
#include "jsonx.h"
#include "log.h"
#include "server.h"
#include "state.h"
#include "tls.h"

/* ---- certificates in a Secret-volume layout ---------------------------------- */

struct pki {
    char dir[64];
    char *ca_cert, *ca_key;
    char ca_file[128];
};

static void write_file(const char *path, const char *data)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(data, f);
    fclose(f);
}

static void gen_ca(struct pki *p, const char *cn)
{
    char err[256];
    assert_int_equal(tls_gen_ca(cn, 2, &p->ca_cert, &p->ca_key, err, sizeof(err)), 0);
    snprintf(p->ca_file, sizeof(p->ca_file), "%s/%s.crt", p->dir, cn);
    write_file(p->ca_file, p->ca_cert);
}

/* Writes a pair signed by p's CA into dir/<gen>/ and points dir/..data at it,
 * as the kubelet does for Secret volumes (an atomic rename of a symlink). */
static void publish(struct pki *p, const char *gen, int days)
{
    static const char *const ips[] = {"127.0.0.1", NULL};
    struct tls_cert_opts o = {.cn = "webhook", .ips = ips, .days = days};
    char *cert, *key, err[256], path[256], tmp[256];
    assert_int_equal(tls_gen_cert(p->ca_cert, p->ca_key, &o, &cert, &key, err, sizeof(err)), 0);
    snprintf(path, sizeof(path), "%s/%s", p->dir, gen);
    mkdir(path, 0700);
    snprintf(path, sizeof(path), "%s/%s/tls.crt", p->dir, gen);
    write_file(path, cert);
    snprintf(path, sizeof(path), "%s/%s/tls.key", p->dir, gen);
    write_file(path, key);
    snprintf(tmp, sizeof(tmp), "%s/..data_tmp", p->dir);
    unlink(tmp);
    assert_int_equal(symlink(gen, tmp), 0);
    snprintf(path, sizeof(path), "%s/..data", p->dir);
    assert_int_equal(rename(tmp, path), 0);
    snprintf(path, sizeof(path), "%s/tls.crt", p->dir);
    if (symlink("..data/tls.crt", path) < 0)
        assert_int_equal(errno, EEXIST);
    snprintf(path, sizeof(path), "%s/tls.key", p->dir);
    if (symlink("..data/tls.key", path) < 0)
        assert_int_equal(errno, EEXIST);
    free(cert);
    free(key);
}

static void pki_free(struct pki *p)
{
    free(p->ca_cert);
    free(p->ca_key);
    p->ca_cert = p->ca_key = NULL;
}

static void rm_rf(const char *dir)
{
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

/* ---- a server with a small decision context ------------------------------------ */

struct fx {
    struct pki pki, pki2;
    char cert[128], key[128];
    struct wh_certs *certs;
    struct kcache *caches[5];
    struct wh_ctx ctx;
    struct mt_registry *reg;
    struct wh_metrics m;
    struct wh_app app;
    struct wh_server *adm, *ops;
    int ready;
    char base[64], ops_base[64];
};

static int is_ready(void *ud)
{
    return ((struct fx *)ud)->ready;
}

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    snprintf(f->pki.dir, sizeof(f->pki.dir), "/tmp/wh-test-XXXXXX");
    assert_non_null(mkdtemp(f->pki.dir));
    f->pki2 = f->pki;
    gen_ca(&f->pki, "ca-one");
    gen_ca(&f->pki2, "ca-two");
    publish(&f->pki, "gen1", 2);
    snprintf(f->cert, sizeof(f->cert), "%s/tls.crt", f->pki.dir);
    snprintf(f->key, sizeof(f->key), "%s/tls.key", f->pki.dir);
    char err[256];
    f->certs = wh_certs_new(f->cert, f->key, 50, err, sizeof(err));
    assert_non_null(f->certs);
    for (int i = 0; i < 5; i++) {
        f->caches[i] = kcache_new();
        kcache_set_synced(f->caches[i], 1);
    }
    json_t *lq = json_pack("{s:{s:s, s:s}, s:{s:s}}", "metadata", "namespace", "ns", "name", "q",
                           "spec", "clusterQueue", "cq");
    kcache_upsert(f->caches[0], lq);
    kcache_upsert(f->caches[1], json_pack("{s:{s:s}}", "metadata", "name", "cq"));
    f->ctx.q =
        (struct mkq_caches){f->caches[0], f->caches[1], f->caches[2], f->caches[3], f->caches[4]};
    f->reg = mt_registry_new();
    assert_int_equal(wh_metrics_register(f->reg, &f->m), 0);
    f->app.adm = (struct wh_admitter){&f->ctx, &f->m, 0, NULL, 0, NULL};
    f->app.reg = f->reg;
    f->app.m = &f->m;
    f->app.certs = f->certs;
    f->app.ready = is_ready;
    f->app.ud = f;
    pthread_mutex_init(&f->app.lock, NULL);
    struct wh_server_opts ao = {
        .name = "admission",
        .bind = "127.0.0.1",
        .certs = f->certs,
        .threads = 2,
        .max_connections = 16,
        .timeout_s = 2,
        .request_timeout_s = 2,
        .max_body = 8192,
        .route = wh_app_admission_route,
        .handle = wh_app_admission_handle,
        .ud = &f->app,
        .in_flight = f->m.in_flight,
        .bad = f->m.bad,
    };
    f->adm = wh_server_start(&ao, err, sizeof(err));
    assert_non_null(f->adm);
    struct wh_server_opts oo = {
        .name = "ops",
        .bind = "127.0.0.1",
        .threads = 1,
        .timeout_s = 1,
        .route = wh_app_ops_route,
        .handle = wh_app_ops_handle,
        .ud = &f->app,
    };
    f->ops = wh_server_start(&oo, err, sizeof(err));
    assert_non_null(f->ops);
    snprintf(f->base, sizeof(f->base), "https://127.0.0.1:%d", wh_server_port(f->adm));
    snprintf(f->ops_base, sizeof(f->ops_base), "http://127.0.0.1:%d", wh_server_port(f->ops));
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    wh_server_stop(f->adm);
    wh_server_stop(f->ops);
    wh_certs_free(f->certs);
    for (int i = 0; i < 5; i++)
        kcache_free(f->caches[i]);
    mt_registry_free(f->reg);
    pthread_mutex_destroy(&f->app.lock);
    rm_rf(f->pki.dir);
    pki_free(&f->pki);
    pki_free(&f->pki2);
    free(f);
    return 0;
}

/* ---- a client ----------------------------------------------------------------- */

struct resp {
    long status;
    struct buf body;
    char allow[64];
};

static size_t on_body(char *p, size_t sz, size_t n, void *ud)
{
    buf_append(&((struct resp *)ud)->body, p, sz * n);
    return sz * n;
}

static size_t on_header(char *p, size_t sz, size_t n, void *ud)
{
    struct resp *r = ud;
    if (strncasecmp(p, "Allow:", 6) == 0)
        sscanf(p + 6, " %63[^\r\n]", r->allow);
    return sz * n;
}

struct chunked {
    size_t left;
};

static size_t read_chunks(char *p, size_t sz, size_t n, void *ud)
{
    struct chunked *c = ud;
    size_t k = sz * n < c->left ? sz * n : c->left;
    memset(p, ' ', k);
    c->left -= k;
    return k;
}

/* Sends one request on h (kept between calls for keep-alive). Returns the
 * CURLcode; r is filled. body NULL = GET; chunked > 0 sends that many bytes
 * with Transfer-Encoding: chunked instead. */
static CURLcode request(CURL *h, const char *ca, const char *url, const char *ctype,
                        const char *body, size_t chunked, struct resp *r)
{
    memset(r, 0, sizeof(*r));
    buf_init(&r->body, BUF_CAP_REPLY);
    curl_easy_reset(h);
    curl_easy_setopt(h, CURLOPT_URL, url);
    if (ca)
        curl_easy_setopt(h, CURLOPT_CAINFO, ca);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, r);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 10000L);
    struct curl_slist *hdrs = NULL;
    char ct[128];
    if (ctype) {
        snprintf(ct, sizeof(ct), "Content-Type: %s", ctype);
        hdrs = curl_slist_append(hdrs, ct);
    }
    struct chunked ck = {chunked};
    if (chunked) {
        hdrs = curl_slist_append(hdrs, "Transfer-Encoding: chunked");
        curl_easy_setopt(h, CURLOPT_POST, 1L);
        curl_easy_setopt(h, CURLOPT_READFUNCTION, read_chunks);
        curl_easy_setopt(h, CURLOPT_READDATA, &ck);
    } else if (body) {
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    }
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    CURLcode rc = curl_easy_perform(h);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r->status);
    buf_cstr(&r->body);
    curl_slist_free_all(hdrs);
    return rc;
}

static const char *review_body(void)
{
    return "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":"
           "{\"uid\":\"u-42\",\"kind\":{\"group\":\"batch\",\"version\":\"v1\",\"kind\":\"Job\"},"
           "\"operation\":\"CREATE\",\"namespace\":\"ns\",\"object\":{\"apiVersion\":\"batch/v1\","
           "\"kind\":\"Job\",\"metadata\":{\"name\":\"j\",\"labels\":{"
           "\"kueue.x-k8s.io/queue-name\":\"q\"}},\"spec\":{}}}}";
}

static void test_admission_over_tls(void **state)
{
    struct fx *f = *state;
    CURL *h = curl_easy_init();
    struct resp r;
    char url[256];
    snprintf(url, sizeof(url), "%s/validate-batch-v1-job?timeout=10s", f->base);
    assert_int_equal(request(h, f->pki.ca_file, url, "application/json", review_body(), 0, &r),
                     CURLE_OK);
    assert_int_equal(r.status, 200);
    json_t *ans = json_loads(r.body.data, 0, NULL);
    assert_string_equal(jx_str(ans, "response.uid"), "u-42");
    assert_true(json_is_true(jx_get(ans, "response.allowed")));
    json_decref(ans);
    buf_free(&r.body);
    /* kept alive: the second request reuses the connection */
    snprintf(url, sizeof(url), "%s/mutate", f->base);
    assert_int_equal(
        request(h, f->pki.ca_file, url, "application/json; charset=utf-8", review_body(), 0, &r),
        CURLE_OK);
    assert_int_equal(r.status, 200);
    long connects = -1;
    curl_easy_getinfo(h, CURLINFO_NUM_CONNECTS, &connects);
    assert_int_equal(connects, 0);
    buf_free(&r.body);
    /* a malformed review: 400 naming the field */
    assert_int_equal(
        request(h, f->pki.ca_file, url, "application/json",
                "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\"}", 0, &r),
        CURLE_OK);
    assert_int_equal(r.status, 400);
    assert_non_null(strstr(r.body.data, "review.request: missing"));
    buf_free(&r.body);
    curl_easy_cleanup(h);
    /* in-flight is back to 0 once the server has completed the request,
     * which may be just after the client read the answer */
    double v = -1;
    for (int i = 0; i < 200; i++) {
        assert_int_equal(mt_value(f->m.in_flight, NULL, &v), 0);
        if (v == 0)
            break;
        usleep(5000);
    }
    assert_true(v == 0);
}

static void test_http_errors(void **state)
{
    struct fx *f = *state;
    CURL *h = curl_easy_init();
    struct resp r;
    char url[256];
    snprintf(url, sizeof(url), "%s/validate-batch-v1-job", f->base);
    /* wrong method */
    assert_int_equal(request(h, f->pki.ca_file, url, NULL, NULL, 0, &r), CURLE_OK);
    assert_int_equal(r.status, 405);
    assert_string_equal(r.allow, "POST");
    buf_free(&r.body);
    /* wrong content type */
    assert_int_equal(request(h, f->pki.ca_file, url, "text/plain", "{}", 0, &r), CURLE_OK);
    assert_int_equal(r.status, 415);
    buf_free(&r.body);
    assert_int_equal(request(h, f->pki.ca_file, url, "application/jsonx", "{}", 0, &r), CURLE_OK);
    assert_int_equal(r.status, 415);
    buf_free(&r.body);
    /* unknown path */
    snprintf(url, sizeof(url), "%s/nope", f->base);
    assert_int_equal(request(h, f->pki.ca_file, url, "application/json", "{}", 0, &r), CURLE_OK);
    assert_int_equal(r.status, 404);
    buf_free(&r.body);
    /* declared too large: refused before the body */
    char *big = malloc(20000);
    memset(big, ' ', 19999);
    big[19999] = '\0';
    snprintf(url, sizeof(url), "%s/validate", f->base);
    assert_int_equal(request(h, f->pki.ca_file, url, "application/json", big, 0, &r), CURLE_OK);
    assert_int_equal(r.status, 413);
    buf_free(&r.body);
    free(big);
    /* chunked, growing past the cap */
    assert_int_equal(request(h, f->pki.ca_file, url, "application/json", NULL, 10000, &r),
                     CURLE_OK);
    assert_int_equal(r.status, 413);
    buf_free(&r.body);
    curl_easy_cleanup(h);
    double v = 0;
    const char *const c415[] = {"415"}, *const c413[] = {"413"}, *const c405[] = {"405"};
    assert_int_equal(mt_value(f->m.bad, c415, &v), 0);
    assert_true(v == 2);
    assert_int_equal(mt_value(f->m.bad, c413, &v), 0);
    assert_true(v == 2);
    assert_int_equal(mt_value(f->m.bad, c405, &v), 0);
    assert_true(v == 1);
}

static void test_tls_versions(void **state)
{
    struct fx *f = *state;
    CURL *h = curl_easy_init();
    char url[256];
    snprintf(url, sizeof(url), "%s/validate", f->base);
    long versions[] = {CURL_SSLVERSION_TLSv1_2 | CURL_SSLVERSION_MAX_TLSv1_2,
                       CURL_SSLVERSION_TLSv1_3 | CURL_SSLVERSION_MAX_TLSv1_3};
    for (int i = 0; i < 2; i++) {
        curl_easy_reset(h);
        curl_easy_setopt(h, CURLOPT_URL, url);
        curl_easy_setopt(h, CURLOPT_CAINFO, f->pki.ca_file);
        curl_easy_setopt(h, CURLOPT_SSLVERSION, versions[i]);
        curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
        assert_int_equal(curl_easy_perform(h), CURLE_OK);
    }
    /* the wrong CA is refused: the server really presents our certificate */
    curl_easy_reset(h);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_CAINFO, f->pki2.ca_file);
    curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
    assert_int_not_equal(curl_easy_perform(h), CURLE_OK);
    curl_easy_cleanup(h);
}

/* 0 when a new connection verifies against ca_file. */
static CURLcode probe(struct fx *f, const char *ca_file)
{
    CURL *h = curl_easy_init();
    char url[256];
    snprintf(url, sizeof(url), "%s/validate", f->base);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_CAINFO, ca_file);
    curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
    curl_easy_setopt(h, CURLOPT_FRESH_CONNECT, 1L);
    CURLcode rc = curl_easy_perform(h);
    curl_easy_cleanup(h);
    return rc;
}

static void test_cert_reload(void **state)
{
    struct fx *f = *state;
    assert_int_equal(probe(f, f->pki.ca_file), CURLE_OK);
    time_t first = wh_certs_not_after(f->certs);
    /* the Secret is updated: a new pair from another CA, valid 5 days */
    publish(&f->pki2, "gen2", 5);
    usleep(120 * 1000);
    assert_int_equal(probe(f, f->pki2.ca_file), CURLE_OK);
    assert_int_not_equal(probe(f, f->pki.ca_file), CURLE_OK);
    assert_true(wh_certs_not_after(f->certs) > first + 2 * 86400);
    assert_int_equal(wh_certs_loads(f->certs), 2);
    /* a broken update (key of another pair) is refused; the last good pair stays */
    char path[256], src[1024];
    snprintf(path, sizeof(path), "%s/gen3", f->pki.dir);
    mkdir(path, 0700);
    snprintf(src, sizeof(src),
             "cp %s/gen1/tls.crt %s/gen3/tls.crt && cp %s/gen2/tls.key "
             "%s/gen3/tls.key && ln -sfn gen3 %s/..data",
             f->pki.dir, f->pki.dir, f->pki.dir, f->pki.dir, f->pki.dir);
    assert_int_equal(system(src), 0);
    usleep(120 * 1000);
    assert_int_equal(probe(f, f->pki2.ca_file), CURLE_OK);
    assert_int_equal(wh_certs_failures(f->certs), 1);
    char err[256];
    assert_int_equal(wh_certs_refresh(f->certs, 1, err, sizeof(err)), 0); /* not retried */
    /* metrics export the expiry and the loads */
    struct buf out;
    buf_init(&out, BUF_CAP_REPLY);
    const char *ct;
    assert_int_equal(wh_app_ops_handle(&f->app, "/metrics", NULL, 0, &out, &ct), 200);
    assert_non_null(strstr(buf_cstr(&out), "mkueue_webhook_serving_cert_expiry_seconds 4"));
    assert_non_null(
        strstr(buf_cstr(&out), "mkueue_webhook_serving_cert_reloads_total{result=\"ok\"} 2"));
    assert_non_null(
        strstr(buf_cstr(&out), "mkueue_webhook_serving_cert_reloads_total{result=\"error\"} 1"));
    buf_free(&out);
}

static void test_certs_load_errors(void **state)
{
    struct fx *f = *state;
    char err[256], key2[256];
    assert_null(wh_certs_new("/nonexistent/tls.crt", f->key, 0, err, sizeof(err)));
    assert_non_null(strstr(err, "/nonexistent/tls.crt"));
    publish(&f->pki2, "other", 1);
    snprintf(key2, sizeof(key2), "%s/other/tls.key", f->pki.dir);
    char cert1[256];
    snprintf(cert1, sizeof(cert1), "%s/gen1/tls.crt", f->pki.dir);
    assert_null(wh_certs_new(cert1, key2, 0, err, sizeof(err)));
    assert_non_null(strstr(err, "does not match"));
    assert_null(wh_certs_new(f->pki.ca_file, f->pki.ca_file, 0, err, sizeof(err)));
}

static void test_ops_endpoints(void **state)
{
    struct fx *f = *state;
    CURL *h = curl_easy_init();
    struct resp r;
    char url[256];
    snprintf(url, sizeof(url), "%s/healthz", f->ops_base);
    assert_int_equal(request(h, NULL, url, NULL, NULL, 0, &r), CURLE_OK);
    assert_int_equal(r.status, 200);
    buf_free(&r.body);
    snprintf(url, sizeof(url), "%s/readyz", f->ops_base);
    assert_int_equal(request(h, NULL, url, NULL, NULL, 0, &r), CURLE_OK);
    assert_int_equal(r.status, 503);
    buf_free(&r.body);
    f->ready = 1;
    assert_int_equal(request(h, NULL, url, NULL, NULL, 0, &r), CURLE_OK);
    assert_int_equal(r.status, 200);
    buf_free(&r.body);
    snprintf(url, sizeof(url), "%s/metrics", f->ops_base);
    assert_int_equal(request(h, NULL, url, NULL, NULL, 0, &r), CURLE_OK);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body.data, "# TYPE mkueue_webhook_serving_cert_expiry_seconds gauge"));
    assert_non_null(strstr(r.body.data, "mkueue_webhook_requests_in_flight 0"));
    buf_free(&r.body);
    assert_int_equal(request(h, NULL, url, "application/json", "{}", 0, &r), CURLE_OK);
    assert_int_equal(r.status, 405);
    buf_free(&r.body);
    snprintf(url, sizeof(url), "%s/validate", f->ops_base);
    assert_int_equal(request(h, NULL, url, "application/json", "{}", 0, &r), CURLE_OK);
    assert_int_equal(r.status, 404);
    buf_free(&r.body);
    curl_easy_cleanup(h);
}

/* A client that sends half a request and stalls holds no thread and is cut
 * by the idle timeout. */
static void test_slow_client(void **state)
{
    struct fx *f = *state;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(wh_server_port(f->ops))};
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    const char *part = "GET /healthz HTTP/1.1\r\nHost: x\r\n";
    assert_true(write(fd, part, strlen(part)) > 0);
    /* meanwhile, others are served */
    CURL *h = curl_easy_init();
    struct resp r;
    char url[256];
    snprintf(url, sizeof(url), "%s/healthz", f->ops_base);
    assert_int_equal(request(h, NULL, url, NULL, NULL, 0, &r), CURLE_OK);
    assert_int_equal(r.status, 200);
    buf_free(&r.body);
    curl_easy_cleanup(h);
    struct timeval tv = {5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    char buf[64];
    long long t0 = (long long)time(NULL);
    ssize_t n = read(fd, buf, sizeof(buf));
    assert_true(n <= 0); /* closed without an answer */
    assert_true((long long)time(NULL) - t0 <= 4);
    close(fd);
}

/* A plain server of the app's routes with these limits, on an ephemeral port. */
static struct wh_server *plain_server(struct fx *f, int admission, unsigned idle_s,
                                      unsigned request_s, unsigned per_ip, struct wh_budget *budget)
{
    struct wh_server_opts o = {
        .name = "limits",
        .bind = "127.0.0.1",
        .threads = 1,
        .max_connections = 16,
        .max_per_ip = per_ip,
        .budget = budget,
        .timeout_s = idle_s,
        .request_timeout_s = request_s,
        .max_body = 8192,
        .route = admission ? wh_app_admission_route : wh_app_ops_route,
        .handle = admission ? wh_app_admission_handle : wh_app_ops_handle,
        .ud = &f->app,
    };
    char err[256];
    struct wh_server *s = wh_server_start(&o, err, sizeof(err));
    assert_non_null(s);
    return s;
}

static int connect_to(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    return fd;
}

/* 1 when the server closed fd (EOF or reset) within ms, 0 when it is open. */
static int closed_within(int fd, int ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, ms) <= 0)
        return 0;
    char b[256];
    return read(fd, b, sizeof(b)) <= 0;
}

/* A client trickling a header line every 200 ms is never idle, so only an
 * absolute deadline from its request line cuts it (issue 11, item 2). */
static void test_trickled_headers_cut(void **state)
{
    struct fx *f = *state;
    struct wh_server *s = plain_server(f, 0, 30, 1, 0, NULL);
    int fd = connect_to(wh_server_port(s));
    const char *line = "GET /healthz HTTP/1.1\r\nHost: x\r\n";
    assert_true(write(fd, line, strlen(line)) > 0);
    int closed = 0;
    for (int i = 0; i < 50 && !closed; i++) { /* up to 10 s of trickling */
        if (write(fd, "X-Slow: 1\r\n", 11) <= 0)
            closed = 1;
        else
            closed = closed_within(fd, 200);
    }
    assert_true(closed);
    close(fd);
    /* the server still answers others */
    CURL *h = curl_easy_init();
    struct resp r;
    char url[128];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/healthz", wh_server_port(s));
    assert_int_equal(request(h, NULL, url, NULL, NULL, 0, &r), CURLE_OK);
    assert_int_equal(r.status, 200);
    buf_free(&r.body);
    curl_easy_cleanup(h);
    wh_server_stop(s);
}

/* A connection that never sends a full request line, one byte at a time,
 * is cut by the idle deadline counted from accept. */
static void test_trickled_request_line_cut(void **state)
{
    struct fx *f = *state;
    struct wh_server *s = plain_server(f, 0, 1, 30, 0, NULL);
    int fd = connect_to(wh_server_port(s));
    int closed = 0;
    for (int i = 0; i < 50 && !closed; i++) {
        if (write(fd, "G", 1) <= 0)
            closed = 1;
        else
            closed = closed_within(fd, 200);
    }
    assert_true(closed);
    close(fd);
    wh_server_stop(s);
}

/* Connections past the per-IP limit are closed at once; those within stay. */
static void test_per_ip_limit(void **state)
{
    struct fx *f = *state;
    struct wh_server *s = plain_server(f, 0, 30, 30, 2, NULL);
    int port = wh_server_port(s);
    int a = connect_to(port), b = connect_to(port);
    assert_int_equal(closed_within(a, 300), 0);
    int c = connect_to(port);
    assert_int_equal(closed_within(c, 5000), 1);
    assert_int_equal(closed_within(a, 100), 0);
    assert_int_equal(closed_within(b, 100), 0);
    close(a);
    close(b);
    close(c);
    wh_server_stop(s);
}

/* The budget in use once the server has completed its requests (the client
 * may see the answer before the completion callback gives bytes back). */
static size_t budget_settled(struct wh_budget *b)
{
    for (int i = 0; i < 500 && wh_budget_used(b) != 0; i++)
        usleep(10 * 1000);
    return wh_budget_used(b);
}

/* A body that does not fit the shared budget is refused with 429 before it
 * is read; the budget is whole again after each request. */
static void test_body_budget(void **state)
{
    struct fx *f = *state;
    struct wh_budget budget;
    wh_budget_init(&budget, 4096);
    struct wh_server *s = plain_server(f, 1, 30, 30, 0, &budget);
    char url[128];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/validate-batch-v1-job", wh_server_port(s));
    char *big = malloc(6001);
    assert_non_null(big);
    memset(big, ' ', 6000);
    big[0] = '{';
    big[5999] = '}';
    big[6000] = '\0';
    CURL *h = curl_easy_init();
    struct resp r;
    assert_int_equal(request(h, NULL, url, "application/json", big, 0, &r), CURLE_OK);
    assert_int_equal(r.status, 429);
    buf_free(&r.body);
    /* chunked: refused as it grows */
    assert_int_equal(request(h, NULL, url, "application/json", NULL, 6000, &r), CURLE_OK);
    assert_int_equal(r.status, 429);
    buf_free(&r.body);
    assert_int_equal(budget_settled(&budget), 0);
    /* a small review is decided */
    assert_int_equal(request(h, NULL, url, "application/json", review_body(), 0, &r), CURLE_OK);
    assert_int_equal(r.status, 200);
    buf_free(&r.body);
    assert_int_equal(budget_settled(&budget), 0);
    curl_easy_cleanup(h);
    free(big);
    wh_server_stop(s);
}

static void test_config_flags(void **state)
{
    (void)state;
    struct wh_config c;
    char err[256];
    FILE *devnull = fopen("/dev/null", "w");
    char *a1[] = {
        "wh", "--port=1234",       "--metrics-port", "0",     "--cert-dir",   "/c", "--threads",
        "4",  "--kubeconfig-dir=", "--log-level",    "debug", "--namespace=x"};
    assert_int_equal(wh_config_parse(12, a1, &c, devnull, err, sizeof(err)), 0);
    assert_int_equal(c.port, 1234);
    assert_int_equal(c.metrics_port, 0);
    assert_int_equal(c.threads, 4);
    assert_string_equal(c.cert_path, "/c/tls.crt");
    assert_string_equal(c.key_path, "/c/tls.key");
    assert_null(c.kubeconfig_dir);
    assert_null(c.kubeconfig);
    assert_string_equal(c.ns, "x");
    assert_int_equal(c.log_level, LOG_DEBUG);
    char *a2[] = {"wh", "--tls-cert", "/a.crt", "--tls-key=/a.key"};
    assert_int_equal(wh_config_parse(4, a2, &c, devnull, err, sizeof(err)), 0);
    assert_string_equal(c.cert_path, "/a.crt");
    assert_string_equal(c.key_path, "/a.key");
    assert_string_equal(c.kubeconfig_dir, "/etc/multikueue/kubeconfigs");
    assert_int_equal(c.max_body, 3u * 1024 * 1024);
    char *bad[][3] = {{"wh", "--port", "70000"}, {"wh", "--threads", "0"},
                      {"wh", "--bogus", "1"},    {"wh", "--log-level", "loud"},
                      {"wh", "--port", "-1"},    {"wh", "--namespace", ""}};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(wh_config_parse(3, bad[i], &c, devnull, err, sizeof(err)), MK_ERR_INVAL);
    assert_int_equal(c.max_per_ip, 64);
    assert_int_equal(c.health_port, 0);
    assert_int_equal(c.max_decoded, 24u * 1024 * 1024);
    assert_int_equal(c.max_inflight, 48u * 1024 * 1024);
    char *a5[] = {"wh",     "--health-port=8081",          "--max-connections-per-ip",
                  "8",      "--max-decoded-bytes=1048576", "--max-inflight-bytes",
                  "4194304"};
    assert_int_equal(wh_config_parse(7, a5, &c, devnull, err, sizeof(err)), 0);
    assert_int_equal(c.health_port, 8081);
    assert_int_equal(c.max_per_ip, 8);
    assert_int_equal(c.max_decoded, 1048576);
    assert_int_equal(c.max_inflight, 4194304);
    /* the largest review must fit the budget with its body */
    char *a6[] = {"wh", "--max-inflight-bytes=4194304"};
    assert_int_equal(wh_config_parse(2, a6, &c, devnull, err, sizeof(err)), MK_ERR_INVAL);
    assert_non_null(strstr(err, "--max-inflight-bytes 4194304 is less than"));
    char *a3[] = {"wh", "--port"};
    assert_int_equal(wh_config_parse(2, a3, &c, devnull, err, sizeof(err)), MK_ERR_INVAL);
    assert_non_null(strstr(err, "needs a value"));
    char *a4[] = {"wh", "--version"};
    assert_int_equal(wh_config_parse(2, a4, &c, devnull, err, sizeof(err)), 1);
    /* the certificate flags share the table; errors name the flag */
    char *a7[] = {"wh", "--cert-secret=tls",     "--ca-days",
                  "30", "--cert-sans=localhost", "--ca-grace=-1"};
    assert_int_equal(wh_config_parse(6, a7, &c, devnull, err, sizeof(err)), 0);
    assert_string_equal(c.certmgr.secret_name, "tls");
    assert_string_equal(c.certmgr.namespace, "mkueue-system");
    assert_int_equal(c.certmgr.ca_days, 30);
    assert_int_equal(c.certmgr.ca_grace_s, -1);
    assert_string_equal(c.cert_sans, "localhost");
    char *a8[] = {"wh", "--max-body=1023"};
    assert_int_equal(wh_config_parse(2, a8, &c, devnull, err, sizeof(err)), MK_ERR_INVAL);
    assert_non_null(strstr(err, "--max-body: expected an integer from 1024 to 67108864"));
    char *a9[] = {"wh", "--ca-days=0"};
    assert_int_equal(wh_config_parse(2, a9, &c, devnull, err, sizeof(err)), MK_ERR_INVAL);
    assert_non_null(strstr(err, "--ca-days"));
    char *a10[] = {"wh", "--bogus=1"};
    assert_int_equal(wh_config_parse(2, a10, &c, devnull, err, sizeof(err)), MK_ERR_INVAL);
    assert_non_null(strstr(err, "unknown flag --bogus"));
    char *a11[] = {"wh", "--cert-secret"};
    assert_int_equal(wh_config_parse(2, a11, &c, devnull, err, sizeof(err)), MK_ERR_INVAL);
    assert_non_null(strstr(err, "--cert-secret needs a value"));
    fclose(devnull);
}

static void test_state_start_errors(void **state)
{
    (void)state;
    char err[256] = "";
    struct wh_state_opts o = {.kubeconfig = "/nonexistent/kubeconfig", .ns = "mkueue-system"};
    assert_null(wh_state_start(&o, err, sizeof(err)));
    assert_non_null(strstr(err, "/nonexistent/kubeconfig"));
    /* in-cluster without the service account environment */
    o.kubeconfig = NULL;
    err[0] = '\0';
    unsetenv("KUBERNETES_SERVICE_HOST");
    assert_null(wh_state_start(&o, err, sizeof(err)));
    assert_true(err[0] != '\0');
}

int main(void)
{
    log_set_level(LOG_ERROR);
    signal(SIGPIPE, SIG_IGN);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_admission_over_tls, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tls_versions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cert_reload, setup, teardown),
        cmocka_unit_test_setup_teardown(test_certs_load_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ops_endpoints, setup, teardown),
        cmocka_unit_test_setup_teardown(test_slow_client, setup, teardown),
        cmocka_unit_test_setup_teardown(test_trickled_headers_cut, setup, teardown),
        cmocka_unit_test_setup_teardown(test_trickled_request_line_cut, setup, teardown),
        cmocka_unit_test_setup_teardown(test_per_ip_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_body_budget, setup, teardown),
        cmocka_unit_test(test_config_flags),
        cmocka_unit_test(test_state_start_errors),
    };
    int rc = cmocka_run_group_tests_name("webhook server", tests, NULL, NULL);
    curl_global_cleanup();
    return rc;
}
