#include "certs.h"
#include "errf.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "clock.h"
#include "log.h"
#include "tls.h"

#define MAX_CHAIN 8

/* One loaded pair. */
struct gen {
    gnutls_pcert_st pcerts[MAX_CHAIN];
    unsigned npcerts;
    gnutls_privkey_t key;
    time_t not_after;
    long long retired_ms; /* when it stopped being current */
    struct gen *next;     /* retired list */
};

/* What identifies the files' content without reading them. */
struct sig {
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
};

struct wh_certs {
    char *cert_file;
    char *key_file;
    long interval_ms;
    pthread_mutex_t lock;
    struct gen *cur;
    struct gen *retired;
    struct sig cert_sig, key_sig;
    struct sig bad_cert_sig, bad_key_sig; /* files that failed to load: not retried */
    long long last_check_ms;
    long loads, failures;
};

static struct wh_certs *installed;
static pthread_mutex_t install_lock = PTHREAD_MUTEX_INITIALIZER;

static int sig_of(const char *path, struct sig *s)
{
    struct stat st;
    if (stat(path, &st) < 0) /* follows ..data symlinks */
        return -1;
    *s = (struct sig){st.st_dev, st.st_ino, st.st_size, st.st_mtim};
    return 0;
}

static int sig_eq(const struct sig *a, const struct sig *b)
{
    return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
           a->mtime.tv_sec == b->mtime.tv_sec && a->mtime.tv_nsec == b->mtime.tv_nsec;
}

static void gen_free(struct gen *g)
{
    if (!g)
        return;
    for (unsigned i = 0; i < g->npcerts; i++)
        gnutls_pcert_deinit(&g->pcerts[i]);
    if (g->key)
        gnutls_privkey_deinit(g->key);
    free(g);
}

/* 1 when the private key belongs to the certificate's public key. */
static int key_matches(struct gen *g)
{
    gnutls_pubkey_t pub = NULL;
    unsigned char a[64], b[64];
    size_t alen = sizeof(a), blen = sizeof(b);
    int ok = gnutls_pubkey_init(&pub) == 0 &&
             gnutls_pubkey_import_privkey(pub, g->key, 0, 0) == 0 &&
             gnutls_pubkey_get_key_id(pub, 0, a, &alen) == 0 &&
             gnutls_pubkey_get_key_id(g->pcerts[0].pubkey, 0, b, &blen) == 0 && alen == blen &&
             memcmp(a, b, alen) == 0;
    if (pub)
        gnutls_pubkey_deinit(pub);
    return ok;
}

static struct gen *gen_load(const char *cert_file, const char *key_file, char *err, size_t errlen)
{
    char *cpem = NULL, *kpem = NULL;
    size_t clen = 0, klen = 0;
    struct gen *g = calloc(1, sizeof(*g));
    if (!g) {
        errf(err, errlen, MK_ERR_NOMEM, "out of memory");
        goto fail;
    }
    if (tls_load_pem_file(cert_file, &cpem, &clen, err, errlen) < 0 ||
        tls_load_pem_file(key_file, &kpem, &klen, err, errlen) < 0)
        goto fail;
    gnutls_datum_t cd = {(unsigned char *)cpem, (unsigned)clen};
    gnutls_datum_t kd = {(unsigned char *)kpem, (unsigned)klen};
    unsigned n = MAX_CHAIN;
    int rc = gnutls_pcert_list_import_x509_raw(g->pcerts, &n, &cd, GNUTLS_X509_FMT_PEM, 0);
    if (rc < 0 || n == 0) {
        errf(err, errlen, MK_ERR_INVAL, "%s: %s", cert_file,
             rc < 0 ? gnutls_strerror(rc) : "no certificate");
        goto fail;
    }
    g->npcerts = n;
    rc = gnutls_privkey_init(&g->key);
    if (rc == 0)
        rc = gnutls_privkey_import_x509_raw(g->key, &kd, GNUTLS_X509_FMT_PEM, NULL, 0);
    if (rc < 0) {
        errf(err, errlen, MK_ERR_INVAL, "%s: %s", key_file, gnutls_strerror(rc));
        goto fail;
    }
    if (!key_matches(g)) {
        errf(err, errlen, MK_ERR_INVAL, "%s does not match the certificate in %s", key_file,
             cert_file);
        goto fail;
    }
    if (tls_cert_expiry(cpem, clen, &g->not_after, err, errlen) < 0)
        goto fail;
    free(cpem);
    free(kpem);
    return g;
fail:
    free(cpem);
    if (kpem) {
        memset(kpem, 0, klen);
        free(kpem);
    }
    gen_free(g);
    return NULL;
}

