/* Self-managed webhook certificates.
 *
 * The webhook keeps its CA and serving certificate in one Secret of its
 * namespace (keys ca.crt, ca.key, tls.crt, tls.key), shared by all replicas:
 *
 *   - missing or empty Secret (the chart may pre-create an empty one so that
 *     `helm uninstall` removes it): a new CA and serving certificate;
 *   - serving certificate close to expiry, not valid for the wanted names, or
 *     not matching its key: a new one from the same CA (caBundle unchanged,
 *     so no request is dropped);
 *   - CA close to expiry: a new CA is put first in ca.crt with the old one
 *     kept after it, so the apiserver trusts both; the serving certificate
 *     moves to the new CA only `ca_grace_s` later (annotation
 *     mkueue.x-k8s.io/ca-published-at), once every apiserver has seen the
 *     new bundle. Expired CAs leave the bundle.
 *
 * Each pass also writes tls.crt, tls.key and ca.crt into `cert_dir` when they
 * differ from the Secret (each file replaced atomically, key before
 * certificate) and makes every webhook of the named Mutating- and
 * ValidatingWebhookConfiguration carry ca.crt as its caBundle (JSON patch
 * guarded by a resourceVersion test). Writes use resourceVersion
 * preconditions, so replicas racing each other converge: the loser re-reads.
 *
 * RBAC needed: secrets get/create/update in the namespace; get/patch on the
 * two webhook configurations. */
#ifndef MKUEUE_WH_CERTMGR_H
#define MKUEUE_WH_CERTMGR_H

#include <stddef.h>
#include <time.h>

#include "flags.h"
#include "kube_client.h"

#define WH_CERTMGR_ANN_PUBLISHED "mkueue.x-k8s.io/ca-published-at"

struct wh_certmgr_opts {
    const char *namespace;   /* Secret's namespace, required */
    const char *secret_name; /* required */
    const char *cert_dir;    /* tls.crt, tls.key, ca.crt are written here; required */
    /* Service name: SANs svc, svc.ns, svc.ns.svc, svc.ns.svc.cluster.local; may be NULL. */
    const char *service;
    const char *const *dns; /* extra DNS SANs (e.g. "localhost"), NULL-terminated, may be NULL */
    const char *const *ips; /* extra IP SANs (e.g. "127.0.0.1"), NULL-terminated, may be NULL */
    /* Configurations whose webhooks get the caBundle; NULL skips one. A
     * configuration that does not exist is skipped with a log line. */
    const char *mutating_config;
    const char *validating_config;
    int ca_days;              /* CA validity, 0 = 3650 */
    int cert_days;            /* serving validity, 0 = 365 */
    long ca_renew_before_s;   /* 0 = a third of the CA's validity */
    long cert_renew_before_s; /* 0 = a third of the serving validity */
    long ca_grace_s;          /* new CA published -> serving moves to it; 0 = 60, <0 = none */
    long interval_s;          /* period of the rotation thread, 0 = 300 */
    time_t (*clock)(void);    /* wall clock, NULL = time(); for tests */
};

/* What one pass did (all zero when nothing changed). */
struct wh_certmgr_report {
    int secret_written; /* Secret created or updated */
    int ca_rotated;     /* a new CA was made (also on first creation) */
    int cert_issued;    /* a new serving certificate was made */
    int files_written;  /* cert_dir changed: the server should reload */
    int configs_patched;
};

/* One pass as described above. The client and opts are borrowed. Returns 0
 * when cert_dir holds a valid certificate and both configurations carry the
 * bundle (or do not exist); <0 with err otherwise (when the files were
 * written before the failure, rep->files_written says so). rep may be NULL. */
int wh_certmgr_ensure_ex(struct kc_client *c, const struct wh_certmgr_opts *o,
                         struct wh_certmgr_report *rep, char *err, size_t errlen);
int wh_certmgr_ensure(struct kc_client *c, const struct wh_certmgr_opts *o, char *err,
                      size_t errlen);

/* Runs wh_certmgr_ensure_ex every interval_s (30 s after a failure) on its
 * own thread, calling on_change(ud) after the files changed (on that
 * thread). c and o (with its strings) are borrowed and must outlive the
 * manager. Returns NULL with err on failure. */
