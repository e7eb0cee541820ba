#include "kube_client.h"
#include "errf.h"

#include <curl/curl.h>
#include <openssl/crypto.h>
#include <openssl/ssl.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "clock.h"
#include "buf.h"
#include "jsonx.h"
#include "log.h"

#ifndef MKUEUE_VERSION
#define MKUEUE_VERSION "dev"
#endif

#define KC_MAX_PAGES    10000
#define KC_MAX_POOL     1024
#define KC_ERR_BODY_MAX (64 * 1024) /* error bodies kept from a stream */
#define KC_STREAM_WAIT  5000        /* ms a stream's wait lasts at most (a stop wakes it) */
#define KC_MSG_BODY_MAX 256         /* bytes of a non-Status body quoted in message */
#define KC_MAX_RETRY_S  86400L

struct kc_client {
    struct kcfg *cfg;              /* borrowed */
    char *server;                  /* cfg->server without trailing '/' */
    char *host;                    /* its host:port, client-go's `host` label */
    char *url_base;                /* server with tls_server_name as host when set */
    struct curl_slist *connect_to; /* CURLOPT_CONNECT_TO when tls_server_name is set */
    char *host_hdr;                /* "Host: <real host:port>" when tls_server_name is set */
    char *user_agent;
    char *accept_hdr;        /* "Accept: ..." of requests */
    char *accept_stream_hdr; /* and of streams */
    double qps;              /* <= 0: unlimited */
    int burst;
    long timeout_ms;
    long connect_timeout_ms;
    size_t max_body;
    int pool_size;
    int (*may_write)(void *ud, const char *method, const char *path);
    void *may_write_ud;
    void (*on_done)(void *ud, const char *host, const char *method, const struct kc_status *st);
    void *on_done_ud;

    pthread_mutex_t pool_lock;
    CURL **pool; /* idle handles, used as a stack so the warmest is reused */
    int npool;

    pthread_mutex_t rl_lock;
    double tokens; /* negative = already reserved by waiting callers */
    double last_s;
};

/* One transfer's state, shared with the curl callbacks. */
struct xfer {
    CURL *h;
    struct buf body;
    long retry_after;
    /* streaming only */
    kc_data_fn fn;
    void *ud;
    struct kc_stop *stop;
    int stopped;    /* by stop */
    int cb_stopped; /* by fn */
};

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static CURLcode global_rc;

static void global_init(void)
{
    global_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* ---- escaping and paths ----------------------------------------------------- */

static int append_escaped(struct buf *b, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
            *p == '-' || *p == '.' || *p == '_' || *p == '~') {
            buf_append(b, p, 1);
        } else {
            char e[3] = {'%', hex[*p >> 4], hex[*p & 15]};
            buf_append(b, e, 3);
        }
    }
    return buf_ok(b) ? 0 : -1;
}

char *kc_escape(const char *s)
{
    if (!s)
        return NULL;
    struct buf b;
    buf_init(&b, BUF_CAP_URL);
    if (append_escaped(&b, s) < 0 || !buf_cstr(&b)) {
        buf_free(&b);
        return NULL;
    }
    return buf_steal(&b);
}

/* A path segment that is empty, "." or ".." would change the URL's meaning. */
static int bad_segment(const char *s)
{
    return !s || !*s || strcmp(s, ".") == 0 || strcmp(s, "..") == 0;
}

static int append_segment(struct buf *b, const char *s)
{
    if (bad_segment(s))
        return -1;
    buf_append(b, "/", 1);
    return append_escaped(b, s);
}

char *kc_path(const struct kc_resource *r, const char *ns, const char *name, const char *sub)
{
    if (!r || bad_segment(r->version) || bad_segment(r->resource))
        return NULL;
    if (sub && !name)
        return NULL;
    struct buf b;
    buf_init(&b, BUF_CAP_URL);
    int rc = 0;
    if (!r->group || !*r->group) {
        buf_append_str(&b, "/api");
    } else {
        buf_append_str(&b, "/apis");
        rc |= append_segment(&b, r->group);
    }
    rc |= append_segment(&b, r->version);
    if (r->namespaced && ns && *ns) {
        buf_append_str(&b, "/namespaces");
        rc |= append_segment(&b, ns);
    }
    rc |= append_segment(&b, r->resource);
    if (name)
        rc |= append_segment(&b, name);
    if (sub)
        rc |= append_segment(&b, sub);
    if (rc || !buf_ok(&b)) {
        buf_free(&b);
        return NULL;
    }
    return buf_steal(&b);
}

/* Appends "&key=value" (or "key=value" first), value escaped; NULL/"" skipped. */
static void query_add(struct buf *q, const char *key, const char *value)
{
    if (!value || !*value)
        return;
    if (q->len)
        buf_append(q, "&", 1);
    buf_append_str(q, key);
    buf_append(q, "=", 1);
    append_escaped(q, value);
}

/* ---- status decoding ------------------------------------------------------- */

static const char *reason_for(long http)
{
    switch (http) {
    case 400:
        return "BadRequest";
    case 401:
        return "Unauthorized";
    case 403:
        return "Forbidden";
    case 404:
        return "NotFound";
    case 405:
        return "MethodNotAllowed";
    case 406:
        return "NotAcceptable";
    case 409:
        return "Conflict";
    case 410:
        return "Gone";
    case 413:
        return "RequestEntityTooLarge";
    case 415:
        return "UnsupportedMediaType";
    case 422:
        return "Invalid";
    case 429:
        return "TooManyRequests";
    case 500:
        return "InternalError";
    case 503:
        return "ServiceUnavailable";
    case 504:
        return "Timeout";
    default:
        return "";
    }
}

