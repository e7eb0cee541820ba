#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "certmgr.h"
#include "fileio.h"
#include "jsonx.h"
#include "kube_client.h"
#include "patch.h"
#include "tests/support/test_https.h"
#include "tls.h"

#define NS      "mkueue-system"
#define SECRET  "mkueue-webhook-tls"
#define MWC     "mkueue-mutating"
#define VWC     "mkueue-validating"
#define SEC_URL "/api/v1/namespaces/" NS "/secrets"
#define MWC_URL "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/" MWC
#define VWC_URL "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/" VWC
#define DAY     86400L

/* ---- a tiny stateful apiserver: one Secret and two configurations ---------------- */

struct fake {
    pthread_mutex_t lock;
    json_t *objs; /* path -> object */
    long rv;
    int writes;      /* POST, PUT, PATCH answered 2xx */
    int conflicts;   /* 409 answered */
    int forbid_cfg;  /* 403 on configuration requests */
    int secret_500;  /* 500 on secret GET */
    int race_on_put; /* before the next PUT, another writer bumps the Secret */
};

static void bump(struct fake *f, json_t *obj)
{
    char rv[32];
    snprintf(rv, sizeof(rv), "%ld", ++f->rv);
    jx_set_new_str(obj, "metadata.resourceVersion", rv);
}

static void put_obj(struct fake *f, const char *path, json_t *obj)
{
    bump(f, obj);
    json_object_set_new(f->objs, path, obj);
}

static void status(struct th_response *resp, int code, const char *reason)
{
    char *b = NULL;
    if (asprintf(&b, "{\"kind\":\"Status\",\"status\":\"Failure\",\"reason\":\"%s\",\"code\":%d}",
                 reason, code) < 0)
        b = NULL;
    resp->status = code;
    resp->body_alloc = b;
}

static void answer(struct th_response *resp, int code, const json_t *obj)
{
    resp->status = code;
    resp->body_alloc = json_dumps(obj, JSON_COMPACT);
}

static int handler(const struct th_request *req, struct th_response *resp, void *ud)
{
    struct fake *f = ud;
    pthread_mutex_lock(&f->lock);
    json_t *body = req->body_len ? json_loads(req->body, 0, NULL) : NULL;
    int is_cfg = strstr(req->path, "webhookconfigurations") != NULL;
    json_t *cur = json_object_get(f->objs, req->path);
    if (is_cfg && f->forbid_cfg) {
        status(resp, 403, "Forbidden");
    } else if (strcmp(req->method, "GET") == 0) {
        if (!is_cfg && f->secret_500)
            status(resp, 500, "InternalError");
        else if (cur)
            answer(resp, 200, cur);
        else
            status(resp, 404, "NotFound");
    } else if (strcmp(req->method, "POST") == 0 && strcmp(req->path, SEC_URL) == 0) {
        char path[256];
        snprintf(path, sizeof(path), "%s/%s", SEC_URL, jx_str(body, "metadata.name"));
        if (json_object_get(f->objs, path)) {
            status(resp, 409, "AlreadyExists");
            f->conflicts++;
        } else {
            put_obj(f, path, json_incref(body));
            answer(resp, 201, body);
            f->writes++;
        }
    } else if (strcmp(req->method, "PUT") == 0 && cur) {
        if (f->race_on_put) {
            f->race_on_put = 0;
            bump(f, cur);
        }
        const char *want = jx_str(body, "metadata.resourceVersion");
        if (!want || strcmp(want, jx_str(cur, "metadata.resourceVersion")) != 0) {
            status(resp, 409, "Conflict");
            f->conflicts++;
        } else {
            put_obj(f, req->path, json_incref(body));
            answer(resp, 200, body);
            f->writes++;
        }
    } else if (strcmp(req->method, "PATCH") == 0 && cur) {
        json_t *copy = json_deep_copy(cur);
        char err[256];
        if (jp_apply(copy, body, err, sizeof(err)) != 0) {
            json_decref(copy);
            status(resp, 422, "Invalid");
        } else {
            put_obj(f, req->path, copy);
            answer(resp, 200, copy);
            f->writes++;
        }
    } else {
        status(resp, 404, "NotFound");
    }
    json_decref(body);
    pthread_mutex_unlock(&f->lock);
    return 0;
}

