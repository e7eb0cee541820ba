/* The serving certificate, reloaded when its files change.
 *
 * Secret volumes update by swapping a `..data` symlink, so the files are
 * compared by what they resolve to (device, inode, size, mtime), at most
 * once per check interval, from the TLS handshake itself: a new connection
 * gets the new pair without a restart, existing ones keep theirs. A pair
 * that does not load (unreadable, bad PEM, key not matching the
 * certificate: e.g. half-written files) is refused and the previous pair
 * stays in use until the files change again.
 *
 * GnuTLS does not free what the certificate callback hands out, and a
 * handshake in progress may still use it: a replaced pair is freed after a
 * grace period (WH_CERTS_GRACE_MS) at a later check, or with the object.
 *
 * libmicrohttpd's certificate callback has no user pointer, so one object
 * per process is "installed" for wh_certs_retrieve. Thread-safe. */
#ifndef MKUEUE_WH_CERTS_H
#define MKUEUE_WH_CERTS_H

#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <stddef.h>
#include <time.h>

#define WH_CERTS_GRACE_MS (10 * 60 * 1000)

struct wh_certs;

/* Loads the pair (paths copied). check_interval_ms 0 = 1000. Returns NULL
 * with err when the first load fails. Free with wh_certs_free (after the
 * server using it has stopped). */
struct wh_certs *wh_certs_new(const char *cert_file, const char *key_file, long check_interval_ms,
                              char *err, size_t errlen);
void wh_certs_free(struct wh_certs *c);

/* Checks the files (now, regardless of the interval when force is set) and
 * reloads them when they changed. Returns 1 reloaded, 0 unchanged, -1 when
 * the new files do not load (err says why; the old pair stays). */
int wh_certs_refresh(struct wh_certs *c, int force, char *err, size_t errlen);

/* notAfter of the certificate in use. */
time_t wh_certs_not_after(struct wh_certs *c);
/* Successful loads so far (1 after wh_certs_new) and failed reload attempts. */
long wh_certs_loads(struct wh_certs *c);
long wh_certs_failures(struct wh_certs *c);

/* Makes c the pair wh_certs_retrieve hands out (NULL uninstalls). */
void wh_certs_install(struct wh_certs *c);

/* gnutls_certificate_retrieve_function2 for MHD_OPTION_HTTPS_CERT_CALLBACK:
 * refreshes the installed pair when due and returns it. */
int wh_certs_retrieve(gnutls_session_t session, const gnutls_datum_t *req_ca_dn, int nreqs,
                      const gnutls_pk_algorithm_t *pk_algos, int pk_algos_length,
                      gnutls_pcert_st **pcert, unsigned int *pcert_length, gnutls_privkey_t *pkey);

#endif
