/* HTTP(S) servers on libmicrohttpd: the admission server (TLS), the plain
 * metrics server and the probe server share this code.
 *
 * Connections are HTTP/1.1 kept alive, served by a pool of threads each
 * polling many connections (poll(2)), so a slow client holds a connection slot
 * (bounded by max_connections and max_per_ip), never a thread, and never for
 * long: deadlines are absolute, not idle times, so trickling bytes does not
 * extend them. A connection has timeout_s from accept or from its last
 * answer to send a request line, and a request request_timeout_s from its
 * request line to its answer being sent (headers, body and answer); a
 * thread sweeps every quarter second and shuts down the connections past
 * theirs.
 *
 * For POST routes the Content-Type is checked (415) and a declared
 * Content-Length over max_body refused (413) before any body byte is read;
 * a chunked body growing past max_body is answered 413 too. Body bytes are
 * taken from `budget` (the declared length at the headers, chunked bodies as
 * they grow) and given back when the request completes: over it, 429 before
 * reading (or after, for chunked), never a wait.
 *
 * Thread-safety: start and stop from one thread; the callbacks run on the
 * server's threads. */
#ifndef MKUEUE_WH_SERVER_H
#define MKUEUE_WH_SERVER_H

#include <stddef.h>

#include "budget.h"
#include "buf.h"
#include "certs.h"
#include "metrics.h"

enum wh_route {
    WH_ROUTE_POST_JSON = 1, /* POST with an application/json body */
    WH_ROUTE_GET = 2,       /* GET or HEAD, no body */
    WH_ROUTE_NOT_FOUND = 404,
};

/* Answers a request: returns the HTTP status, appends the body to out and
 * sets *ctype (a static string). body is NULL for GET. Called from the
 * server's threads, concurrently. */
typedef int (*wh_handler_fn)(void *ud, const char *path, const char *body, size_t len,
                             struct buf *out, const char **ctype);

struct wh_server_opts {
    const char *name;           /* for logs: "admission", "metrics" */
    const char *bind;           /* IPv4 or IPv6 literal; NULL = "0.0.0.0" */
    int port;                   /* 0 = ephemeral (see wh_server_port) */
    struct wh_certs *certs;     /* TLS with these (installed); NULL = plain HTTP */
    const char *tls_priorities; /* NULL = TLS 1.2 and 1.3 only */
    unsigned threads;           /* 0 = 2 */
    unsigned max_connections;   /* 0 = 256 */
    unsigned timeout_s;         /* idle connection timeout, 0 = 30 */
    unsigned request_timeout_s; /* whole body, 0 = 15 */
    size_t max_body;            /* 0 = 3 MiB */
    unsigned max_per_ip;        /* connections from one address, 0 = no limit */
    struct wh_budget *budget;   /* request bytes held at once; NULL = unlimited */
    /* Which paths exist and how; returns an enum wh_route. */
    int (*route)(void *ud, const char *path);
    wh_handler_fn handle;
    void *ud;
    struct mt_family *in_flight; /* gauge, may be NULL */
    struct mt_family *bad;       /* counter{code} for 404/405/413/415/429, may be NULL */
    struct mt_family *cut;       /* counter: connections closed at their deadline; may be NULL */
};

struct wh_server;

/* Starts listening and serving. Returns NULL with err. */
struct wh_server *wh_server_start(const struct wh_server_opts *o, char *err, size_t errlen);
/* The bound port. */
int wh_server_port(const struct wh_server *s);
/* Stops accepting, closes connections, joins the threads, frees. */
void wh_server_stop(struct wh_server *s);

/* libmicrohttpd's buffer of one connection (request line and headers; the
 * body passes through it): what a connection costs, beside its body. */
#define WH_CONN_MEMORY (64u * 1024)

#define WH_TLS_PRIORITIES "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"

#endif
