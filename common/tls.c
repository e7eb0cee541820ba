#include "tls.h"
#include "errf.h"

#include <errno.h>
#include <limits.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"

#define MAX_DAYS 36500

/* Formats the message, adds OpenSSL's last error reason when there is one
 * and clears OpenSSL's (thread-local) error queue. */
static int fail(char *err, size_t errlen, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(char *err, size_t errlen, int rc, const char *fmt, ...)
{
    const char *why = ERR_reason_error_string(ERR_peek_last_error());
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
        if (why && n >= 0 && (size_t)n < errlen)
            snprintf(err + n, errlen - (size_t)n, ": %s", why);
    }
    ERR_clear_error();
    return rc;
}

static int no_passphrase(char *buf, int size, int rwflag, void *u)
{
    (void)buf, (void)size, (void)rwflag, (void)u;
    return -1; /* never prompt on a terminal for an encrypted key */
}

static X509 *read_cert(const char *pem, size_t len)
{
    X509 *x = NULL;
    BIO *b = pem && len <= INT_MAX ? BIO_new_mem_buf(pem, (int)len) : NULL;
    if (b)
        x = PEM_read_bio_X509(b, NULL, no_passphrase, NULL);
    BIO_free(b);
    return x;
}

static EVP_PKEY *read_key(const char *pem)
{
    EVP_PKEY *k = NULL;
    BIO *b = pem ? BIO_new_mem_buf(pem, -1) : NULL;
    if (b)
        k = PEM_read_bio_PrivateKey(b, NULL, no_passphrase, NULL);
    BIO_free(b);
    return k;
}

/* Copies a memory BIO into a malloc'd NUL-terminated string. */
static char *bio_string(BIO *b)
{
    char *data, *s;
    long n = BIO_get_mem_data(b, &data);
    if (n < 0 || !(s = malloc((size_t)n + 1)))
        return NULL;
    memcpy(s, data, (size_t)n);
    s[n] = '\0';
    return s;
}

static int add_ext(X509 *x, X509 *issuer, int nid, const char *value)
{
    X509V3_CTX ctx;
    X509V3_set_ctx(&ctx, issuer, x, NULL, NULL, 0);
    X509_EXTENSION *e = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
    int ok = e && X509_add_ext(x, e, -1);
    X509_EXTENSION_free(e);
    return ok ? 0 : -1;
}

static int valid_dns_san(const char *s)
{
    if (!*s || strlen(s) > 253)
        return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '-' || *s == '.' || *s == '*'))
            return 0;
    return 1;
}

/* Appends a name to gens, taking ownership of value. */
static int push_name(GENERAL_NAMES *gens, int type, ASN1_STRING *value)
{
    GENERAL_NAME *g = GENERAL_NAME_new();
    if (!g) {
        ASN1_STRING_free(value);
        return -1;
    }
    GENERAL_NAME_set0_value(g, type, value);
    if (sk_GENERAL_NAME_push(gens, g) <= 0) {
        GENERAL_NAME_free(g);
        return -1;
    }
    return 0;
}

/* subjectAltName built value by value, so a name cannot inject config syntax. */
static int add_sans(X509 *x, const char *const *dns, const char *const *ips, char *err,
                    size_t errlen)
{
    GENERAL_NAMES *gens = sk_GENERAL_NAME_new_null();
    int rc = MK_ERR_NOMEM;
    if (!gens)
        goto out;
    for (size_t i = 0; dns && dns[i]; i++) {
        if (!valid_dns_san(dns[i])) {
            rc = fail(err, errlen, MK_ERR_INVAL, "invalid DNS name \"%.100s\"", dns[i]);
            goto out;
        }
        ASN1_IA5STRING *s = ASN1_IA5STRING_new();
        if (!s || !ASN1_STRING_set(s, dns[i], -1)) {
            ASN1_IA5STRING_free(s);
            goto out;
        }
        if (push_name(gens, GEN_DNS, s) < 0)
            goto out;
    }
    for (size_t i = 0; ips && ips[i]; i++) {
        ASN1_OCTET_STRING *o = a2i_IPADDRESS(ips[i]);
        if (!o) {
            rc = fail(err, errlen, MK_ERR_INVAL, "invalid IP address \"%.100s\"", ips[i]);
            goto out;
        }
        if (push_name(gens, GEN_IPADD, o) < 0)
            goto out;
    }
    rc = 0;
    if (sk_GENERAL_NAME_num(gens) > 0 &&
        !X509_add1_ext_i2d(x, NID_subject_alt_name, gens, 0, X509V3_ADD_DEFAULT))
        rc = fail(err, errlen, MK_ERR_INVAL, "cannot add subjectAltName");
out:
    if (rc == MK_ERR_NOMEM)
        fail(err, errlen, rc, "out of memory");
    GENERAL_NAMES_free(gens);
    return rc;
}

