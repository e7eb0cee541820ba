/* Certificates with OpenSSL 3: a CA, certificates it signs (serving or client),
 * loading PEM files, reading expiry, verifying a chain. Keys are EC P-256.
 * All PEM outputs are malloc'd, NUL-terminated strings the caller frees. */
#ifndef MKUEUE_TLS_H
#define MKUEUE_TLS_H

#include <stddef.h>
#include <time.h>

#include "errf.h"

#define TLS_MAX_PEM_BYTES (1024 * 1024) /* larger PEM files are refused */

enum tls_usage {
    TLS_SERVER_AUTH = 1, /* extendedKeyUsage serverAuth */
    TLS_CLIENT_AUTH = 2, /* extendedKeyUsage clientAuth */
};

struct tls_cert_opts {
    const char *cn;         /* subject CN, required */
    const char *org;        /* subject O, optional (e.g. "system:masters") */
    const char *const *dns; /* NULL-terminated DNS SANs, optional */
    const char *const *ips; /* NULL-terminated IPv4/IPv6 SANs, optional */
    int days;               /* validity from now (backdated 5 minutes for skew) */
    int usage;              /* tls_usage bits; 0 means TLS_SERVER_AUTH */
};

/* Self-signed CA (basicConstraints CA:TRUE, keyUsage keyCertSign, cRLSign).
 * On success *cert_pem and *key_pem are new strings owned by the caller. */
int tls_gen_ca(const char *cn, int days, char **cert_pem, char **key_pem, char *err, size_t errlen);

/* A leaf certificate signed by the CA (its PEM certificate and key). On
 * success *cert_pem and *key_pem are new strings owned by the caller. */
int tls_gen_cert(const char *ca_cert_pem, const char *ca_key_pem, const struct tls_cert_opts *o,
                 char **cert_pem, char **key_pem, char *err, size_t errlen);

/* Reads a PEM file of at most TLS_MAX_PEM_BYTES that holds at least one PEM
 * block. *out (NUL-terminated, caller frees) and *len on success. */
int tls_load_pem_file(const char *path, char **out, size_t *len, char *err, size_t errlen);

/* notAfter of the first certificate in the PEM. */
int tls_cert_expiry(const char *pem, size_t len, time_t *not_after, char *err, size_t errlen);

/* Verifies that the first certificate in cert_pem chains to one of the
 * certificates in ca_pem (at the current time) and, when host is non-NULL,
 * that it is valid for host (a DNS name or an IP address). */
int tls_verify(const char *cert_pem, size_t cert_len, const char *ca_pem, size_t ca_len,
               const char *host, char *err, size_t errlen);

#endif