static json_t *config(const char *kind, const char *name, const char *stale)
{
    return json_pack("{s:s, s:{s:s}, s:[{s:s, s:{s:s, s:s}}, {s:s, s:{s:{s:s, s:s}}}]}", "kind",
                     kind, "metadata", "name", name, "webhooks", "name", "a.mkueue.x-k8s.io",
                     "clientConfig", "url", "https://127.0.0.1:1/x", "caBundle", stale, "name",
                     "b.mkueue.x-k8s.io", "clientConfig", "service", "name", "svc", "namespace",
                     NS);
}

/* ---- fixture ------------------------------------------------------------------------ */

static time_t fake_now;
static time_t clock_fn(void)
{
    return fake_now;
}

static const char *const extra_dns[] = {"localhost", NULL};
static const char *const extra_ips[] = {"127.0.0.1", NULL};

struct env {
    struct fake f;
    struct th_server *s;
    struct kcfg cfg;
    struct kc_client *c;
    char dir[64];
    struct wh_certmgr_opts o;
};

static int setup(void **state)
{
    struct env *e = calloc(1, sizeof(*e));
    assert_non_null(e);
    pthread_mutex_init(&e->f.lock, NULL);
    e->f.objs = json_object();
    put_obj(&e->f, MWC_URL, config("MutatingWebhookConfiguration", MWC, "c3RhbGUK"));
    put_obj(&e->f, VWC_URL, config("ValidatingWebhookConfiguration", VWC, "c3RhbGUK"));
    e->s = th_start(NULL);
    assert_non_null(e->s);
    th_set_handler(e->s, handler, &e->f);
    e->cfg.server = strdup(th_url(e->s));
    e->cfg.ca_pem = th_read_data("test-ca.pem", &e->cfg.ca_len);
    pthread_mutex_init(&e->cfg.lock, NULL);
    struct kc_options ko = {.qps = -1, .timeout_ms = 5000};
    char err[256] = "";
    e->c = kc_new(&e->cfg, &ko, err, sizeof(err));
    assert_non_null(e->c);
    snprintf(e->dir, sizeof(e->dir), "/tmp/test-certmgr-XXXXXX");
    assert_non_null(mkdtemp(e->dir));
    fake_now = time(NULL);
    e->o = (struct wh_certmgr_opts){
        .namespace = NS,
        .secret_name = SECRET,
        .cert_dir = e->dir,
        .service = "mkueue-webhook",
        .dns = extra_dns,
        .ips = extra_ips,
        .mutating_config = MWC,
        .validating_config = VWC,
        .clock = clock_fn,
    };
    *state = e;
    return 0;
}

static int teardown(void **state)
{
    struct env *e = *state;
    kc_free(e->c);
    th_free(e->s);
    free(e->cfg.server);
    free(e->cfg.ca_pem);
    pthread_mutex_destroy(&e->cfg.lock);
    json_decref(e->f.objs);
    pthread_mutex_destroy(&e->f.lock);
    const char *files[] = {"tls.crt", "tls.key", "ca.crt"};
    char p[128];
    for (int i = 0; i < 3; i++) {
        snprintf(p, sizeof(p), "%s/%s", e->dir, files[i]);
        unlink(p);
    }
    rmdir(e->dir);
    free(e);
    return 0;
}

/* ---- helpers ---------------------------------------------------------------------- */

static char *file_of(struct env *e, const char *name)
{
    char p[128], *out = NULL;
    snprintf(p, sizeof(p), "%s/%s", e->dir, name);
    return fio_read_file(p, 1 << 20, &out, NULL) == 0 ? out : NULL;
}

static char *secret_key(struct env *e, const char *key)
{
    pthread_mutex_lock(&e->f.lock);
    json_t *sec = json_object_get(e->f.objs, SEC_URL "/" SECRET);
    const char *b64 = sec ? json_string_value(jx_getv(sec, "data", key)) : NULL;
    char *out = NULL;
    if (b64) {
        size_t n = strlen(b64);
        out = calloc(1, n + 1);
        int m = EVP_DecodeBlock((unsigned char *)out, (const unsigned char *)b64, (int)n);
        assert_true(m > 0);
        out[m - (b64[n - 1] == '=') - (b64[n - 2] == '=')] = '\0';
    }
    pthread_mutex_unlock(&e->f.lock);
    return out;
}

static int count_certs(const char *pem)
{
    int n = 0;
    for (const char *p = pem; (p = strstr(p, "BEGIN CERTIFICATE")); p++)
        n++;
    return n;
}

