#include "httpd.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "log.h"

int httpd_sockaddr(const char *bind, int port, struct sockaddr_storage *ss, int *ipv6, char *err,
                   size_t errlen)
{
    memset(ss, 0, sizeof(*ss));
    *ipv6 = 0;
    if (port < 0 || port > 65535)
        return errf(err, errlen, MK_ERR_INVAL, "port %d out of range", port);
    struct sockaddr_in *in4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
    if (!bind || !*bind || strcmp(bind, "0.0.0.0") == 0) {
        in4->sin_addr.s_addr = htonl(INADDR_ANY);
    } else if (strcmp(bind, "localhost") == 0) {
        in4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    } else if (inet_pton(AF_INET6, bind, &in6->sin6_addr) == 1) {
        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons((uint16_t)port);
        *ipv6 = 1;
        return 0;
    } else if (inet_pton(AF_INET, bind, &in4->sin_addr) != 1) {
        return errf(err, errlen, MK_ERR_INVAL, "bind address %s is not an IPv4 or IPv6 address",
                    bind);
    }
    in4->sin_family = AF_INET;
    in4->sin_port = htons((uint16_t)port);
    return 0;
}

int httpd_split_addr(const char *addr, char *host, size_t hostlen, int *port, char *err,
                     size_t errlen)
{
    const char *colon = strrchr(addr, ':');
    if (!colon)
        return errf(err, errlen, MK_ERR_INVAL, "address %s: want host:port", addr);
    const char *h = addr;
    size_t n = (size_t)(colon - addr);
    if (n >= 2 && h[0] == '[' && h[n - 1] == ']') { /* [IPv6]:port */
        h++;
        n -= 2;
    }
    if (n >= hostlen)
        return errf(err, errlen, MK_ERR_TOOBIG, "address %s: host too long", addr);
    memcpy(host, h, n);
    host[n] = '\0';
    char *end;
    long p = strtol(colon + 1, &end, 10);
    if (!colon[1] || *end || p < 0 || p > 65535)
        return errf(err, errlen, MK_ERR_INVAL, "address %s: bad port", addr);
    *port = (int)p;
    return 0;
}

static void on_log(void *cls, const char *fmt, va_list ap)
{
    char msg[512];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    size_t n = strlen(msg);
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
        msg[--n] = '\0';
    LOG_D((const char *)cls, "libmicrohttpd", "message", msg);
}

/* Appends one option; 0, or MK_ERR_FULL when the array has no room (the END
 * marker included). */
static int add(struct MHD_OptionItem *items, size_t *n, enum MHD_OPTION opt, intptr_t value,
               void *ptr)
{
    if (*n + 1 >= HTTPD_MAX_OPTIONS)
        return MK_ERR_FULL;
    items[(*n)++] = (struct MHD_OptionItem){opt, value, ptr};
    return 0;
}

struct MHD_Daemon *httpd_start(const struct httpd_opts *o, int *port, char *err, size_t errlen)
{
    struct sockaddr_storage ss;
    int ipv6;
    if (httpd_sockaddr(o->bind, o->port, &ss, &ipv6, err, errlen) < 0)
        return NULL;
    /* poll(), not epoll: libmicrohttpd 0.9.75's epoll loop keeps a TLS
     * connection whose handshake waits for the client on its ready list and
     * spins on it (epoll_wait with a zero timeout, recv -> EAGAIN) until the
     * client answers, taking a core from the client that has to answer; see
     * webhook/README.md, Performance. Every server here has at most a few
     * hundred connections, which poll() handles well. */
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ERROR_LOG;
    if (ipv6)
        flags |= MHD_USE_IPv6;
    struct MHD_OptionItem items[HTTPD_MAX_OPTIONS];
    size_t n = 0;
    int rc = add(items, &n, MHD_OPTION_SOCK_ADDR, 0, &ss);
    if (!rc && o->max_connections)
        rc = add(items, &n, MHD_OPTION_CONNECTION_LIMIT, o->max_connections, NULL);
    if (!rc && o->timeout_s)
        rc = add(items, &n, MHD_OPTION_CONNECTION_TIMEOUT, o->timeout_s, NULL);
    if (!rc && o->conn_memory)
        rc = add(items, &n, MHD_OPTION_CONNECTION_MEMORY_LIMIT, (intptr_t)o->conn_memory, NULL);
    if (!rc && o->threads > 1)
        rc = add(items, &n, MHD_OPTION_THREAD_POOL_SIZE, o->threads, NULL);
    if (!rc && o->completed)
        rc = add(items, &n, MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)o->completed, o->cls);
    if (!rc && o->on_connection)
        rc = add(items, &n, MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)o->on_connection, o->cls);
    if (!rc && o->uri_log)
        rc = add(items, &n, MHD_OPTION_URI_LOG_CALLBACK, (intptr_t)o->uri_log, o->cls);
    if (!rc)
        rc = add(items, &n, MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)on_log,
                 (void *)(o->name ? o->name : "httpd"));
    if (!rc && o->tls_cert_callback) {
        flags |= MHD_USE_TLS;
        rc = add(items, &n, MHD_OPTION_HTTPS_CERT_CALLBACK, 0, o->tls_cert_callback);
        if (!rc && o->tls_priorities)
            rc = add(items, &n, MHD_OPTION_HTTPS_PRIORITIES, 0, (void *)o->tls_priorities);
    }
    if (!rc && o->max_per_ip)
        rc = add(items, &n, MHD_OPTION_PER_IP_CONNECTION_LIMIT, o->max_per_ip, NULL);
    if (rc) {
        errf(err, errlen, rc, "more than %d server options", HTTPD_MAX_OPTIONS - 1);
        return NULL;
    }
    items[n] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
    struct MHD_Daemon *d = MHD_start_daemon(flags, 0, NULL, NULL, o->handler, o->cls,
                                            MHD_OPTION_ARRAY, items, MHD_OPTION_END);
    if (!d) {
        errf(err, errlen, MK_ERR_IO, "cannot serve on %s:%d (address in use, or TLS setup failed)",
             o->bind && *o->bind ? o->bind : "0.0.0.0", o->port);
        return NULL;
    }
    if (port) {
        const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
        *port = info ? info->port : o->port;
    }
    return d;
}

static enum MHD_Result queue(struct MHD_Connection *conn, int status, const char *ctype,
                             struct MHD_Response *r, const char *allow)
{
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    if (allow)
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow);
    enum MHD_Result ret = MHD_queue_response(conn, (unsigned)status, r);
    MHD_destroy_response(r);
    return ret;
}

enum MHD_Result httpd_reply(struct MHD_Connection *conn, int status, const char *ctype,
                            const char *body, size_t len, const char *allow)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(len, (void *)(body ? body : ""), MHD_RESPMEM_MUST_COPY);
    return queue(conn, status, ctype, r, allow);
}

enum MHD_Result httpd_reply_str(struct MHD_Connection *conn, int status, const char *ctype,
                                const char *body)
{
    return httpd_reply(conn, status, ctype, body, strlen(body), NULL);
}

enum MHD_Result httpd_reply_buf(struct MHD_Connection *conn, int status, const char *ctype,
                                struct buf *b, const char *allow)
{
    size_t len = b->len;
    char *data = buf_steal(b);
    struct MHD_Response *r = MHD_create_response_from_buffer(
        len, data ? data : (char *)"", data ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
    if (!r)
        free(data);
    return queue(conn, status, ctype, r, allow);
}
