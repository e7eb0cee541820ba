#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kube_config.h"
#include "log.h"
#include "tls.h"

/* PEM material and its base64, made once */
static char *ca_pem, *ca_key, *cert_pem, *key_pem;
static char *ca_b64, *cert_b64, *key_b64;

static char *b64(const char *s)
{
    size_t n = strlen(s);
    char *out = malloc(4 * ((n + 2) / 3) + 1);
    assert_non_null(out);
    EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)s, (int)n);
    return out;
}

static int setup(void **state)
{
    char err[256];
    struct tls_cert_opts o = {
        .cn = "admin", .org = "system:masters", .days = 1, .usage = TLS_CLIENT_AUTH};
    (void)state;
    if (tls_gen_ca("kcfg-test-ca", 1, &ca_pem, &ca_key, err, sizeof(err)) ||
        tls_gen_cert(ca_pem, ca_key, &o, &cert_pem, &key_pem, err, sizeof(err)))
        return -1;
    ca_b64 = b64(ca_pem);
    cert_b64 = b64(cert_pem);
    key_b64 = b64(key_pem);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char *all[] = {ca_pem, ca_key, cert_pem, key_pem, ca_b64, cert_b64, key_b64};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        free(all[i]);
    return 0;
}

/* ---- helpers -------------------------------------------------------------- */

static char *fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
static char *fmt(const char *f, ...)
{
    char *s = NULL;
    va_list ap;
    va_start(ap, f);
    assert_true(vasprintf(&s, f, ap) >= 0);
    va_end(ap);
    return s;
}

static int parse(const char *yaml, const char *ctx, int flags, const char *base, struct kcfg **out,
                 char *err, size_t errlen)
{
    return kcfg_parse(yaml, strlen(yaml), ctx, flags, base, out, err, errlen);
}

/* Asserts that parsing fails with an error containing `want`; returns the code. */
static int expect_error(const char *yaml, int flags, const char *want)
{
    struct kcfg *cfg = (struct kcfg *)1;
    char err[512] = "";
    int rc = parse(yaml, NULL, flags, NULL, &cfg, err, sizeof(err));
    if (rc >= 0 || !strstr(err, want))
        fail_msg("yaml:\n%s\nwant error containing \"%s\", got rc=%d \"%s\"", yaml, want, rc, err);
    assert_null(cfg);
    return rc;
}

static void write_file(const char *path, const char *content)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(fputs(content, f) >= 0, 1);
    assert_int_equal(fclose(f), 0);
}

/* Sets the file's mtime to now + delta seconds, so a rewrite within the same
 * clock tick still counts as a change. */
static void touch(const char *path, long delta)
{
    struct timespec ts[2];
    clock_gettime(CLOCK_REALTIME, &ts[0]);
    ts[0].tv_sec += delta;
    ts[1] = ts[0];
    assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
}

static void rm_tree(const char *dir, const char *const *names)
{
    char p[512];
    for (size_t i = 0; names[i]; i++) {
        snprintf(p, sizeof(p), "%s/%s", dir, names[i]);
        unlink(p);
    }
    rmdir(dir);
}

static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p++)
        n++;
    return n;
}

static void expect_token(struct kcfg *cfg, const char *want)
{
    char *t = kcfg_bearer_token(cfg);
    if (!want) {
        assert_null(t);
        return;
    }
    assert_non_null(t);
    assert_string_equal(t, want);
    free(t);
}

/* ---- happy paths ---------------------------------------------------------- */

static char *two_contexts(void)
{
    return fmt("apiVersion: v1\n"
               "kind: Config\n"
               "clusters:\n"
               "- name: one\n"
               "  cluster:\n"
               "    server: https://one.example:6443/\n"
               "    certificate-authority-data: %s\n"
               "- name: two\n"
               "  cluster:\n"
               "    server: https://10.0.0.2:443/prefix//\n"
               "    tls-server-name: kubernetes.default.svc\n"
               "    insecure-skip-tls-verify: false\n"
               "    extensions: [{name: x, extension: {a: 1}}]\n"
               "users:\n"
               "- name: alice\n"
               "  user:\n"
               "    client-certificate-data: %s\n"
               "    client-key-data: %s\n"
               "    exec: null\n"
               "- name: bob\n"
               "  user: {token: \"bob-token\"}\n"
               "contexts:\n"
               "- name: ctx-one\n"
               "  context: {cluster: one, user: alice, namespace: team-a}\n"
               "- name: ctx-two\n"
               "  context:\n"
               "    cluster: two\n"
               "    user: bob\n"
               "current-context: ctx-one\n"
               "preferences: {}\n",
               ca_b64, cert_b64, key_b64);
}

