/* Self-managed webhook certificates: see certmgr.h for the scheme. */
#include "certmgr.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "errf.h"
#include "fileio.h"
#include "jsonx.h"
#include "kube_config.h"
#include "log.h"
#include "patch.h"
#include "tls.h"

#define LOGGER       "certmgr"
#define MAX_CAS      2 /* current CA and the one before it */
#define MAX_PASSES   3 /* re-reads after losing a race with another replica */
#define RETRY_S      30
#define DAY_S        86400L
#define ENTRY_FILES  3
#define MAX_SAN_LIST 64

static const struct kc_resource SECRETS = {"", "v1", "secrets", 1};
static const struct kc_resource MUTATING = {"admissionregistration.k8s.io", "v1",
                                            "mutatingwebhookconfigurations", 0};
static const struct kc_resource VALIDATING = {"admissionregistration.k8s.io", "v1",
                                              "validatingwebhookconfigurations", 0};

/* ---- settings ---------------------------------------------------------------- */

struct settings {
    int ca_days, cert_days;
    long ca_renew, cert_renew, grace;
    time_t now;
};

static struct settings settings_of(const struct wh_certmgr_opts *o)
{
    struct settings s = {
        .ca_days = o->ca_days > 0 ? o->ca_days : 3650,
        .cert_days = o->cert_days > 0 ? o->cert_days : 365,
        .now = o->clock ? o->clock() : time(NULL),
    };
    s.ca_renew = o->ca_renew_before_s > 0 ? o->ca_renew_before_s : s.ca_days * DAY_S / 3;
    s.cert_renew = o->cert_renew_before_s > 0 ? o->cert_renew_before_s : s.cert_days * DAY_S / 3;
    s.grace = o->ca_grace_s > 0 ? o->ca_grace_s : o->ca_grace_s < 0 ? 0 : 60;
    return s;
}

/* ---- PEM and base64 helpers ---------------------------------------------------- */

static char *b64_encode(const char *s)
{
    size_t n = strlen(s);
    if (n > TLS_MAX_PEM_BYTES)
        return NULL;
    char *out = malloc(4 * ((n + 2) / 3) + 1);
    if (out)
        EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)s, (int)n);
    return out;
}

/* Decodes Secret data into a NUL-terminated string; NULL when absent,
 * malformed, too large or containing a NUL (a PEM never does). */
static char *b64_decode(const char *s)
{
    char *out = NULL;
    size_t n = 0;
    if (!s || strlen(s) / 4 * 3 > TLS_MAX_PEM_BYTES || kcfg_base64_decode(s, &out, &n) != 0)
        return NULL;
    if (memchr(out, '\0', n)) {
        free(out);
        return NULL;
    }
    return out;
}

static int no_passphrase(char *buf, int size, int rwflag, void *u)
{
    (void)buf, (void)size, (void)rwflag, (void)u;
    return -1; /* never prompt for an encrypted key */
}

static X509 *pem_cert(const char *pem)
{
    BIO *b = pem ? BIO_new_mem_buf(pem, -1) : NULL;
    X509 *x = b ? PEM_read_bio_X509(b, NULL, no_passphrase, NULL) : NULL;
    BIO_free(b);
    return x;
}

static char *cert_pem(X509 *x)
{
    char *out = NULL;
    BIO *b = BIO_new(BIO_s_mem());
    char *p;
    if (b && PEM_write_bio_X509(b, x)) {
        long n = BIO_get_mem_data(b, &p);
        out = n > 0 ? strndup(p, (size_t)n) : NULL;
    }
    BIO_free(b);
    return out;
}

/* 1 when key_pem is the private key of the first certificate in crt_pem. */
static int key_matches(const char *crt_pem, const char *key_pem)
{
    int ok = 0;
    X509 *x = pem_cert(crt_pem);
    BIO *b = key_pem ? BIO_new_mem_buf(key_pem, -1) : NULL;
    EVP_PKEY *k = b ? PEM_read_bio_PrivateKey(b, NULL, no_passphrase, NULL) : NULL;
    if (x && k)
        ok = X509_check_private_key(x, k) == 1;
    EVP_PKEY_free(k);
    BIO_free(b);
    X509_free(x);
    return ok;
}

