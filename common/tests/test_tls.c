#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tls.h"

struct pair {
    char *cert, *key;
};

static struct pair ca1, ca2;

static int setup(void **state)
{
    char err[256];
    (void)state;
    if (tls_gen_ca("ca-one", 10, &ca1.cert, &ca1.key, err, sizeof(err)) ||
        tls_gen_ca("ca-two", 10, &ca2.cert, &ca2.key, err, sizeof(err)))
        return -1;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    free(ca1.cert);
    free(ca1.key);
    free(ca2.cert);
    free(ca2.key);
    return 0;
}

static X509 *parse(const char *pem)
{
    BIO *b = BIO_new_mem_buf(pem, -1);
    X509 *x = PEM_read_bio_X509(b, NULL, NULL, NULL);
    BIO_free(b);
    assert_non_null(x);
    return x;
}

static struct pair server_cert(const struct pair *ca, int usage, const char *org)
{
    static const char *const dns[] = {"mkueue-webhook.mkueue-system.svc", "localhost", NULL};
    static const char *const ips[] = {"127.0.0.1", "::1", NULL};
    struct tls_cert_opts o = {
        .cn = "mkueue-webhook", .org = org, .dns = dns, .ips = ips, .days = 30, .usage = usage};
    struct pair p;
    char err[256];
    assert_int_equal(tls_gen_cert(ca->cert, ca->key, &o, &p.cert, &p.key, err, sizeof(err)), 0);
    return p;
}

static void pair_free(struct pair *p)
{
    free(p->cert);
    free(p->key);
}

static void test_ca_is_a_ca(void **state)
{
    (void)state;
    X509 *x = parse(ca1.cert);
    assert_int_not_equal(X509_check_ca(x), 0);
    assert_true(X509_get_key_usage(x) & KU_KEY_CERT_SIGN);
    assert_int_equal(X509_check_issued(x, x), X509_V_OK); /* self-signed */
    X509_free(x);
    assert_non_null(strstr(ca1.key, "-----BEGIN PRIVATE KEY-----"));
}

static void test_server_cert_verifies_for_its_names(void **state)
{
    (void)state;
    struct pair p = server_cert(&ca1, 0, NULL);
    size_t n = strlen(p.cert), cn = strlen(ca1.cert);
    char err[256];

    assert_int_equal(tls_verify(p.cert, n, ca1.cert, cn, NULL, err, sizeof(err)), 0);
    assert_int_equal(tls_verify(p.cert, n, ca1.cert, cn, "localhost", err, sizeof(err)), 0);
    assert_int_equal(
        tls_verify(p.cert, n, ca1.cert, cn, "mkueue-webhook.mkueue-system.svc", err, sizeof(err)),
        0);
    assert_int_equal(tls_verify(p.cert, n, ca1.cert, cn, "127.0.0.1", err, sizeof(err)), 0);
    assert_int_equal(tls_verify(p.cert, n, ca1.cert, cn, "::1", err, sizeof(err)), 0);

    assert_true(tls_verify(p.cert, n, ca1.cert, cn, "evil.example", err, sizeof(err)) < 0);
    assert_non_null(strstr(err, "verification failed"));
    assert_true(tls_verify(p.cert, n, ca1.cert, cn, "10.0.0.1", err, sizeof(err)) < 0);
    pair_free(&p);
}

static void test_sans_and_usage_read_back(void **state)
{
    (void)state;
    struct pair p = server_cert(&ca1, 0, NULL);
    X509 *x = parse(p.cert);
    GENERAL_NAMES *gens = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
    unsigned char v6[16] = {0};
    int dns = 0, ip4 = 0, ip6 = 0;

    v6[15] = 1;
    assert_non_null(gens);
    assert_int_equal(sk_GENERAL_NAME_num(gens), 4);
    for (int i = 0; i < sk_GENERAL_NAME_num(gens); i++) {
        const GENERAL_NAME *g = sk_GENERAL_NAME_value(gens, i);
        if (g->type == GEN_DNS) {
            const char *s = (const char *)ASN1_STRING_get0_data(g->d.dNSName);
            dns += !strcmp(s, "localhost") || !strcmp(s, "mkueue-webhook.mkueue-system.svc");
        } else if (g->type == GEN_IPADD) {
            const unsigned char *b = ASN1_STRING_get0_data(g->d.iPAddress);
            int len = ASN1_STRING_length(g->d.iPAddress);
            ip4 += len == 4 && !memcmp(b, "\x7f\x00\x00\x01", 4);
            ip6 += len == 16 && !memcmp(b, v6, 16);
        }
    }
    assert_int_equal(dns, 2);
    assert_int_equal(ip4, 1);
    assert_int_equal(ip6, 1);
    GENERAL_NAMES_free(gens);

    assert_int_equal(X509_check_ca(x), 0);
    assert_true(X509_get_extended_key_usage(x) & XKU_SSL_SERVER);
    assert_false(X509_get_extended_key_usage(x) & XKU_SSL_CLIENT);
    assert_int_equal(X509_NAME_get_index_by_NID(X509_get_subject_name(x), NID_organizationName, -1),
                     -1);
    X509_free(x);
    pair_free(&p);
}