static void test_current_context(void **state)
{
    (void)state;
    char *y = two_contexts(), err[256];
    struct kcfg *cfg = NULL;

    assert_int_equal(parse(y, NULL, KCFG_UNTRUSTED, NULL, &cfg, err, sizeof(err)), 0);
    assert_string_equal(cfg->server, "https://one.example:6443");
    assert_string_equal(cfg->context, "ctx-one");
    assert_string_equal(cfg->namespace, "team-a");
    assert_int_equal(cfg->ca_len, strlen(ca_pem));
    assert_string_equal(cfg->ca_pem, ca_pem);
    assert_int_equal(cfg->cert_len, strlen(cert_pem));
    assert_string_equal(cfg->cert_pem, cert_pem);
    assert_int_equal(cfg->key_len, strlen(key_pem));
    assert_string_equal(cfg->key_pem, key_pem);
    assert_null(cfg->token);
    assert_null(cfg->tls_server_name);
    expect_token(cfg, NULL);
    kcfg_free(cfg);
    free(y);
}

static void test_named_context(void **state)
{
    (void)state;
    char *y = two_contexts(), err[256];
    struct kcfg *cfg = NULL;

    assert_int_equal(parse(y, "ctx-two", KCFG_UNTRUSTED, NULL, &cfg, err, sizeof(err)), 0);
    assert_string_equal(cfg->server, "https://10.0.0.2:443/prefix");
    assert_string_equal(cfg->context, "ctx-two");
    assert_null(cfg->namespace);
    assert_null(cfg->ca_pem);
    assert_null(cfg->cert_pem);
    assert_null(cfg->key_pem);
    assert_string_equal(cfg->tls_server_name, "kubernetes.default.svc");
    assert_string_equal(cfg->token, "bob-token");
    expect_token(cfg, "bob-token");
    kcfg_free(cfg);

    assert_true(parse(y, "nope", KCFG_UNTRUSTED, NULL, &cfg, err, sizeof(err)) < 0);
    assert_string_equal(err, "context \"nope\" not found");
    assert_null(cfg);
    free(y);
}

static void test_no_user_is_anonymous(void **state)
{
    (void)state;
    const char *y = "clusters: [{name: c, cluster: {server: 'https://[fd00::1]:6443'}}]\n"
                    "contexts: [{name: x, context: {cluster: c}}]\n"
                    "current-context: x\n";
    struct kcfg *cfg = NULL;
    char err[256];
    assert_int_equal(parse(y, NULL, KCFG_UNTRUSTED, NULL, &cfg, err, sizeof(err)), 0);
    assert_string_equal(cfg->server, "https://[fd00::1]:6443");
    expect_token(cfg, NULL);
    kcfg_free(cfg);
}

static void test_selection_errors(void **state)
{
    (void)state;
    expect_error("clusters: []\ncontexts: []\n", 0, "current-context is not set");
    expect_error("current-context: \"\"\n", 0, "current-context is not set");
    expect_error("current-context: x\n", 0, "context \"x\" not found");
    expect_error("current-context: x\ncontexts: [{name: x, context: {cluster: c}}]\n", 0,
                 "cluster \"c\" not found");
    expect_error("current-context: x\ncontexts: [{name: x, context: {user: u}}]\n", 0,
                 "contexts[0].context.cluster: is required");
    expect_error("current-context: x\n"
                 "clusters: [{name: c, cluster: {server: 'https://a'}}]\n"
                 "contexts: [{name: y}, {name: x, context: {cluster: c, user: u}}]\n",
                 0, "user \"u\" not found");
    expect_error("current-context: x\ncontexts: [{name: x}]\n", 0,
                 "contexts[0].context: is required");
    expect_error("current-context: x\n"
                 "contexts: [{name: x, context: {cluster: c}}, {name: x, context: {}}]\n",
                 0, "contexts[1]: duplicate context name \"x\"");
    expect_error("current-context: x\ncurrent-context: y\n", 0, "current-context: duplicate key");
    expect_error("current-context: x\n"
                 "clusters: [{name: c, cluster: {server: 'https://a', server: 'https://b'}}]\n"
                 "contexts: [{name: x, context: {cluster: c}}]\n",
                 0, "clusters[0].cluster.server: duplicate key");
}

/* ---- base64 --------------------------------------------------------------- */

static char *with_ca_data(const char *data)
{
    return fmt("clusters:\n"
               "- name: c\n"
               "  cluster:\n"
               "    server: https://k.example\n"
               "    certificate-authority-data: %s\n"
               "contexts: [{name: x, context: {cluster: c}}]\n"
               "current-context: x\n",
               data);
}

