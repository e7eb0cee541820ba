/* The shared libmicrohttpd pieces (httpd.h): addresses, the option array,
 * the reply helpers' lengths. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "httpd.h"
#include "tests/support/test_http.h"

static void test_split_addr(void **state)
{
    (void)state;
    char host[64], err[128];
    int port = -1;
    assert_int_equal(httpd_split_addr(":8080", host, sizeof(host), &port, err, sizeof(err)), 0);
    assert_string_equal(host, "");
    assert_int_equal(port, 8080);
    assert_int_equal(httpd_split_addr("127.0.0.1:0", host, sizeof(host), &port, err, sizeof(err)),
                     0);
    assert_string_equal(host, "127.0.0.1");
    assert_int_equal(port, 0);
    assert_int_equal(httpd_split_addr("[::1]:9", host, sizeof(host), &port, err, sizeof(err)), 0);
    assert_string_equal(host, "::1");
    assert_int_equal(httpd_split_addr("nonsense", host, sizeof(host), &port, err, sizeof(err)),
                     MK_ERR_INVAL);
    assert_non_null(strstr(err, "want host:port"));
    assert_int_equal(httpd_split_addr("h:", host, sizeof(host), &port, err, sizeof(err)),
                     MK_ERR_INVAL);
    assert_int_equal(httpd_split_addr("h:70000", host, sizeof(host), &port, err, sizeof(err)),
                     MK_ERR_INVAL);
    char small[4];
    assert_int_equal(httpd_split_addr("abcdef:1", small, sizeof(small), &port, err, sizeof(err)),
                     MK_ERR_TOOBIG);
}

static void test_sockaddr(void **state)
{
    (void)state;
    struct sockaddr_storage ss;
    int v6;
    char err[128];
    assert_int_equal(httpd_sockaddr(NULL, 80, &ss, &v6, err, sizeof(err)), 0);
    assert_int_equal(v6, 0);
    assert_int_equal(((struct sockaddr_in *)&ss)->sin_port, htons(80));
    assert_int_equal(httpd_sockaddr("localhost", 1, &ss, &v6, err, sizeof(err)), 0);
    assert_int_equal(((struct sockaddr_in *)&ss)->sin_addr.s_addr, htonl(INADDR_LOOPBACK));
    assert_int_equal(httpd_sockaddr("::", 1, &ss, &v6, err, sizeof(err)), 0);
    assert_int_equal(v6, 1);
    assert_int_equal(httpd_sockaddr("example.com", 1, &ss, &v6, err, sizeof(err)), MK_ERR_INVAL);
    assert_int_equal(httpd_sockaddr("127.0.0.1", 65536, &ss, &v6, err, sizeof(err)), MK_ERR_INVAL);
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *conn, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **con_cls)
{
    (void)cls, (void)method, (void)version, (void)upload, (void)upload_size, (void)con_cls;
    if (strcmp(url, "/str") == 0)
        return httpd_reply_str(conn, 200, "text/plain", "counted here\n");
    if (strcmp(url, "/allow") == 0)
        return httpd_reply(conn, 405, "text/plain", "no\n", 3, "GET");
    struct buf b;
    buf_init(&b, BUF_CAP_REPLY);
    buf_append_str(&b, "from a buffer");
    return httpd_reply_buf(conn, 201, "application/json", &b, NULL);
}

static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
    (void)cls, (void)uri, (void)conn;
    return NULL;
}

static void completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                      enum MHD_RequestTerminationCode toe)
{
    (void)cls, (void)conn, (void)con_cls, (void)toe;
}

static void notify(void *cls, struct MHD_Connection *conn, void **socket_context,
                   enum MHD_ConnectionNotificationCode code)
{
    (void)cls, (void)conn, (void)socket_context, (void)code;
}

/* Every option at once fits the array (the webhook's server once wrote past
 * a hand-counted one), and the replies carry their whole bodies. */
static void test_serve_with_every_option(void **state)
{
    (void)state;
    char err[256] = "";
    struct httpd_opts o = {
        .name = "test",
        .bind = "127.0.0.1",
        .threads = 2,
        .max_connections = 8,
        .timeout_s = 5,
        .conn_memory = 64 * 1024,
        .max_per_ip = 4,
        .handler = answer,
        .completed = completed,
        .on_connection = notify,
        .uri_log = on_uri,
    };
    int port = 0;
    struct MHD_Daemon *d = httpd_start(&o, &port, err, sizeof(err));
    if (!d)
        fail_msg("httpd_start: %s", err);
    assert_true(port > 0);
    struct buf b;
    buf_init(&b, BUF_CAP_REPLY);
    char allow[32] = "";
    assert_int_equal(th_http_get(port, "/str", &b, NULL, 0), 200);
    assert_string_equal(buf_cstr(&b), "counted here\n");
    buf_reset(&b);
    assert_int_equal(th_http_get(port, "/buf", &b, NULL, 0), 201);
    assert_string_equal(buf_cstr(&b), "from a buffer");
    buf_reset(&b);
    assert_int_equal(th_http_get(port, "/allow", &b, allow, sizeof(allow)), 405);
    assert_string_equal(allow, "GET");
    buf_free(&b);
    MHD_stop_daemon(d);

    /* a bind address that is not one: no daemon, a message */
    o.bind = "not-an-address";
    assert_null(httpd_start(&o, &port, err, sizeof(err)));
    assert_non_null(strstr(err, "not an IPv4 or IPv6 address"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split_addr),
        cmocka_unit_test(test_sockaddr),
        cmocka_unit_test(test_serve_with_every_option),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