static void test_client_cert_with_org(void **state)
{
    (void)state;
    struct pair p = server_cert(&ca1, TLS_CLIENT_AUTH, "system:masters");
    X509 *x = parse(p.cert);
    char buf[64];

    assert_true(X509_get_extended_key_usage(x) & XKU_SSL_CLIENT);
    assert_false(X509_get_extended_key_usage(x) & XKU_SSL_SERVER);
    assert_true(X509_NAME_get_text_by_NID(X509_get_subject_name(x), NID_organizationName, buf,
                                          sizeof(buf)) > 0);
    assert_string_equal(buf, "system:masters");
    assert_true(
        X509_NAME_get_text_by_NID(X509_get_subject_name(x), NID_commonName, buf, sizeof(buf)) > 0);
    assert_string_equal(buf, "mkueue-webhook");
    X509_free(x);
    pair_free(&p);

    p = server_cert(&ca1, TLS_CLIENT_AUTH | TLS_SERVER_AUTH, NULL);
    x = parse(p.cert);
    assert_true(X509_get_extended_key_usage(x) & XKU_SSL_CLIENT);
    assert_true(X509_get_extended_key_usage(x) & XKU_SSL_SERVER);
    X509_free(x);
    pair_free(&p);
}

static void test_expiry(void **state)
{
    (void)state;
    struct pair p = server_cert(&ca1, 0, NULL);
    time_t t = 0, now = time(NULL);
    char err[256];

    assert_int_equal(tls_cert_expiry(p.cert, strlen(p.cert), &t, err, sizeof(err)), 0);
    assert_true(t > now + 30 * 86400 - 60 && t < now + 30 * 86400 + 60);
    assert_int_equal(tls_cert_expiry(ca1.cert, strlen(ca1.cert), &t, err, sizeof(err)), 0);
    assert_true(t > now + 10 * 86400 - 60 && t < now + 10 * 86400 + 60);
    pair_free(&p);
}

static void test_bad_pem(void **state)
{
    (void)state;
    char err[256], *c = NULL, *k = NULL, half[200];
    time_t t;
    struct tls_cert_opts o = {.cn = "x", .days = 1};

    assert_true(tls_cert_expiry("garbage", 7, &t, err, sizeof(err)) < 0);
    assert_non_null(strstr(err, "no PEM certificate"));
    snprintf(half, sizeof(half), "%s", ca1.cert); /* truncated certificate */
    assert_true(tls_cert_expiry(half, strlen(half), &t, err, sizeof(err)) < 0);
    assert_true(tls_cert_expiry(NULL, 0, &t, err, sizeof(err)) < 0);

    assert_true(tls_gen_cert("junk", ca1.key, &o, &c, &k, err, sizeof(err)) < 0);
    assert_non_null(strstr(err, "CA certificate"));
    assert_null(c);
    assert_true(tls_gen_cert(ca1.cert, "junk", &o, &c, &k, err, sizeof(err)) < 0);
    assert_non_null(strstr(err, "CA key"));
    assert_true(tls_gen_cert(ca1.cert, ca2.key, &o, &c, &k, err, sizeof(err)) < 0);
    assert_non_null(strstr(err, "does not match"));
}

static void test_leaf_cannot_sign(void **state)
{
    (void)state;
    struct pair p = server_cert(&ca1, 0, NULL);
    struct tls_cert_opts o = {.cn = "x", .days = 1};
    char err[256], *c = NULL, *k = NULL;
    assert_true(tls_gen_cert(p.cert, p.key, &o, &c, &k, err, sizeof(err)) < 0);
    assert_non_null(strstr(err, "not a CA"));
    pair_free(&p);
}

