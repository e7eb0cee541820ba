#include "kube_config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <libgen.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <yaml.h>

#include "errf.h"
#include "fileio.h"
#include "log.h"

#define DEFAULT_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"
#define TOKEN_MAX      65536

/* ---- a small, bounded YAML tree ------------------------------------------ */

enum ytype { Y_SCALAR, Y_MAP, Y_SEQ };

struct ynode {
    enum ytype type;
    int is_null;         /* plain "", "~" or "null" */
    char *str;           /* scalar text */
    struct ynode **kids; /* sequence items; mapping keys and values alternate */
    size_t n, alloc;
};

static const char *const ytype_names[] = {"a string", "a mapping", "a sequence"};

static void ynode_free(struct ynode *y)
{
    if (!y)
        return;
    for (size_t i = 0; i < y->n; i++)
        ynode_free(y->kids[i]);
    free(y->kids);
    if (y->str) /* any scalar may be a token or key data */
        OPENSSL_cleanse(y->str, strlen(y->str));
    free(y->str);
    free(y);
}

static int ynode_add(struct ynode *parent, struct ynode *kid)
{
    if (parent->n == parent->alloc) {
        size_t n = parent->alloc ? parent->alloc * 2 : 4;
        struct ynode **k = realloc(parent->kids, n * sizeof(*k));
        if (!k)
            return -1;
        parent->kids = k;
        parent->alloc = n;
    }
    parent->kids[parent->n++] = kid;
    return 0;
}

static int ynode_new(const yaml_event_t *ev, struct ynode **out, char *err, size_t errlen)
{
    struct ynode *y = calloc(1, sizeof(*y));
    if (!y)
        return errf(err, errlen, MK_ERR_NOMEM, "out of memory");
    if (ev->type == YAML_SEQUENCE_START_EVENT) {
        y->type = Y_SEQ;
    } else if (ev->type == YAML_MAPPING_START_EVENT) {
        y->type = Y_MAP;
    } else {
        const char *v = (const char *)ev->data.scalar.value;
        size_t n = ev->data.scalar.length;
        y->type = Y_SCALAR;
        if (memchr(v, '\0', n)) { /* "a\0b" would compare equal to "a" */
            free(y);
            return errf(err, errlen, MK_ERR_INVAL, "YAML strings must not contain NUL (line %zu)",
                        ev->start_mark.line + 1);
        }
        if (!(y->str = strndup(v, n))) {
            free(y);
            return errf(err, errlen, MK_ERR_NOMEM, "out of memory");
        }
        y->is_null = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
                     (!n || !strcmp(v, "~") || !strcasecmp(v, "null"));
    }
    *out = y;
    return 0;
}

/* A mapping key "<<" (any quoting) or tagged !!merge. libyaml hands it over
 * as an ordinary key, but YAML 1.1 readers (client-go's) merge its mapping
 * into the parent: `<<: {as: system:admin}` would impersonate there while
 * the refusals below never see `as`. */
static int is_merge_key(const yaml_event_t *ev)
{
    const char *tag = (const char *)ev->data.scalar.tag;
    return (ev->data.scalar.length == 2 && !memcmp(ev->data.scalar.value, "<<", 2)) ||
           (tag && (!strcmp(tag, "tag:yaml.org,2002:merge") || !strcmp(tag, "!!merge")));
}

/* Builds a tree from one YAML document. Aliases are refused outright: they
 * are never needed in a kubeconfig and are the way to a "billion laughs".
 * Merge keys are refused as well (is_merge_key). */