/* Every webhook of both configurations carries base64(ca.crt). */
static void assert_bundles(struct env *e)
{
    char *ca = secret_key(e, "ca.crt");
    assert_non_null(ca);
    size_t n = strlen(ca);
    char *b64 = calloc(1, 4 * ((n + 2) / 3) + 1);
    EVP_EncodeBlock((unsigned char *)b64, (unsigned char *)ca, (int)n);
    pthread_mutex_lock(&e->f.lock);
    const char *urls[] = {MWC_URL, VWC_URL};
    for (int u = 0; u < 2; u++) {
        json_t *hooks = jx_get(json_object_get(e->f.objs, urls[u]), "webhooks");
        assert_int_equal(json_array_size(hooks), 2);
        for (size_t i = 0; i < 2; i++)
            assert_string_equal(jx_str(json_array_get(hooks, i), "clientConfig.caBundle"), b64);
    }
    pthread_mutex_unlock(&e->f.lock);
    free(b64);
    free(ca);
}

/* The files equal the Secret and the certificate serves every wanted name. */
static void assert_files(struct env *e)
{
    const char *keys[] = {"tls.crt", "tls.key", "ca.crt"};
    for (int i = 0; i < 3; i++) {
        char *f = file_of(e, keys[i]), *s = secret_key(e, keys[i]);
        assert_non_null(f);
        assert_non_null(s);
        assert_string_equal(f, s);
        free(f);
        free(s);
    }
    char *crt = file_of(e, "tls.crt"), *ca = file_of(e, "ca.crt");
    const char *hosts[] = {"mkueue-webhook.mkueue-system.svc", "mkueue-webhook", "localhost",
                           "127.0.0.1", "mkueue-webhook.mkueue-system.svc.cluster.local"};
    char err[256];
    for (size_t i = 0; i < sizeof(hosts) / sizeof(*hosts); i++) {
        if (tls_verify(crt, strlen(crt), ca, strlen(ca), hosts[i], err, sizeof(err)) != 0)
            fail_msg("%s: %s", hosts[i], err);
    }
    assert_int_not_equal(
        tls_verify(crt, strlen(crt), ca, strlen(ca), "evil.example", err, sizeof(err)), 0);
    struct stat st;
    char p[128];
    snprintf(p, sizeof(p), "%s/tls.key", e->dir);
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(st.st_mode & 077, 0); /* the key is private */
    free(crt);
    free(ca);
}

static int ensure(struct env *e, struct wh_certmgr_report *rep)
{
    char err[512] = "";
    int rc = wh_certmgr_ensure_ex(e->c, &e->o, rep, err, sizeof(err));
    if (rc != 0)
        print_message("ensure: %s\n", err);
    return rc;
}

/* ---- tests -------------------------------------------------------------------------- */

static void test_creates_everything_then_is_idempotent(void **state)
{
    struct env *e = *state;
    struct wh_certmgr_report rep;
    assert_int_equal(ensure(e, &rep), 0);
    assert_true(rep.secret_written && rep.ca_rotated && rep.cert_issued && rep.files_written);
    assert_int_equal(rep.configs_patched, 2);
    assert_files(e);
    assert_bundles(e);
    json_t *sec = json_object_get(e->f.objs, SEC_URL "/" SECRET);
    assert_string_equal(jx_str(sec, "type"), "kubernetes.io/tls");
    assert_string_equal(jx_str(sec, "metadata.labels[app.kubernetes.io/managed-by]"),
                        "mkueue-webhook");
    char *ca = secret_key(e, "ca.crt");
    assert_int_equal(count_certs(ca), 1);
    free(ca);

    int writes = e->f.writes;
    assert_int_equal(ensure(e, &rep), 0);
    assert_false(rep.secret_written || rep.ca_rotated || rep.cert_issued || rep.files_written ||
                 rep.configs_patched);
    assert_int_equal(e->f.writes, writes);
}

static void test_fills_an_empty_precreated_secret(void **state)
{
    struct env *e = *state;
    put_obj(&e->f, SEC_URL "/" SECRET,
            json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s}}, s:s}", "apiVersion", "v1", "kind",
                      "Secret", "metadata", "name", SECRET, "namespace", NS, "labels",
                      "app.kubernetes.io/managed-by", "Helm", "type", "Opaque"));
    struct wh_certmgr_report rep;
    assert_int_equal(ensure(e, &rep), 0);
    assert_true(rep.secret_written);
    json_t *sec = json_object_get(e->f.objs, SEC_URL "/" SECRET);
    assert_string_equal(jx_str(sec, "type"), "Opaque"); /* Helm's object, kept as it is */
    assert_string_equal(jx_str(sec, "metadata.labels[app.kubernetes.io/managed-by]"), "Helm");
    assert_files(e);
    assert_bundles(e);
}