static long seconds_left(const char *pem, time_t now)
{
    time_t na;
    if (!pem || tls_cert_expiry(pem, strlen(pem), &na, NULL, 0) != 0)
        return -1;
    return (long)(na - now);
}

/* Splits a PEM bundle into at most `max` certificates (PEM strings, caller
 * frees each). Returns the count, 0 when none parses. */
static int split_bundle(const char *bundle, char **out, int max)
{
    int n = 0;
    BIO *b = bundle ? BIO_new_mem_buf(bundle, -1) : NULL;
    X509 *x;
    while (b && n < max && (x = PEM_read_bio_X509(b, NULL, no_passphrase, NULL))) {
        out[n] = cert_pem(x);
        X509_free(x);
        if (!out[n])
            break;
        n++;
    }
    BIO_free(b);
    return n;
}

static char *concat(const char *a, const char *b)
{
    size_t na = strlen(a), nb = b ? strlen(b) : 0;
    char *out = malloc(na + nb + 1);
    if (!out)
        return NULL;
    memcpy(out, a, na);
    if (nb)
        memcpy(out + na, b, nb);
    out[na + nb] = '\0';
    return out;
}

/* ---- the Secret's content ---------------------------------------------------- */

struct material {
    char *ca_crt; /* bundle: current CA first */
    char *ca_key;
    char *tls_crt;
    char *tls_key;
    long long published; /* annotation, 0 when absent */
};

static void material_free(struct material *m)
{
    free(m->ca_crt);
    free(m->ca_key);
    free(m->tls_crt);
    free(m->tls_key);
    memset(m, 0, sizeof(*m));
}

static void material_read(const json_t *secret, struct material *m)
{
    memset(m, 0, sizeof(*m));
    if (!secret)
        return;
    const json_t *data = jx_get(secret, "data");
    m->ca_crt = b64_decode(json_string_value(json_object_get(data, "ca.crt")));
    m->ca_key = b64_decode(json_string_value(json_object_get(data, "ca.key")));
    m->tls_crt = b64_decode(json_string_value(json_object_get(data, "tls.crt")));
    m->tls_key = b64_decode(json_string_value(json_object_get(data, "tls.key")));
    const json_t *ann = jx_get(secret, "metadata.annotations");
    const char *p = json_string_value(json_object_get(ann, WH_CERTMGR_ANN_PUBLISHED));
    m->published = p ? strtoll(p, NULL, 10) : 0;
}

static int replace(char **slot, char *v)
{
    if (!v)
        return -1;
    free(*slot);
    *slot = v;
    return 0;
}

/* The names the serving certificate must be valid for; entries borrowed
 * from o or written into bufs. Returns the count. */
#define MAX_NAMES 40
static int wanted_names(const struct wh_certmgr_opts *o, const char **names, char bufs[4][512])
{
    int n = 0;
    if (o->service && *o->service) {
        snprintf(bufs[0], 512, "%s", o->service);
        snprintf(bufs[1], 512, "%s.%s", o->service, o->namespace);
        snprintf(bufs[2], 512, "%s.%s.svc", o->service, o->namespace);
        snprintf(bufs[3], 512, "%s.%s.svc.cluster.local", o->service, o->namespace);
        for (int i = 0; i < 4; i++)
            names[n++] = bufs[i];
    }
    for (size_t i = 0; o->dns && o->dns[i] && n < MAX_NAMES; i++)
        names[n++] = o->dns[i];
    for (size_t i = 0; o->ips && o->ips[i] && n < MAX_NAMES; i++)
        names[n++] = o->ips[i];
    return n;
}