/* Creates a key and a certificate for it, signed by issuer/ikey, or
 * self-signed when issuer is NULL (a CA). */
static int make_cert(const struct tls_cert_opts *o, X509 *issuer, EVP_PKEY *ikey, char **cert_pem,
                     char **key_pem, char *err, size_t errlen)
{
    EVP_PKEY *key = NULL;
    X509 *x = NULL;
    BIGNUM *serial = NULL;
    BIO *cb = NULL, *kb = NULL;
    X509_NAME *name;
    int ca = issuer == NULL, rc = MK_ERR_INVAL;
    int usage = o->usage ? o->usage : TLS_SERVER_AUTH;
    char eku[64];

    *cert_pem = *key_pem = NULL;
    if (!o->cn || !*o->cn)
        return fail(err, errlen, MK_ERR_INVAL, "a common name is required");
    if (o->days < 1 || o->days > MAX_DAYS)
        return fail(err, errlen, MK_ERR_INVAL, "validity must be 1 to %d days", MAX_DAYS);
    if (!(key = EVP_EC_gen("P-256")) || !(x = X509_new()) || !(serial = BN_new()) ||
        !(cb = BIO_new(BIO_s_mem())) || !(kb = BIO_new(BIO_s_mem()))) {
        rc = fail(err, errlen, MK_ERR_NOMEM, "cannot allocate key or certificate");
        goto out;
    }
    name = X509_get_subject_name(x);
    /* 127 random bits: unique and positive, as RFC 5280 asks */
    if (!X509_set_version(x, X509_VERSION_3) ||
        !BN_rand(serial, 127, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) ||
        !BN_to_ASN1_INTEGER(serial, X509_get_serialNumber(x)) ||
        !X509_gmtime_adj(X509_getm_notBefore(x), -300) ||
        !X509_time_adj_ex(X509_getm_notAfter(x), o->days, 0, NULL) ||
        (o->org && *o->org &&
         !X509_NAME_add_entry_by_txt(name, "O", MBSTRING_UTF8, (const unsigned char *)o->org, -1,
                                     -1, 0)) ||
        !X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, (const unsigned char *)o->cn, -1, -1,
                                    0) ||
        !X509_set_issuer_name(x, ca ? name : X509_get_subject_name(issuer)) ||
        !X509_set_pubkey(x, key)) {
        rc = fail(err, errlen, MK_ERR_INVAL, "cannot build certificate");
        goto out;
    }
    snprintf(eku, sizeof(eku), "%s%s%s", usage & TLS_SERVER_AUTH ? "serverAuth" : "",
             usage == (TLS_SERVER_AUTH | TLS_CLIENT_AUTH) ? "," : "",
             usage & TLS_CLIENT_AUTH ? "clientAuth" : "");
    if (ca ? add_ext(x, x, NID_basic_constraints, "critical,CA:TRUE") ||
                 add_ext(x, x, NID_key_usage, "critical,keyCertSign,cRLSign") ||
                 add_ext(x, x, NID_subject_key_identifier, "hash")
           : add_ext(x, issuer, NID_basic_constraints, "critical,CA:FALSE") ||
                 add_ext(x, issuer, NID_key_usage, "critical,digitalSignature") ||
                 add_ext(x, issuer, NID_ext_key_usage, eku) ||
                 add_ext(x, issuer, NID_subject_key_identifier, "hash") ||
                 add_ext(x, issuer, NID_authority_key_identifier, "keyid:always")) {
        rc = fail(err, errlen, MK_ERR_INVAL, "cannot add certificate extensions");
        goto out;
    }
    if ((rc = add_sans(x, o->dns, o->ips, err, errlen)))
        goto out;
    if (!X509_sign(x, ca ? key : ikey, EVP_sha256()) || !PEM_write_bio_X509(cb, x) ||
        !PEM_write_bio_PrivateKey(kb, key, NULL, NULL, 0, NULL, NULL)) {
        rc = fail(err, errlen, MK_ERR_INVAL, "cannot sign or encode certificate");
        goto out;
    }
    *cert_pem = bio_string(cb);
    *key_pem = bio_string(kb);
    rc = 0;
    if (!*cert_pem || !*key_pem) {
        free(*cert_pem);
        free(*key_pem);
        *cert_pem = *key_pem = NULL;
        rc = fail(err, errlen, MK_ERR_NOMEM, "out of memory");
    }
out:
    EVP_PKEY_free(key);
    X509_free(x);
    BN_free(serial);
    BIO_free(cb);
    BIO_free(kb);
    return rc;
}

int tls_gen_ca(const char *cn, int days, char **cert_pem, char **key_pem, char *err, size_t errlen)
{
    struct tls_cert_opts o = {.cn = cn, .days = days};
    return make_cert(&o, NULL, NULL, cert_pem, key_pem, err, errlen);
}