static int yaml_load(const char *text, size_t len, struct ynode **out, char *err, size_t errlen)
{
    yaml_parser_t p;
    yaml_event_t ev;
    struct ynode *stack[KCFG_MAX_DEPTH];
    struct ynode *root = NULL;
    size_t depth = 0, count = 0;
    int rc = 0, docs = 0, done = 0;

    if (!yaml_parser_initialize(&p))
        return errf(err, errlen, MK_ERR_NOMEM, "out of memory");
    yaml_parser_set_input_string(&p, (const unsigned char *)(text ? text : ""), text ? len : 0);
    while (!done && !rc) {
        if (!yaml_parser_parse(&p, &ev)) {
            rc = errf(err, errlen, MK_ERR_INVAL, "invalid YAML at line %zu: %s",
                      p.problem_mark.line + 1, p.problem ? p.problem : "syntax error");
            break;
        }
        struct ynode *y = NULL;
        switch (ev.type) {
        case YAML_STREAM_END_EVENT:
            done = 1;
            break;
        case YAML_DOCUMENT_START_EVENT:
            if (++docs > 1)
                rc = errf(err, errlen, MK_ERR_INVAL, "multiple YAML documents are not allowed");
            break;
        case YAML_ALIAS_EVENT:
            rc = errf(err, errlen, MK_ERR_INVAL, "YAML aliases are not allowed (line %zu)",
                      ev.start_mark.line + 1);
            break;
        case YAML_SCALAR_EVENT:
        case YAML_SEQUENCE_START_EVENT:
        case YAML_MAPPING_START_EVENT:
            if (++count > KCFG_MAX_NODES) {
                rc = errf(err, errlen, MK_ERR_INVAL, "YAML has more than %d nodes", KCFG_MAX_NODES);
                break;
            }
            if ((rc = ynode_new(&ev, &y, err, errlen)))
                break;
            if (depth == 0) {
                root = y;
            } else if (stack[depth - 1]->type == Y_MAP && stack[depth - 1]->n % 2 == 0 &&
                       y->type == Y_SCALAR && is_merge_key(&ev)) {
                ynode_free(y);
                rc = errf(err, errlen, MK_ERR_INVAL,
                          "YAML merge keys (<<) are not allowed (line %zu): other readers "
                          "would merge fields this check never sees",
                          ev.start_mark.line + 1);
                break;
            } else if (stack[depth - 1]->type == Y_MAP && stack[depth - 1]->n % 2 == 0 &&
                       y->type != Y_SCALAR) {
                ynode_free(y);
                rc = errf(err, errlen, MK_ERR_INVAL, "YAML mapping keys must be strings (line %zu)",
                          ev.start_mark.line + 1);
                break;
            } else if (ynode_add(stack[depth - 1], y) < 0) {
                ynode_free(y);
                rc = errf(err, errlen, MK_ERR_NOMEM, "out of memory");
                break;
            }
            if (y->type != Y_SCALAR) {
                if (depth == KCFG_MAX_DEPTH)
                    rc = errf(err, errlen, MK_ERR_INVAL, "YAML nested deeper than %d levels",
                              KCFG_MAX_DEPTH);
                else
                    stack[depth++] = y;
            }
            break;
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT:
            depth--;
            break;
        default:
            break;
        }
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&p);
    if (!rc && (!root || root->is_null))
        rc = errf(err, errlen, MK_ERR_INVAL, "kubeconfig is empty");
    if (!rc && root->type != Y_MAP)
        rc = errf(err, errlen, MK_ERR_INVAL, "kubeconfig must be a YAML mapping");
    if (rc)
        ynode_free(root);
    else
        *out = root;
    return rc;
}

/* ---- typed access with field paths in errors ----------------------------- */

struct pctx {
    char *err;
    size_t errlen;
    int flags;
    const char *base; /* folder for relative file paths */
};

/* Writes "<path>.<key>: <message>" (either part may be empty); returns rc. */
static int vferr(struct pctx *pc, int rc, const char *path, const char *key, const char *fmt,
                 va_list ap)
{
    char msg[512];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    return errf(pc->err, pc->errlen, rc, "%s%s%s: %s", path, *path && key ? "." : "",
                key ? key : "", msg);
}

