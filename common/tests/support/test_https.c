#include "test_https.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"

#define TH_MAX_HEAD   (64 * 1024)
#define TH_MAX_BODY   (32 * 1024 * 1024)
#define TH_POLL_MS    20
#define TH_IO_TIMEOUT 5 /* seconds, bounds a stuck peer */

/* A scripted response with owned strings. */
struct rsp {
    struct th_response r;
    char *headers;
    char *body;
    char **chunks;
    struct rsp *next;
};

struct conn_thread {
    pthread_t thr;
    struct th_server *s;
    int fd;
    int id;
};

struct th_server {
    SSL_CTX *ctx;
    int lfd;
    int port;
    char url[64];
    pthread_t accept_thr;
    atomic_int stopping;

    pthread_mutex_t mu;
    pthread_cond_t cv;
    int nconn;
    struct conn_thread **conns;
    int conn_cap;
    struct rsp *head, *tail;
    th_handler_fn fn;
    void *ud;
    struct th_request **reqs;
    int nreqs, req_cap;
    struct buf live;
    int live_end;
};

long long th_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Sleeps ms in small steps; returns -1 if the server is stopping. */
static int wait_ms(struct th_server *s, int ms)
{
    long long end = th_now_ms() + ms;
    while (th_now_ms() < end) {
        if (atomic_load(&s->stopping))
            return -1;
        sleep_ms(TH_POLL_MS < ms ? TH_POLL_MS : ms);
    }
    return 0;
}

static char *xstrdup(const char *p)
{
    char *d = strdup(p ? p : "");
    if (!d)
        abort(); /* test support: no recovery from oom */
    return d;
}

static char *xmemdup(const char *p, size_t n)
{
    char *d = malloc(n + 1);
    if (!d)
        abort();
    if (n)
        memcpy(d, p, n);
    d[n] = '\0';
    return d;
}

char *th_data_path(const char *name)
{
    const char *dir = getenv("MKUEUE_TEST_DATA");
    struct buf b;
    buf_init(&b, BUF_CAP_REPLY);
    buf_printf(&b, "%s/%s", dir && *dir ? dir : "common/tests/data", name);
    return buf_steal(&b);
}

char *th_read_data(const char *name, size_t *len)
{
    char *path = th_data_path(name);
    FILE *f = path ? fopen(path, "rb") : NULL;
    free(path);
    if (!f)
        return NULL;
    struct buf b;
    buf_init(&b, BUF_CAP_REPLY);
    char tmp[4096];
    size_t n;
    while ((n = fread(tmp, 1, sizeof(tmp), f)) > 0)
        buf_append(&b, tmp, n);
    fclose(f);
    if (!buf_ok(&b) || !buf_cstr(&b)) {
        buf_free(&b);
        return NULL;
    }
    if (len)
        *len = b.len;
    return buf_steal(&b);
}

/* ---- scripted responses ---------------------------------------------------- */

static struct rsp *rsp_copy(const struct th_response *r)
{
    struct rsp *n = calloc(1, sizeof(*n));
    if (!n)
        abort();
    n->r = *r;
    n->r.body_alloc = NULL;
    if (r->headers)
        n->headers = xstrdup(r->headers);
    if (r->body_alloc) {
        n->r.body_len = r->body_len ? r->body_len : strlen(r->body_alloc);
        n->body = r->body_alloc; /* handed over */
    } else if (r->body) {
        n->r.body_len = r->body_len ? r->body_len : strlen(r->body);
        n->body = xmemdup(r->body, n->r.body_len);
    } else {
        n->r.body_len = 0;
    }
    if (r->chunks && r->nchunks > 0) {
        n->chunks = calloc((size_t)r->nchunks, sizeof(char *));
        if (!n->chunks)
            abort();
        for (int i = 0; i < r->nchunks; i++)
            n->chunks[i] = xstrdup(r->chunks[i]);
    } else {
        n->r.nchunks = 0;
    }
    if (!n->r.status)
        n->r.status = 200;
    return n;
}

static void rsp_free(struct rsp *n)
{
    if (!n)
        return;
    for (int i = 0; i < n->r.nchunks; i++)
        free(n->chunks[i]);
    free(n->chunks);
    free(n->headers);
    free(n->body);
    free(n);
}

void th_push(struct th_server *s, const struct th_response *r)
{
    struct rsp *n = rsp_copy(r);
    pthread_mutex_lock(&s->mu);
    if (s->tail)
        s->tail->next = n;
    else
        s->head = n;
    s->tail = n;
    pthread_mutex_unlock(&s->mu);
}