static int issue_cert(const struct wh_certmgr_opts *o, const struct settings *s, struct material *m,
                      char *err, size_t errlen)
{
    char bufs[4][512];
    const char *names[MAX_NAMES + 1];
    const char *dns[MAX_NAMES + 1], *ips[MAX_NAMES + 1];
    int n = wanted_names(o, names, bufs), nd = 0, ni = 0;
    for (int i = 0; i < n; i++) {
        int is_ip = strchr(names[i], ':') || strspn(names[i], "0123456789.") == strlen(names[i]);
        if (is_ip)
            ips[ni++] = names[i];
        else
            dns[nd++] = names[i];
    }
    dns[nd] = NULL;
    ips[ni] = NULL;
    /* never outlive the CA that signs it */
    long ca_left = seconds_left(m->ca_crt, s->now);
    int days = s->cert_days;
    if (ca_left / DAY_S < days)
        days = ca_left / DAY_S > 1 ? (int)(ca_left / DAY_S) : 1;
    struct tls_cert_opts co = {
        .cn = nd ? dns[0] : "mkueue-webhook",
        .dns = dns,
        .ips = ips,
        .days = days,
        .usage = TLS_SERVER_AUTH,
    };
    /* the first CA of the bundle is the one whose key we hold */
    char *ca_first[1] = {NULL};
    if (split_bundle(m->ca_crt, ca_first, 1) != 1)
        return errf(err, errlen, MK_ERR_INVAL, "no CA certificate to sign with");
    char *crt = NULL, *key = NULL;
    int rc = tls_gen_cert(ca_first[0], m->ca_key, &co, &crt, &key, err, errlen);
    free(ca_first[0]);
    if (rc != 0)
        return rc;
    free(m->tls_crt);
    free(m->tls_key);
    m->tls_crt = crt;
    m->tls_key = key;
    return 0;
}

/* Brings m to a valid state. Sets rep->ca_rotated / cert_issued; returns 1
 * when m changed, 0 when not, <0 on error. */
static int renew(const struct wh_certmgr_opts *o, const struct settings *s, struct material *m,
                 struct wh_certmgr_report *rep, char *err, size_t errlen)
{
    char *cas[MAX_CAS] = {NULL};
    int ncas = split_bundle(m->ca_crt, cas, MAX_CAS), changed = 0, rc = 0;

    /* the CA: missing, unusable, or close to expiry */
    int ca_ok = ncas > 0 && m->ca_key && key_matches(cas[0], m->ca_key);
    if (!ca_ok || seconds_left(cas[0], s->now) < s->ca_renew) {
        char *crt = NULL, *key = NULL;
        rc = tls_gen_ca("mkueue-webhook-ca", s->ca_days, &crt, &key, err, errlen);
        if (rc != 0)
            goto out;
        /* keep the previous CA trusted while replicas still serve its
         * certificates (also when its key was lost) */
        char *bundle = concat(crt, ncas > 0 && seconds_left(cas[0], s->now) > 0 ? cas[0] : NULL);
        free(crt);
        if (!bundle || replace(&m->ca_crt, bundle) || replace(&m->ca_key, key)) {
            free(key);
            rc = errf(err, errlen, MK_ERR_NOMEM, "out of memory");
            goto out;
        }
        if (!ca_ok) { /* nothing signed by the old CA can stay */
            free(m->tls_crt);
            m->tls_crt = NULL;
        }
        m->published = (long long)s->now;
        rep->ca_rotated = changed = 1;
        LOG_I(LOGGER, ca_ok ? "CA close to expiry: new CA published" : "new CA", "secret",
              o->secret_name);
    } else if (ncas > 1 && seconds_left(cas[1], s->now) <= 0) {
        char *one = strdup(cas[0]); /* the previous CA expired: drop it */
        if (replace(&m->ca_crt, one)) {
            rc = errf(err, errlen, MK_ERR_NOMEM, "out of memory");
            goto out;
        }
        changed = 1;
    }

    /* the serving certificate */
    char bufs[4][512];
    const char *names[MAX_NAMES + 1];
    int nnames = wanted_names(o, names, bufs);
    const char *why = NULL;
    if (!m->tls_crt || !m->tls_key || !key_matches(m->tls_crt, m->tls_key))
        why = "missing or not matching its key";
    else if (seconds_left(m->tls_crt, s->now) < s->cert_renew)
        why = "close to expiry";
    for (int i = 0; !why && i < nnames; i++) {
        if (tls_verify(m->tls_crt, strlen(m->tls_crt), m->ca_crt, strlen(m->ca_crt), names[i], NULL,
                       0) != 0)
            why = "not valid for a wanted name";
    }
    if (!why && s->now - m->published >= s->grace) {
        char *first[1] = {NULL};
        if (split_bundle(m->ca_crt, first, 1) == 1 &&
            tls_verify(m->tls_crt, strlen(m->tls_crt), first[0], strlen(first[0]), NULL, NULL, 0) !=
                0)
            why = "signed by the previous CA";
        free(first[0]);
    }
    if (why) {
        rc = issue_cert(o, s, m, err, errlen);
        if (rc != 0)
            goto out;
        rep->cert_issued = changed = 1;
        LOG_I(LOGGER, "new serving certificate", "secret", o->secret_name, "reason", why);
    }
    rc = changed;
out:
    for (int i = 0; i < ncas; i++)
        free(cas[i]);
    return rc;
}