static void test_bad_options(void **state)
{
    (void)state;
    const char *const bad_ip[] = {"1.2.3", NULL};
    const char *const bad_dns[] = {"a b,IP:1.2.3.4", NULL};
    struct tls_cert_opts o = {.cn = "x", .days = 1, .ips = bad_ip};
    char err[256], *c = NULL, *k = NULL;

    assert_int_equal(tls_gen_cert(ca1.cert, ca1.key, &o, &c, &k, err, sizeof(err)), MK_ERR_INVAL);
    assert_non_null(strstr(err, "invalid IP address \"1.2.3\""));
    o.ips = NULL;
    o.dns = bad_dns;
    assert_int_equal(tls_gen_cert(ca1.cert, ca1.key, &o, &c, &k, err, sizeof(err)), MK_ERR_INVAL);
    assert_non_null(strstr(err, "invalid DNS name"));
    o.dns = NULL;
    o.days = 0;
    assert_int_equal(tls_gen_cert(ca1.cert, ca1.key, &o, &c, &k, err, sizeof(err)), MK_ERR_INVAL);
    assert_true(tls_gen_ca("", 1, &c, &k, err, sizeof(err)) < 0);
    assert_null(c);
    assert_null(k);
}

static void test_verify_needs_the_right_ca(void **state)
{
    (void)state;
    struct pair p = server_cert(&ca1, 0, NULL);
    size_t n = strlen(p.cert);
    char err[256], bundle[8192];

    assert_true(tls_verify(p.cert, n, ca2.cert, strlen(ca2.cert), NULL, err, sizeof(err)) < 0);
    assert_non_null(strstr(err, "verification failed"));
    assert_true(tls_verify(p.cert, n, "", 0, NULL, err, sizeof(err)) < 0);
    assert_non_null(strstr(err, "no CA certificate"));
    assert_true(tls_verify(p.cert, n, NULL, 0, NULL, err, sizeof(err)) < 0);
    assert_true(tls_verify("junk", 4, ca1.cert, strlen(ca1.cert), NULL, err, sizeof(err)) < 0);
    assert_non_null(strstr(err, "no PEM certificate"));

    /* a bundle: the right CA second */
    snprintf(bundle, sizeof(bundle), "%s%s", ca2.cert, ca1.cert);
    assert_int_equal(tls_verify(p.cert, n, bundle, strlen(bundle), NULL, err, sizeof(err)), 0);
    pair_free(&p);
}

static void test_load_pem_file(void **state)
{
    (void)state;
    char dir[] = "/tmp/test_tls.XXXXXX", path[512], err[256], *out = NULL;
    size_t len = 0;
    FILE *f;

    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/ca.crt", dir);
    f = fopen(path, "w");
    assert_non_null(f);
    fputs(ca1.cert, f);
    fclose(f);
    assert_int_equal(tls_load_pem_file(path, &out, &len, err, sizeof(err)), 0);
    assert_int_equal(len, strlen(ca1.cert));
    assert_string_equal(out, ca1.cert);
    free(out);
    out = NULL;

    f = fopen(path, "w");
    fputs("not a pem\n", f);
    fclose(f);
    assert_int_equal(tls_load_pem_file(path, &out, &len, err, sizeof(err)), MK_ERR_INVAL);
    assert_non_null(strstr(err, "no PEM data"));
    assert_null(out);

    f = fopen(path, "w");
    for (int i = 0; i <= TLS_MAX_PEM_BYTES / 64; i++)
        fputs("-----BEGIN CERTIFICATE-----\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n", f);
    fclose(f);
    assert_int_equal(tls_load_pem_file(path, &out, &len, err, sizeof(err)), MK_ERR_TOOBIG);
    assert_non_null(strstr(err, "larger than"));
    unlink(path);

    assert_int_equal(tls_load_pem_file(path, &out, &len, err, sizeof(err)), MK_ERR_IO);
    assert_non_null(strstr(err, "open "));
    assert_non_null(strstr(err, "No such file"));
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ca_is_a_ca),
        cmocka_unit_test(test_server_cert_verifies_for_its_names),
        cmocka_unit_test(test_sans_and_usage_read_back),
        cmocka_unit_test(test_client_cert_with_org),
        cmocka_unit_test(test_expiry),
        cmocka_unit_test(test_bad_pem),
        cmocka_unit_test(test_leaf_cannot_sign),
        cmocka_unit_test(test_bad_options),
        cmocka_unit_test(test_verify_needs_the_right_ca),
        cmocka_unit_test(test_load_pem_file),
    };
    return cmocka_run_group_tests_name("tls", tests, setup, teardown);
}