int tls_gen_cert(const char *ca_cert_pem, const char *ca_key_pem, const struct tls_cert_opts *o,
                 char **cert_pem, char **key_pem, char *err, size_t errlen)
{
    X509 *ca = read_cert(ca_cert_pem, ca_cert_pem ? strlen(ca_cert_pem) : 0);
    EVP_PKEY *key = read_key(ca_key_pem);
    int rc;

    *cert_pem = *key_pem = NULL;
    if (!ca || !key)
        rc = fail(err, errlen, MK_ERR_INVAL, "cannot read CA %s", ca ? "key" : "certificate");
    else if (X509_check_ca(ca) == 0)
        rc = fail(err, errlen, MK_ERR_INVAL, "the CA certificate is not a CA");
    else if (X509_check_private_key(ca, key) != 1)
        rc = fail(err, errlen, MK_ERR_INVAL, "the CA key does not match the CA certificate");
    else
        rc = make_cert(o, ca, key, cert_pem, key_pem, err, errlen);
    X509_free(ca);
    EVP_PKEY_free(key);
    return rc;
}

int tls_load_pem_file(const char *path, char **out, size_t *len, char *err, size_t errlen)
{
    size_t n = 0;
    int rc = fio_read_file(path, TLS_MAX_PEM_BYTES, out, &n);
    if (rc == MK_ERR_TOOBIG)
        return fail(err, errlen, rc, "%s: larger than %d bytes", path, TLS_MAX_PEM_BYTES);
    if (rc)
        return fail(err, errlen, rc, "open %s: %s", path, fio_strerror(rc));
    if (!strstr(*out, "-----BEGIN ")) {
        free(*out);
        *out = NULL;
        return fail(err, errlen, MK_ERR_INVAL, "%s: no PEM data", path);
    }
    if (len)
        *len = n;
    return 0;
}

int tls_cert_expiry(const char *pem, size_t len, time_t *not_after, char *err, size_t errlen)
{
    X509 *x = read_cert(pem, len);
    struct tm tm;
    int rc = 0;
    if (!x)
        return fail(err, errlen, MK_ERR_INVAL, "no PEM certificate found");
    if (!ASN1_TIME_to_tm(X509_get0_notAfter(x), &tm))
        rc = fail(err, errlen, MK_ERR_INVAL, "invalid notAfter");
    else
        *not_after = timegm(&tm);
    X509_free(x);
    return rc;
}

int tls_verify(const char *cert_pem, size_t cert_len, const char *ca_pem, size_t ca_len,
               const char *host, char *err, size_t errlen)
{
    X509_STORE *store = X509_STORE_new();
    X509_STORE_CTX *ctx = X509_STORE_CTX_new();
    X509 *cert = read_cert(cert_pem, cert_len), *ca;
    BIO *b = ca_pem && ca_len <= INT_MAX ? BIO_new_mem_buf(ca_pem, (int)ca_len) : NULL;
    int n = 0, rc = MK_ERR_INVAL;

    if (!store || !ctx || (ca_pem && ca_len <= INT_MAX && !b)) {
        rc = fail(err, errlen, MK_ERR_NOMEM, "out of memory");
        goto out;
    }
    if (!cert) {
        fail(err, errlen, rc, "no PEM certificate found");
        goto out;
    }
    while (b && (ca = PEM_read_bio_X509(b, NULL, no_passphrase, NULL))) {
        n += X509_STORE_add_cert(store, ca) == 1;
        X509_free(ca);
    }
    ERR_clear_error(); /* the loop ends on a "no start line" error */
    if (n == 0) {
        fail(err, errlen, rc, "no CA certificate found");
        goto out;
    }
    if (!X509_STORE_CTX_init(ctx, store, cert, NULL)) {
        fail(err, errlen, rc, "cannot set up verification");
        goto out;
    }
    if (host) {
        X509_VERIFY_PARAM *p = X509_STORE_CTX_get0_param(ctx);
        ASN1_OCTET_STRING *ip = a2i_IPADDRESS(host);
        int ok =
            ip ? X509_VERIFY_PARAM_set1_ip_asc(p, host) : X509_VERIFY_PARAM_set1_host(p, host, 0);
        ASN1_OCTET_STRING_free(ip);
        ERR_clear_error();
        if (!ok) {
            fail(err, errlen, rc, "invalid host \"%.100s\"", host);
            goto out;
        }
    }
    if (X509_verify_cert(ctx) != 1) {
        ERR_clear_error();
        fail(err, errlen, rc, "certificate verification failed: %s",
             X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx)));
        goto out;
    }
    rc = 0;
out:
    X509_STORE_CTX_free(ctx);
    X509_STORE_free(store);
    X509_free(cert);
    BIO_free(b);
    return rc;
}