/* A malformed field: MK_ERR_INVAL. */
static int ferr(struct pctx *pc, const char *path, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int ferr(struct pctx *pc, const char *path, const char *key, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = vferr(pc, MK_ERR_INVAL, path, key, fmt, ap);
    va_end(ap);
    return rc;
}

/* A well-formed field a safety rule refuses: MK_ERR_REFUSED. */
static int refuse(struct pctx *pc, const char *path, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int refuse(struct pctx *pc, const char *path, const char *key, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = vferr(pc, MK_ERR_REFUSED, path, key, fmt, ap);
    va_end(ap);
    return rc;
}

/* Value of m[key] with the given type, or NULL when absent or null. A key
 * found twice is an error: two readers could otherwise disagree on it. */
static int get(struct pctx *pc, const struct ynode *m, const char *path, const char *key,
               enum ytype type, const struct ynode **out)
{
    const struct ynode *v = NULL;
    *out = NULL;
    for (size_t i = 0; i + 1 < m->n; i += 2) {
        if (strcmp(m->kids[i]->str, key) != 0)
            continue;
        if (v)
            return ferr(pc, path, key, "duplicate key");
        v = m->kids[i + 1];
    }
    if (!v || v->is_null)
        return 0;
    if (v->type != type)
        return ferr(pc, path, key, "must be %s", ytype_names[type]);
    *out = v;
    return 0;
}

/* String value of m[key]; absent, null and "" all give NULL. */
static int get_str(struct pctx *pc, const struct ynode *m, const char *path, const char *key,
                   const char **out)
{
    const struct ynode *v;
    int rc = get(pc, m, path, key, Y_SCALAR, &v);
    *out = v && v->str[0] ? v->str : NULL;
    return rc;
}

/* YAML 1.1 booleans, as the Go YAML decoder behind kubectl reads them. */
static int get_bool(struct pctx *pc, const struct ynode *m, const char *path, const char *key,
                    int *out)
{
    static const char *const yes[] = {"true", "yes", "on", "y"};
    static const char *const no[] = {"false", "no", "off", "n"};
    const char *s;
    int rc = get_str(pc, m, path, key, &s);
    *out = 0;
    if (rc || !s)
        return rc;
    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
        if (!strcasecmp(s, yes[i]) || !strcasecmp(s, no[i])) {
            *out = !strcasecmp(s, yes[i]);
            return 0;
        }
    }
    return ferr(pc, path, key, "must be a boolean");
}

static int present(struct pctx *pc, const struct ynode *m, const char *path, const char *key,
                   int *out)
{
    *out = 0;
    for (size_t i = 0; i + 1 < m->n; i += 2) {
        if (strcmp(m->kids[i]->str, key) != 0)
            continue;
        if (*out)
            return ferr(pc, path, key, "duplicate key");
        *out = !m->kids[i + 1]->is_null;
    }
    return 0;
}

/* Finds the entry of root[list] named `name` (e.g. clusters[] with name "a")
 * and returns its inner mapping (entry[noun], e.g. .cluster), with its field
 * path written into `path`. */
static int find_named(struct pctx *pc, const struct ynode *root, const char *list, const char *noun,
                      const char *name, const struct ynode **out, char *path, size_t pathlen)
{
    const struct ynode *seq, *hit = NULL;
    size_t hit_i = 0;
    int rc = get(pc, root, "", list, Y_SEQ, &seq);
    if (rc)
        return rc;
    for (size_t i = 0; seq && i < seq->n; i++) {
        const struct ynode *e = seq->kids[i];
        const char *n;
        snprintf(path, pathlen, "%s[%zu]", list, i);
        if (e->type != Y_MAP)
            return ferr(pc, path, NULL, "must be a mapping");
        if ((rc = get_str(pc, e, path, "name", &n)))
            return rc;
        if (!n || strcmp(n, name) != 0)
            continue;
        if (hit)
            return ferr(pc, path, NULL, "duplicate %s name \"%.100s\"", noun, name);
        hit = e;
        hit_i = i;
    }
    if (!hit)
        return errf(pc->err, pc->errlen, MK_ERR_INVAL, "%s \"%.100s\" not found", noun, name);
    snprintf(path, pathlen, "%s[%zu]", list, hit_i);
    if ((rc = get(pc, hit, path, noun, Y_MAP, out)))
        return rc;
    if (!*out)
        return ferr(pc, path, noun, "is required");
    snprintf(path, pathlen, "%s[%zu].%s", list, hit_i, noun);
    return 0;
}

/* ---- value checks --------------------------------------------------------- */

static int valid_dns(const char *s, size_t n)
{
    size_t label = 0;
    if (n == 0 || n > 253)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '.') {
            if (label == 0 || s[i - 1] == '-')
                return 0;
            label = 0;
        } else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                   (c == '-' && label > 0)) {
            if (++label > 63)
                return 0;
        } else {
            return 0;
        }
    }
    return label > 0 && s[n - 1] != '-';
}