/* ---- Kubernetes objects ------------------------------------------------------------ */

static int set_data(json_t *secret, const struct material *m)
{
    json_t *data = json_object();
    const char *keys[] = {"ca.crt", "ca.key", "tls.crt", "tls.key"};
    const char *vals[] = {m->ca_crt, m->ca_key, m->tls_crt, m->tls_key};
    int rc = data ? 0 : -1;
    for (int i = 0; rc == 0 && i < 4; i++) {
        char *v = b64_encode(vals[i]);
        rc = v ? json_object_set_new(data, keys[i], json_string(v)) : -1;
        free(v);
    }
    char pub[32];
    snprintf(pub, sizeof(pub), "%lld", m->published);
    if (rc != 0 || json_object_set_new(secret, "data", data) != 0 ||
        jx_set_new_str(secret, "metadata.annotations[" WH_CERTMGR_ANN_PUBLISHED "]", pub) != 0)
        return -1;
    return 0;
}

/* Creates or updates the Secret. Returns 0, 1 when another writer won the
 * race (re-read and retry), <0 on error. */
static int write_secret(struct kc_client *c, const struct wh_certmgr_opts *o, json_t *existing,
                        const struct material *m, char *err, size_t errlen)
{
    struct kc_status st;
    int rc;
    json_t *obj = existing ? json_deep_copy(existing)
                           : json_pack("{s:s, s:s, s:{s:s, s:s}, s:s}", "apiVersion", "v1", "kind",
                                       "Secret", "metadata", "name", o->secret_name, "namespace",
                                       o->namespace, "type", "kubernetes.io/tls");
    if (!obj ||
        (!existing && jx_set_new_str(obj, "metadata.labels[app.kubernetes.io/managed-by]",
                                     "mkueue-webhook") != 0) ||
        set_data(obj, m) != 0) {
        rc = errf(err, errlen, MK_ERR_NOMEM, "out of memory");
        goto out;
    }
    if (existing)
        rc = kc_update(c, &SECRETS, o->namespace, o->secret_name, NULL, obj, NULL, &st);
    else
        rc = kc_create(c, &SECRETS, o->namespace, obj, NULL, &st);
    if (rc != 0) {
        if (kc_is_already_exists(&st) || kc_is_conflict(&st))
            rc = 1;
        else
            rc = errf(err, errlen, rc, "%s secret %s/%s: %s", existing ? "update" : "create",
                      o->namespace, o->secret_name, st.message);
    }
out:
    json_decref(obj);
    return rc;
}