static void test_base64_wrapped_lines(void **state)
{
    (void)state;
    /* a folded block scalar keeps the line breaks: the decoder skips them */
    size_t n = strlen(ca_b64);
    size_t cap = n * 2 + 64, w;
    char *wrapped = calloc(1, cap), *y, err[256];
    struct kcfg *cfg = NULL;
    assert_non_null(wrapped);
    w = (size_t)snprintf(wrapped, cap, "|\n");
    for (size_t i = 0; i < n; i += 64)
        w += (size_t)snprintf(wrapped + w, cap - w, "      %.64s\n", ca_b64 + i);
    assert_true(w < cap);
    y = with_ca_data(wrapped);
    assert_int_equal(parse(y, NULL, 0, NULL, &cfg, err, sizeof(err)), 0);
    assert_string_equal(cfg->ca_pem, ca_pem);
    assert_int_equal(cfg->ca_len, strlen(ca_pem));
    kcfg_free(cfg);
    free(y);
    free(wrapped);
}

static void test_base64_invalid(void **state)
{
    (void)state;
    const char *bad[] = {"'@@@@'", "QQ", "Q===", "QQ==QQ==", "'QUJD*'", "'='"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char *y = with_ca_data(bad[i]);
        expect_error(y, 0, "clusters[0].cluster.certificate-authority-data: invalid base64");
        free(y);
    }
    /* valid base64, but not a certificate */
    char *y = with_ca_data("aGVsbG8gd29ybGQ=");
    expect_error(y, 0, "clusters[0].cluster.certificate-authority-data: no PEM certificate found");
    free(y);
}

static void test_bad_client_key(void **state)
{
    (void)state;
    char *y = fmt("clusters: [{name: c, cluster: {server: 'https://a'}}]\n"
                  "users:\n"
                  "- name: u\n"
                  "  user: {client-certificate-data: %s, client-key-data: %s}\n"
                  "contexts: [{name: x, context: {cluster: c, user: u}}]\n"
                  "current-context: x\n",
                  cert_b64, ca_b64);
    expect_error(y, 0, "users[0].user.client-key-data: no PEM private key found");
    free(y);
    y = fmt("clusters: [{name: c, cluster: {server: 'https://a'}}]\n"
            "users: [{name: u, user: {client-certificate-data: %s}}]\n"
            "contexts: [{name: x, context: {cluster: c, user: u}}]\n"
            "current-context: x\n",
            cert_b64);
    expect_error(y, 0, "users[0].user: client certificate and client key must be set together");
    free(y);
}

/* ---- refusals -------------------------------------------------------------- */

/* The selected user is users[1] and the selected cluster clusters[0]; the
 * entries not selected hold settings that would be refused, and are not
 * looked at. */
static char *kubeconfig(const char *server, const char *cluster_extra, const char *user_extra)
{
    return fmt("clusters:\n"
               "- name: c\n"
               "  cluster:\n"
               "    server: %s\n"
               "%s\n"
               "- name: unused\n"
               "  cluster: {server: 'http://plain', insecure-skip-tls-verify: true}\n"
               "users:\n"
               "- name: unused\n"
               "  user: {exec: {command: /bin/sh}}\n"
               "- name: u\n"
               "  user:\n"
               "    token: abc\n"
               "%s\n"
               "contexts:\n"
               "- name: ctx\n"
               "  context: {cluster: c, user: u}\n"
               "current-context: ctx\n",
               server, cluster_extra, user_extra);
}