static int valid_ip(const char *s, size_t n, int af)
{
    char tmp[INET6_ADDRSTRLEN];
    unsigned char addr[sizeof(struct in6_addr)];
    if (n == 0 || n >= sizeof(tmp))
        return 0;
    memcpy(tmp, s, n);
    tmp[n] = '\0';
    return inet_pton(af, tmp, addr) == 1;
}

static int valid_port(const char *s, size_t n)
{
    unsigned v = 0;
    if (n == 0 || n > 5)
        return 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return 0;
        v = v * 10 + (unsigned)(s[i] - '0');
    }
    return v >= 1 && v <= 65535;
}

/* https://host[:port][/prefix] with host a DNS name, IPv4 or [IPv6]. */
static int check_server(struct pctx *pc, const char *path, const char *url)
{
    const char *h = url + 8, *port = NULL;
    size_t hlen, plen = 0;
    if (strncasecmp(url, "https://", 8) != 0)
        return refuse(pc, path, "server", "only https:// servers are allowed");
    for (const char *c = url; *c; c++)
        if ((unsigned char)*c <= 0x20 || (unsigned char)*c >= 0x7f || *c == '?' || *c == '#' ||
            *c == '@')
            return refuse(pc, path, "server", "invalid character in server URL");
    hlen = strcspn(h, "/");
    if (h[0] == '[') {
        const char *end = memchr(h, ']', hlen);
        if (!end || !valid_ip(h + 1, (size_t)(end - h - 1), AF_INET6))
            return refuse(pc, path, "server", "untrusted server endpoint (invalid IPv6 address)");
        if (end + 1 < h + hlen) {
            if (end[1] != ':')
                return refuse(pc, path, "server", "untrusted server endpoint");
            port = end + 2;
            plen = (size_t)(h + hlen - port);
        }
    } else {
        const char *colon = memchr(h, ':', hlen);
        size_t n = colon ? (size_t)(colon - h) : hlen;
        if (colon) {
            port = colon + 1;
            plen = (size_t)(h + hlen - port);
        }
        if (!valid_dns(h, n) && !valid_ip(h, n, AF_INET))
            return refuse(pc, path, "server",
                          "untrusted server endpoint (host is neither a DNS name nor an IP)");
    }
    if (port && !valid_port(port, plen))
        return refuse(pc, path, "server", "untrusted server endpoint (invalid port)");
    return 0;
}

/* A bearer token goes into an HTTP header: visible ASCII only, no CR/LF. */
static int valid_token(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s <= 0x20 || (unsigned char)*s >= 0x7f)
            return 0;
    return 1;
}

static void free_secret(char *p, size_t n)
{
    if (p)
        OPENSSL_cleanse(p, n);
    free(p);
}

static void free_secret_str(char *p)
{
    free_secret(p, p ? strlen(p) : 0);
}

/* Strict standard base64 (Go's StdEncoding, what kubectl accepts); spaces
 * and line breaks are ignored. *out is NUL-terminated. */
int kcfg_base64_decode(const char *s, char **out, size_t *outlen)
{
    size_t n = strlen(s), m = 0, pad = 0;
    char *clean = malloc(n + 1);
    unsigned char *dst = NULL;
    int rc = MK_ERR_INVAL, r;
    if (!clean)
        return MK_ERR_NOMEM;
    for (size_t i = 0; i < n; i++)
        if (!strchr(" \t\r\n", s[i]))
            clean[m++] = s[i];
    if (m == 0 || m % 4 != 0)
        goto out;
    pad = clean[m - 1] == '=' ? (clean[m - 2] == '=' ? 2 : 1) : 0;
    if (memchr(clean, '=', m - pad)) /* padding only at the very end */
        goto out;
    if (!(dst = malloc(m / 4 * 3 + 1))) {
        rc = MK_ERR_NOMEM;
        goto out;
    }
    r = EVP_DecodeBlock(dst, (const unsigned char *)clean, (int)m);
    if (r < 0 || (size_t)r < pad)
        goto out;
    r -= (int)pad;
    dst[r] = '\0';
    *out = (char *)dst;
    *outlen = (size_t)r;
    dst = NULL;
    rc = 0;
out:
    free_secret(clean, n + 1);
    free(dst);
    return rc;
}