void kc_status_from_json(const json_t *obj, long http, struct kc_status *st)
{
    json_int_t code = json_integer_value(json_object_get(obj, "code"));
    st->http = http ? http : (long)code;
    const char *reason = json_string_value(json_object_get(obj, "reason"));
    const char *msg = json_string_value(json_object_get(obj, "message"));
    snprintf(st->reason, sizeof(st->reason), "%s", reason ? reason : reason_for(st->http));
    if (msg)
        buf_utf8_copy(st->message, sizeof(st->message), msg, strlen(msg)); /* whole characters */
    else
        snprintf(st->message, sizeof(st->message), "HTTP %ld", st->http);
    json_int_t ra =
        json_integer_value(json_object_get(json_object_get(obj, "details"), "retryAfterSeconds"));
    if (!st->retry_after_s && ra > 0)
        st->retry_after_s = ra > KC_MAX_RETRY_S ? KC_MAX_RETRY_S : (long)ra;
}

static const struct jy_path managed_fields[] = {
    {{"metadata", "managedFields"}},
    {{"items", JY_EACH, "metadata", "managedFields"}},
    {{"object", "metadata", "managedFields"}},
};
const struct jy_prune kc_unread = JY_PRUNE_OF(managed_fields);

/* Fills st for a non-2xx answer (st->retry_after_s already holds the header). */
static void decode_error(struct kc_status *st, long http, const char *body, size_t len)
{
    json_t *j = len ? jx_loadb(body, len, 0, NULL, NULL) : NULL;
    const char *kind = json_string_value(json_object_get(j, "kind"));
    if (kind && strcmp(kind, "Status") == 0) {
        kc_status_from_json(j, http, st);
        json_decref(j);
        return;
    }
    json_decref(j);
    st->http = http;
    snprintf(st->reason, sizeof(st->reason), "%s", reason_for(http));
    if (!len) {
        snprintf(st->message, sizeof(st->message), "HTTP %ld", http);
        return;
    }
    /* Quote the start of the body, made printable and valid UTF-8 (it ends
     * up in JSON: a MultiKueueCluster's status). */
    size_t n = len < KC_MSG_BODY_MAX ? len : KC_MSG_BODY_MAX;
    int w = snprintf(st->message, sizeof(st->message), "HTTP %ld: ", http);
    char *p = st->message + w;
    size_t room = sizeof(st->message) - (size_t)w - 4; /* "..." and NUL */
    size_t out = buf_utf8_copy(p, room, body, n);
    for (size_t i = 0; i < out; i++)
        if ((unsigned char)p[i] < 0x20 || p[i] == 0x7f)
            p[i] = ' ';
    if (n < len)
        memcpy(p + out, "...", 4); /* room kept for it and the NUL */
}

/* Retry-After: delta-seconds or an HTTP date. */
static long parse_retry_after(const char *v, size_t len)
{
    char tmp[64];
    while (len && (*v == ' ' || *v == '\t')) {
        v++;
        len--;
    }
    while (len && (v[len - 1] == '\r' || v[len - 1] == '\n' || v[len - 1] == ' '))
        len--;
    if (!len || len >= sizeof(tmp))
        return 0;
    memcpy(tmp, v, len);
    tmp[len] = '\0';
    char *end;
    errno = 0;
    long s = strtol(tmp, &end, 10);
    if (end != tmp && !*end)
        return errno || s < 0 ? 0 : (s > KC_MAX_RETRY_S ? KC_MAX_RETRY_S : s);
    time_t t = curl_getdate(tmp, NULL);
    time_t now = time(NULL);
    if (t <= now)
        return 0;
    return t - now > KC_MAX_RETRY_S ? KC_MAX_RETRY_S : (long)(t - now);
}

/* ---- curl callbacks -------------------------------------------------------- */

static size_t on_header(char *p, size_t sz, size_t n, void *ud)
{
    struct xfer *x = ud;
    size_t len = sz * n;
    if (len >= 5 && strncmp(p, "HTTP/", 5) == 0)
        x->retry_after = 0; /* a new response (e.g. after 100 Continue) */
    else if (len > 12 && strncasecmp(p, "Retry-After:", 12) == 0)
        x->retry_after = parse_retry_after(p + 12, len - 12);
    return len;
}

static size_t on_body(char *p, size_t sz, size_t n, void *ud)
{
    struct xfer *x = ud;
    size_t len = sz * n;
    return buf_append(&x->body, p, len) < 0 ? 0 : len; /* 0 aborts: over max_body */
}

static int is_2xx(long code)
{
    return code >= 200 && code < 300;
}

static size_t on_stream(char *p, size_t sz, size_t n, void *ud)
{
    struct xfer *x = ud;
    size_t len = sz * n;
    long code = 0;
    curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &code);
    if (!is_2xx(code)) {
        buf_append(&x->body, p, len); /* capped; the rest of an error body is dropped */
        return len;
    }
    if (kc_stop_requested(x->stop)) {
        x->stopped = 1;
        return 0;
    }
    if (x->fn(p, len, x->ud) != 0) {
        x->cb_stopped = 1;
        return 0;
    }
    return len;
}

/* ---- limiter and handle pool ----------------------------------------------- */

/* Token bucket: reserve a token now and sleep off any debt outside the lock,
 * so waiting callers queue fairly without spinning. Returns the seconds
 * slept. */
static double rl_wait(struct kc_client *c)
{
    if (c->qps <= 0)
        return 0;
    pthread_mutex_lock(&c->rl_lock);
    double now = (double)clk_now_ns() / 1e9;
    c->tokens += (now - c->last_s) * c->qps;
    if (c->tokens > c->burst)
        c->tokens = c->burst;
    c->last_s = now;
    c->tokens -= 1;
    double wait = c->tokens < 0 ? -c->tokens / c->qps : 0;
    pthread_mutex_unlock(&c->rl_lock);
    if (wait > 0)
        clk_nap_ms((long)(wait * 1000) + 1); /* rounded up: a token is due by then */
    return wait;
}

static CURL *pool_get(struct kc_client *c)
{
    CURL *h = NULL;
    pthread_mutex_lock(&c->pool_lock);
    if (c->npool > 0)
        h = c->pool[--c->npool];
    pthread_mutex_unlock(&c->pool_lock);
    return h ? h : curl_easy_init();
}