static void test_untrusted_refusals(void **state)
{
    (void)state;
    static const struct {
        const char *server, *cluster, *user, *want;
    } cases[] = {
        {NULL, "", "    exec: {command: /bin/sh, apiVersion: v1}",
         "users[1].user.exec: exec credential plugins are not allowed"},
        {NULL, "", "    exec: {}", "users[1].user.exec: exec credential plugins"},
        {NULL, "", "    auth-provider: {name: gcp}",
         "users[1].user.auth-provider: auth providers are not allowed"},
        {NULL, "", "    tokenFile: /etc/passwd",
         "users[1].user.tokenFile: tokenFile is not allowed"},
        {NULL, "", "    client-certificate: /etc/cert",
         "users[1].user.client-certificate: file paths are not allowed, use "
         "client-certificate-data"},
        {NULL, "", "    client-key: /etc/key", "users[1].user.client-key: file paths are not"},
        {NULL, "", "    username: admin", "users[1].user.username: basic auth is not allowed"},
        {NULL, "", "    password: secret", "users[1].user.password: basic auth is not allowed"},
        {NULL, "", "    as: system:admin", "users[1].user.as: impersonation is not supported"},
        {NULL, "", "    as-groups: [system:masters]", "users[1].user.as-groups: impersonation"},
        {NULL, "    certificate-authority: /etc/ca.crt", "",
         "clusters[0].cluster.certificate-authority: certificate-authority file paths are not "
         "allowed, use certificate-authority-data for cluster c"},
        {NULL, "    insecure-skip-tls-verify: true", "",
         "clusters[0].cluster.insecure-skip-tls-verify: insecure TLS verification is not "
         "allowed for cluster c"},
        {NULL, "    insecure-skip-tls-verify: yes", "", "insecure-skip-tls-verify: insecure"},
        {NULL, "    insecure-skip-tls-verify: maybe", "",
         "clusters[0].cluster.insecure-skip-tls-verify: must be a boolean"},
        {NULL, "    proxy-url: http://proxy:3128", "",
         "clusters[0].cluster.proxy-url: proxies are not allowed"},
        {NULL, "    tls-server-name: 'a b'", "",
         "clusters[0].cluster.tls-server-name: must be a DNS name or an IP address"},
        {"http://k.example", "", "", "clusters[0].cluster.server: only https:// servers"},
        {"k.example:6443", "", "", "clusters[0].cluster.server: only https:// servers"},
        {"ftp://k.example", "", "", "clusters[0].cluster.server: only https://"},
        {"''", "", "", "clusters[0].cluster.server: server URL is required for cluster c"},
        {"'https://user:pw@k.example'", "", "", "clusters[0].cluster.server: invalid character"},
        {"'https://k.example?x=1'", "", "", "clusters[0].cluster.server: invalid character"},
        {"'https://k_example'", "", "", "clusters[0].cluster.server: untrusted server endpoint"},
        {"'https://-k.example'", "", "", "untrusted server endpoint"},
        {"'https://k.example:99999'", "", "", "untrusted server endpoint (invalid port)"},
        {"'https://k.example:'", "", "", "untrusted server endpoint (invalid port)"},
        {"'https://[::1'", "", "", "untrusted server endpoint (invalid IPv6"},
        {"'https://[::1]x'", "", "", "untrusted server endpoint"},
        {"'https://'", "", "", "untrusted server endpoint"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *y = kubeconfig(cases[i].server ? cases[i].server : "https://k.example",
                             cases[i].cluster, cases[i].user);
        /* safety refusals are told apart from malformed or unsupported fields */
        int malformed = strstr(cases[i].want, "must be") || strstr(cases[i].want, "impersonation");
        assert_int_equal(expect_error(y, KCFG_UNTRUSTED, cases[i].want),
                         malformed ? MK_ERR_INVAL : MK_ERR_REFUSED);
        free(y);
    }
}

static void test_base64(void **state)
{
    (void)state;
    char *out = NULL;
    size_t len = 0;
    assert_int_equal(kcfg_base64_decode("aGk=", &out, &len), 0);
    assert_int_equal(len, 2);
    assert_string_equal(out, "hi");
    free(out);
    assert_int_equal(kcfg_base64_decode("aG\nk=\n", &out, &len), 0); /* line breaks ignored */
    assert_string_equal(out, "hi");
    free(out);
    out = NULL;
    assert_int_equal(kcfg_base64_decode("", &out, &len), MK_ERR_INVAL);
    assert_int_equal(kcfg_base64_decode("aGk", &out, &len), MK_ERR_INVAL);
    assert_int_equal(kcfg_base64_decode("a=Gk", &out, &len), MK_ERR_INVAL);
    assert_int_equal(kcfg_base64_decode("!!!!", &out, &len), MK_ERR_INVAL);
    assert_null(out);
}

static void test_token_header_injection(void **state)
{
    (void)state;
    expect_error("clusters: [{name: c, cluster: {server: 'https://a'}}]\n"
                 "users: [{name: u, user: {token: \"abc\\r\\nX-Evil: 1\"}}]\n"
                 "contexts: [{name: x, context: {cluster: c, user: u}}]\n"
                 "current-context: x\n",
                 0, "users[0].user.token: contains characters not allowed in a bearer token");
}

static void test_accepted_servers(void **state)
{
    (void)state;
    static const struct {
        const char *in, *out;
    } cases[] = {
        {"https://k.example", "https://k.example"},
        {"HTTPS://K.Example:6443/", "https://K.Example:6443"},
        {"https://10.1.2.3:6443/api-prefix/", "https://10.1.2.3:6443/api-prefix"},
        {"'https://[2001:db8::1]'", "https://[2001:db8::1]"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *y = kubeconfig(cases[i].in, "    insecure-skip-tls-verify: off", "    exec:");
        struct kcfg *cfg = NULL;
        char err[256];
        assert_int_equal(parse(y, NULL, 0, NULL, &cfg, err, sizeof(err)), 0);
        assert_string_equal(cfg->server, cases[i].out);
        expect_token(cfg, "abc");
        kcfg_free(cfg);
        free(y);
    }
}

/* ---- trusted mode ----------------------------------------------------------- */

static const char *const trusted_files[] = {"ca.crt",     "client.crt", "client.key", "token",
                                            "kubeconfig", "new-token",  NULL};

static void test_trusted_file_paths(void **state)
{
    (void)state;
    char dir[] = "/tmp/test_kcfg.XXXXXX", path[512], err[512], *y;
    struct kcfg *cfg = NULL;

    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/ca.crt", dir);
    write_file(path, ca_pem);
    snprintf(path, sizeof(path), "%s/client.crt", dir);
    write_file(path, cert_pem);
    snprintf(path, sizeof(path), "%s/client.key", dir);
    write_file(path, key_pem);
    snprintf(path, sizeof(path), "%s/token", dir);
    write_file(path, "  file-token\n");

    /* relative paths resolve against the kubeconfig's folder; one absolute */
    y = fmt("clusters: [{name: c, cluster: {server: 'https://k', certificate-authority: ca.crt}}]\n"
            "users:\n"
            "- name: u\n"
            "  user:\n"
            "    client-certificate: client.crt\n"
            "    client-key: %s/client.key\n"
            "    tokenFile: token\n"
            "    token: static-token\n"
            "contexts: [{name: x, context: {cluster: c, user: u}}]\n"
            "current-context: x\n",
            dir);
    snprintf(path, sizeof(path), "%s/kubeconfig", dir);
    write_file(path, y);
    assert_int_equal(kcfg_load_file(path, NULL, KCFG_TRUSTED, &cfg, err, sizeof(err)), 0);
    assert_string_equal(cfg->ca_pem, ca_pem);
    assert_string_equal(cfg->cert_pem, cert_pem);
    assert_string_equal(cfg->key_pem, key_pem);
    assert_non_null(strstr(cfg->token_file, "/token"));
    expect_token(cfg, "file-token"); /* the file wins over the static token */
    kcfg_free(cfg);

    /* the same file, untrusted */
    assert_true(kcfg_load_file(path, NULL, KCFG_UNTRUSTED, &cfg, err, sizeof(err)) < 0);
    assert_non_null(
        strstr(err, "clusters[0].cluster.certificate-authority: certificate-authority file paths"));

    /* parse with an explicit base, then a missing file */
    assert_int_equal(parse(y, NULL, KCFG_TRUSTED, dir, &cfg, err, sizeof(err)), 0);
    kcfg_free(cfg);
    assert_true(parse(y, NULL, KCFG_TRUSTED, "/nonexistent", &cfg, err, sizeof(err)) < 0);
    assert_non_null(strstr(err, "clusters[0].cluster.certificate-authority: open "
                                "/nonexistent/ca.crt: No such file"));
    free(y);

    /* a file that is not PEM */
    y = fmt("clusters: [{name: c, cluster: {server: 'https://k', certificate-authority: token}}]\n"
            "contexts: [{name: x, context: {cluster: c}}]\ncurrent-context: x\n");
    assert_true(parse(y, NULL, KCFG_TRUSTED, dir, &cfg, err, sizeof(err)) < 0);
    assert_non_null(strstr(err, "certificate-authority: no PEM certificate found"));
    free(y);

    /* both a file and data */
    y = fmt("clusters: [{name: c, cluster: {server: 'https://k', certificate-authority: ca.crt,"
            " certificate-authority-data: %s}}]\n"
            "contexts: [{name: x, context: {cluster: c}}]\ncurrent-context: x\n",
            ca_b64);
    assert_true(parse(y, NULL, KCFG_TRUSTED, dir, &cfg, err, sizeof(err)) < 0);
    assert_non_null(strstr(err, "are both set"));
    free(y);

    /* a missing kubeconfig */
    snprintf(path, sizeof(path), "%s/absent", dir);
    assert_int_equal(kcfg_load_file(path, NULL, KCFG_TRUSTED, &cfg, err, sizeof(err)), MK_ERR_IO);
    assert_non_null(strstr(err, "No such file"));
    rm_tree(dir, trusted_files);
}

static void test_trusted_still_refuses(void **state)
{
    (void)state;
    static const struct {
        const char *server, *cluster, *user, *want;
    } cases[] = {
        {NULL, "", "    exec: {command: x}", "users[1].user.exec: exec credential plugins"},
        {NULL, "", "    auth-provider: {name: oidc}", "users[1].user.auth-provider"},
        {NULL, "", "    password: x", "users[1].user.password: basic auth"},
        {NULL, "    insecure-skip-tls-verify: true", "", "insecure TLS verification"},
        {NULL, "    proxy-url: http://p", "", "proxy-url: proxies are not supported"},
        {"http://k", "", "", "only https:// servers"},
        {NULL, "", "    tokenFile: /nonexistent/token",
         "users[1].user.tokenFile: /nonexistent/token: No such file"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *y = kubeconfig(cases[i].server ? cases[i].server : "https://k.example",
                             cases[i].cluster, cases[i].user);
        expect_error(y, KCFG_TRUSTED, cases[i].want);
        free(y);
    }
}

static void test_token_rotation(void **state)
{
    (void)state;
    char dir[] = "/tmp/test_kcfg.XXXXXX", tok[512], tmp[512], err[256], *y;
    struct kcfg *cfg = NULL;
    struct stat st;

    assert_non_null(mkdtemp(dir));
    snprintf(tok, sizeof(tok), "%s/token", dir);
    snprintf(tmp, sizeof(tmp), "%s/new-token", dir);
    write_file(tok, "t1\n");
    y = kubeconfig("https://k", "", "    tokenFile: token");
    assert_int_equal(parse(y, NULL, KCFG_TRUSTED, dir, &cfg, err, sizeof(err)), 0);
    free(y);
    expect_token(cfg, "t1");

    /* rewritten in place, with a new mtime */
    write_file(tok, "t2");
    touch(tok, 10);
    expect_token(cfg, "t2");
    expect_token(cfg, "t2");

    /* replaced by a new file with the same mtime: the inode tells */
    assert_int_equal(stat(tok, &st), 0);
    write_file(tmp, "t3\n");
    struct timespec ts[2] = {st.st_mtim, st.st_mtim};
    assert_int_equal(utimensat(AT_FDCWD, tmp, ts, 0), 0);
    assert_int_equal(rename(tmp, tok), 0);
    expect_token(cfg, "t3");

    /* an empty or vanished file keeps the last good token, with one warning
     * per distinct error rather than one per request */
    char *logs = NULL;
    size_t loglen = 0;
    FILE *logf = open_memstream(&logs, &loglen);
    assert_non_null(logf);
    log_set_stream(logf);
    write_file(tok, "\n");
    touch(tok, 20);
    expect_token(cfg, "t3");
    expect_token(cfg, "t3");
    unlink(tok);
    expect_token(cfg, "t3");
    expect_token(cfg, "t3");
    log_set_stream(NULL);
    fclose(logf);
    assert_int_equal(count(logs, "keeping the previous token"), 2);
    assert_int_equal(count(logs, "empty or invalid token"), 1);
    assert_int_equal(count(logs, "No such file"), 1);
    free(logs);
    write_file(tok, "t4");
    touch(tok, 30);
    expect_token(cfg, "t4");
    kcfg_free(cfg);
    rm_tree(dir, trusted_files);
}

/* ---- in-cluster --------------------------------------------------------------- */

static void test_in_cluster(void **state)
{
    (void)state;
    char dir[] = "/tmp/test_kcfg.XXXXXX", path[512], err[256];
    static const char *const files[] = {"ca.crt", "token", "namespace", NULL};
    struct kcfg *cfg = NULL;

    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/ca.crt", dir);
    write_file(path, ca_pem);
    snprintf(path, sizeof(path), "%s/namespace", dir);
    write_file(path, "mkueue-system\n");

    unsetenv("KUBERNETES_SERVICE_HOST");
    setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    assert_true(kcfg_in_cluster(dir, &cfg, err, sizeof(err)) < 0);
    assert_non_null(strstr(err, "KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT"));

    setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
    assert_true(kcfg_in_cluster(dir, &cfg, err, sizeof(err)) < 0); /* no token yet */
    assert_non_null(strstr(err, "/token: No such file"));
    assert_null(cfg);

    snprintf(path, sizeof(path), "%s/token", dir);
    write_file(path, "sa-token-1\n");
    assert_int_equal(kcfg_in_cluster(dir, &cfg, err, sizeof(err)), 0);
    assert_string_equal(cfg->server, "https://10.96.0.1:443");
    assert_string_equal(cfg->ca_pem, ca_pem);
    assert_string_equal(cfg->namespace, "mkueue-system");
    assert_null(cfg->context);
    expect_token(cfg, "sa-token-1");
    write_file(path, "sa-token-2\n");
    touch(path, 5);
    expect_token(cfg, "sa-token-2");
    kcfg_free(cfg);

    setenv("KUBERNETES_SERVICE_HOST", "fd00:10:96::1", 1);
    assert_int_equal(kcfg_in_cluster(dir, &cfg, err, sizeof(err)), 0);
    assert_string_equal(cfg->server, "https://[fd00:10:96::1]:443");
    kcfg_free(cfg);

    setenv("KUBERNETES_SERVICE_HOST", "evil/host", 1);
    assert_true(kcfg_in_cluster(dir, &cfg, err, sizeof(err)) < 0);
    assert_non_null(strstr(err, "invalid KUBERNETES_SERVICE_HOST"));
    setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
    setenv("KUBERNETES_SERVICE_PORT", "https", 1);
    assert_true(kcfg_in_cluster(dir, &cfg, err, sizeof(err)) < 0);

    setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    snprintf(path, sizeof(path), "%s/ca.crt", dir);
    write_file(path, "not a certificate");
    assert_true(kcfg_in_cluster(dir, &cfg, err, sizeof(err)) < 0);
    assert_non_null(strstr(err, "no PEM certificate found"));
    unlink(path);
    assert_true(kcfg_in_cluster(dir, &cfg, err, sizeof(err)) < 0);
    assert_non_null(strstr(err, "ca.crt: No such file"));

    unsetenv("KUBERNETES_SERVICE_HOST");
    unsetenv("KUBERNETES_SERVICE_PORT");
    rm_tree(dir, files);
}

/* ---- malformed input ------------------------------------------------------------ */

static void test_malformed_yaml(void **state)
{
    (void)state;
    static const struct {
        const char *yaml, *want;
    } cases[] = {
        {"", "kubeconfig is empty"},
        {"   \n# only a comment\n", "kubeconfig is empty"},
        {"---\n", "kubeconfig is empty"},
        {"~\n", "kubeconfig is empty"},
        {"just a string\n", "kubeconfig must be a YAML mapping"},
        {"- a\n- b\n", "kubeconfig must be a YAML mapping"},
        {"key: [unclosed\n", "invalid YAML at line"},
        {"a: b\n c: d\n", "invalid YAML"},
        {"\"unterminated\n", "invalid YAML"},
        {"a: 1\n---\nb: 2\n", "multiple YAML documents"},
        {"a: &x [1, 2]\nb: *x\n", "YAML aliases are not allowed"},
        /* merge keys: refused wherever they are, however quoted or tagged */
        {"<<: {current-context: x}\n", "YAML merge keys (<<) are not allowed (line 1)"},
        {"current-context: x\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n"
         "clusters: [{name: c, cluster: {server: 'https://a'}}]\n"
         "users: [{name: u, user: {token: t, <<: {as: system:admin}}}]\n",
         "YAML merge keys (<<) are not allowed (line 4)"},
        {"current-context: x\ncontexts: [{name: x, context: {cluster: c}}]\n"
         "clusters:\n- name: c\n  cluster:\n    server: 'https://a'\n"
         "    \"<<\": {insecure-skip-tls-verify: true}\n",
         "YAML merge keys (<<) are not allowed (line 7)"},
        {"a: {!!merge x: {b: c}}\n", "YAML merge keys (<<) are not allowed"},
        {"? [a]\n: b\n", "mapping keys must be strings"},
        {"current-context: \"a\\0b\"\n", "must not contain NUL"},
        {"clusters: string\ncurrent-context: x\ncontexts: [{name: x, context: {cluster: c}}]\n",
         "clusters: must be a sequence"},
        {"current-context: x\ncontexts: {x: y}\n", "contexts: must be a sequence"},
        {"current-context: [x]\n", "current-context: must be a string"},
        {"current-context: x\ncontexts: [1]\n", "contexts[0]: must be a mapping"},
        {"current-context: x\ncontexts: [~]\n", "contexts[0]: must be a mapping"},
        {"current-context: x\ncontexts: [{name: [x]}]\n", "contexts[0].name: must be a string"},
        {"current-context: x\ncontexts: [{name: x, context: str}]\n",
         "contexts[0].context: must be a mapping"},
        {"current-context: x\ncontexts: [{name: x, context: {cluster: c}}]\n"
         "clusters: [{name: c, cluster: {server: {a: b}}}]\n",
         "clusters[0].cluster.server: must be a string"},
        {"current-context: x\ncontexts: [{name: x, context: {cluster: c}}]\n"
         "clusters: [{name: c, cluster: [1]}]\n",
         "clusters[0].cluster: must be a mapping"},
        {"current-context: x\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n"
         "clusters: [{name: c, cluster: {server: 'https://a'}}]\nusers: [{name: u, user: 7}]\n",
         "users[0].user: must be a mapping"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        expect_error(cases[i].yaml, 0, cases[i].want);

    /* binary garbage and an embedded NUL byte in the input */
    static const char garbage[] = "\x00\xff\xfe{[:\x01\x80";
    struct kcfg *cfg = NULL;
    char err[256] = "";
    assert_true(kcfg_parse(garbage, sizeof(garbage) - 1, NULL, 0, NULL, &cfg, err, sizeof(err)) <
                0);
    assert_non_null(strstr(err, "invalid YAML"));
    assert_true(kcfg_parse(NULL, 0, NULL, 0, NULL, &cfg, err, sizeof(err)) < 0);
    assert_non_null(strstr(err, "empty"));
}

static void test_huge_input(void **state)
{
    (void)state;
    size_t n = KCFG_MAX_BYTES + 1;
    char *big = malloc(n + 1), err[256], dir[] = "/tmp/test_kcfg.XXXXXX", path[512];
    static const char *const files[] = {"kubeconfig", NULL};
    struct kcfg *cfg = NULL;

    assert_non_null(big);
    memset(big, '#', n);
    big[n] = '\0';
    assert_int_equal(kcfg_parse(big, n, NULL, 0, NULL, &cfg, err, sizeof(err)), MK_ERR_TOOBIG);
    assert_non_null(strstr(err, "larger than"));

    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/kubeconfig", dir);
    write_file(path, big);
    assert_int_equal(kcfg_load_file(path, NULL, KCFG_TRUSTED, &cfg, err, sizeof(err)),
                     MK_ERR_TOOBIG);
    assert_non_null(strstr(err, "larger than"));
    assert_null(cfg);
    rm_tree(dir, files);
    free(big);
}

static char *nested(int levels, int maps)
{
    char *s = malloc((size_t)levels * 5 + 64), *p = s;
    assert_non_null(s);
    memcpy(p, "x: ", 3);
    p += 3;
    for (int i = 0; i < levels; i++) {
        const char *open = maps ? "{a: " : "[";
        size_t k = strlen(open);
        memcpy(p, open, k);
        p += k;
    }
    *p++ = '1';
    for (int i = 0; i < levels; i++)
        *p++ = maps ? '}' : ']';
    *p = '\0';
    return s;
}

static void test_deep_nesting(void **state)
{
    (void)state;
    /* the root mapping is level 1: 63 more levels fit, 64 do not */
    for (int maps = 0; maps <= 1; maps++) {
        char *ok = nested(KCFG_MAX_DEPTH - 1, maps), *deep = nested(KCFG_MAX_DEPTH, maps);
        char *deeper = nested(100000, maps);
        expect_error(ok, 0, "current-context is not set");
        expect_error(deep, 0, "YAML nested deeper than 64 levels");
        expect_error(deeper, 0, "YAML nested deeper than 64 levels");
        free(ok);
        free(deep);
        free(deeper);
    }
}

static void test_too_many_nodes(void **state)
{
    (void)state;
    size_t n = KCFG_MAX_NODES + 10;
    char *s = malloc(n * 2 + 16), *p = s;
    assert_non_null(s);
    memcpy(p, "x: [", 4);
    p += 4;
    for (size_t i = 0; i < n; i++, p += 2)
        memcpy(p, "1,", 2);
    memcpy(p, "1]", 3);
    expect_error(s, 0, "YAML has more than 65536 nodes");
    free(s);
}

static void test_free_null(void **state)
{
    (void)state;
    kcfg_free(NULL);
    assert_null(kcfg_bearer_token(NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_current_context),
        cmocka_unit_test(test_named_context),
        cmocka_unit_test(test_no_user_is_anonymous),
        cmocka_unit_test(test_selection_errors),
        cmocka_unit_test(test_base64_wrapped_lines),
        cmocka_unit_test(test_base64_invalid),
        cmocka_unit_test(test_bad_client_key),
        cmocka_unit_test(test_untrusted_refusals),
        cmocka_unit_test(test_token_header_injection),
        cmocka_unit_test(test_base64),
        cmocka_unit_test(test_accepted_servers),
        cmocka_unit_test(test_trusted_file_paths),
        cmocka_unit_test(test_trusted_still_refuses),
        cmocka_unit_test(test_token_rotation),
        cmocka_unit_test(test_in_cluster),
        cmocka_unit_test(test_malformed_yaml),
        cmocka_unit_test(test_huge_input),
        cmocka_unit_test(test_deep_nesting),
        cmocka_unit_test(test_too_many_nodes),
        cmocka_unit_test(test_free_null),
    };
    return cmocka_run_group_tests_name("kube_config", tests, setup, teardown);
}