static void test_renews_serving_cert_with_same_ca(void **state)
{
    struct env *e = *state;
    assert_int_equal(ensure(e, NULL), 0);
    char *ca0 = secret_key(e, "ca.crt"), *crt0 = secret_key(e, "tls.crt");
    fake_now += 300 * DAY; /* a 365-day certificate renews in its last third */
    struct wh_certmgr_report rep;
    assert_int_equal(ensure(e, &rep), 0);
    assert_true(rep.cert_issued && rep.files_written && rep.secret_written);
    assert_false(rep.ca_rotated);
    assert_int_equal(rep.configs_patched, 0); /* same CA: nothing to tell the apiserver */
    char *ca1 = secret_key(e, "ca.crt"), *crt1 = secret_key(e, "tls.crt");
    assert_string_equal(ca0, ca1);
    assert_string_not_equal(crt0, crt1);
    assert_files(e);
    free(ca0);
    free(ca1);
    free(crt0);
    free(crt1);
}

static void test_ca_rotation_keeps_old_ca_until_grace_and_expiry(void **state)
{
    struct env *e = *state;
    e->o.ca_days = 100;
    e->o.cert_days = 3650; /* capped to the CA's 100 days */
    e->o.ca_renew_before_s = 30 * DAY;
    e->o.cert_renew_before_s = 10 * DAY;
    assert_int_equal(ensure(e, NULL), 0);
    char *old_ca = secret_key(e, "ca.crt"), *crt0 = secret_key(e, "tls.crt");
    time_t exp;
    assert_int_equal(tls_cert_expiry(crt0, strlen(crt0), &exp, NULL, 0), 0);
    assert_true(exp <= time(NULL) + 101 * DAY);

    /* 80 days on: the CA has 20 left -> a new CA first, the old one kept */
    e->o.ca_days = 3650;
    fake_now += 80 * DAY;
    struct wh_certmgr_report rep;
    assert_int_equal(ensure(e, &rep), 0);
    assert_true(rep.ca_rotated);
    assert_false(rep.cert_issued);
    assert_int_equal(rep.configs_patched, 2);
    char *bundle = secret_key(e, "ca.crt"), *crt1 = secret_key(e, "tls.crt");
    assert_int_equal(count_certs(bundle), 2);
    assert_non_null(strstr(bundle, old_ca));
    assert_ptr_not_equal(strstr(bundle, old_ca), bundle); /* the new CA comes first */
    assert_string_equal(crt0, crt1);                      /* still served until the grace ends */
    assert_bundles(e);
    assert_files(e);

    fake_now += 30; /* within the grace: nothing */
    assert_int_equal(ensure(e, &rep), 0);
    assert_false(rep.cert_issued || rep.secret_written);

    fake_now += 31; /* grace over: the serving certificate moves to the new CA */
    assert_int_equal(ensure(e, &rep), 0);
    assert_true(rep.cert_issued);
    assert_false(rep.ca_rotated);
    assert_int_equal(rep.configs_patched, 0);
    char *crt2 = secret_key(e, "tls.crt");
    char *new_ca = strndup(bundle, (size_t)(strstr(bundle, old_ca) - bundle));
    assert_int_equal(tls_verify(crt2, strlen(crt2), new_ca, strlen(new_ca), NULL, NULL, 0), 0);
    assert_int_not_equal(tls_verify(crt2, strlen(crt2), old_ca, strlen(old_ca), NULL, NULL, 0), 0);
    assert_files(e);

    fake_now += 21 * DAY; /* the old CA expired: it leaves the bundle */
    assert_int_equal(ensure(e, &rep), 0);
    assert_int_equal(rep.configs_patched, 2);
    assert_false(rep.cert_issued || rep.ca_rotated);
    char *bundle2 = secret_key(e, "ca.crt");
    assert_string_equal(bundle2, new_ca);
    assert_bundles(e);
    assert_files(e);
    free(old_ca);
    free(crt0);
    free(crt1);
    free(crt2);
    free(bundle);
    free(bundle2);
    free(new_ca);
}

