/* What both binaries' libmicrohttpd servers share (the webhook's
 * webhook/server.c and the reconciler's metrics endpoint rc_metrics.c): the
 * bind address, the daemon's options built into one bounded array, the
 * external logger, and the response helpers, which count lengths
 * themselves. Policy (routes, deadlines, per-IP limits, budgets) stays with
 * each server.
 *
 * Thread-safety: httpd_start from one thread; the reply helpers run on the
 * daemon's threads, on the connection they are given. */
#ifndef MKUEUE_HTTPD_H
#define MKUEUE_HTTPD_H

#include <microhttpd.h>
#include <stddef.h>

#include "buf.h"
#include "errf.h"

/* Room for every option httpd_start passes: socket address, connection
 * limit, timeout, memory limit, thread pool, completed, connection and URI
 * callbacks, logger, certificate callback, TLS priorities, per-IP limit,
 * END. httpd_start refuses to overrun it rather than write past it. */
#define HTTPD_MAX_OPTIONS 16

struct httpd_opts {
    const char *name;         /* for logs: "admission", "metrics" */
    const char *bind;         /* IPv4 or IPv6 literal, "localhost"; NULL or "" = 0.0.0.0 */
    int port;                 /* 0 = ephemeral (httpd_start's *port) */
    unsigned threads;         /* > 1: a pool of that many polling threads */
    unsigned max_connections; /* 0 = libmicrohttpd's default */
    unsigned timeout_s;       /* idle connection timeout; 0 = none */
    size_t conn_memory;       /* buffer per connection; 0 = libmicrohttpd's default */
    unsigned max_per_ip;      /* connections from one address; 0 = no limit */
    /* TLS: the certificate callback (gnutls_certificate_retrieve_function2)
     * and priorities; NULL callback = plain HTTP */
    void *tls_cert_callback;
    const char *tls_priorities;
    MHD_AccessHandlerCallback handler;
    MHD_RequestCompletedCallback completed;                                    /* may be NULL */
    MHD_NotifyConnectionCallback on_connection;                                /* may be NULL */
    void *(*uri_log)(void *cls, const char *uri, struct MHD_Connection *conn); /* may be NULL */
    void *cls; /* for every callback */
};

/* Fills *ss for a bind address and port; *ipv6 says which family. Returns
 * 0 or MK_ERR_INVAL with err. */
int httpd_sockaddr(const char *bind, int port, struct sockaddr_storage *ss, int *ipv6, char *err,
                   size_t errlen);

/* Splits "host:port" (":port" = every address) into host (at most hostlen
 * bytes with its NUL) and *port. Returns 0 or MK_ERR_INVAL with err. */
int httpd_split_addr(const char *addr, char *host, size_t hostlen, int *port, char *err,
                     size_t errlen);

/* Starts the daemon (internal polling threads using poll(), not epoll: see
 * httpd.c; messages to the logger at debug under o->name). *port (may be NULL) gets
 * the bound port. Returns NULL with err. */
struct MHD_Daemon *httpd_start(const struct httpd_opts *o, int *port, char *err, size_t errlen);

/* Queues an answer: body (len bytes) copied by libmicrohttpd, Content-Type
 * ctype, an Allow header when allow is not NULL. */
enum MHD_Result httpd_reply(struct MHD_Connection *conn, int status, const char *ctype,
                            const char *body, size_t len, const char *allow);
/* httpd_reply of a NUL-terminated string (its length counted here). */
enum MHD_Result httpd_reply_str(struct MHD_Connection *conn, int status, const char *ctype,
                                const char *body);
/* Queues b's bytes as the answer without a copy (b is left empty). */
enum MHD_Result httpd_reply_buf(struct MHD_Connection *conn, int status, const char *ctype,
                                struct buf *b, const char *allow);

#endif