static void pool_put(struct kc_client *c, CURL *h)
{
    if (!h)
        return;
    /* Drop the options pointing at this request's buffers; the connection
     * cache survives a reset. */
    curl_easy_reset(h);
    pthread_mutex_lock(&c->pool_lock);
    if (c->npool < c->pool_size) {
        c->pool[c->npool++] = h;
        h = NULL;
    }
    pthread_mutex_unlock(&c->pool_lock);
    if (h)
        curl_easy_cleanup(h); /* an extra beyond the pool size */
}

/* ---- request setup --------------------------------------------------------- */

/* curl_slist_append copies each header: the Authorization copy is wiped
 * before the list is freed. */
static void free_headers(struct curl_slist *l)
{
    for (struct curl_slist *p = l; p; p = p->next)
        if (p->data)
            OPENSSL_cleanse(p->data, strlen(p->data));
    curl_slist_free_all(l);
}

/* Request headers; Authorization from the config's current token. */
static int make_headers(struct kc_client *c, const char *content_type, int stream,
                        struct curl_slist **out, struct kc_status *st)
{
    struct curl_slist *l = NULL, *t;
    int rc = MK_OK;
    char *tok = kcfg_bearer_token(c->cfg);
    struct buf auth;
    buf_init(&auth, BUF_CAP_URL);
#define ADD(s)                                                                                     \
    do {                                                                                           \
        if (!(t = curl_slist_append(l, (s)))) {                                                    \
            rc = MK_ERR_NOMEM;                                                                     \
            goto out;                                                                              \
        }                                                                                          \
        l = t;                                                                                     \
    } while (0)
    ADD(stream ? c->accept_stream_hdr : c->accept_hdr);
    ADD("Expect:"); /* no 100-continue round trip for large bodies */
    if (content_type) {
        buf_printf(&auth, "Content-Type: %s", content_type);
        if (!buf_ok(&auth)) {
            rc = MK_ERR_NOMEM;
            goto out;
        }
        ADD(auth.data);
        buf_reset(&auth);
    } else {
        ADD("Content-Type:"); /* not curl's form-urlencoded default */
    }
    if (c->host_hdr)
        ADD(c->host_hdr);
    if (tok && *tok) {
        for (const char *p = tok; *p; p++) {
            if ((unsigned char)*p < 0x20 || *p == 0x7f) {
                rc = MK_ERR_INVAL;
                snprintf(st->message, sizeof(st->message), "bearer token has control characters");
                goto out;
            }
        }
        buf_printf(&auth, "Authorization: Bearer %s", tok);
        if (!buf_ok(&auth)) {
            rc = MK_ERR_NOMEM;
            goto out;
        }
        ADD(auth.data);
    }
#undef ADD
out:
    if (tok) {
        OPENSSL_cleanse(tok, strlen(tok));
        free(tok);
    }
    if (auth.data)
        OPENSSL_cleanse(auth.data, auth.alloc);
    buf_free(&auth);
    if (rc) {
        free_headers(l);
        l = NULL;
    }
    *out = l;
    return rc;
}

static char *make_url(struct kc_client *c, const char *path, const char *query)
{
    struct buf b;
    buf_init(&b, BUF_CAP_URL);
    buf_printf(&b, "%s%s%s%s", c->url_base, path, query && *query ? "?" : "", query ? query : "");
    if (!buf_ok(&b)) {
        buf_free(&b);
        return NULL;
    }
    return buf_steal(&b);
}

/* Options common to every transfer, on a fresh or reset handle (nothing
 * carries over from the previous request but the connection cache). */
int kc_setup_status(CURLcode e)
{
    return e == CURLE_OK ? 0 : e == CURLE_OUT_OF_MEMORY ? MK_ERR_NOMEM : MK_ERR_INVAL;
}

/* curl's OpenSSL backend sets SSL_MODE_RELEASE_BUFFERS: a connection's
 * 17 KiB read buffer is freed once a record is read and allocated again
 * for the next, so every watch event and response costs a large malloc,
 * which consolidates the heap's fast bins first: a cost that grows with
 * the heap (reconciler/README.md, "CPU per dispatched job"). Kept for the
 * connection's life instead, about 34 KiB per open connection. */
static CURLcode keep_tls_buffers(CURL *h, void *ssl_ctx, void *ud)
{
    (void)h;
    (void)ud;
    SSL_CTX_clear_mode((SSL_CTX *)ssl_ctx, SSL_MODE_RELEASE_BUFFERS);
    return CURLE_OK;
}

/* Sets a handle's per-request options, x's header and body callbacks among
 * them (body to on_data); kc_setup_status of the first failure. */