void th_push_json(struct th_server *s, int status, const char *body)
{
    struct th_response r = {.status = status, .body = body};
    th_push(s, &r);
}

void th_set_handler(struct th_server *s, th_handler_fn fn, void *ud)
{
    pthread_mutex_lock(&s->mu);
    s->fn = fn;
    s->ud = ud;
    pthread_mutex_unlock(&s->mu);
}

void th_live_send(struct th_server *s, const char *data)
{
    pthread_mutex_lock(&s->mu);
    buf_append_str(&s->live, data);
    pthread_mutex_unlock(&s->mu);
}

void th_live_end(struct th_server *s)
{
    pthread_mutex_lock(&s->mu);
    s->live_end = 1;
    pthread_mutex_unlock(&s->mu);
}

static struct rsp *next_response(struct th_server *s, const struct th_request *req)
{
    pthread_mutex_lock(&s->mu);
    struct rsp *n = s->head;
    if (n) {
        s->head = n->next;
        if (!s->head)
            s->tail = NULL;
        n->next = NULL;
    }
    th_handler_fn fn = s->fn;
    void *ud = s->ud;
    pthread_mutex_unlock(&s->mu);
    if (n)
        return n;
    struct th_response r = {0};
    if (fn) {
        if (fn(req, &r, ud) != 0) {
            free(r.body_alloc);
            return NULL;
        }
        return rsp_copy(&r);
    }
    r.status = 404;
    r.body = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","
             "\"reason\":\"NotFound\",\"message\":\"test server: no scripted response\","
             "\"code\":404}";
    return rsp_copy(&r);
}

/* ---- recorded requests ----------------------------------------------------- */

int th_connections(struct th_server *s)
{
    pthread_mutex_lock(&s->mu);
    int n = s->nconn;
    pthread_mutex_unlock(&s->mu);
    return n;
}

int th_nrequests(struct th_server *s)
{
    pthread_mutex_lock(&s->mu);
    int n = s->nreqs;
    pthread_mutex_unlock(&s->mu);
    return n;
}

const struct th_request *th_request_at(struct th_server *s, int i)
{
    pthread_mutex_lock(&s->mu);
    const struct th_request *r = i >= 0 && i < s->nreqs ? s->reqs[i] : NULL;
    pthread_mutex_unlock(&s->mu);
    return r;
}

int th_wait_requests(struct th_server *s, int n, int timeout_ms)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += timeout_ms / 1000;
    until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    int rc = 0;
    pthread_mutex_lock(&s->mu);
    while (s->nreqs < n && rc == 0)
        rc = pthread_cond_timedwait(&s->cv, &s->mu, &until);
    int ok = s->nreqs >= n;
    pthread_mutex_unlock(&s->mu);
    return ok ? 0 : -1;
}

const char *th_req_header(const struct th_request *r, const char *name)
{
    for (int i = 0; i < r->nheaders; i++)
        if (strcasecmp(r->headers[i].name, name) == 0)
            return r->headers[i].value;
    return NULL;
}

static void request_free(struct th_request *r)
{
    if (!r)
        return;
    for (int i = 0; i < r->nheaders; i++) {
        free(r->headers[i].name);
        free(r->headers[i].value);
    }
    free(r->headers);
    free(r->target);
    free(r->path);
    free(r->query);
    free(r->body);
    free(r);
}

