#include "server.h"
#include "errf.h"

#include <errno.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "clock.h"
#include "httpd.h"
#include "log.h"
#include "review.h"

/* Per connection, from accept to close (MHD's socket context). */
struct conn {
    struct conn *prev, *next;
    int fd;
    int in_request;     /* request line received, answer not sent yet */
    int cut;            /* shut down by the sweep */
    long long since_ms; /* accept, end of the last answer, or request line */
};

struct wh_server {
    struct MHD_Daemon *d;
    struct wh_server_opts o;
    char name[32];
    int port;
    /* connections and the deadline sweep */
    pthread_mutex_t lock;
    pthread_cond_t wake;
    struct conn *conns;
    int stopping;
    int sweeping; /* the sweep thread runs */
    pthread_t sweep;
};

/* Per request, from the headers to the completion callback. */
struct req {
    struct buf body;
    long long start_ms;
    size_t discarded; /* bytes dropped after the cap */
    size_t reserved;  /* bytes taken from o.budget */
    int over_budget;  /* the budget refused the body: answer 429 */
    int counted;      /* in the in-flight gauge */
};

static enum MHD_Result send_error(struct wh_server *s, struct MHD_Connection *conn, int status,
                                  const char *msg, const char *allow)
{
    char code[8];
    snprintf(code, sizeof(code), "%d", status);
    const char *const lv[] = {code};
    if (s->o.bad)
        mt_inc(s->o.bad, lv, 1);
    struct buf b;
    buf_init(&b, BUF_CAP_REPLY);
    buf_append_str(&b, msg);
    buf_append_str(&b, "\n");
    return httpd_reply_buf(conn, status, "text/plain; charset=utf-8", &b, allow);
}