static void test_new_name_reissues_from_same_ca(void **state)
{
    struct env *e = *state;
    assert_int_equal(ensure(e, NULL), 0);
    char *ca0 = secret_key(e, "ca.crt");
    static const char *const ips2[] = {"127.0.0.1", "10.1.2.3", NULL};
    e->o.ips = ips2;
    struct wh_certmgr_report rep;
    assert_int_equal(ensure(e, &rep), 0);
    assert_true(rep.cert_issued);
    assert_false(rep.ca_rotated);
    char *ca1 = secret_key(e, "ca.crt"), *crt = secret_key(e, "tls.crt");
    assert_string_equal(ca0, ca1);
    assert_int_equal(tls_verify(crt, strlen(crt), ca1, strlen(ca1), "10.1.2.3", NULL, 0), 0);
    free(ca0);
    free(ca1);
    free(crt);
}

static void test_corrupt_secret_is_regenerated(void **state)
{
    struct env *e = *state;
    assert_int_equal(ensure(e, NULL), 0);
    char *ca0 = secret_key(e, "ca.crt");
    pthread_mutex_lock(&e->f.lock);
    json_t *sec = json_object_get(e->f.objs, SEC_URL "/" SECRET);
    json_object_set_new(json_object_get(sec, "data"), "ca.key", json_string("!!not base64!!"));
    json_object_set_new(json_object_get(sec, "data"), "tls.key",
                        json_string("LS0tLS1CRUdJTiBQUklWQVRFIEtFWS0tLS0tCg=="));
    pthread_mutex_unlock(&e->f.lock);
    struct wh_certmgr_report rep;
    assert_int_equal(ensure(e, &rep), 0);
    assert_true(rep.ca_rotated && rep.cert_issued && rep.files_written);
    char *ca1 = secret_key(e, "ca.crt");
    assert_string_not_equal(ca0, ca1);
    assert_int_equal(count_certs(ca1), 2); /* the unusable CA stays trusted until it expires */
    assert_files(e);
    assert_bundles(e);
    free(ca0);
    free(ca1);
}

static void test_lost_race_rereads(void **state)
{
    struct env *e = *state;
    assert_int_equal(ensure(e, NULL), 0);
    e->f.race_on_put = 1;
    fake_now += 300 * DAY;
    struct wh_certmgr_report rep;
    assert_int_equal(ensure(e, &rep), 0);
    assert_int_equal(e->f.conflicts, 1);
    assert_true(rep.secret_written && rep.cert_issued);
    assert_files(e);
}

struct racer {
    struct env *e;
    struct wh_certmgr_opts o;
    char dir[64];
    int rc;
};

static void *race_run(void *arg)
{
    struct racer *r = arg;
    char err[256];
    r->rc = wh_certmgr_ensure(r->e->c, &r->o, err, sizeof(err));
    return NULL;
}

static void test_two_replicas_converge(void **state)
{
    struct env *e = *state;
    struct racer r[2];
    pthread_t t[2];
    for (int i = 0; i < 2; i++) {
        r[i].e = e;
        r[i].o = e->o;
        snprintf(r[i].dir, sizeof(r[i].dir), "/tmp/test-certmgr-r-XXXXXX");
        assert_non_null(mkdtemp(r[i].dir));
        r[i].o.cert_dir = r[i].dir;
        pthread_create(&t[i], NULL, race_run, &r[i]);
    }
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    char *s = secret_key(e, "tls.crt");
    for (int i = 0; i < 2; i++) {
        assert_int_equal(r[i].rc, 0);
        char p[128], *f = NULL;
        snprintf(p, sizeof(p), "%s/tls.crt", r[i].dir);
        assert_int_equal(fio_read_file(p, 1 << 20, &f, NULL), 0);
        assert_string_equal(f, s); /* both serve what the Secret holds */
        free(f);
        const char *names[] = {"tls.crt", "tls.key", "ca.crt"};
        for (int j = 0; j < 3; j++) {
            snprintf(p, sizeof(p), "%s/%s", r[i].dir, names[j]);
            unlink(p);
        }
        rmdir(r[i].dir);
    }
    free(s);
    assert_bundles(e);
}

static void test_missing_config_is_skipped(void **state)
{
    struct env *e = *state;
    json_object_del(e->f.objs, VWC_URL);
    struct wh_certmgr_report rep;
    assert_int_equal(ensure(e, &rep), 0);
    assert_int_equal(rep.configs_patched, 1);
}