static int setup(struct kc_client *c, CURL *h, const char *url, struct curl_slist *hdrs,
                 char *errbuf, long timeout_ms, struct xfer *x, curl_write_callback on_data)
{
    struct kcfg *cfg = c->cfg;
    CURLcode e = CURLE_OK;
#define SET(opt, val) e = e ? e : curl_easy_setopt(h, opt, val)
    SET(CURLOPT_URL, url);
    SET(CURLOPT_PROTOCOLS_STR, "https");
    SET(CURLOPT_PATH_AS_IS, 1L); /* kc_path already escaped; no dot-segment rewriting */
    SET(CURLOPT_NOSIGNAL, 1L);
    SET(CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
    SET(CURLOPT_SSL_VERIFYPEER, 1L);
    SET(CURLOPT_SSL_VERIFYHOST, 2L);
    SET(CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2);
    if (cfg->ca_pem && cfg->ca_len) {
        struct curl_blob b = {cfg->ca_pem, cfg->ca_len, CURL_BLOB_COPY};
        SET(CURLOPT_CAINFO_BLOB, &b);
    }
    if (cfg->cert_pem && cfg->cert_len) {
        struct curl_blob b = {cfg->cert_pem, cfg->cert_len, CURL_BLOB_COPY};
        SET(CURLOPT_SSLCERT_BLOB, &b);
        SET(CURLOPT_SSLCERTTYPE, "PEM");
    }
    if (cfg->key_pem && cfg->key_len) {
        struct curl_blob b = {cfg->key_pem, cfg->key_len, CURL_BLOB_COPY};
        SET(CURLOPT_SSLKEY_BLOB, &b);
        SET(CURLOPT_SSLKEYTYPE, "PEM");
    }
    if (c->connect_to)
        SET(CURLOPT_CONNECT_TO, c->connect_to);
    SET(CURLOPT_USERAGENT, c->user_agent);
    SET(CURLOPT_HTTPHEADER, hdrs);
    SET(CURLOPT_ERRORBUFFER, errbuf);
    SET(CURLOPT_ACCEPT_ENCODING, ""); /* gzip for big lists; max_body counts decoded bytes */
    SET(CURLOPT_TCP_KEEPALIVE, 1L);
    SET(CURLOPT_CONNECTTIMEOUT_MS, c->connect_timeout_ms);
    SET(CURLOPT_TIMEOUT_MS, timeout_ms);
    SET(CURLOPT_LOW_SPEED_LIMIT, 0L);
    SET(CURLOPT_LOW_SPEED_TIME, 0L);
    SET(CURLOPT_FOLLOWLOCATION, 0L);
    SET(CURLOPT_HEADERFUNCTION, on_header);
    SET(CURLOPT_HEADERDATA, x);
    SET(CURLOPT_WRITEFUNCTION, on_data);
    SET(CURLOPT_WRITEDATA, x);
#undef SET
    if (e == CURLE_OK) /* another TLS backend: its own buffers, nothing to set */
        (void)curl_easy_setopt(h, CURLOPT_SSL_CTX_FUNCTION, keep_tls_buffers);
    return kc_setup_status(e);
}

static int set_method(CURL *h, const char *method, const char *body, size_t len)
{
    CURLcode e;
    if (strcmp(method, "GET") == 0)
        return curl_easy_setopt(h, CURLOPT_HTTPGET, 1L) == CURLE_OK ? 0 : -1;
    if (strcmp(method, "POST") && strcmp(method, "PUT") && strcmp(method, "PATCH") &&
        strcmp(method, "DELETE"))
        return -1;
    e = curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    if (!e && (body || strcmp(method, "DELETE") != 0)) {
        /* POSTFIELDS makes it a request with a body; CUSTOMREQUEST names it. */
        e = curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
        if (!e)
            e = curl_easy_setopt(h, CURLOPT_POSTFIELDS, body ? body : "");
    }
    return e == CURLE_OK ? 0 : -1;
}

static int valid_target(const char *path, const char *query)
{
    if (!path || path[0] != '/')
        return 0;
    for (const char *p = path; *p; p++)
        if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f || *p == '?' || *p == '#')
            return 0;
    for (const char *p = query ? query : ""; *p; p++)
        if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f || *p == '#')
            return 0;
    return 1;
}

static void transport_error(struct kc_status *st, CURLcode cc, const char *errbuf)
{
    st->http = 0;
    st->transport_code = (int)cc;
    snprintf(st->message, sizeof(st->message), "%s",
             errbuf && *errbuf ? errbuf : curl_easy_strerror(cc));
}

/* The request's URL (*url, freed by the caller) and headers, then the
 * client's rate limit waited out. */
static int prepare(struct kc_client *c, const char *path, const char *query,
                   const char *content_type, int stream, char **url, struct curl_slist **hdrs,
                   struct kc_status *st)
{
    *url = make_url(c, path, query);
    if (!*url)
        return MK_ERR_NOMEM;
    int rc = make_headers(c, content_type, stream, hdrs, st);
    if (rc != MK_OK)
        return rc;
    st->throttled_s = rl_wait(c);
    return MK_OK;
}

static void setup_failed(struct kc_status *st, int rc)
{
    snprintf(st->message, sizeof(st->message), "%s",
             rc == MK_ERR_NOMEM ? "out of memory" : "curl setup failed");
}

/* A finished transfer: a transport error, an API error (decoded from its
 * body), or MK_OK with st->http set. */
static int outcome(CURLcode cc, long code, const char *errbuf, const struct buf *body,
                   struct kc_status *st)
{
    if (cc != CURLE_OK) {
        transport_error(st, cc, errbuf);
        return MK_ERR_TRANSPORT;
    }
    if (!is_2xx(code)) {
        decode_error(st, code, body->data, body->len);
        return MK_ERR_HTTP;
    }
    st->http = code;
    return MK_OK;
}

/* ---- requests -------------------------------------------------------------- */