/* "application/json", optionally with parameters ("; charset=utf-8"). */
static int is_json(const char *ct)
{
    static const char want[] = "application/json";
    if (!ct || strncasecmp(ct, want, sizeof(want) - 1) != 0)
        return 0;
    char next = ct[sizeof(want) - 1];
    return next == '\0' || next == ';' || next == ' ';
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
    (void)version;
    struct wh_server *s = cls;
    struct req *rq = *con_cls;
    if (!rq) {
        /* headers only: refuse early, before any body byte is read */
        int route = s->o.route(s->o.ud, url);
        if (route == WH_ROUTE_NOT_FOUND)
            return send_error(s, conn, 404, "not found", NULL);
        int get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
        if (route == WH_ROUTE_GET && !get)
            return send_error(s, conn, 405, "method not allowed", "GET, HEAD");
        if (route == WH_ROUTE_POST_JSON) {
            if (strcmp(method, "POST") != 0)
                return send_error(s, conn, 405, "method not allowed", "POST");
            const char *ct =
                MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
            if (!is_json(ct))
                return send_error(s, conn, 415, "Content-Type must be application/json", NULL);
            const char *cl =
                MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
            unsigned long long n = cl ? strtoull(cl, NULL, 10) : 0;
            if (n > s->o.max_body)
                return send_error(s, conn, 413, "request body too large", NULL);
            /* a declared body is taken whole now and allocated once */
            if (n && s->o.budget && wh_budget_take(s->o.budget, (size_t)n + 1) < 0)
                return send_error(s, conn, 429, "too many request bytes in flight; retry", NULL);
            rq = calloc(1, sizeof(*rq));
            if (!rq) {
                if (n && s->o.budget)
                    wh_budget_give(s->o.budget, (size_t)n + 1);
                return MHD_NO;
            }
            rq->reserved = n && s->o.budget ? (size_t)n + 1 : 0;
            buf_init(&rq->body, s->o.max_body);
            if (n && buf_reserve(&rq->body, (size_t)n) < 0) {
                *con_cls = rq; /* freed, and the budget given back, at completion */
                return send_error(s, conn, 500, "out of memory", NULL);
            }
        }
        if (!rq) {
            rq = calloc(1, sizeof(*rq));
            if (!rq)
                return MHD_NO;
            buf_init(&rq->body, s->o.max_body);
        }
        rq->start_ms = clk_now_ms();
        rq->counted = s->o.in_flight != NULL;
        if (rq->counted)
            mt_add(s->o.in_flight, NULL, 1);
        *con_cls = rq;
        return MHD_YES;
    }
    if (*upload_data_size) {
        if (clk_now_ms() - rq->start_ms > (long long)s->o.request_timeout_s * 1000) {
            LOG_I(s->name, "request body too slow: connection closed", "path", url);
            return MHD_NO;
        }
        size_t len = *upload_data_size;
        if (s->o.budget && buf_ok(&rq->body) && !rq->over_budget &&
            rq->body.len + len + 1 > rq->body.alloc) {
            /* undeclared length (chunked): the buffer may double */
            size_t want = 2 * (rq->body.len + len) + 256;
            if (want > rq->reserved) {
                if (wh_budget_take(s->o.budget, want - rq->reserved) == 0)
                    rq->reserved = want;
                else
                    rq->over_budget = 1;
            }
        }
        if (buf_ok(&rq->body) && !rq->over_budget)
            buf_append(&rq->body, upload_data, len);
        if (!buf_ok(&rq->body) || rq->over_budget) {
            /* keep reading to answer 413, within bounds */
            rq->discarded += *upload_data_size;
            if (rq->discarded > 4 * s->o.max_body)
                return MHD_NO;
        }
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (rq->over_budget)
        return send_error(s, conn, 429, "too many request bytes in flight; retry", NULL);
    if (!buf_ok(&rq->body)) {
        if (rq->body.oom)
            return send_error(s, conn, 500, "out of memory", NULL);
        return send_error(s, conn, 413, "request body too large", NULL);
    }
    struct buf out;
    buf_init(&out, BUF_CAP_REPLY);
    const char *ctype = "text/plain; charset=utf-8";
    int get = strcmp(method, "POST") != 0;
    int status = s->o.handle(s->o.ud, url, get ? NULL : (rq->body.data ? rq->body.data : ""),
                             rq->body.len, &out, &ctype);
    if (!buf_ok(&out)) {
        buf_free(&out);
        return send_error(s, conn, 500, "out of memory", NULL);
    }
    return httpd_reply_buf(conn, status, ctype, &out, NULL);
}

static struct conn *conn_of(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

/* The connection's deadline starts over: waiting for a request (idle) or
 * reading and answering one. Runs in the connection's thread. */
static void conn_phase(struct wh_server *s, struct MHD_Connection *conn, int in_request)
{
    struct conn *c = conn_of(conn);
    if (!c)
        return;
    pthread_mutex_lock(&s->lock);
    c->in_request = in_request;
    c->since_ms = clk_now_ms();
    pthread_mutex_unlock(&s->lock);
}

/* Called once the request line is in: the request's deadline starts here,
 * before the headers, which a slow client can trickle. */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
    (void)uri;
    conn_phase(cls, conn, 1);
    return NULL;
}

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    struct wh_server *s = cls;
    struct conn *c = *socket_context;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        c = ci ? calloc(1, sizeof(*c)) : NULL;
        if (!c) {
            /* untracked: only the idle timeout applies to it */
            LOG_W(s->name, "cannot track a connection: no absolute deadline for it");
            return;
        }
        c->fd = ci->connect_fd;
        c->since_ms = clk_now_ms();
        pthread_mutex_lock(&s->lock);
        c->next = s->conns;
        if (s->conns)
            s->conns->prev = c;
        s->conns = c;
        pthread_mutex_unlock(&s->lock);
        *socket_context = c;
        return;
    }
    /* CLOSED: MHD closes the socket after this returns, so the sweep (which
     * shuts sockets down under the lock) never touches a reused fd. */
    if (!c)
        return;
    pthread_mutex_lock(&s->lock);
    if (c->prev)
        c->prev->next = c->next;
    else
        s->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    pthread_mutex_unlock(&s->lock);
    free(c);
    *socket_context = NULL;
}

/* Which tracked connections are past their deadline, as a pure function of
 * the phase and the clock: idle ones get idle_ms from the last answer (or
 * accept) to send a request line, whatever they trickle; a request gets
 * request_ms from its request line to its answer being sent. */
static int conn_expired(const struct conn *c, long long now, long long idle_ms,
                        long long request_ms)
{
    return now - c->since_ms > (c->in_request ? request_ms : idle_ms);
}