static int no_passphrase(char *buf, int size, int rwflag, void *u)
{
    (void)buf, (void)size, (void)rwflag, (void)u;
    return -1; /* never prompt on a terminal for an encrypted key */
}

/* True when the PEM holds at least one certificate (or a private key). */
static int pem_ok(const char *pem, size_t len, int want_key)
{
    BIO *b = BIO_new_mem_buf(pem, (int)len);
    int ok = 0;
    if (!b)
        return 0;
    if (want_key) {
        EVP_PKEY *k = PEM_read_bio_PrivateKey(b, NULL, no_passphrase, NULL);
        ok = k != NULL;
        EVP_PKEY_free(k);
    } else {
        X509 *x = PEM_read_bio_X509(b, NULL, no_passphrase, NULL);
        ok = x != NULL;
        X509_free(x);
    }
    BIO_free(b);
    ERR_clear_error();
    return ok;
}

/* Reads `key-data` (base64) or, trusted only, the file `key` into *out. */
static int get_pem(struct pctx *pc, const struct ynode *m, const char *path, const char *key,
                   int want_key, char **out, size_t *outlen)
{
    char dkey[64];
    const char *file, *data, *used;
    char *full = NULL;
    int rc;

    snprintf(dkey, sizeof(dkey), "%s-data", key);
    if ((rc = get_str(pc, m, path, key, &file)) || (rc = get_str(pc, m, path, dkey, &data)))
        return rc;
    if (file && !(pc->flags & KCFG_TRUSTED))
        return refuse(pc, path, key, "file paths are not allowed, use %s", dkey);
    if (file && data)
        return ferr(pc, path, key, "%s and %s are both set", key, dkey);
    if (data) {
        used = dkey;
        rc = kcfg_base64_decode(data, out, outlen);
        if (rc == MK_ERR_INVAL)
            return ferr(pc, path, dkey, "invalid base64");
    } else if (file) {
        used = key;
        if (!(full = fio_join(pc->base, file)))
            return errf(pc->err, pc->errlen, MK_ERR_NOMEM, "out of memory");
        rc = fio_read_file(full, KCFG_MAX_BYTES, out, outlen);
        if (rc && rc != MK_ERR_NOMEM)
            ferr(pc, path, key, "open %.200s: %s", full, fio_strerror(rc));
        free(full);
    } else {
        return 0;
    }
    if (rc == MK_ERR_NOMEM)
        return errf(pc->err, pc->errlen, rc, "out of memory");
    if (rc)
        return rc;
    if (!pem_ok(*out, *outlen, want_key))
        return ferr(pc, path, used,
                    want_key ? "no PEM private key found" : "no PEM certificate found");
    return 0;
}

/* ---- token file ----------------------------------------------------------- */

static int read_token(const char *path, char **out)
{
    char *t = NULL, *s, *e;
    size_t len;
    int rc = fio_read_file(path, TOKEN_MAX, &t, &len);
    if (rc)
        return rc;
    for (s = t; *s && strchr(" \t\r\n", *s); s++)
        ;
    for (e = t + strlen(t); e > s && strchr(" \t\r\n", e[-1]); e--)
        ;
    *e = '\0';
    if (!*s || !valid_token(s)) {
        free_secret(t, len);
        return MK_ERR_INVAL;
    }
    memmove(t, s, (size_t)(e - s) + 1);
    *out = t;
    return 0;
}

/* Re-reads token_file when it changed. Caller holds cfg->lock (or owns cfg
 * alone). On failure the previous token stays. */
static int token_refresh(struct kcfg *cfg)
{
    struct stat st;
    char *t;
    int rc;
    if (stat(cfg->token_file, &st) < 0)
        return MK_ERR_IO;
    if (cfg->file_token && st.st_ino == cfg->file_ino &&
        st.st_mtim.tv_sec == cfg->file_mtime.tv_sec &&
        st.st_mtim.tv_nsec == cfg->file_mtime.tv_nsec)
        return 0;
    if ((rc = read_token(cfg->token_file, &t)))
        return rc;
    free_secret_str(cfg->file_token);
    cfg->file_token = t;
    cfg->file_mtime = st.st_mtim;
    cfg->file_ino = st.st_ino;
    return 0;
}