int kc_request(struct kc_client *c, const char *method, const char *path, const char *query,
               const char *content_type, const char *body, size_t body_len, json_t **out,
               struct kc_status *st)
{
    struct kc_status dummy;
    if (!st)
        st = &dummy;
    memset(st, 0, sizeof(*st));
    if (out)
        *out = NULL;
    if (!c || !method || !valid_target(path, query)) {
        snprintf(st->message, sizeof(st->message), "invalid request arguments");
        return MK_ERR_INVAL;
    }
    if (body && !content_type)
        content_type = "application/json";
    int rc = MK_OK;
    char errbuf[CURL_ERROR_SIZE] = "";
    struct curl_slist *hdrs = NULL;
    struct xfer x = {0};
    buf_init(&x.body, c->max_body);
    char *url = NULL;
    if ((rc = prepare(c, path, query, content_type, 0, &url, &hdrs, st)) != MK_OK)
        goto out;
    x.h = pool_get(c);
    if (!x.h) {
        rc = MK_ERR_NOMEM;
        goto out;
    }
    if (c->may_write && strcmp(method, "GET") != 0 && c->may_write(c->may_write_ud, method, path)) {
        rc = MK_ERR_REFUSED;
        snprintf(st->message, sizeof(st->message), "write refused by this client's may_write");
        goto out;
    }
    rc = setup(c, x.h, url, hdrs, errbuf, __atomic_load_n(&c->timeout_ms, __ATOMIC_RELAXED), &x,
               on_body);
    if (rc == 0)
        rc = kc_setup_status(
            curl_easy_setopt(x.h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)c->max_body));
    if (rc != 0) {
        setup_failed(st, rc);
        goto out;
    }
    if (set_method(x.h, method, body, body_len) < 0) {
        rc = MK_ERR_INVAL;
        snprintf(st->message, sizeof(st->message), "unsupported method %.16s", method);
        goto out;
    }
    CURLcode cc = curl_easy_perform(x.h);
    long code = 0;
    curl_easy_getinfo(x.h, CURLINFO_RESPONSE_CODE, &code);
    st->retry_after_s = x.retry_after;
    curl_off_t total_us = 0, tls_us = 0;
    curl_easy_getinfo(x.h, CURLINFO_TOTAL_TIME_T, &total_us);
    curl_easy_getinfo(x.h, CURLINFO_APPCONNECT_TIME_T, &tls_us);
    st->duration_s = (double)total_us / 1e6;
    if ((cc == CURLE_WRITE_ERROR && x.body.overflow) || cc == CURLE_FILESIZE_EXCEEDED) {
        rc = MK_ERR_TOOBIG;
        st->http = code;
        snprintf(st->message, sizeof(st->message), "response body exceeds %zu bytes", c->max_body);
    } else if (cc == CURLE_WRITE_ERROR && x.body.oom) {
        rc = MK_ERR_NOMEM;
    } else if ((rc = outcome(cc, code, errbuf, &x.body, st)) == MK_OK && out) {
        json_error_t jerr;
        *out = x.body.len ? jx_loadb(x.body.data, x.body.len, 0, &kc_unread, &jerr) : NULL;
        if (!*out) {
            rc = MK_ERR_DECODE;
            snprintf(st->message, sizeof(st->message), "invalid JSON in response: %s",
                     x.body.len ? jerr.text : "empty body");
        }
    }
    if (log_enabled(LOG_DEBUG)) {
        char ms[32], tls_ms[32], wait_ms[32];
        snprintf(ms, sizeof(ms), "%.1f", (double)total_us / 1e3);
        snprintf(tls_ms, sizeof(tls_ms), "%.1f", (double)tls_us / 1e3);
        snprintf(wait_ms, sizeof(wait_ms), "%.1f", st->throttled_s * 1e3);
        LOG_D("kube_client", "request", "method", method, "path", path, "server", c->server,
              "result", rc ? st->message : "ok", "ms", ms, "tls_ms", tls_ms, "waited_ms", wait_ms);
    }
out:
    if (rc == MK_ERR_NOMEM && !st->message[0])
        snprintf(st->message, sizeof(st->message), "out of memory");
    if (c->on_done)
        c->on_done(c->on_done_ud, c->host, method, st);
    pool_put(c, x.h);
    free_headers(hdrs);
    buf_free(&x.body);
    free(url);
    return rc;
}

/* Serializes obj and sends it; obj is not stolen. */
static int send_json(struct kc_client *c, const char *method, const char *path, const char *query,
                     const char *content_type, json_t *obj, json_t **out, struct kc_status *st)
{
    struct buf body;
    buf_init(&body, BUF_CAP_JSON_TEXT);
    if (!obj || jx_dump(obj, JSON_COMPACT | JSON_ENCODE_ANY, &body) < 0) {
        int code = !obj ? MK_ERR_INVAL : body.overflow ? MK_ERR_TOOBIG : MK_ERR_NOMEM;
        buf_free(&body);
        if (out)
            *out = NULL;
        if (st) {
            memset(st, 0, sizeof(*st));
            if (code == MK_ERR_TOOBIG)
                snprintf(st->message, sizeof(st->message), "request body over %zu bytes",
                         (size_t)BUF_CAP_JSON_TEXT);
            else
                snprintf(st->message, sizeof(st->message), "%s",
                         code == MK_ERR_INVAL ? "no body" : "out of memory");
        }
        return code;
    }
    int rc = kc_request(c, method, path, query, content_type, buf_cstr(&body), body.len, out, st);
    buf_free(&body);
    return rc;
}

static int inval(struct kc_status *st, json_t **out, const char *msg)
{
    if (out)
        *out = NULL;
    if (st) {
        memset(st, 0, sizeof(*st));
        snprintf(st->message, sizeof(st->message), "%s", msg);
    }
    return MK_ERR_INVAL;
}

/* Object path; a namespaced resource needs a namespace. */
static char *object_path(const struct kc_resource *r, const char *ns, const char *name,
                         const char *sub)
{
    if (!r || (r->namespaced && (!ns || !*ns)) || !name)
        return NULL;
    return kc_path(r, ns, name, sub);
}

int kc_get(struct kc_client *c, const struct kc_resource *r, const char *ns, const char *name,
           json_t **out, struct kc_status *st)
{
    char *path = object_path(r, ns, name, NULL);
    if (!path)
        return inval(st, out, "invalid resource, namespace or name");
    int rc = kc_request(c, "GET", path, NULL, NULL, NULL, 0, out, st);
    free(path);
    return rc;
}

int kc_list(struct kc_client *c, const struct kc_resource *r, const char *ns,
            const struct kc_list_opts *o, json_t **out, struct kc_status *st)
{
    char *path = kc_path(r, ns, NULL, NULL);
    if (!path)
        return inval(st, out, "invalid resource or namespace");
    struct buf q;
    buf_init(&q, BUF_CAP_URL);
    if (o) {
        query_add(&q, "labelSelector", o->label_selector);
        query_add(&q, "fieldSelector", o->field_selector);
        if (o->limit > 0)
            buf_printf(&q, "%slimit=%ld", q.len ? "&" : "", o->limit);
        query_add(&q, "continue", o->continue_token);
        query_add(&q, "resourceVersion", o->resource_version);
    }
    int rc;
    if (!buf_ok(&q) || !buf_cstr(&q)) {
        inval(st, out, "out of memory");
        rc = MK_ERR_NOMEM;
    } else {
        rc = kc_request(c, "GET", path, q.data, NULL, NULL, 0, out, st);
    }
    buf_free(&q);
    free(path);
    return rc;
}