static void test_forbidden_config_fails_after_files(void **state)
{
    struct env *e = *state;
    e->f.forbid_cfg = 1;
    struct wh_certmgr_report rep;
    char err[512] = "";
    assert_true(wh_certmgr_ensure_ex(e->c, &e->o, &rep, err, sizeof(err)) < 0);
    assert_non_null(strstr(err, "mutatingwebhookconfigurations"));
    assert_true(rep.files_written); /* the server can still start */
    assert_files(e);
}

static void test_secret_error_writes_nothing(void **state)
{
    struct env *e = *state;
    e->f.secret_500 = 1;
    char err[512] = "";
    assert_true(wh_certmgr_ensure(e->c, &e->o, err, sizeof(err)) < 0);
    assert_non_null(strstr(err, "get secret"));
    char *f = file_of(e, "tls.crt");
    assert_null(f);
    assert_int_equal(e->f.writes, 0);
}

static void test_missing_cert_dir_is_created(void **state)
{
    struct env *e = *state;
    struct wh_certmgr_opts o = e->o;
    char dir[160], file[200];
    snprintf(dir, sizeof(dir), "%s/a/b", e->dir);
    o.cert_dir = dir;
    char err[256] = "";
    assert_true(wh_certmgr_ensure(e->c, &o, err, sizeof(err)) >= 0);
    struct stat st;
    assert_int_equal(stat(dir, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    const char *files[] = {"tls.crt", "tls.key", "ca.crt"};
    for (int i = 0; i < 3; i++) {
        snprintf(file, sizeof(file), "%s/%s", dir, files[i]);
        assert_int_equal(access(file, R_OK), 0);
        unlink(file);
    }
    rmdir(dir);
    snprintf(dir, sizeof(dir), "%s/a", e->dir);
    rmdir(dir);
}

static void test_bad_options(void **state)
{
    struct env *e = *state;
    struct wh_certmgr_opts o = e->o;
    o.cert_dir = NULL;
    char err[256] = "";
    assert_true(wh_certmgr_ensure(e->c, &o, err, sizeof(err)) < 0);
    o = e->o;
    o.cert_dir = "/dev/null/dir"; /* under a file: cannot be created */
    assert_true(wh_certmgr_ensure(e->c, &o, err, sizeof(err)) < 0);
    assert_non_null(strstr(err, "/dev/null/dir"));
    assert_null(wh_certmgr_start(NULL, &o, NULL, NULL, err, sizeof(err)));
}

struct changes {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int n;
};

static void on_change(void *ud)
{
    struct changes *c = ud;
    pthread_mutex_lock(&c->lock);
    c->n++;
    pthread_cond_broadcast(&c->cond);
    pthread_mutex_unlock(&c->lock);
}

static void test_thread_rotates_and_stops(void **state)
{
    struct env *e = *state;
    assert_int_equal(ensure(e, NULL), 0);
    char *crt0 = file_of(e, "tls.crt");
    e->o.interval_s = 1;
    e->o.cert_renew_before_s = 400 * DAY; /* every pass renews */
    struct changes ch = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
    char err[256];
    struct wh_certmgr *m = wh_certmgr_start(e->c, &e->o, on_change, &ch, err, sizeof(err));
    assert_non_null(m);
    pthread_mutex_lock(&ch.lock);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 10;
    while (ch.n == 0 && pthread_cond_timedwait(&ch.cond, &ch.lock, &until) == 0)
        ;
    int n = ch.n;
    pthread_mutex_unlock(&ch.lock);
    wh_certmgr_stop(m);
    assert_true(n >= 1);
    char *crt1 = file_of(e, "tls.crt");
    assert_string_not_equal(crt0, crt1);
    assert_files(e);
    free(crt0);
    free(crt1);
    wh_certmgr_stop(NULL);
}

static void test_split_sans(void **state)
{
    (void)state;
    char **dns = NULL, **ips = NULL;
    assert_int_equal(wh_certmgr_split_sans(" localhost, 127.0.0.1,,::1 ,web.example", &dns, &ips),
                     0);
    assert_string_equal(dns[0], "localhost");
    assert_string_equal(dns[1], "web.example");
    assert_null(dns[2]);
    assert_string_equal(ips[0], "127.0.0.1");
    assert_string_equal(ips[1], "::1");
    assert_null(ips[2]);
    wh_certmgr_free_sans(dns, ips);
    assert_int_equal(wh_certmgr_split_sans(NULL, &dns, &ips), 0);
    assert_null(dns[0]);
    assert_null(ips[0]);
    wh_certmgr_free_sans(dns, ips);
    wh_certmgr_free_sans(NULL, NULL);
}

static void test_flags(void **state)
{
    (void)state;
    struct wh_certmgr_opts o = {0};
    const char *sans = NULL;
    char err[256] = "";
    assert_int_equal(wh_certmgr_flag(&o, &sans, "--cert-secret", "tls", err, sizeof(err)), 1);
    assert_int_equal(wh_certmgr_flag(&o, &sans, "--cert-service", "svc", err, sizeof(err)), 1);
    assert_int_equal(wh_certmgr_flag(&o, &sans, "--mutating-config", "m", err, sizeof(err)), 1);
    assert_int_equal(wh_certmgr_flag(&o, &sans, "--validating-config", "v", err, sizeof(err)), 1);
    assert_int_equal(wh_certmgr_flag(&o, &sans, "--cert-sans", "a,1.2.3.4", err, sizeof(err)), 1);
    assert_int_equal(wh_certmgr_flag(&o, &sans, "--ca-days", "30", err, sizeof(err)), 1);
    assert_int_equal(wh_certmgr_flag(&o, &sans, "--cert-days", "7", err, sizeof(err)), 1);
    assert_int_equal(wh_certmgr_flag(&o, &sans, "--ca-renew-before", "86400", err, sizeof(err)), 1);
    assert_int_equal(wh_certmgr_flag(&o, &sans, "--cert-renew-before", "0", err, sizeof(err)), 1);
    assert_int_equal(wh_certmgr_flag(&o, &sans, "--cert-check-interval", "5", err, sizeof(err)), 1);
    assert_int_equal(wh_certmgr_flag(&o, &sans, "--ca-grace", "-1", err, sizeof(err)), 1);
    assert_string_equal(o.secret_name, "tls");
    assert_string_equal(o.service, "svc");
    assert_string_equal(o.mutating_config, "m");
    assert_string_equal(o.validating_config, "v");
    assert_string_equal(sans, "a,1.2.3.4");
    assert_int_equal(o.ca_days, 30);
    assert_int_equal(o.cert_days, 7);
    assert_int_equal(o.ca_renew_before_s, 86400);
    assert_int_equal(o.cert_renew_before_s, 0);
    assert_int_equal(o.interval_s, 5);
    assert_int_equal(o.ca_grace_s, -1);
    assert_int_equal(wh_certmgr_flag(&o, &sans, "--port", "9443", err, sizeof(err)), 0);
    assert_int_equal(wh_certmgr_flag(&o, &sans, "--ca-days", "0", err, sizeof(err)), MK_ERR_INVAL);
    assert_non_null(strstr(err, "--ca-days"));
    assert_int_equal(wh_certmgr_flag(&o, &sans, "--cert-days", "12x", err, sizeof(err)),
                     MK_ERR_INVAL);
    assert_int_equal(wh_certmgr_flag(&o, &sans, "--cert-check-interval", "", err, sizeof(err)),
                     MK_ERR_INVAL);
    assert_int_equal(wh_certmgr_flag(&o, &sans, "--cert-secret", "", err, sizeof(err)),
                     MK_ERR_INVAL);
    assert_int_equal(
        wh_certmgr_flag(&o, &sans, "--ca-renew-before", "99999999999999999999", err, sizeof(err)),
        MK_ERR_INVAL);
    assert_int_equal(o.ca_days, 30); /* unchanged by refused values */
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_creates_everything_then_is_idempotent),
        T(test_fills_an_empty_precreated_secret),
        T(test_renews_serving_cert_with_same_ca),
        T(test_ca_rotation_keeps_old_ca_until_grace_and_expiry),
        T(test_new_name_reissues_from_same_ca),
        T(test_corrupt_secret_is_regenerated),
        T(test_lost_race_rereads),
        T(test_two_replicas_converge),
        T(test_missing_config_is_skipped),
        T(test_forbidden_config_fails_after_files),
        T(test_secret_error_writes_nothing),
        T(test_bad_options),
        T(test_thread_rotates_and_stops),
        T(test_missing_cert_dir_is_created),
        cmocka_unit_test(test_split_sans),
        cmocka_unit_test(test_flags),
    };
    return cmocka_run_group_tests_name("certmgr", tests, NULL, NULL);
}