static int patch_config(struct kc_client *c, const struct kc_resource *r, const char *name,
                        const char *bundle_b64, int *patched, char *err, size_t errlen)
{
    struct kc_status st;
    json_t *cfg = NULL, *ops = NULL;
    struct jp *p = NULL;
    int rc = 0;
    for (int attempt = 0; attempt < MAX_PASSES; attempt++) {
        json_decref(cfg);
        json_decref(ops);
        jp_free(p);
        cfg = ops = NULL;
        p = NULL;
        rc = kc_get(c, r, NULL, name, &cfg, &st);
        if (rc != 0 && kc_is_not_found(&st)) {
            LOG_W(LOGGER, "webhook configuration not found; skipped", "kind", r->resource, "name",
                  name);
            rc = 0;
            goto out;
        }
        if (rc != 0) {
            rc = errf(err, errlen, rc, "get %s %s: %s", r->resource, name, st.message);
            goto out;
        }
        json_t *hooks = jx_get(cfg, "webhooks");
        const char *rv = jx_str(cfg, "metadata.resourceVersion");
        if (!(p = jp_new(cfg))) {
            rc = errf(err, errlen, MK_ERR_NOMEM, "out of memory");
            goto out;
        }
        for (size_t i = 0; i < json_array_size(hooks); i++) {
            const char *cur = jx_str(json_array_get(hooks, i), "clientConfig.caBundle");
            if (cur && strcmp(cur, bundle_b64) == 0)
                continue;
            char idx[24];
            snprintf(idx, sizeof(idx), "%zu", i);
            if (jp_set(p, json_string(bundle_b64), "webhooks", idx, "clientConfig", "caBundle")) {
                rc = errf(err, errlen, MK_ERR_INVAL, "%s %s: webhooks[%zu] has no clientConfig",
                          r->resource, name, i);
                goto out;
            }
        }
        if (jp_count(p) == 0)
            goto out;
        /* only against the version we read: entries may move under a helm upgrade */
        ops = jp_ops(p);
        json_t *test = json_pack("{s:s, s:s, s:s}", "op", "test", "path",
                                 "/metadata/resourceVersion", "value", rv ? rv : "");
        if (!ops || !test || json_array_insert_new(ops, 0, test) != 0) {
            rc = errf(err, errlen, MK_ERR_NOMEM, "out of memory");
            goto out;
        }
        rc = kc_patch(c, r, NULL, name, NULL, KC_PATCH_JSON, ops, NULL, NULL, &st);
        if (rc == 0) {
            (*patched)++;
            LOG_I(LOGGER, "caBundle patched", "kind", r->resource, "name", name);
            goto out;
        }
        /* a failed test is a 409 or 422 depending on the server version */
        if (!(st.http == 409 || st.http == 422)) {
            rc = errf(err, errlen, rc, "patch %s %s: %s", r->resource, name, st.message);
            goto out;
        }
    }
    rc = errf(err, errlen, MK_ERR_CONFLICT, "patch %s %s: kept changing", r->resource, name);
out:
    json_decref(cfg);
    json_decref(ops);
    jp_free(p);
    return rc;
}

/* ---- files ------------------------------------------------------------------------- */

/* Writes path atomically (temporary file + rename) unless it already holds
 * content. Returns 1 when written, 0 when unchanged, <0 on error. */
static int sync_file(const char *dir, const char *name, const char *content, mode_t mode, char *err,
                     size_t errlen)
{
    char path[PATH_MAX], tmp[PATH_MAX];
    if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path) ||
        (size_t)snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", dir, name) >= sizeof(tmp))
        return errf(err, errlen, MK_ERR_TOOBIG, "cert dir path too long");
    char *cur = NULL;
    size_t len = strlen(content);
    if (fio_read_file(path, TLS_MAX_PEM_BYTES, &cur, NULL) == 0 && strcmp(cur, content) == 0) {
        free(cur);
        return 0;
    }
    free(cur);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (fd < 0)
        return errf(err, errlen, MK_ERR_IO, "open %s: %s", tmp, strerror(errno));
    size_t off = 0;
    while (off < len) {
        ssize_t w = write(fd, content + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            int e = errno;
            close(fd);
            unlink(tmp);
            return errf(err, errlen, MK_ERR_IO, "write %s: %s", tmp, strerror(e));
        }
        off += (size_t)w;
    }
    if (fsync(fd) != 0 || close(fd) != 0 || rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        return errf(err, errlen, MK_ERR_IO, "write %s: %s", path, strerror(e));
    }
    return 1;
}

/* Creates dir and its missing parents (0700: it holds a private key). */
static int make_dirs(const char *dir, char *err, size_t errlen)
{
    char path[PATH_MAX];
    if ((size_t)snprintf(path, sizeof(path), "%s", dir) >= sizeof(path))
        return errf(err, errlen, MK_ERR_TOOBIG, "cert dir path too long");
    for (char *p = path + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char c = *p;
        *p = '\0';
        if (mkdir(path, 0700) != 0 && errno != EEXIST)
            return errf(err, errlen, MK_ERR_IO, "mkdir %s: %s", path, strerror(errno));
        *p = c;
        if (c == '\0')
            return 0;
    }
}