int kc_list_pages(struct kc_client *c, const struct kc_resource *r, const char *ns,
                  const char *label_selector, const char *field_selector, long page_size,
                  int (*on_page)(json_t *page, void *ud), void *ud, struct kc_status *st)
{
    struct kc_status dummy;
    if (!st)
        st = &dummy;
    if (!on_page)
        return inval(st, NULL, "on_page is required");
    json_t *page = NULL;
    char *cont = NULL;
    int rc = MK_OK;
    long limit = page_size > 0 ? page_size : 500;
    for (int n = 0;; n++) {
        if (n == KC_MAX_PAGES) {
            rc = MK_ERR_TOOBIG;
            snprintf(st->message, sizeof(st->message), "list has more than %d pages", KC_MAX_PAGES);
            goto out;
        }
        struct kc_list_opts o = {.label_selector = label_selector,
                                 .field_selector = field_selector,
                                 .limit = limit,
                                 .continue_token = cont};
        /* the previous page is released before the next one is fetched */
        json_decref(page);
        page = NULL;
        rc = kc_list(c, r, ns, &o, &page, st);
        if (rc == MK_ERR_TOOBIG && limit > 1) {
            limit /= 2; /* large objects: the same page again, smaller (max_body bounds each) */
            continue;
        }
        if (rc != MK_OK)
            goto out;
        json_t *pi = json_object_get(page, "items");
        json_t *meta = json_object_get(page, "metadata");
        if (!json_is_object(page) || (pi && !json_is_array(pi) && !json_is_null(pi)) ||
            (meta && !json_is_object(meta))) {
            rc = MK_ERR_DECODE;
            snprintf(st->message, sizeof(st->message), "list response is not a List");
            goto out;
        }
        const char *next = json_string_value(json_object_get(meta, "continue"));
        free(cont);
        cont = next && *next ? strdup(next) : NULL;
        if (next && *next && !cont) {
            rc = MK_ERR_NOMEM;
            goto out;
        }
        if (!cont) /* the last page carries the resourceVersion to watch from */
            json_object_del(meta, "continue");
        if ((rc = on_page(page, ud)) != MK_OK)
            goto out;
        if (!cont)
            break;
    }
out:
    if (rc == MK_ERR_NOMEM)
        snprintf(st->message, sizeof(st->message), "out of memory");
    json_decref(page);
    free(cont);
    return rc;
}

struct list_all {
    json_t *items; /* every page's items */
    json_t *last;  /* the last page seen (one reference) */
};

static int list_all_page(json_t *page, void *ud)
{
    struct list_all *la = ud;
    json_t *pi = json_object_get(page, "items");
    if (json_is_array(pi) && json_array_extend(la->items, pi) < 0)
        return MK_ERR_NOMEM;
    json_decref(la->last);
    la->last = json_incref(page);
    return MK_OK;
}

int kc_list_all(struct kc_client *c, const struct kc_resource *r, const char *ns,
                const char *label_selector, const char *field_selector, long page_size,
                json_t **out, struct kc_status *st)
{
    struct kc_status dummy;
    if (!st)
        st = &dummy;
    if (!out)
        return inval(st, NULL, "out is required");
    *out = NULL;
    struct list_all la = {json_array(), NULL};
    int rc = MK_ERR_NOMEM;
    if (!la.items) {
        snprintf(st->message, sizeof(st->message), "out of memory");
        goto out;
    }
    rc = kc_list_pages(c, r, ns, label_selector, field_selector, page_size, list_all_page, &la, st);
    if (rc != MK_OK)
        goto out;
    if (json_object_set(la.last, "items", la.items) < 0) {
        rc = MK_ERR_NOMEM;
        snprintf(st->message, sizeof(st->message), "out of memory");
        goto out;
    }
    *out = la.last;
    la.last = NULL;
out:
    json_decref(la.last);
    json_decref(la.items);
    return rc;
}

int kc_create(struct kc_client *c, const struct kc_resource *r, const char *ns, json_t *obj,
              json_t **out, struct kc_status *st)
{
    char *path = r && obj && (!r->namespaced || (ns && *ns)) ? kc_path(r, ns, NULL, NULL) : NULL;
    if (!path)
        return inval(st, out, "invalid resource, namespace or object");
    int rc = send_json(c, "POST", path, NULL, "application/json", obj, out, st);
    free(path);
    return rc;
}

int kc_patch(struct kc_client *c, const struct kc_resource *r, const char *ns, const char *name,
             const char *subresource, enum kc_patch_type type, json_t *patch,
             const char *field_manager, json_t **out, struct kc_status *st)
{
    const char *ctype;
    switch (type) {
    case KC_PATCH_MERGE:
        ctype = "application/merge-patch+json";
        break;
    case KC_PATCH_JSON:
        ctype = "application/json-patch+json";
        break;
    case KC_PATCH_APPLY:
        ctype = "application/apply-patch+yaml";
        break;
    default:
        return inval(st, out, "unknown patch type");
    }
    if (type == KC_PATCH_APPLY && (!field_manager || !*field_manager))
        return inval(st, out, "server-side apply needs a field manager");
    if (!patch)
        return inval(st, out, "no patch");
    char *path = object_path(r, ns, name, subresource);
    if (!path)
        return inval(st, out, "invalid resource, namespace or name");
    struct buf q;
    buf_init(&q, BUF_CAP_URL);
    query_add(&q, "fieldManager", field_manager);
    if (type == KC_PATCH_APPLY)
        buf_append_str(&q, "&force=true");
    int rc = buf_ok(&q) ? send_json(c, "PATCH", path, q.data, ctype, patch, out, st)
                        : inval(st, out, "out of memory");
    buf_free(&q);
    free(path);
    return rc;
}

int kc_update(struct kc_client *c, const struct kc_resource *r, const char *ns, const char *name,
              const char *subresource, json_t *obj, json_t **out, struct kc_status *st)
{
    char *path = obj ? object_path(r, ns, name, subresource) : NULL;
    if (!path)
        return inval(st, out, "invalid resource, namespace, name or object");
    int rc = send_json(c, "PUT", path, NULL, "application/json", obj, out, st);
    free(path);
    return rc;
}