struct wh_certmgr;
struct wh_certmgr *wh_certmgr_start(struct kc_client *c, const struct wh_certmgr_opts *o,
                                    void (*on_change)(void *ud), void *ud, char *err,
                                    size_t errlen);
/* Stops the thread (waits for a pass in progress) and frees; NULL is a no-op. */
void wh_certmgr_stop(struct wh_certmgr *m);

/* One of the webhook's certificate flags on its own (the webhook's parser
 * takes WH_CERTMGR_FLAGS below into its table): name (with the leading "--")
 * and value (borrowed, e.g. from argv). --cert-secret turns self-managed
 * certificates on. Returns 1 when the flag was one of these
 * (stored in o, or in *sans for --cert-sans, to split with
 * wh_certmgr_split_sans), 0 when it is not, -1 with err on a bad value. */
int wh_certmgr_flag(struct wh_certmgr_opts *o, const char **sans, const char *name,
                    const char *value, char *err, size_t errlen);

/* The same flags as entries of a flags.h table over struct T, whose member
 * opts is the wh_certmgr_opts and whose const char * member sans takes
 * --cert-sans. */
#define WH_CERTMGR_DAY_S 86400LL
/* clang-format off */
#define WH_CERTMGR_FLAGS(T, opts, sans)                                                            \
    {"cert-secret", FL_STR, FL_F(T, opts.secret_name), .min = 1, .arg = "NAME",                   \
     .help = "self-managed certificates kept in this Secret (in\n"                                 \
             "--namespace), written to --cert-dir"},                                               \
    {"cert-service", FL_STR, FL_F(T, opts.service), .min = 1, .arg = "NAME",                      \
     .help = "Service whose DNS names the certificate serves"},                                    \
    {"cert-sans", FL_STR, FL_F(T, sans), .arg = "LIST",                                           \
     .help = "more SANs, comma-separated (localhost,127.0.0.1)"},                                  \
    {"mutating-config", FL_STR, FL_F(T, opts.mutating_config), .min = 1, .arg = "NAME",           \
     .help = "MutatingWebhookConfiguration given the caBundle"},                                   \
    {"validating-config", FL_STR, FL_F(T, opts.validating_config), .min = 1, .arg = "NAME",       \
     .help = "ValidatingWebhookConfiguration given the caBundle"},                                 \
    {"ca-days", FL_INT, FL_F(T, opts.ca_days), .min = 1, .max = 36500, .arg = "N",                \
     .help = "validity of new CAs; default 3650"},                                                 \
    {"cert-days", FL_INT, FL_F(T, opts.cert_days), .min = 1, .max = 36500, .arg = "N",            \
     .help = "validity of new certificates; default 365"},                                         \
    {"ca-renew-before", FL_INT, FL_F(T, opts.ca_renew_before_s), .min = 0,                        \
     .max = 36500 * WH_CERTMGR_DAY_S, .arg = "S",                                                  \
     .help = "renew the CA S seconds before expiry (0: a third)"},                                 \
    {"cert-renew-before", FL_INT, FL_F(T, opts.cert_renew_before_s), .min = 0,                    \
     .max = 36500 * WH_CERTMGR_DAY_S, .arg = "S",                                                  \
     .help = "renew the certificate S seconds before expiry (0: a third)"},                        \
    {"cert-check-interval", FL_INT, FL_F(T, opts.interval_s), .min = 1,                           \
     .max = WH_CERTMGR_DAY_S, .arg = "S", .help = "seconds between checks; default 300"},          \
    {"ca-grace", FL_INT, FL_F(T, opts.ca_grace_s), .min = -1, .max = WH_CERTMGR_DAY_S,            \
     .arg = "S", .help = "a new CA is trusted S seconds before it serves; default 60"}
/* clang-format on */

/* Splits a comma-separated SAN list ("localhost,127.0.0.1,::1") into DNS
 * names and IP addresses (by shape). *dns and *ips are NULL-terminated
 * malloc'd arrays, freed with wh_certmgr_free_sans. Returns 0 or -1 on oom. */
int wh_certmgr_split_sans(const char *list, char ***dns, char ***ips);
void wh_certmgr_free_sans(char **dns, char **ips);

#endif