static void record(struct th_server *s, struct th_request *r)
{
    pthread_mutex_lock(&s->mu);
    if (s->nreqs == s->req_cap) {
        int cap = s->req_cap ? s->req_cap * 2 : 16;
        struct th_request **p = realloc(s->reqs, (size_t)cap * sizeof(*p));
        if (!p)
            abort();
        s->reqs = p;
        s->req_cap = cap;
    }
    s->reqs[s->nreqs++] = r;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

/* Parses the head (request line + headers, without the blank line). */
/* The next non-empty line of a CR/LF-separated head, cut in place (NULL at
 * the end); *cur moves past it. */
static char *next_line(char **cur)
{
    char *s = *cur + strspn(*cur, "\r\n");
    if (!*s)
        return NULL;
    char *e = s + strcspn(s, "\r\n");
    *cur = *e ? e + 1 : e;
    *e = '\0';
    return s;
}

static struct th_request *parse_head(char *head, size_t *content_length)
{
    struct th_request *r = calloc(1, sizeof(*r));
    if (!r)
        abort();
    *content_length = 0;
    char *cur = head;
    char *line = next_line(&cur);
    char target[8192];
    if (!line || sscanf(line, "%15s %8191s", r->method, target) != 2) {
        request_free(r);
        return NULL;
    }
    r->target = xstrdup(target);
    char *q = strchr(target, '?');
    r->query = xstrdup(q ? q + 1 : "");
    if (q)
        *q = '\0';
    r->path = xstrdup(target);
    while ((line = next_line(&cur)) != NULL) {
        char *colon = strchr(line, ':');
        if (!colon)
            continue;
        *colon = '\0';
        const char *v = colon + 1;
        while (*v == ' ' || *v == '\t')
            v++;
        struct th_header *h = realloc(r->headers, (size_t)(r->nheaders + 1) * sizeof(*h));
        if (!h)
            abort();
        r->headers = h;
        h[r->nheaders].name = xstrdup(line);
        h[r->nheaders].value = xstrdup(v);
        r->nheaders++;
        if (strcasecmp(line, "Content-Length") == 0)
            *content_length = strtoul(v, NULL, 10);
    }
    return r;
}

/* ---- connection I/O -------------------------------------------------------- */

/* Waits until the connection is readable: 1 readable, 0 stopping, -1 error. */
static int wait_readable(struct th_server *s, SSL *ssl, int fd, int timeout_ms)
{
    long long end = timeout_ms >= 0 ? th_now_ms() + timeout_ms : -1;
    for (;;) {
        if (SSL_pending(ssl) > 0)
            return 1;
        if (atomic_load(&s->stopping))
            return 0;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int n = poll(&p, 1, TH_POLL_MS);
        if (n > 0)
            return 1;
        if (n < 0 && errno != EINTR)
            return -1;
        if (end >= 0 && th_now_ms() >= end)
            return 0;
    }
}

static int write_all(SSL *ssl, const char *p, size_t n)
{
    while (n > 0) {
        int w = SSL_write(ssl, p, n > 65536 ? 65536 : (int)n);
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static int write_chunk(SSL *ssl, const char *data, size_t n)
{
    if (n == 0)
        return 0; /* a zero chunk would end the stream */
    char hdr[32];
    int h = snprintf(hdr, sizeof(hdr), "%zx\r\n", n);
    if (write_all(ssl, hdr, (size_t)h) < 0 || write_all(ssl, data, n) < 0 ||
        write_all(ssl, "\r\n", 2) < 0)
        return -1;
    return 0;
}

static const char *reason_phrase(int status)
{
    switch (status) {
    case 200:
        return "OK";
    case 201:
        return "Created";
    case 404:
        return "Not Found";
    case 409:
        return "Conflict";
    case 410:
        return "Gone";
    case 422:
        return "Unprocessable Entity";
    case 429:
        return "Too Many Requests";
    case 500:
        return "Internal Server Error";
    case 503:
        return "Service Unavailable";
    default:
        return "Status";
    }
}

/* Waits up to ms for the client to close (or send): returns 1 if the client
 * closed or the server is stopping, 0 on timeout. */
static int client_gone(struct th_server *s, SSL *ssl, int fd, int ms)
{
    int rc = wait_readable(s, ssl, fd, ms);
    if (rc == 0)
        return atomic_load(&s->stopping) ? 1 : 0;
    if (rc < 0)
        return 1;
    char tmp[512];
    return SSL_read(ssl, tmp, sizeof(tmp)) <= 0; /* extra data is ignored */
}

/* Sends a streamed response; returns -1 when the connection must close. */
static int send_stream(struct th_server *s, SSL *ssl, int fd, const struct rsp *n)
{
    for (int i = 0; i < n->r.nchunks; i++) {
        if (n->r.chunk_delay_ms > 0 && client_gone(s, ssl, fd, n->r.chunk_delay_ms))
            return -1;
        if (write_chunk(ssl, n->chunks[i], strlen(n->chunks[i])) < 0)
            return -1;
    }
    if (n->r.live) {
        for (;;) {
            pthread_mutex_lock(&s->mu);
            char *data = s->live.len ? buf_steal(&s->live) : NULL;
            int end = s->live_end;
            s->live_end = 0;
            pthread_mutex_unlock(&s->mu);
            int rc = data ? write_chunk(ssl, data, strlen(data)) : 0;
            free(data);
            if (rc < 0)
                return -1;
            if (end)
                break;
            if (client_gone(s, ssl, fd, TH_POLL_MS))
                return -1;
        }
    } else if (n->r.hold_ms > 0 && client_gone(s, ssl, fd, n->r.hold_ms)) {
        return -1;
    }
    return write_all(ssl, "0\r\n\r\n", 5);
}

/* Sends the response; returns 0 to keep the connection, -1 to close it. */
static int send_response(struct th_server *s, SSL *ssl, int fd, const struct rsp *n, int close_req)
{
    if (n->r.delay_ms > 0 && wait_ms(s, n->r.delay_ms) < 0)
        return -1;
    int streaming = n->r.nchunks > 0 || n->r.live;
    int close_after = close_req || n->r.close || n->r.truncate;
    struct buf h;
    buf_init(&h, TH_MAX_HEAD);
    buf_printf(&h, "HTTP/1.1 %d %s\r\n", n->r.status, reason_phrase(n->r.status));
    if (!n->headers || !strcasestr(n->headers, "Content-Type:"))
        buf_append_str(&h, "Content-Type: application/json\r\n");
    if (streaming)
        buf_append_str(&h, "Transfer-Encoding: chunked\r\n");
    else
        buf_printf(&h, "Content-Length: %zu\r\n", n->r.body_len);
    if (close_after)
        buf_append_str(&h, "Connection: close\r\n");
    if (n->headers)
        buf_append_str(&h, n->headers);
    buf_append_str(&h, "\r\n");
    int rc = buf_ok(&h) ? write_all(ssl, h.data, h.len) : -1;
    buf_free(&h);
    if (rc < 0)
        return -1;
    if (streaming)
        rc = send_stream(s, ssl, fd, n);
    else if (n->r.truncate)
        rc = write_all(ssl, n->body ? n->body : "",
                       n->r.truncate_at < n->r.body_len ? n->r.truncate_at : n->r.body_len);
    else
        rc = write_all(ssl, n->body ? n->body : "", n->r.body_len);
    return rc < 0 || close_after ? -1 : 0;
}

static void serve(struct conn_thread *ct, SSL *ssl)
{
    struct th_server *s = ct->s;
    char cn[128] = "";
    X509 *peer = SSL_get1_peer_certificate(ssl);
    if (peer) {
        X509_NAME_get_text_by_NID(X509_get_subject_name(peer), NID_commonName, cn, sizeof(cn));
        X509_free(peer);
    }
    struct buf in;
    buf_init(&in, TH_MAX_HEAD + TH_MAX_BODY);
    char tmp[16384];
    for (;;) {
        char *end;
        while (!(end = in.len ? memmem(in.data, in.len, "\r\n\r\n", 4) : NULL)) {
            if (in.len > TH_MAX_HEAD || wait_readable(s, ssl, ct->fd, -1) <= 0)
                goto out;
            int n = SSL_read(ssl, tmp, sizeof(tmp));
            if (n <= 0 || buf_append(&in, tmp, (size_t)n) < 0)
                goto out;
        }
        size_t head_len = (size_t)(end - in.data);
        char *head = xmemdup(in.data, head_len);
        size_t clen;
        struct th_request *req = parse_head(head, &clen);
        free(head);
        if (!req || clen > TH_MAX_BODY) {
            request_free(req);
            goto out;
        }
        while (in.len < head_len + 4 + clen) {
            int n = wait_readable(s, ssl, ct->fd, -1) > 0 ? SSL_read(ssl, tmp, sizeof(tmp)) : 0;
            if (n <= 0 || buf_append(&in, tmp, (size_t)n) < 0) {
                request_free(req);
                goto out;
            }
        }
        req->body = xmemdup(in.data + head_len + 4, clen);
        req->body_len = clen;
        req->conn = ct->id;
        snprintf(req->client_cn, sizeof(req->client_cn), "%s", cn);
        buf_consume(&in, head_len + 4 + clen);
        const char *conn_hdr = th_req_header(req, "Connection");
        int close_req = conn_hdr && strcasecmp(conn_hdr, "close") == 0;
        record(s, req); /* req now belongs to the server's list */
        struct rsp *rsp = next_response(s, req);
        int rc = rsp ? send_response(s, ssl, ct->fd, rsp, close_req) : -1;
        rsp_free(rsp);
        if (rc < 0)
            goto out;
    }
out:
    buf_free(&in);
}

static void *conn_main(void *arg)
{
    struct conn_thread *ct = arg;
    struct timeval tv = {TH_IO_TIMEOUT, 0};
    int one = 1;
    setsockopt(ct->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)); /* no 40 ms ACK stalls */
    setsockopt(ct->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(ct->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    SSL *ssl = SSL_new(ct->s->ctx);
    if (ssl && SSL_set_fd(ssl, ct->fd) == 1 && SSL_accept(ssl) == 1) {
        serve(ct, ssl);
        SSL_shutdown(ssl);
    }
    SSL_free(ssl);
    ERR_clear_error();
    close(ct->fd);
    return NULL;
}

static void *accept_main(void *arg)
{
    struct th_server *s = arg;
    while (!atomic_load(&s->stopping)) {
        struct pollfd p = {.fd = s->lfd, .events = POLLIN};
        if (poll(&p, 1, TH_POLL_MS) <= 0)
            continue;
        int fd = accept(s->lfd, NULL, NULL);
        if (fd < 0)
            continue;
        struct conn_thread *ct = calloc(1, sizeof(*ct));
        if (!ct)
            abort();
        ct->s = s;
        ct->fd = fd;
        pthread_mutex_lock(&s->mu);
        ct->id = ++s->nconn;
        if (s->nconn > s->conn_cap) {
            int cap = s->conn_cap ? s->conn_cap * 2 : 8;
            struct conn_thread **c = realloc(s->conns, (size_t)cap * sizeof(*c));
            if (!c)
                abort();
            s->conns = c;
            s->conn_cap = cap;
        }
        s->conns[ct->id - 1] = ct;
        pthread_mutex_unlock(&s->mu);
        if (pthread_create(&ct->thr, NULL, conn_main, ct) != 0)
            abort();
    }
    return NULL;
}

/* ---- lifecycle ------------------------------------------------------------- */

static SSL_CTX *make_ctx(const struct th_config *cfg)
{
    char *cert = cfg && cfg->cert_file ? xstrdup(cfg->cert_file) : th_data_path("server.pem");
    char *key = cfg && cfg->key_file ? xstrdup(cfg->key_file) : th_data_path("server-key.pem");
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    int ok = ctx && SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) == 1 &&
             SSL_CTX_use_certificate_chain_file(ctx, cert) == 1 &&
             SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) == 1;
    if (ok && cfg && cfg->client_ca_file) {
        STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(cfg->client_ca_file);
        ok = names && SSL_CTX_load_verify_locations(ctx, cfg->client_ca_file, NULL) == 1;
        if (names)
            SSL_CTX_set_client_CA_list(ctx, names);
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
    }
    if (!ok) {
        fprintf(stderr, "th_start: TLS setup failed (%s, %s)\n", cert, key);
        ERR_print_errors_fp(stderr);
        SSL_CTX_free(ctx);
        ctx = NULL;
    }
    free(cert);
    free(key);
    return ctx;
}

struct th_server *th_start(const struct th_config *cfg)
{
    signal(SIGPIPE, SIG_IGN);
    struct th_server *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->lfd = -1;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    buf_init(&s->live, BUF_CAP_REPLY);
    s->ctx = make_ctx(cfg);
    if (!s->ctx)
        goto fail;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t alen = sizeof(a);
    s->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s->lfd < 0 || bind(s->lfd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
        listen(s->lfd, 64) < 0 || getsockname(s->lfd, (struct sockaddr *)&a, &alen) < 0) {
        perror("th_start: listen");
        goto fail;
    }
    s->port = ntohs(a.sin_port);
    snprintf(s->url, sizeof(s->url), "https://127.0.0.1:%d", s->port);
    if (pthread_create(&s->accept_thr, NULL, accept_main, s) != 0)
        goto fail;
    return s;
fail:
    if (s->lfd >= 0)
        close(s->lfd);
    SSL_CTX_free(s->ctx);
    buf_free(&s->live);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    free(s);
    return NULL;
}

void th_free(struct th_server *s)
{
    if (!s)
        return;
    atomic_store(&s->stopping, 1);
    pthread_join(s->accept_thr, NULL);
    close(s->lfd);
    /* No new connections now: join without the lock. */
    for (int i = 0; i < s->nconn; i++) {
        pthread_join(s->conns[i]->thr, NULL);
        free(s->conns[i]);
    }
    free(s->conns);
    while (s->head) {
        struct rsp *n = s->head;
        s->head = n->next;
        rsp_free(n);
    }
    for (int i = 0; i < s->nreqs; i++)
        request_free(s->reqs[i]);
    free(s->reqs);
    buf_free(&s->live);
    SSL_CTX_free(s->ctx);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    free(s);
}

int th_port(const struct th_server *s)
{
    return s->port;
}

const char *th_url(const struct th_server *s)
{
    return s->url;
}