int kc_delete(struct kc_client *c, const struct kc_resource *r, const char *ns, const char *name,
              const char *propagation, const char *precondition_uid, struct kc_status *st)
{
    char *path = object_path(r, ns, name, NULL);
    if (!path)
        return inval(st, NULL, "invalid resource, namespace or name");
    json_t *opts = json_pack("{s:s, s:s}", "kind", "DeleteOptions", "apiVersion", "v1");
    int rc = MK_ERR_NOMEM;
    if (opts && propagation && *propagation &&
        json_object_set_new(opts, "propagationPolicy", json_string(propagation)) < 0)
        goto out;
    if (opts && precondition_uid && *precondition_uid &&
        json_object_set_new(opts, "preconditions", json_pack("{s:s}", "uid", precondition_uid)) < 0)
        goto out;
    if (opts)
        rc = send_json(c, "DELETE", path, NULL, "application/json", opts, NULL, st);
out:
    if (rc == MK_ERR_NOMEM && st) {
        memset(st, 0, sizeof(*st));
        snprintf(st->message, sizeof(st->message), "out of memory");
    }
    json_decref(opts);
    free(path);
    return rc;
}

/* ---- streaming ------------------------------------------------------------- */

void kc_stop_init(struct kc_stop *s)
{
    s->requested = 0;
    s->waiting = NULL;
    pthread_mutex_init(&s->mu, NULL);
}

void kc_stop_destroy(struct kc_stop *s)
{
    pthread_mutex_destroy(&s->mu);
}

void kc_stop_request(struct kc_stop *s)
{
    __atomic_store_n(&s->requested, 1, __ATOMIC_RELEASE);
    pthread_mutex_lock(&s->mu);
    if (s->waiting)
        curl_multi_wakeup(s->waiting); /* a wakeup before the wait still ends it */
    pthread_mutex_unlock(&s->mu);
}

int kc_stop_requested(struct kc_stop *s)
{
    return s && __atomic_load_n(&s->requested, __ATOMIC_ACQUIRE);
}

/* The multi handle a stop wakes: the stream's while it waits, NULL before
 * the handle goes. */
static void stop_waiting_on(struct kc_stop *stop, CURLM *m)
{
    if (!stop)
        return;
    pthread_mutex_lock(&stop->mu);
    stop->waiting = m;
    pthread_mutex_unlock(&stop->mu);
}

/* Runs on a fresh handle in its own multi, whose wait a stop interrupts
 * (curl_easy_perform's progress callback fires only about once a second on
 * an idle stream). The TLS connection is not reused across streams;
 * watches are long-lived, so one handshake per watch is cheap. */
int kc_stream(struct kc_client *c, const char *path, const char *query, long timeout_s,
              struct kc_stop *stop, kc_data_fn on_data, void *ud, struct kc_status *st)
{
    struct kc_status dummy;
    if (!st)
        st = &dummy;
    memset(st, 0, sizeof(*st));
    if (!c || !on_data || !valid_target(path, query) || timeout_s < 0)
        return inval(st, NULL, "invalid stream arguments");
    int rc = MK_OK;
    char errbuf[CURL_ERROR_SIZE] = "";
    struct curl_slist *hdrs = NULL;
    CURLM *m = NULL;
    struct xfer x = {.fn = on_data, .ud = ud, .stop = stop};
    buf_init(&x.body, KC_ERR_BODY_MAX);
    char *url = NULL;
    if ((rc = prepare(c, path, query, NULL, 1, &url, &hdrs, st)) != MK_OK)
        goto out;
    if (!(x.h = curl_easy_init()) || !(m = curl_multi_init())) {
        rc = MK_ERR_NOMEM;
        goto out;
    }
    rc = setup(c, x.h, url, hdrs, errbuf, timeout_s * 1000, &x, on_stream);
    if (rc == 0)
        rc = kc_setup_status(curl_easy_setopt(x.h, CURLOPT_HTTPGET, 1L));
    CURLMcode added = rc == 0 ? curl_multi_add_handle(m, x.h) : CURLM_OK;
    if (added != CURLM_OK)
        rc = added == CURLM_OUT_OF_MEMORY ? MK_ERR_NOMEM : MK_ERR_INVAL;
    if (rc != 0) {
        setup_failed(st, rc);
        goto out;
    }
    CURLcode cc = CURLE_OK;
    stop_waiting_on(stop, m);
    for (;;) {
        if (kc_stop_requested(stop)) {
            x.stopped = 1;
            break;
        }
        int running = 0;
        CURLMcode mc = curl_multi_perform(m, &running);
        if (mc == CURLM_OK && running) /* curl shortens the wait to its own timeouts */
            mc = curl_multi_poll(m, NULL, 0, KC_STREAM_WAIT, NULL);
        if (mc != CURLM_OK) {
            rc = MK_ERR_TRANSPORT;
            st->transport_code = (int)mc;
            snprintf(st->message, sizeof(st->message), "%s", curl_multi_strerror(mc));
            goto out;
        }
        if (!running) {
            int left;
            CURLMsg *msg;
            while ((msg = curl_multi_info_read(m, &left)) != NULL)
                if (msg->msg == CURLMSG_DONE)
                    cc = msg->data.result;
            break;
        }
    }
    long code = 0;
    curl_easy_getinfo(x.h, CURLINFO_RESPONSE_CODE, &code);
    st->retry_after_s = x.retry_after;
    if (x.stopped || x.cb_stopped) {
        rc = MK_ERR_STOPPED;
        st->http = code;
        snprintf(st->message, sizeof(st->message), "stopped%s", x.cb_stopped ? " by callback" : "");
    } else {
        rc = outcome(cc, code, errbuf, &x.body, st);
    }
out:
    if (rc == MK_ERR_NOMEM && !st->message[0])
        snprintf(st->message, sizeof(st->message), "out of memory");
    if (m)
        stop_waiting_on(stop, NULL); /* before the handle goes */
    if (m && x.h)
        curl_multi_remove_handle(m, x.h);
    curl_multi_cleanup(m);
    curl_easy_cleanup(x.h);
    free_headers(hdrs);
    buf_free(&x.body);
    free(url);
    return rc;
}

/* ---- lifecycle ------------------------------------------------------------- */

/* Validates the server URL (https only) and prepares the SNI override: the
 * URL names tls_server_name, CONNECT_TO sends it to the real host, and the
 * Host header keeps the real host as Go's client does. */