static int sync_files(const char *dir, const struct material *m, char *err, size_t errlen)
{
    if (make_dirs(dir, err, errlen) < 0)
        return -1;
    /* key first: a reader that sees the new certificate also sees its key */
    const char *names[ENTRY_FILES] = {"tls.key", "tls.crt", "ca.crt"};
    const char *vals[ENTRY_FILES] = {m->tls_key, m->tls_crt, m->ca_crt};
    const mode_t modes[ENTRY_FILES] = {0600, 0644, 0644};
    int changed = 0;
    for (int i = 0; i < ENTRY_FILES; i++) {
        int rc = sync_file(dir, names[i], vals[i], modes[i], err, errlen);
        if (rc < 0)
            return rc;
        changed |= rc;
    }
    return changed;
}

/* ---- one pass ------------------------------------------------------------------------ */

int wh_certmgr_ensure_ex(struct kc_client *c, const struct wh_certmgr_opts *o,
                         struct wh_certmgr_report *rep, char *err, size_t errlen)
{
    struct wh_certmgr_report dummy;
    struct material m = {0};
    json_t *secret = NULL;
    char *b64 = NULL;
    int rc = MK_ERR_CONFLICT;
    if (!rep)
        rep = &dummy;
    memset(rep, 0, sizeof(*rep));
    if (!c || !o || !o->namespace || !o->secret_name || !o->cert_dir)
        return errf(err, errlen, MK_ERR_INVAL,
                    "certmgr: namespace, secret name and cert dir needed");
    struct settings s = settings_of(o);

    for (int pass = 0; pass < MAX_PASSES; pass++) {
        struct kc_status st;
        json_decref(secret);
        secret = NULL;
        material_free(&m);
        rc = kc_get(c, &SECRETS, o->namespace, o->secret_name, &secret, &st);
        if (rc != 0 && !kc_is_not_found(&st)) {
            rc = errf(err, errlen, rc, "get secret %s/%s: %s", o->namespace, o->secret_name,
                      st.message);
            goto out;
        }
        material_read(secret, &m);
        rc = renew(o, &s, &m, rep, err, errlen);
        if (rc < 0)
            goto out;
        if (rc == 0)
            break;
        rc = write_secret(c, o, secret, &m, err, errlen);
        if (rc < 0)
            goto out;
        if (rc == 0) {
            rep->secret_written = 1;
            break;
        }
        LOG_I(LOGGER, "secret changed under us; re-reading", "secret", o->secret_name);
        rep->ca_rotated = rep->cert_issued = 0;
        rc = MK_ERR_CONFLICT;
    }
    if (rc != 0) {
        rc = errf(err, errlen, rc, "secret %s/%s kept changing", o->namespace, o->secret_name);
        goto out;
    }

    rc = sync_files(o->cert_dir, &m, err, errlen);
    if (rc < 0)
        goto out;
    rep->files_written = rc;
    if (rc)
        LOG_I(LOGGER, "certificate files written", "dir", o->cert_dir);

    if (!(b64 = b64_encode(m.ca_crt))) {
        rc = errf(err, errlen, MK_ERR_NOMEM, "out of memory");
        goto out;
    }
    rc = 0;
    if (o->mutating_config)
        rc =
            patch_config(c, &MUTATING, o->mutating_config, b64, &rep->configs_patched, err, errlen);
    if (rc == 0 && o->validating_config)
        rc = patch_config(c, &VALIDATING, o->validating_config, b64, &rep->configs_patched, err,
                          errlen);
out:
    free(b64);
    json_decref(secret);
    material_free(&m);
    return rc;
}

int wh_certmgr_ensure(struct kc_client *c, const struct wh_certmgr_opts *o, char *err,
                      size_t errlen)
{
    return wh_certmgr_ensure_ex(c, o, NULL, err, errlen);
}

/* ---- rotation thread ------------------------------------------------------------------ */

struct wh_certmgr {
    struct kc_client *c;
    struct wh_certmgr_opts o;
    void (*on_change)(void *);
    void *ud;
    pthread_t thread;
    struct clk_stop stop;
};

static void *run(void *arg)
{
    struct wh_certmgr *m = arg;
    long wait_s = m->o.interval_s > 0 ? m->o.interval_s : 300;
    while (!clk_sleep_ms(&m->stop, wait_s * 1000)) {
        char err[512] = "";
        struct wh_certmgr_report rep;
        int rc = wh_certmgr_ensure_ex(m->c, &m->o, &rep, err, sizeof(err));
        if (rep.files_written && m->on_change)
            m->on_change(m->ud);
        if (rc != 0)
            LOG_W(LOGGER, "certificate check failed; retrying", "error", err);
        wait_s = m->o.interval_s > 0 ? m->o.interval_s : 300;
        if (rc != 0 && wait_s > RETRY_S)
            wait_s = RETRY_S;
    }
    return NULL;
}