static const char *token_error(int rc)
{
    return rc == MK_ERR_INVAL ? "empty or invalid token" : fio_strerror(rc);
}

char *kcfg_bearer_token(struct kcfg *cfg)
{
    char *r = NULL;
    if (!cfg)
        return NULL;
    pthread_mutex_lock(&cfg->lock);
    if (cfg->token_file) {
        int rc = token_refresh(cfg);
        if (rc && rc != cfg->file_err)
            LOG_W("kube_config", "cannot re-read token file, keeping the previous token", "path",
                  cfg->token_file, "error", token_error(rc));
        cfg->file_err = rc;
    }
    const char *t = cfg->file_token ? cfg->file_token : cfg->token;
    if (t)
        r = strdup(t);
    pthread_mutex_unlock(&cfg->lock);
    return r;
}

/* ---- building a config ---------------------------------------------------- */

static struct kcfg *kcfg_new(void)
{
    struct kcfg *cfg = calloc(1, sizeof(*cfg));
    if (cfg && pthread_mutex_init(&cfg->lock, NULL) != 0) {
        free(cfg);
        return NULL;
    }
    return cfg;
}

void kcfg_free(struct kcfg *cfg)
{
    if (!cfg)
        return;
    free(cfg->server);
    free(cfg->context);
    free(cfg->namespace);
    free(cfg->ca_pem);
    free(cfg->cert_pem);
    free_secret(cfg->key_pem, cfg->key_len);
    free_secret_str(cfg->token);
    free(cfg->token_file);
    free(cfg->tls_server_name);
    free_secret_str(cfg->file_token);
    pthread_mutex_destroy(&cfg->lock);
    free(cfg);
}

static int dup_to(struct pctx *pc, char **dst, const char *s)
{
    if (!(*dst = strdup(s)))
        return errf(pc->err, pc->errlen, MK_ERR_NOMEM, "out of memory");
    return 0;
}

/* Refusals carry Kueue's words (its validateKubeconfig), name = the
 * kubeconfig's name of the cluster. */
static int parse_cluster(struct pctx *pc, const struct ynode *c, const char *path, const char *name,
                         struct kcfg *cfg)
{
    const char *s;
    int b, rc;

    if ((rc = get_str(pc, c, path, "server", &s)))
        return rc;
    if (!s)
        return refuse(pc, path, "server", "server URL is required for cluster %s", name);
    if ((rc = check_server(pc, path, s)) || (rc = dup_to(pc, &cfg->server, s)))
        return rc;
    memcpy(cfg->server, "https://", 8); /* the scheme in lower case, for simple prefix checks */
    for (size_t n = strlen(cfg->server); n > 8 && cfg->server[n - 1] == '/'; n--)
        cfg->server[n - 1] = '\0';

    if ((rc = get_bool(pc, c, path, "insecure-skip-tls-verify", &b)))
        return rc;
    if (b)
        return refuse(pc, path, "insecure-skip-tls-verify",
                      "insecure TLS verification is not allowed for cluster %s", name);
    if ((rc = get_str(pc, c, path, "proxy-url", &s)))
        return rc;
    if (s)
        return refuse(pc, path, "proxy-url",
                      pc->flags & KCFG_TRUSTED ? "proxies are not supported"
                                               : "proxies are not allowed");
    if ((rc = get_str(pc, c, path, "tls-server-name", &s)))
        return rc;
    if (s) {
        size_t n = strlen(s);
        if (!valid_dns(s, n) && !valid_ip(s, n, AF_INET) && !valid_ip(s, n, AF_INET6))
            return ferr(pc, path, "tls-server-name", "must be a DNS name or an IP address");
        if ((rc = dup_to(pc, &cfg->tls_server_name, s)))
            return rc;
    }
    if ((rc = get_str(pc, c, path, "certificate-authority", &s)))
        return rc;
    if (s && !(pc->flags & KCFG_TRUSTED))
        return refuse(pc, path, "certificate-authority",
                      "certificate-authority file paths are not allowed, use "
                      "certificate-authority-data for cluster %s",
                      name);
    return get_pem(pc, c, path, "certificate-authority", 0, &cfg->ca_pem, &cfg->ca_len);
}