static void *sweep_main(void *arg)
{
    struct wh_server *s = arg;
    long long idle_ms = (long long)s->o.timeout_s * 1000;
    long long request_ms = (long long)s->o.request_timeout_s * 1000;
    pthread_mutex_lock(&s->lock);
    while (!s->stopping) {
        /* deadlines hold to a quarter second */
        clk_cond_wait_until(&s->wake, &s->lock, clk_now_ms() + 250);
        long long now = clk_now_ms();
        int cut = 0;
        for (struct conn *c = s->conns; c && !s->stopping; c = c->next) {
            if (c->cut || !conn_expired(c, now, idle_ms, request_ms))
                continue;
            /* MHD sees EOF at its next poll and closes the connection */
            shutdown(c->fd, SHUT_RDWR);
            c->cut = 1;
            cut++;
        }
        if (cut) {
            char n[16];
            snprintf(n, sizeof(n), "%d", cut);
            LOG_D(s->name, "connections past their deadline closed", "count", n);
            if (s->o.cut)
                mt_inc(s->o.cut, NULL, cut);
        }
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)toe;
    struct wh_server *s = cls;
    struct req *rq = *con_cls;
    conn_phase(s, conn, 0);
    if (!rq)
        return;
    if (rq->counted)
        mt_add(s->o.in_flight, NULL, -1);
    if (rq->reserved)
        wh_budget_give(s->o.budget, rq->reserved);
    buf_free(&rq->body);
    free(rq);
    *con_cls = NULL;
}

struct wh_server *wh_server_start(const struct wh_server_opts *o, char *err, size_t errlen)
{
    struct wh_server *s = calloc(1, sizeof(*s));
    if (!s) {
        errf(err, errlen, MK_ERR_NOMEM, "out of memory");
        return NULL;
    }
    s->o = *o;
    snprintf(s->name, sizeof(s->name), "%s", o->name ? o->name : "server");
    if (!s->o.threads)
        s->o.threads = 2;
    if (!s->o.max_connections)
        s->o.max_connections = 256;
    if (!s->o.timeout_s)
        s->o.timeout_s = 30;
    if (!s->o.request_timeout_s)
        s->o.request_timeout_s = 15;
    if (!s->o.max_body)
        s->o.max_body = WH_MAX_BODY;
    struct httpd_opts ho = {
        .name = s->name,
        .bind = o->bind,
        .port = o->port,
        .threads = s->o.threads,
        .max_connections = s->o.max_connections,
        .timeout_s = s->o.timeout_s,
        .conn_memory = WH_CONN_MEMORY,
        .max_per_ip = s->o.max_per_ip,
        .tls_cert_callback = o->certs ? (void *)wh_certs_retrieve : NULL,
        .tls_priorities = o->tls_priorities ? o->tls_priorities : WH_TLS_PRIORITIES,
        .handler = on_request,
        .completed = on_completed,
        .on_connection = on_connection,
        .uri_log = on_uri,
        .cls = s,
    };
    if (o->certs)
        wh_certs_install(o->certs);
    pthread_mutex_init(&s->lock, NULL);
    clk_cond_init(&s->wake);
    s->d = httpd_start(&ho, &s->port, err, errlen);
    if (!s->d)
        goto fail_locks;
    int rc = pthread_create(&s->sweep, NULL, sweep_main, s);
    if (rc != 0) {
        errf(err, errlen, MK_ERR_IO, "cannot start the deadline thread: %s", strerror(rc));
        MHD_stop_daemon(s->d);
        goto fail_locks;
    }
    s->sweeping = 1;
    return s;
fail_locks:
    pthread_cond_destroy(&s->wake);
    pthread_mutex_destroy(&s->lock);
    free(s);
    return NULL;
}

int wh_server_port(const struct wh_server *s)
{
    return s->port;
}

void wh_server_stop(struct wh_server *s)
{
    if (!s)
        return;
    if (s->sweeping) {
        pthread_mutex_lock(&s->lock);
        s->stopping = 1;
        pthread_cond_signal(&s->wake);
        pthread_mutex_unlock(&s->lock);
        pthread_join(s->sweep, NULL);
    }
    MHD_stop_daemon(s->d); /* closes the rest: their contexts are freed */
    pthread_cond_destroy(&s->wake);
    pthread_mutex_destroy(&s->lock);
    free(s);
}
