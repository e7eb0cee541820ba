/* A small scripted HTTPS/1.1 server for tests (OpenSSL, 127.0.0.1, port 0).
 *
 * One accept thread plus one thread per connection, HTTP/1.1 keep-alive, so
 * a client's connection reuse can be asserted with th_connections(). Every
 * request is recorded (method, target, headers, body) for assertions.
 *
 * Responses come, in this order, from: the FIFO of scripted responses
 * (th_push), else the handler (th_set_handler), else a 404 Status. Each
 * response may be delayed, truncated (declares Content-Length but sends
 * fewer bytes, then closes), or streamed in chunks (Transfer-Encoding:
 * chunked) with delays, optionally kept open for live data pushed with
 * th_live_send() — for watch tests.
 *
 * th_start() ignores SIGPIPE for the whole process (a client that timed out
 * must not kill the test when the server writes to it). */
#ifndef MKUEUE_TEST_HTTPS_H
#define MKUEUE_TEST_HTTPS_H

#include <stddef.h>

struct th_server;

struct th_config {
    const char *cert_file; /* server cert PEM; NULL = <data>/server.pem */
    const char *key_file;  /* NULL = <data>/server-key.pem */
    /* When set, a client certificate signed by this CA is required. */
    const char *client_ca_file;
};

struct th_header {
    char *name; /* as sent */
    char *value;
};

/* One recorded request. Valid until th_free(). */
struct th_request {
    char method[16];
    char *target; /* path + "?" + query, as sent */
    char *path;   /* before '?' (not decoded) */
    char *query;  /* after '?', "" when none (not decoded) */
    struct th_header *headers;
    int nheaders;
    char *body; /* NUL-terminated; body_len excludes the NUL */
    size_t body_len;
    int conn;            /* 1-based number of the TCP connection it came on */
    char client_cn[128]; /* CN of the client certificate, "" when none */
};

struct th_response {
    int status;          /* 0 = 200 */
    const char *headers; /* extra header lines, each ending "\r\n", or NULL */
    const char *body;    /* NULL = empty */
    size_t body_len;     /* 0 = strlen(body) */
    int delay_ms;        /* wait before answering */
    int truncate;        /* send only truncate_at body bytes, then close */
    size_t truncate_at;
    int close; /* close the connection after this response */
    /* Streaming (chunked): when chunks != NULL or live is set, body is
     * ignored; each chunk is sent after chunk_delay_ms. Then, if live, the
     * stream stays open for th_live_send() data until th_live_end(), the
     * client closes or th_free(); else it is held open hold_ms and ended. */
    const char *const *chunks;
    int nchunks;
    int chunk_delay_ms;
    int hold_ms;
    int live;
    char *body_alloc; /* handlers only: malloc'd body, used instead of body and freed */
};

/* Fills resp (zeroed) for req. Called on a connection thread without the
 * server's lock held. The server deep-copies *resp when the handler returns,
 * so the strings only need to live until then (static, or owned by ud); a
 * malloc'd body may be handed over in resp->body_alloc instead. Return 0;
 * non-zero closes the connection without answering. */
typedef int (*th_handler_fn)(const struct th_request *req, struct th_response *resp, void *ud);

/* Starts a server (cfg may be NULL for the defaults). Returns NULL on error
 * (message on stderr). */
struct th_server *th_start(const struct th_config *cfg);
/* Stops all threads, closes connections and frees everything. */
void th_free(struct th_server *s);

int th_port(const struct th_server *s);
/* "https://127.0.0.1:<port>" (owned by the server). */
const char *th_url(const struct th_server *s);

/* Queues a response (deep-copied). */
void th_push(struct th_server *s, const struct th_response *r);
/* Shorthand: status + JSON body, no delay. */
void th_push_json(struct th_server *s, int status, const char *body);
void th_set_handler(struct th_server *s, th_handler_fn fn, void *ud);

/* Data for the current live stream (queued if none is open yet). */
void th_live_send(struct th_server *s, const char *data);
/* Ends the live stream cleanly (terminating chunk). */
void th_live_end(struct th_server *s);

/* Accepted TCP connections so far. */
int th_connections(struct th_server *s);
int th_nrequests(struct th_server *s);
/* i-th request (0-based) or NULL. */
const struct th_request *th_request_at(struct th_server *s, int i);
/* Waits until at least n requests arrived; returns 0, or -1 on timeout. */
int th_wait_requests(struct th_server *s, int n, int timeout_ms);
/* Value of a header (case-insensitive name) or NULL. */
const char *th_req_header(const struct th_request *r, const char *name);

/* Test data helpers (MKUEUE_TEST_DATA, default "common/tests/data"). */
/* Returns a malloc'd path to <data>/<name>. */
char *th_data_path(const char *name);
/* Returns the malloc'd, NUL-terminated file content (and length), or NULL. */
char *th_read_data(const char *name, size_t *len);

/* Milliseconds on the monotonic clock. */
long long th_now_ms(void);

#endif