struct wh_certmgr *wh_certmgr_start(struct kc_client *c, const struct wh_certmgr_opts *o,
                                    void (*on_change)(void *ud), void *ud, char *err, size_t errlen)
{
    if (!c || !o) {
        errf(err, errlen, MK_ERR_INVAL, "certmgr: client and options needed");
        return NULL;
    }
    struct wh_certmgr *m = calloc(1, sizeof(*m));
    if (!m) {
        errf(err, errlen, MK_ERR_NOMEM, "out of memory");
        return NULL;
    }
    m->c = c;
    m->o = *o;
    m->on_change = on_change;
    m->ud = ud;
    int e = clk_stop_init(&m->stop);
    if (e < 0) {
        errf(err, errlen, e, "certmgr stop: %s", strerror(errno));
        free(m);
        return NULL;
    }
    e = pthread_create(&m->thread, NULL, run, m);
    if (e != 0) {
        errf(err, errlen, MK_ERR_IO, "certmgr thread: %s", strerror(e));
        clk_stop_destroy(&m->stop);
        free(m);
        return NULL;
    }
    return m;
}

void wh_certmgr_stop(struct wh_certmgr *m)
{
    if (!m)
        return;
    clk_stop_signal(&m->stop);
    pthread_join(m->thread, NULL);
    clk_stop_destroy(&m->stop);
    free(m);
}

/* ---- flags ------------------------------------------------------------------------------ */

int wh_certmgr_flag(struct wh_certmgr_opts *o, const char **sans, const char *name,
                    const char *value, char *err, size_t errlen)
{
    struct cm_flags {
        struct wh_certmgr_opts opts;
        const char *sans;
    } c = {*o, *sans};
    static const struct fl_flag flags[] = {WH_CERTMGR_FLAGS(struct cm_flags, opts, sans)};
    if (strncmp(name, "--", 2) != 0)
        return 0;
    const struct fl_flag *f =
        fl_find(flags, sizeof(flags) / sizeof(flags[0]), name + 2, strlen(name + 2));
    if (!f)
        return 0;
    char why[256];
    if (fl_set(f, &c, value, why, sizeof(why)) < 0)
        return errf(err, errlen, MK_ERR_INVAL, "%s: %s", name, why);
    *o = c.opts;
    *sans = c.sans;
    return 1;
}

/* ---- SAN lists -------------------------------------------------------------------------- */

void wh_certmgr_free_sans(char **dns, char **ips)
{
    for (size_t i = 0; dns && dns[i]; i++)
        free(dns[i]);
    for (size_t i = 0; ips && ips[i]; i++)
        free(ips[i]);
    free(dns);
    free(ips);
}

int wh_certmgr_split_sans(const char *list, char ***dns_out, char ***ips_out)
{
    char **dns = calloc(MAX_SAN_LIST + 1, sizeof(*dns));
    char **ips = calloc(MAX_SAN_LIST + 1, sizeof(*ips));
    char *copy = list ? strdup(list) : strdup("");
    size_t nd = 0, ni = 0;
    int rc = -1;
    if (!dns || !ips || !copy)
        goto out;
    for (char *next = copy, *t; (t = strsep(&next, ",")) != NULL;) {
        t += strspn(t, " \t");
        size_t n = strcspn(t, " \t");
        t[n] = '\0';
        if (!*t)
            continue;
        int is_ip = strchr(t, ':') || strspn(t, "0123456789.") == n;
        char ***slot = is_ip ? &ips : &dns;
        size_t *cnt = is_ip ? &ni : &nd;
        if (*cnt == MAX_SAN_LIST)
            goto out;
        if (!((*slot)[(*cnt)++] = strdup(t)))
            goto out;
    }
    *dns_out = dns;
    *ips_out = ips;
    dns = ips = NULL;
    rc = 0;
out:
    free(copy);
    wh_certmgr_free_sans(dns, ips);
    return rc;
}