static int parse_server(struct kc_client *c, char *err, size_t errlen)
{
    const struct kcfg *cfg = c->cfg;
    int rc = MK_ERR_INVAL;
    char *scheme = NULL, *host = NULL, *port = NULL, *url = NULL;
    CURLU *u = curl_url();
    if (!u || curl_url_set(u, CURLUPART_URL, c->server, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
        strcmp(scheme, "https") != 0 || curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) != CURLUE_OK) {
        errf(err, errlen, MK_ERR_INVAL, "server: not a valid https:// URL");
        goto out;
    }
    if (!cfg->tls_server_name || !*cfg->tls_server_name) {
        c->url_base = strdup(c->server);
        rc = c->url_base ? 0 : MK_ERR_NOMEM;
        goto out;
    }
    for (const char *p = cfg->tls_server_name; *p; p++) {
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '-' || *p == '.')) {
            errf(err, errlen, MK_ERR_INVAL, "tls-server-name: not a host name");
            goto out;
        }
    }
    if (curl_url_set(u, CURLUPART_HOST, cfg->tls_server_name, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_URL, &url, 0) != CURLUE_OK) {
        errf(err, errlen, MK_ERR_INVAL, "tls-server-name: cannot build URL");
        goto out;
    }
    size_t n = strlen(url);
    while (n && url[n - 1] == '/')
        url[--n] = '\0';
    struct buf b;
    buf_init(&b, BUF_CAP_URL);
    buf_printf(&b, "%s:%s:%s:%s", cfg->tls_server_name, port, host, port);
    c->connect_to = buf_ok(&b) ? curl_slist_append(NULL, b.data) : NULL;
    buf_free(&b);
    buf_printf(&b, "Host: %s:%s", host, port);
    c->host_hdr = buf_ok(&b) ? buf_steal(&b) : NULL;
    buf_free(&b);
    c->url_base = strdup(url);
    rc = c->connect_to && c->host_hdr && c->url_base
             ? 0
             : errf(err, errlen, MK_ERR_NOMEM, "out of memory");
out:
    curl_free(scheme);
    curl_free(host);
    curl_free(port);
    curl_free(url);
    curl_url_cleanup(u);
    return rc;
}

struct kc_client *kc_new(struct kcfg *cfg, const struct kc_options *opt, char *err, size_t errlen)
{
    pthread_once(&global_once, global_init);
    if (global_rc != CURLE_OK) {
        errf(err, errlen, MK_ERR_INVAL, "curl_global_init failed");
        return NULL;
    }
    if (!cfg || !cfg->server || !*cfg->server) {
        errf(err, errlen, MK_ERR_INVAL, "server: missing");
        return NULL;
    }
    struct kc_options o = opt ? *opt : (struct kc_options){0};
    struct kc_client *c = calloc(1, sizeof(*c));
    if (!c) {
        errf(err, errlen, MK_ERR_NOMEM, "out of memory");
        return NULL;
    }
    c->cfg = cfg;
    c->qps = o.qps == 0 ? 50 : o.qps;
    c->burst = o.burst > 0 ? o.burst : 100;
    c->timeout_ms = o.timeout_ms > 0 ? o.timeout_ms : 30000;
    c->connect_timeout_ms = o.connect_timeout_ms > 0 ? o.connect_timeout_ms : 5000;
    c->max_body = o.max_body > 0 ? o.max_body : (size_t)64 * 1024 * 1024;
    c->pool_size = o.pool_size > 0 ? (o.pool_size > KC_MAX_POOL ? KC_MAX_POOL : o.pool_size) : 8;
    c->may_write = o.may_write;
    c->may_write_ud = o.may_write_ud;
    c->on_done = o.on_done;
    c->on_done_ud = o.on_done_ud;
    c->tokens = c->burst;
    c->last_s = (double)clk_now_ns() / 1e9;
    pthread_mutex_init(&c->pool_lock, NULL);
    pthread_mutex_init(&c->rl_lock, NULL);
    c->server = strdup(cfg->server);
    c->user_agent = strdup(o.user_agent ? o.user_agent : "mkueue/" MKUEUE_VERSION);
    if (asprintf(&c->accept_hdr, "Accept: %s", o.accept ? o.accept : "application/json") < 0)
        c->accept_hdr = NULL;
    if (asprintf(&c->accept_stream_hdr, "Accept: %s",
                 o.accept_stream ? o.accept_stream : "application/json") < 0)
        c->accept_stream_hdr = NULL;
    c->pool = calloc((size_t)c->pool_size, sizeof(CURL *));
    if (!c->server || !c->user_agent || !c->accept_hdr || !c->accept_stream_hdr || !c->pool) {
        errf(err, errlen, MK_ERR_NOMEM, "out of memory");
        kc_free(c);
        return NULL;
    }
    size_t n = strlen(c->server);
    while (n && c->server[n - 1] == '/')
        c->server[--n] = '\0';
    const char *h = strstr(c->server, "://");
    h = h ? h + 3 : c->server;
    if (!(c->host = strndup(h, strcspn(h, "/")))) {
        errf(err, errlen, MK_ERR_NOMEM, "out of memory");
        kc_free(c);
        return NULL;
    }
    if (parse_server(c, err, errlen) < 0) {
        kc_free(c);
        return NULL;
    }
    return c;
}

void kc_set_timeout(struct kc_client *c, long timeout_ms)
{
    if (c)
        __atomic_store_n(&c->timeout_ms, timeout_ms > 0 ? timeout_ms : 30000, __ATOMIC_RELAXED);
}

void kc_free(struct kc_client *c)
{
    if (!c)
        return;
    for (int i = 0; i < c->npool; i++)
        curl_easy_cleanup(c->pool[i]);
    free(c->pool);
    pthread_mutex_destroy(&c->pool_lock);
    pthread_mutex_destroy(&c->rl_lock);
    free(c->server);
    free(c->host);
    free(c->url_base);
    curl_slist_free_all(c->connect_to);
    free(c->host_hdr);
    free(c->user_agent);
    free(c->accept_hdr);
    free(c->accept_stream_hdr);
    free(c);
}

const char *kc_server(const struct kc_client *c)
{
    return c->server;
}