struct wh_certs *wh_certs_new(const char *cert_file, const char *key_file, long check_interval_ms,
                              char *err, size_t errlen)
{
    struct wh_certs *c = calloc(1, sizeof(*c));
    if (!c || !(c->cert_file = strdup(cert_file)) || !(c->key_file = strdup(key_file))) {
        errf(err, errlen, MK_ERR_NOMEM, "out of memory");
        goto fail;
    }
    c->interval_ms = check_interval_ms > 0 ? check_interval_ms : 1000;
    pthread_mutex_init(&c->lock, NULL);
    if (sig_of(cert_file, &c->cert_sig) < 0 || sig_of(key_file, &c->key_sig) < 0) {
        errf(err, errlen, MK_ERR_INVAL, "cannot stat %s or %s", cert_file, key_file);
        goto fail_lock;
    }
    c->cur = gen_load(cert_file, key_file, err, errlen);
    if (!c->cur)
        goto fail_lock;
    c->loads = 1;
    c->last_check_ms = clk_now_ms();
    return c;
fail_lock:
    pthread_mutex_destroy(&c->lock);
fail:
    if (c) {
        free(c->cert_file);
        free(c->key_file);
    }
    free(c);
    return NULL;
}

void wh_certs_free(struct wh_certs *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&install_lock);
    if (installed == c)
        installed = NULL;
    pthread_mutex_unlock(&install_lock);
    while (c->retired) {
        struct gen *g = c->retired;
        c->retired = g->next;
        gen_free(g);
    }
    gen_free(c->cur);
    pthread_mutex_destroy(&c->lock);
    free(c->cert_file);
    free(c->key_file);
    free(c);
}

/* Under c->lock. */
static int refresh_locked(struct wh_certs *c, int force, char *err, size_t errlen)
{
    long long now = clk_now_ms();
    if (!force && now - c->last_check_ms < c->interval_ms)
        return 0;
    c->last_check_ms = now;
    /* free pairs retired long enough ago for any handshake to be over */
    for (struct gen **p = &c->retired; *p;) {
        if (now - (*p)->retired_ms > WH_CERTS_GRACE_MS) {
            struct gen *g = *p;
            *p = g->next;
            gen_free(g);
        } else {
            p = &(*p)->next;
        }
    }
    struct sig cs, ks;
    if (sig_of(c->cert_file, &cs) < 0 || sig_of(c->key_file, &ks) < 0) {
        return errf(err, errlen, MK_ERR_INVAL, "cannot stat %s or %s", c->cert_file, c->key_file);
    }
    if ((sig_eq(&cs, &c->cert_sig) && sig_eq(&ks, &c->key_sig)) ||
        (sig_eq(&cs, &c->bad_cert_sig) && sig_eq(&ks, &c->bad_key_sig)))
        return 0;
    struct gen *g = gen_load(c->cert_file, c->key_file, err, errlen);
    if (!g) {
        c->failures++;
        c->bad_cert_sig = cs; /* retried when the files change again */
        c->bad_key_sig = ks;
        return -1;
    }
    c->cur->retired_ms = now;
    c->cur->next = c->retired;
    c->retired = c->cur;
    c->cur = g;
    c->cert_sig = cs;
    c->key_sig = ks;
    c->loads++;
    return 1;
}

int wh_certs_refresh(struct wh_certs *c, int force, char *err, size_t errlen)
{
    pthread_mutex_lock(&c->lock);
    int rc = refresh_locked(c, force, err, errlen);
    pthread_mutex_unlock(&c->lock);
    if (rc == 1)
        LOG_I("certs", "serving certificate reloaded", "cert", c->cert_file);
    return rc;
}

time_t wh_certs_not_after(struct wh_certs *c)
{
    pthread_mutex_lock(&c->lock);
    time_t t = c->cur->not_after;
    pthread_mutex_unlock(&c->lock);
    return t;
}

long wh_certs_loads(struct wh_certs *c)
{
    pthread_mutex_lock(&c->lock);
    long n = c->loads;
    pthread_mutex_unlock(&c->lock);
    return n;
}

long wh_certs_failures(struct wh_certs *c)
{
    pthread_mutex_lock(&c->lock);
    long n = c->failures;
    pthread_mutex_unlock(&c->lock);
    return n;
}

void wh_certs_install(struct wh_certs *c)
{
    pthread_mutex_lock(&install_lock);
    installed = c;
    pthread_mutex_unlock(&install_lock);
}

int wh_certs_retrieve(gnutls_session_t session, const gnutls_datum_t *req_ca_dn, int nreqs,
                      const gnutls_pk_algorithm_t *pk_algos, int pk_algos_length,
                      gnutls_pcert_st **pcert, unsigned int *pcert_length, gnutls_privkey_t *pkey)
{
    (void)session, (void)req_ca_dn, (void)nreqs, (void)pk_algos, (void)pk_algos_length;
    pthread_mutex_lock(&install_lock);
    struct wh_certs *c = installed;
    if (!c) {
        pthread_mutex_unlock(&install_lock);
        return -1;
    }
    char err[256];
    pthread_mutex_lock(&c->lock);
    int rc = refresh_locked(c, 0, err, sizeof(err));
    *pcert = c->cur->pcerts;
    *pcert_length = c->cur->npcerts;
    *pkey = c->cur->key;
    pthread_mutex_unlock(&c->lock);
    pthread_mutex_unlock(&install_lock);
    if (rc == 1)
        LOG_I("certs", "serving certificate reloaded", "cert", c->cert_file);
    else if (rc < 0)
        LOG_W("certs", "serving certificate not reloaded; the previous one stays", "error", err);
    return 0;
}
