/* Connection settings for one Kubernetes API server, from a kubeconfig
 * (parsed with libyaml) or from the in-cluster service account.
 *
 * Kubeconfigs are untrusted by default (they come from Secrets): anything
 * that would run a program, read a local file, skip TLS verification, send a
 * password, go through a proxy or talk plain HTTP is refused with an error
 * naming the field.
 *
 * Only the entries the selected context uses (its cluster and its user) are
 * validated: they are all that is ever used, and other entries may hold
 * settings for other tools. Unknown keys are ignored; impersonation (`as`,
 * `as-groups`, ...) is refused since it is not implemented and ignoring it
 * would act with more privilege than asked. The YAML must be one document,
 * without aliases or merge keys (`<<`: other readers would merge what is
 * never checked here), at most KCFG_MAX_DEPTH deep and KCFG_MAX_NODES nodes; a
 * key the parser reads may appear only once in its mapping, and a name only
 * once in its list. */
#ifndef MKUEUE_KUBE_CONFIG_H
#define MKUEUE_KUBE_CONFIG_H

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <sys/types.h>
#include <time.h>

#include "errf.h"

#define KCFG_MAX_BYTES (1024 * 1024) /* larger kubeconfigs are refused */
#define KCFG_MAX_DEPTH 64            /* YAML nesting */
#define KCFG_MAX_NODES 65536         /* YAML scalars, mappings and sequences */

enum kcfg_flags {
    KCFG_UNTRUSTED = 0,
    /* The operator's own --kubeconfig: file paths (certificate-authority,
     * client-certificate, client-key, tokenFile) are allowed and resolved
     * relative to the kubeconfig's folder. exec, auth-provider, basic auth,
     * insecure-skip-tls-verify and http:// stay refused, and proxy-url is
     * refused as unsupported (ignoring it would bypass the proxy). */
    KCFG_TRUSTED = 1,
};

struct kcfg {
    char *server;    /* https://host[:port][/prefix], no trailing slash */
    char *context;   /* context used (NULL for in-cluster) */
    char *namespace; /* context's namespace / in-cluster namespace file, or NULL */
    char *ca_pem;    /* CA bundle (PEM), NULL = system roots */
    size_t ca_len;
    char *cert_pem; /* client certificate (PEM) or NULL */
    size_t cert_len;
    char *key_pem; /* client key (PEM) or NULL */
    size_t key_len;
    char *token;           /* static bearer token or NULL */
    char *token_file;      /* re-read when its mtime changes (in-cluster, trusted);
                            * preferred over token, which stays as the fallback */
    char *tls_server_name; /* optional SNI/verification name override */

    /* token_file cache, guarded by lock */
    pthread_mutex_t lock;
    char *file_token;
    struct timespec file_mtime;
    ino_t file_ino; /* a rotated projected token is a new file behind a symlink */
    int file_err;   /* last re-read error, logged once */
};

/* kcfg_parse returns MK_ERR_REFUSED when a well-formed kubeconfig breaks a safety rule
 * (exec, auth providers, basic auth, file paths or token files when
 * untrusted, insecure-skip-tls-verify, proxies, a server URL that is missing,
 * not https:// or not a plain host[:port]). Malformed input and unsupported
 * features (impersonation) give MK_ERR_INVAL. */

/* Parses kubeconfig YAML. `context` NULL selects current-context. `path_base`
 * is the folder relative file paths resolve against (trusted mode only; NULL
 * = current directory). On success *out is a new config owned by the caller
 * (kcfg_free). On failure returns <0 and writes a message to err naming the
 * field, e.g. "users[0].user.exec: exec credential plugins are not allowed". */
int kcfg_parse(const char *yaml, size_t len, const char *context, int flags, const char *path_base,
               struct kcfg **out, char *err, size_t errlen);

/* Reads and parses a kubeconfig file (at most KCFG_MAX_BYTES); relative paths
 * in it resolve against the file's folder. Same ownership as kcfg_parse. */
int kcfg_load_file(const char *path, const char *context, int flags, struct kcfg **out, char *err,
                   size_t errlen);

/* In-cluster config: KUBERNETES_SERVICE_HOST/PORT, and ca.crt, token,
 * namespace under `sa_dir` (NULL = /var/run/secrets/kubernetes.io/serviceaccount).
 * The token is read through token_file so rotation is picked up. ca.crt and
 * token must exist; namespace is optional. *out as for kcfg_parse. */
int kcfg_in_cluster(const char *sa_dir, struct kcfg **out, char *err, size_t errlen);

/* Returns a malloc'd copy (caller frees) of the bearer token to send now:
 * token_file's content, re-read when its mtime or inode changed (the last good
 * one is kept if a re-read fails), else the static token; NULL when there is
 * none. Thread-safe. */
char *kcfg_bearer_token(struct kcfg *cfg);

/* Strict standard base64 (Go's StdEncoding, as in Kubernetes' `data` fields);
 * spaces and line breaks are ignored. On success returns 0 and *out is a
 * malloc'd, NUL-terminated copy (caller frees) of *outlen bytes; MK_ERR_INVAL on
 * invalid input (including empty), MK_ERR_NOMEM. */
int kcfg_base64_decode(const char *s, char **out, size_t *outlen);

/* Frees cfg and everything it owns; NULL is a no-op. */
void kcfg_free(struct kcfg *cfg);

#endif