static int parse_user(struct pctx *pc, const struct ynode *u, const char *path, struct kcfg *cfg)
{
    static const struct {
        const char *key, *why;
        int unsafe; /* a safety rule, not a missing feature */
    } refused[] = {
        {"exec", "exec credential plugins are not allowed", 1},
        {"auth-provider", "auth providers are not allowed", 1},
        {"username", "basic auth is not allowed", 1},
        {"password", "basic auth is not allowed", 1},
        {"as", "impersonation is not supported", 0},
        {"as-uid", "impersonation is not supported", 0},
        {"as-groups", "impersonation is not supported", 0},
        {"as-user-extra", "impersonation is not supported", 0},
    };
    const char *s;
    int p, rc;

    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        if ((rc = present(pc, u, path, refused[i].key, &p)))
            return rc;
        if (p && refused[i].unsafe)
            return refuse(pc, path, refused[i].key, "%s", refused[i].why);
        if (p)
            return ferr(pc, path, refused[i].key, "%s", refused[i].why);
    }
    if ((rc = get_str(pc, u, path, "token", &s)))
        return rc;
    if (s) {
        if (!valid_token(s))
            return ferr(pc, path, "token", "contains characters not allowed in a bearer token");
        if ((rc = dup_to(pc, &cfg->token, s)))
            return rc;
    }
    if ((rc = get_str(pc, u, path, "tokenFile", &s)))
        return rc;
    if (s) {
        if (!(pc->flags & KCFG_TRUSTED))
            return refuse(pc, path, "tokenFile", "tokenFile is not allowed"); /* Kueue's words */
        if (!(cfg->token_file = fio_join(pc->base, s)))
            return errf(pc->err, pc->errlen, MK_ERR_NOMEM, "out of memory");
        if ((rc = token_refresh(cfg)))
            return ferr(pc, path, "tokenFile", "%.200s: %s", cfg->token_file, token_error(rc));
    }
    if ((rc = get_pem(pc, u, path, "client-certificate", 0, &cfg->cert_pem, &cfg->cert_len)) ||
        (rc = get_pem(pc, u, path, "client-key", 1, &cfg->key_pem, &cfg->key_len)))
        return rc;
    if (!cfg->cert_pem != !cfg->key_pem)
        return ferr(pc, path, NULL, "client certificate and client key must be set together");
    return 0;
}

int kcfg_parse(const char *yaml, size_t len, const char *context, int flags, const char *path_base,
               struct kcfg **out, char *err, size_t errlen)
{
    struct pctx pc = {err, errlen, flags, path_base};
    struct ynode *root = NULL;
    struct kcfg *cfg = NULL;
    const struct ynode *ctx, *cluster, *user;
    const char *s;
    char xpath[64], cpath[64], upath[64];
    int rc;

    *out = NULL;
    if (err && errlen)
        err[0] = '\0';
    if (len > KCFG_MAX_BYTES)
        return errf(err, errlen, MK_ERR_TOOBIG, "kubeconfig is larger than %d bytes",
                    KCFG_MAX_BYTES);
    if ((rc = yaml_load(yaml, len, &root, err, errlen)))
        return rc;
    if (!context || !*context) {
        if ((rc = get_str(&pc, root, "", "current-context", &context)))
            goto out;
        if (!context) {
            rc = errf(err, errlen, MK_ERR_INVAL, "current-context is not set");
            goto out;
        }
    }
    if ((rc = find_named(&pc, root, "contexts", "context", context, &ctx, xpath, sizeof(xpath))))
        goto out;
    if (!(cfg = kcfg_new())) {
        rc = errf(err, errlen, MK_ERR_NOMEM, "out of memory");
        goto out;
    }
    if ((rc = dup_to(&pc, &cfg->context, context)))
        goto out;
    if ((rc = get_str(&pc, ctx, xpath, "namespace", &s)) ||
        (s && (rc = dup_to(&pc, &cfg->namespace, s))))
        goto out;

    if ((rc = get_str(&pc, ctx, xpath, "cluster", &s)))
        goto out;
    if (!s) {
        rc = ferr(&pc, xpath, "cluster", "is required");
        goto out;
    }
    if ((rc = find_named(&pc, root, "clusters", "cluster", s, &cluster, cpath, sizeof(cpath))) ||
        (rc = parse_cluster(&pc, cluster, cpath, s, cfg)))
        goto out;

    /* no user: anonymous access, which is legitimate */
    if ((rc = get_str(&pc, ctx, xpath, "user", &s)) || !s)
        goto out;
    if ((rc = find_named(&pc, root, "users", "user", s, &user, upath, sizeof(upath))) ||
        (rc = parse_user(&pc, user, upath, cfg)))
        goto out;
out:
    ynode_free(root);
    if (rc)
        kcfg_free(cfg);
    else
        *out = cfg;
    return rc;
}

int kcfg_load_file(const char *path, const char *context, int flags, struct kcfg **out, char *err,
                   size_t errlen)
{
    char *data = NULL, *dir = NULL;
    size_t len = 0;
    int rc;

    *out = NULL;
    rc = fio_read_file(path, KCFG_MAX_BYTES, &data, &len);
    if (rc == MK_ERR_TOOBIG)
        return errf(err, errlen, rc, "%s: kubeconfig is larger than %d bytes", path,
                    KCFG_MAX_BYTES);
    if (rc)
        return errf(err, errlen, rc, "open %s: %s", path, fio_strerror(rc));
    if (!(dir = strdup(path))) {
        rc = errf(err, errlen, MK_ERR_NOMEM, "out of memory");
        goto out;
    }
    rc = kcfg_parse(data, len, context, flags, dirname(dir), out, err, errlen);
out:
    free_secret(data, len);
    free(dir);
    return rc;
}

int kcfg_in_cluster(const char *sa_dir, struct kcfg **out, char *err, size_t errlen)
{
    const char *host = getenv("KUBERNETES_SERVICE_HOST");
    const char *port = getenv("KUBERNETES_SERVICE_PORT");
    struct kcfg *cfg = NULL;
    char *path = NULL;
    int rc = MK_ERR_NOMEM, v6;

    *out = NULL;
    if (!host || !*host || !port || !*port)
        return errf(err, errlen, MK_ERR_INVAL,
                    "unable to load in-cluster configuration, KUBERNETES_SERVICE_HOST and "
                    "KUBERNETES_SERVICE_PORT must be defined");
    v6 = strchr(host, ':') != NULL;
    if (!(v6 ? valid_ip(host, strlen(host), AF_INET6)
             : valid_dns(host, strlen(host)) || valid_ip(host, strlen(host), AF_INET)) ||
        !valid_port(port, strlen(port)))
        return errf(err, errlen, MK_ERR_INVAL,
                    "invalid KUBERNETES_SERVICE_HOST or KUBERNETES_SERVICE_PORT");
    if (!sa_dir)
        sa_dir = DEFAULT_SA_DIR;
    if (!(cfg = kcfg_new()))
        return errf(err, errlen, MK_ERR_NOMEM, "out of memory");
    if (asprintf(&path, v6 ? "https://[%s]:%s" : "https://%s:%s", host, port) < 0) {
        path = NULL; /* undefined after a failed asprintf */
        goto out;
    }
    cfg->server = path;
    if (!(path = fio_join(sa_dir, "ca.crt")) || !(cfg->token_file = fio_join(sa_dir, "token")))
        goto out;
    if ((rc = fio_read_file(path, KCFG_MAX_BYTES, &cfg->ca_pem, &cfg->ca_len))) {
        if (rc != MK_ERR_NOMEM)
            errf(err, errlen, rc, "open %s: %s", path, fio_strerror(rc));
        goto out;
    }
    if (!pem_ok(cfg->ca_pem, cfg->ca_len, 0)) {
        rc = errf(err, errlen, MK_ERR_INVAL, "%s: no PEM certificate found", path);
        goto out;
    }
    if ((rc = token_refresh(cfg))) {
        errf(err, errlen, rc, "%s: %s", cfg->token_file, token_error(rc));
        goto out;
    }
    free(path);
    if (!(path = fio_join(sa_dir, "namespace"))) {
        rc = MK_ERR_NOMEM;
        goto out;
    }
    (void)read_token(path, &cfg->namespace); /* optional */
out:
    if (rc == MK_ERR_NOMEM)
        errf(err, errlen, rc, "out of memory");
    free(path);
    if (rc)
        kcfg_free(cfg);
    else
        *out = cfg;
    return rc;
}
