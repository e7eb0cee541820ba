/* make bench: latency and throughput of mkueue-webhook over kept-alive TLS.
 *
 * The webhook binary runs against a fake Kubernetes API (the scripted HTTPS
 * test server of common/tests/support) that serves the MultiKueue chain of
 * e2e/manifests/manager.yaml and, as both workers, the namespace and the
 * LocalQueue; so every request takes the full path: decode, queue
 * resolution, both worker caches, patch, encode. Beside it runs a
 * static-response server of the same stack (libmicrohttpd + GnuTLS, same
 * threads, same certificate type) that answers a fixed AdmissionReview:
 * the floor of this stack. Both get, in turn:
 *   - a fixed rate (default 1000 req/s for 10 s; a request that had to wait
 *     for a free connection is timed from its scheduled send time, so a
 *     stall is not hidden by waiting);
 *   - a closed loop on all connections for the maximum req/s;
 * each phase in --rounds rounds (3), the servers taking turns round by
 * round, each figure the median of its rounds: one run's p99 moved by 1.5x
 * between runs of the same binary, with the floor's moving alike only
 * when measured beside it. RSS is read from /proc at idle and at its peak
 * under load. Requests
 * alternate between /mutate-batch-v1-job and /validate-batch-v1-job with a
 * realistic Job AdmissionReview (kubectl's last-applied annotation,
 * managedFields, a pod template with resources and env). No thresholds.
 *
 * Then the defences of issue 11, each on a fresh webhook process, with its
 * peak RSS (VmHWM): idle; after one hostile 3 MiB body of empty objects,
 * checked against a bound derived from the caps (idle peak + the in-flight
 * budget + every connection's buffer); after a legitimate 2.9 MiB UPDATE
 * (object and oldObject), which must be decided; and while 500 TLS
 * connections from three addresses trickle header lines (and 64 plain ones
 * on the metrics port), during which valid reviews and /healthz must
 * answer. These are checks (exit 1 on failure), not timing thresholds.
 * `--hardening` runs only these. */
#include <curl/curl.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>

#include "admission.h"
#include "log.h"
#include "server.h"
#include "test_https.h"
#include "tls.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *msg)
{
    fprintf(stderr, "wh-bench: %s\n", msg);
    exit(1);
}

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) < 0)
        die("cannot find a free port");
    close(fd);
    return ntohs(a.sin_port);
}

static void write_file(const char *path, const char *data)
{
    FILE *f = fopen(path, "w");
    if (!f || fputs(data, f) < 0 || fclose(f) != 0)
        die("cannot write a file in the temporary folder");
}

static char *b64(const char *s)
{
    size_t n = strlen(s);
    char *out = malloc(4 * ((n + 2) / 3) + 1);
    if (!out)
        die("out of memory");
    EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)s, (int)n);
    return out;
}

/* ---- the fake API server ------------------------------------------------------ */

static char *secrets_list;
static char *secret_one[2]; /* worker-1-kubeconfig, worker-2-kubeconfig: read by name */

static const char *list_for(const char *path)
{
#define KQ "/apis/kueue.x-k8s.io/v1beta2/"
    if (strcmp(path, KQ "localqueues") == 0)
        return "{\"kind\":\"LocalQueueList\",\"metadata\":{\"resourceVersion\":\"10\"},\"items\":"
               "[{\"metadata\":{\"namespace\":\"ml-demo\",\"name\":\"team-a\","
               "\"resourceVersion\":\"5\"},\"spec\":{\"clusterQueue\":\"team-a-cq\"}}]}";
    if (strcmp(path, KQ "clusterqueues") == 0)
        return "{\"kind\":\"ClusterQueueList\",\"metadata\":{\"resourceVersion\":\"10\"},\"items\":"
               "[{\"metadata\":{\"name\":\"team-a-cq\",\"resourceVersion\":\"5\"},\"spec\":{"
               "\"admissionChecksStrategy\":{\"admissionChecks\":[{\"name\":\"multikueue-ac\"}]}}}]"
               "}";
    if (strcmp(path, KQ "admissionchecks") == 0)
        return "{\"kind\":\"AdmissionCheckList\",\"metadata\":{\"resourceVersion\":\"10\"},"
               "\"items\":[{\"metadata\":{\"name\":\"multikueue-ac\",\"resourceVersion\":\"5\"},"
               "\"spec\":{\"controllerName\":\"kueue.x-k8s.io/multikueue\",\"parameters\":{"
               "\"apiGroup\":\"kueue.x-k8s.io\",\"kind\":\"MultiKueueConfig\",\"name\":"
               "\"multikueue-config\"}}}]}";
    if (strcmp(path, KQ "multikueueconfigs") == 0)
        return "{\"kind\":\"MultiKueueConfigList\",\"metadata\":{\"resourceVersion\":\"10\"},"
               "\"items\":[{\"metadata\":{\"name\":\"multikueue-config\",\"resourceVersion\":"
               "\"5\"},\"spec\":{\"clusters\":[\"worker-1\",\"worker-2\"]}}]}";
    if (strcmp(path, KQ "multikueueclusters") == 0)
        return "{\"kind\":\"MultiKueueClusterList\",\"metadata\":{\"resourceVersion\":\"10\"},"
               "\"items\":[{\"metadata\":{\"name\":\"worker-1\",\"resourceVersion\":\"5\"},"
               "\"spec\":{\"clusterSource\":{\"kubeConfig\":{\"locationType\":\"Secret\","
               "\"location\":\"worker-1-kubeconfig\"}}}},{\"metadata\":{\"name\":\"worker-2\","
               "\"resourceVersion\":\"6\"},\"spec\":{\"clusterSource\":{\"kubeConfig\":{"
               "\"locationType\":\"Secret\",\"location\":\"worker-2-kubeconfig\"}}}}]}";
    if (strcmp(path, "/api/v1/namespaces/mkueue-system/secrets") == 0)
        return secrets_list;
    if (strcmp(path, "/api/v1/namespaces/mkueue-system/secrets/worker-1-kubeconfig") == 0)
        return secret_one[0];
    if (strcmp(path, "/api/v1/namespaces/mkueue-system/secrets/worker-2-kubeconfig") == 0)
        return secret_one[1];
    /* the preflight's metadata watches on the workers: none of those objects
     * (served, so that no informer retries in the background of the run) */
    if (strcmp(path, "/api/v1/persistentvolumeclaims") == 0 ||
        strcmp(path, "/api/v1/configmaps") == 0 || strcmp(path, "/api/v1/secrets") == 0 ||
        strcmp(path, "/api/v1/serviceaccounts") == 0)
        return "{\"kind\":\"PartialObjectMetadataList\",\"apiVersion\":\"meta.k8s.io/v1\","
               "\"metadata\":{\"resourceVersion\":\"10\"},\"items\":[]}";
    if (strcmp(path, "/api/v1/namespaces") == 0)
        return "{\"kind\":\"NamespaceList\",\"metadata\":{\"resourceVersion\":\"10\"},\"items\":"
               "[{\"metadata\":{\"name\":\"ml-demo\",\"resourceVersion\":\"5\"}}]}";
    return NULL;
}

static const char *const bookmark[] = {
    "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"10\"}}}\n"};

static int fake_api(const struct th_request *req, struct th_response *resp, void *ud)
{
    (void)ud;
    const char *body = list_for(req->path);
    if (!body) {
        resp->status = 404;
        resp->body = "{\"kind\":\"Status\",\"code\":404,\"reason\":\"NotFound\"}";
        return 0;
    }
    if (strstr(req->query, "watch=")) {
        resp->chunks = bookmark;
        resp->nchunks = 1;
        resp->hold_ms = 3600 * 1000; /* until the client goes */
        return 0;
    }
    resp->body = body;
    return 0;
}

/* ---- the static-response server (a child process) ------------------------------ */

static const char static_answer[] =
    "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"response\":{\"uid\":"
    "\"705ab4f5-6393-11e8-b7cc-42010a800002\",\"allowed\":true,\"patch\":\"W3sib3AiOiJhZGQiLCJwYX"
    "RoIjoiL3NwZWMvbWFuYWdlZEJ5IiwidmFsdWUiOiJrdWV1ZS54LWs4cy5pby9tdWx0aWt1ZXVlIn0seyJvcCI6ImFk"
    "ZCIsInBhdGgiOiIvc3BlYy9zdXNwZW5kIiwidmFsdWUiOnRydWV9XQ==\",\"patchType\":\"JSONPatch\"}}";

static int static_route(void *ud, const char *path)
{
    (void)ud, (void)path;
    return WH_ROUTE_POST_JSON;
}

static int static_handle(void *ud, const char *path, const char *body, size_t len, struct buf *out,
                         const char **ctype)
{
    (void)ud, (void)path, (void)body, (void)len;
    *ctype = "application/json";
    buf_append(out, static_answer, sizeof(static_answer) - 1);
    return 200;
}

static int run_static_server(int port, const char *dir, unsigned threads)
{
    char cert[512], key[512], err[256];
    snprintf(cert, sizeof(cert), "%s/tls.crt", dir);
    snprintf(key, sizeof(key), "%s/tls.key", dir);
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    struct wh_certs *certs = wh_certs_new(cert, key, 1000, err, sizeof(err));
    if (!certs)
        die(err);
    struct wh_server_opts o = {
        .name = "static",
        .bind = "127.0.0.1",
        .port = port,
        .certs = certs,
        .threads = threads,
        .route = static_route,
        .handle = static_handle,
    };
    struct wh_server *s = wh_server_start(&o, err, sizeof(err));
    if (!s)
        die(err);
    int sig;
    sigwait(&sigs, &sig);
    wh_server_stop(s);
    wh_certs_free(certs);
    return 0;
}

/* ---- processes ------------------------------------------------------------------ */

static pid_t spawn(char *const argv[])
{
    pid_t pid = fork();
    if (pid < 0)
        die("fork failed");
    if (pid == 0) {
        execv(argv[0], argv);
        _exit(127);
    }
    return pid;
}

static void stop(pid_t pid)
{
    if (pid <= 0)
        return;
    kill(pid, SIGTERM);
    for (int i = 0; i < 100; i++) {
        if (waitpid(pid, NULL, WNOHANG) == pid)
            return;
        usleep(50 * 1000);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

/* A field of /proc/PID/status in MiB ("VmRSS", "VmHWM": the peak). */
static double status_mib(pid_t pid, const char *field)
{
    char path[64], line[256], fmt[32];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    snprintf(fmt, sizeof(fmt), "%s: %%lf kB", field);
    FILE *f = fopen(path, "r");
    double kib = 0;
    while (f && fgets(line, sizeof(line), f))
        if (sscanf(line, fmt, &kib) == 1)
            break;
    if (f)
        fclose(f);
    return kib / 1024.0;
}

static double rss_mib(pid_t pid)
{
    return status_mib(pid, "VmRSS");
}

/* utime + stime of a process in seconds (/proc/PID/stat), -1 unknown. */
static double cpu_s(pid_t pid)
{
    char path[64], line[1024];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *f = pid > 0 ? fopen(path, "r") : NULL;
    if (!f)
        return -1;
    char *rp = fgets(line, sizeof(line), f) ? strrchr(line, ')') : NULL;
    fclose(f);
    unsigned long long ut, st;
    /* after "pid (comm)": state ppid pgrp session tty tpgid flags minflt
     * cminflt majflt cmajflt utime stime */
    if (!rp ||
        sscanf(rp + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
        return -1;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static size_t sink(char *p, size_t sz, size_t n, void *ud)
{
    (void)p;
    *(size_t *)ud += sz * n;
    return sz * n;
}

/* GET url: 0 when 200 and the body contains want (NULL = anything). */
static int probe(const char *url, const char *want)
{
    CURL *h = curl_easy_init();
    char *data = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&data, &len);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 2000L);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, mem);
    long code = 0;
    int rc = curl_easy_perform(h) == CURLE_OK ? 0 : -1;
    fclose(mem);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    if (rc == 0 && (code != 200 || (want && (!data || !strstr(data, want)))))
        rc = -1;
    free(data);
    curl_easy_cleanup(h);
    return rc;
}

/* ---- the load generator -------------------------------------------------------- */

/* A server under test: mkueue's webhook, the static floor, or Kueue's
 * controller-manager (pid 0 when its RSS cannot be read). */
struct target {
    const char *name; /* the key in webhook.json: "mkueue", "floor", "kueue" */
    char base[200];
    pid_t pid;
    const char *ca;
};

struct conn {
    CURL *h;
    struct curl_slist *hdrs;
    double scheduled;
    size_t got;
    int busy;
};

/* The connections of a target and the multi handle that owns them, kept
 * alive across its phases as the apiserver's client keeps its own: the
 * cache holds every connection (curl's default, 4 per transfer in
 * progress, closed idle ones whenever fewer than 2 requests were in
 * flight, so about 1 request in 80 paid a new TLS handshake). */
struct pool {
    CURLM *m;
    struct conn *c;
    int n;
};

struct result {
    double p50_ms, p99_ms, max_ms;
    double achieved; /* req/s */
    long errors;
    long connects; /* new TLS connections made during the phase */
    double rss_peak;
    double cpu_us; /* the server process's CPU per review (utime + stime), -1 unknown */
};

#define MAX_ROUNDS 15

static int cmp_double(const void *a, const void *b);

/* The rounds of one phase as one result: each figure's median over the
 * rounds (the servers took turns, so a slow stretch of the machine lands in
 * one round of each rather than in one server's only), the peak RSS and
 * the counts summed. */
static struct result median_round(const struct result *r, int n)
{
    double v[5][MAX_ROUNDS];
    struct result m = {0};
    for (int i = 0; i < n; i++) {
        v[0][i] = r[i].p50_ms;
        v[1][i] = r[i].p99_ms;
        v[2][i] = r[i].max_ms;
        v[3][i] = r[i].achieved;
        v[4][i] = r[i].cpu_us;
        m.errors += r[i].errors;
        m.connects += r[i].connects;
        m.rss_peak = fmax(m.rss_peak, r[i].rss_peak);
    }
    for (int f = 0; f < 5; f++)
        qsort(v[f], (size_t)n, sizeof(double), cmp_double);
    m.p50_ms = v[0][n / 2];
    m.p99_ms = v[1][n / 2];
    m.max_ms = v[2][n - 1]; /* the worst of all */
    m.achieved = v[3][n / 2];
    m.cpu_us = v[4][n / 2];
    return m;
}

static const char *body;
static size_t body_len;
static FILE *trace; /* --trace: one line per request of the fixed-rate phases */

static void conn_init(struct conn *c, const struct target *t)
{
    c->h = curl_easy_init();
    c->hdrs = curl_slist_append(NULL, "Content-Type: application/json");
    if (!c->h || !c->hdrs)
        die("out of memory");
    curl_easy_setopt(c->h, CURLOPT_CAINFO, t->ca);
    curl_easy_setopt(c->h, CURLOPT_HTTPHEADER, c->hdrs);
    curl_easy_setopt(c->h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
    curl_easy_setopt(c->h, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c->h, CURLOPT_POSTFIELDSIZE, (long)body_len);
    curl_easy_setopt(c->h, CURLOPT_WRITEFUNCTION, sink);
    curl_easy_setopt(c->h, CURLOPT_WRITEDATA, &c->got);
    curl_easy_setopt(c->h, CURLOPT_TIMEOUT_MS, 10000L);
    curl_easy_setopt(c->h, CURLOPT_PRIVATE, c);
}

static void conn_clear(struct conn *c)
{
    curl_easy_cleanup(c->h);
    curl_slist_free_all(c->hdrs);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double pct(const double *sorted, size_t n, double p)
{
    if (!n)
        return 0;
    size_t i = (size_t)((double)n * p);
    return sorted[i < n ? i : n - 1];
}

static void pool_init(struct pool *p, const struct target *t, int nconn)
{
    p->m = curl_multi_init();
    p->c = calloc((size_t)nconn, sizeof(*p->c));
    if (!p->m || !p->c)
        die("out of memory");
    p->n = nconn;
    curl_multi_setopt(p->m, CURLMOPT_MAXCONNECTS, (long)nconn);
    for (int i = 0; i < nconn; i++)
        conn_init(&p->c[i], t);
}

static void pool_clear(struct pool *p)
{
    for (int i = 0; i < p->n; i++)
        conn_clear(&p->c[i]);
    free(p->c);
    curl_multi_cleanup(p->m);
}

/* rate > 0: fixed rate for secs on the first nconn connections of the
 * pool; rate == 0: closed loop on all of them. */
static struct result load(const struct target *t, struct pool *p, int nconn, double rate,
                          double secs)
{
    struct result r = {0};
    CURLM *m = p->m;
    struct conn *conns = p->c;
    size_t cap = (size_t)(rate > 0 ? rate * secs : 2e6) + 16, n = 0;
    double *lat = malloc(cap * sizeof(*lat));
    if (!lat)
        die("out of memory");
    char url[2][320];
    snprintf(url[0], sizeof(url[0]), "%s/mutate-batch-v1-job?timeout=10s", t->base);
    snprintf(url[1], sizeof(url[1]), "%s/validate-batch-v1-job?timeout=10s", t->base);
    double t0 = now_s(), end = t0 + secs, next_rss = t0, cpu0 = cpu_s(t->pid);
    long sent = 0, done = 0;
    for (;;) {
        double now = now_s();
        if (now >= next_rss && t->pid > 0) {
            double rss = rss_mib(t->pid);
            r.rss_peak = rss > r.rss_peak ? rss : r.rss_peak;
            next_rss = now + 0.1;
        }
        /* start what is due */
        while (now < end) {
            double due = rate > 0 ? t0 + (double)sent / rate : now;
            if (due > now)
                break;
            struct conn *c = NULL;
            for (int i = 0; i < nconn && !c; i++)
                if (!conns[i].busy)
                    c = &conns[i];
            if (!c)
                break; /* late: sent when a connection frees, still timed from `due` */
            c->busy = 1;
            /* Late by more than the poll granularity: it waited for a free
             * connection behind slow answers, which counts (no coordinated
             * omission); less is this loop's own timer jitter, which does not. */
            c->scheduled = now - due > 0.002 ? due : now;
            c->got = 0;
            curl_easy_setopt(c->h, CURLOPT_URL, url[sent & 1]);
            curl_multi_add_handle(m, c->h);
            sent++;
        }
        int running = 0;
        curl_multi_perform(m, &running);
        CURLMsg *msg;
        int left;
        while ((msg = curl_multi_info_read(m, &left))) {
            if (msg->msg != CURLMSG_DONE)
                continue;
            struct conn *c;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&c);
            long code = 0, nc = 0;
            curl_easy_getinfo(c->h, CURLINFO_RESPONSE_CODE, &code);
            curl_easy_getinfo(c->h, CURLINFO_NUM_CONNECTS, &nc);
            if (msg->data.result != CURLE_OK || code != 200)
                r.errors++;
            r.connects += nc;
            double fin = now_s();
            if (n < cap)
                lat[n++] = (fin - c->scheduled) * 1000.0;
            if (trace && rate > 0)
                fprintf(trace, "%s %.6f %.3f %ld\n", t->name, c->scheduled - t0,
                        (fin - c->scheduled) * 1000.0, nc);
            curl_multi_remove_handle(m, c->h);
            c->busy = 0;
            done++;
        }
        if (now >= end && running == 0)
            break;
        double wait_ms = 1;
        if (rate > 0 && now < end) {
            double due = t0 + (double)sent / rate;
            wait_ms = ceil((due - now_s()) * 1000.0); /* >= 1 ms: no busy loop */
            if (wait_ms < 1)
                wait_ms = 1;
            if (wait_ms > 5)
                wait_ms = 5;
        }
        curl_multi_poll(m, NULL, 0, (int)wait_ms, NULL);
    }
    double elapsed = now_s() - t0, cpu1 = cpu_s(t->pid);
    r.achieved = (double)done / elapsed;
    r.cpu_us = cpu0 >= 0 && cpu1 >= 0 && done > 0 ? (cpu1 - cpu0) * 1e6 / (double)done : -1;
    qsort(lat, n, sizeof(*lat), cmp_double);
    r.p50_ms = pct(lat, n, 0.5);
    r.p99_ms = pct(lat, n, 0.99);
    r.max_ms = n ? lat[n - 1] : 0;
    free(lat);
    return r;
}

/* New connections: n reviews per target, each on a TLS connection of its
 * own, the targets taking turns so that all see the same machine. What an
 * apiserver pays after a connection was dropped (idle timeout, restart);
 * out[k][0..1] = p50, p99 of target k. */
static void fresh(struct target *const *ts, int nt, int n, double out[][2])
{
    double *lat = calloc((size_t)(nt * n), sizeof(double));
    if (!lat)
        die("out of memory");
    for (int i = 0; i < n; i++) {
        for (int k = 0; k < nt; k++) {
            struct conn c = {0};
            conn_init(&c, ts[k]);
            char url[320];
            snprintf(url, sizeof(url), "%s/validate-batch-v1-job?timeout=10s", ts[k]->base);
            curl_easy_setopt(c.h, CURLOPT_URL, url);
            curl_easy_setopt(c.h, CURLOPT_FRESH_CONNECT, 1L);
            curl_easy_setopt(c.h, CURLOPT_FORBID_REUSE, 1L);
            double t0 = now_s();
            curl_easy_perform(c.h);
            lat[k * n + i] = (now_s() - t0) * 1000;
            conn_clear(&c);
        }
    }
    for (int k = 0; k < nt; k++) {
        qsort(lat + k * n, (size_t)n, sizeof(double), cmp_double);
        out[k][0] = pct(lat + k * n, (size_t)n, 0.5);
        out[k][1] = pct(lat + k * n, (size_t)n, 0.99);
    }
    free(lat);
}

/* A Job create as the apiserver sends it after `kubectl apply`. */
static char *make_review(void)
{
    const char *spec =
        "{\"parallelism\":2,\"completions\":4,\"backoffLimit\":3,\"template\":{\"metadata\":{"
        "\"labels\":{\"app\":\"trainer\"}},\"spec\":{\"restartPolicy\":\"Never\","
        "\"containers\":[{\"name\":\"train\",\"image\":\"registry.example.com/ml/trainer:1.4.2\","
        "\"command\":[\"python\",\"-m\",\"trainer\",\"--epochs\",\"10\"],\"env\":[{\"name\":"
        "\"DATASET\",\"value\":\"s3://bucket/imagenet\"},{\"name\":\"BATCH\",\"value\":\"256\"}],"
        "\"resources\":{\"requests\":{\"cpu\":\"4\",\"memory\":\"16Gi\",\"nvidia.com/gpu\":\"1\"},"
        "\"limits\":{\"memory\":\"16Gi\",\"nvidia.com/gpu\":\"1\"}},\"volumeMounts\":[{\"name\":"
        "\"data\",\"mountPath\":\"/data\"}]}],\"volumes\":[{\"name\":\"data\",\"emptyDir\":{}}]}}}";
    char *last = NULL, *rev = NULL;
    if (asprintf(&last,
                 "{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{\"annotations\":{},"
                 "\"labels\":{\"kueue.x-k8s.io/queue-name\":\"team-a\"},\"name\":\"train-42\","
                 "\"namespace\":\"ml-demo\"},\"spec\":%s}",
                 spec) < 0)
        die("out of memory");
    json_t *lastj = json_string(last);
    char *last_quoted = json_dumps(lastj, JSON_ENCODE_ANY);
    if (asprintf(
            &rev,
            "{\"kind\":\"AdmissionReview\",\"apiVersion\":\"admission.k8s.io/v1\",\"request\":{"
            "\"uid\":\"705ab4f5-6393-11e8-b7cc-42010a800002\",\"kind\":{\"group\":\"batch\","
            "\"version\":\"v1\",\"kind\":\"Job\"},\"resource\":{\"group\":\"batch\",\"version\":"
            "\"v1\",\"resource\":\"jobs\"},\"requestKind\":{\"group\":\"batch\",\"version\":\"v1\","
            "\"kind\":\"Job\"},\"requestResource\":{\"group\":\"batch\",\"version\":\"v1\","
            "\"resource\":\"jobs\"},\"name\":\"train-42\",\"namespace\":\"ml-demo\","
            "\"operation\":\"CREATE\",\"userInfo\":{\"username\":\"alice@example.com\",\"groups\":"
            "[\"system:authenticated\",\"ml-team\"]},\"object\":{\"kind\":\"Job\",\"apiVersion\":"
            "\"batch/v1\",\"metadata\":{\"name\":\"train-42\",\"namespace\":\"ml-demo\","
            "\"creationTimestamp\":null,\"labels\":{\"kueue.x-k8s.io/queue-name\":\"team-a\"},"
            "\"annotations\":{\"kubectl.kubernetes.io/last-applied-configuration\":%s},"
            "\"managedFields\":[{\"manager\":\"kubectl-client-side-apply\",\"operation\":"
            "\"Update\",\"apiVersion\":\"batch/v1\",\"time\":\"2026-01-01T00:00:00Z\","
            "\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:metadata\":{\"f:annotations\":{\".\":{},"
            "\"f:kubectl.kubernetes.io/last-applied-configuration\":{}},\"f:labels\":{\".\":{},"
            "\"f:kueue.x-k8s.io/queue-name\":{}}},\"f:spec\":{\"f:backoffLimit\":{},"
            "\"f:completions\":{},\"f:parallelism\":{},\"f:template\":{\"f:spec\":{"
            "\"f:containers\":{}}}}}}]},\"spec\":%s,\"status\":{}},\"oldObject\":null,"
            "\"dryRun\":false,\"options\":{\"kind\":\"CreateOptions\",\"apiVersion\":"
            "\"meta.k8s.io/v1\",\"fieldManager\":\"kubectl-client-side-apply\"}}}",
            last_quoted, spec) < 0)
        die("out of memory");
    free(last);
    free(last_quoted);
    json_decref(lastj);
    return rev;
}

/* ---- the defences of issue 11 ---------------------------------------------------- */

/* The webhook's caps as the bench runs it (its defaults). */
#define CAP_INFLIGHT_MIB 48.0 /* --max-inflight-bytes */
#define CAP_CONNECTIONS  256  /* --max-connections */
#define SLOW_CONNS       500
#define SLOW_METRICS     64
#define SLOW_ADDRS       3 /* 127.0.0.2 .. 127.0.0.4 */

/* POST body to url (TLS with ca): the status, 0 when there was no answer;
 * *decided is set when a 200 carries an AdmissionReview response. */
static long post_review(const char *url, const char *ca, const char *data, size_t len, int *decided)
{
    CURL *h = curl_easy_init();
    struct curl_slist *hdrs = curl_slist_append(NULL, "Content-Type: application/json");
    char *out = NULL;
    size_t outlen = 0;
    FILE *mem = open_memstream(&out, &outlen);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_CAINFO, ca);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, data);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)len);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, mem);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 10000L);
    long code = 0;
    CURLcode rc = curl_easy_perform(h);
    fclose(mem);
    if (rc == CURLE_OK)
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    if (decided) {
        json_t *j = code == 200 ? json_loadb(out, outlen, 0, NULL) : NULL;
        *decided = j && json_is_boolean(json_object_get(json_object_get(j, "response"), "allowed"));
        json_decref(j);
    }
    free(out);
    curl_slist_free_all(hdrs);
    curl_easy_cleanup(h);
    return code;
}

/* 3 MiB (less a little) of `[{},{},...]` inside an AdmissionReview. */
static char *hostile_review(size_t *len)
{
    size_t n = WH_MAX_BODY - 64;
    char *b = malloc(n + 1);
    if (!b)
        die("out of memory");
    int l = snprintf(b, n, "%s",
                     "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
                     "\"request\":{\"uid\":\"u\",\"x\":[");
    size_t k = (size_t)l;
    while (k + 8 <= n) {
        memcpy(b + k, "{},", 3);
        k += 3;
    }
    memcpy(b + k, "{}]}}", 6);
    *len = k + 5;
    return b;
}

/* The bench's Job as a 2.9 MiB UPDATE: object and oldObject each with a
 * 1 MiB annotation and 2000 env vars of 200 bytes. */
static char *legit_update(const char *create, size_t *len)
{
    json_t *rev = json_loads(create, 0, NULL);
    json_t *req = json_object_get(rev, "request");
    json_t *obj = json_object_get(req, "object");
    if (!obj)
        die("cannot build the UPDATE review");
    char *blob = malloc(1024 * 1024 + 1);
    if (!blob)
        die("out of memory");
    memset(blob, 'a', 1024 * 1024);
    blob[1024 * 1024] = '\0';
    json_object_set_new(json_object_get(json_object_get(obj, "metadata"), "annotations"),
                        "example.com/blob", json_string(blob));
    free(blob);
    json_t *c0 = json_array_get(
        json_object_get(
            json_object_get(json_object_get(json_object_get(obj, "spec"), "template"), "spec"),
            "containers"),
        0);
    json_t *env = json_object_get(c0, "env");
    char name[32], value[201];
    memset(value, 'v', 200);
    value[200] = '\0';
    for (int i = 0; i < 2000; i++) {
        snprintf(name, sizeof(name), "VAR_%06d", i);
        json_array_append_new(env, json_pack("{s:s, s:s}", "name", name, "value", value));
    }
    json_object_set_new(req, "oldObject", json_deep_copy(obj));
    json_object_set_new(req, "operation", json_string("UPDATE"));
    json_object_set_new(json_object_get(req, "options"), "kind", json_string("UpdateOptions"));
    char *out = json_dumps(rev, JSON_COMPACT);
    json_decref(rev);
    if (!out)
        die("out of memory");
    *len = strlen(out);
    return out;
}

/* A slow client: connects from a given loopback address, sends a request
 * line and then one header line every 2 s, never finishing; reconnects 2 s
 * after the server closes it. Non-blocking, so 500 of them take one thread. */
struct slow {
    int fd;
    SSL *ssl;            /* NULL on the plain port */
    int state;           /* 0 closed, 1 connecting/handshaking, 2 trickling */
    double next;         /* next action */
    struct in_addr from; /* source address */
    int port;
};

struct slow_set {
    struct slow *c;
    int n;
    SSL_CTX *ctx;
    volatile int stop;
    long opened, closed_by_server; /* trickling connections started, and then cut */
    long refused;                  /* closed before the request line (per-IP limit) */
    pthread_t th;
};

static void slow_close(struct slow *c, double now)
{
    if (c->ssl)
        SSL_free(c->ssl);
    c->ssl = NULL;
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    c->state = 0;
    c->next = now + 2;
}

static void slow_step(struct slow_set *set, struct slow *c, double now)
{
    static const char line[] = "POST /validate-batch-v1-job HTTP/1.1\r\nHost: x\r\n";
    if (c->state == 0) {
        if (now < c->next)
            return;
        c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
        struct sockaddr_in src = {.sin_family = AF_INET, .sin_addr = c->from};
        struct sockaddr_in dst = {.sin_family = AF_INET, .sin_port = htons((uint16_t)c->port)};
        dst.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (c->fd < 0 || bind(c->fd, (struct sockaddr *)&src, sizeof(src)) < 0 ||
            (connect(c->fd, (struct sockaddr *)&dst, sizeof(dst)) < 0 && errno != EINPROGRESS)) {
            slow_close(c, now);
            return;
        }
        if (set->ctx) {
            c->ssl = SSL_new(set->ctx);
            SSL_set_fd(c->ssl, c->fd);
            SSL_set_connect_state(c->ssl);
        }
        c->state = 1;
        return;
    }
    if (c->state == 1) {
        if (c->ssl) {
            int r = SSL_connect(c->ssl);
            if (r != 1) {
                int e = SSL_get_error(c->ssl, r);
                if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) {
                    set->refused++;
                    slow_close(c, now);
                }
                ERR_clear_error();
                return;
            }
        } else {
            struct pollfd p = {.fd = c->fd, .events = POLLOUT};
            int soerr = 0;
            socklen_t sl = sizeof(soerr);
            if (poll(&p, 1, 0) <= 0)
                return;
            if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0 || soerr) {
                set->refused++;
                slow_close(c, now);
                return;
            }
        }
        int w = c->ssl ? SSL_write(c->ssl, line, (int)strlen(line))
                       : (int)write(c->fd, line, strlen(line));
        if (w <= 0) {
            slow_close(c, now);
            return;
        }
        c->state = 2;
        c->next = now + 2;
        set->opened++;
        return;
    }
    /* trickling: did the server close it? */
    char b[256];
    int r = c->ssl ? SSL_read(c->ssl, b, sizeof(b)) : (int)read(c->fd, b, sizeof(b));
    int gone = c->ssl ? (r <= 0 && SSL_get_error(c->ssl, r) != SSL_ERROR_WANT_READ)
                      : (r == 0 || (r < 0 && errno != EAGAIN));
    ERR_clear_error();
    if (gone || r > 0) {
        set->closed_by_server++;
        slow_close(c, now);
        return;
    }
    if (now >= c->next) {
        int w = c->ssl ? SSL_write(c->ssl, "X-Slow: 1\r\n", 11)
                       : (int)write(c->fd, "X-Slow: 1\r\n", 11);
        if (w <= 0) {
            set->closed_by_server++;
            slow_close(c, now);
            return;
        }
        c->next = now + 2;
    }
}

static void *slow_main(void *arg)
{
    struct slow_set *set = arg;
    while (!set->stop) {
        double now = now_s();
        for (int i = 0; i < set->n; i++)
            slow_step(set, &set->c[i], now);
        usleep(20 * 1000);
    }
    for (int i = 0; i < set->n; i++)
        slow_close(&set->c[i], 0);
    return NULL;
}

static void slow_start(struct slow_set *set, int n, int port, int tls, int addrs)
{
    memset(set, 0, sizeof(*set));
    set->c = calloc((size_t)n, sizeof(*set->c));
    if (!set->c)
        die("out of memory");
    set->n = n;
    if (tls) {
        set->ctx = SSL_CTX_new(TLS_client_method());
        if (!set->ctx)
            die("cannot make a TLS context");
        SSL_CTX_set_verify(set->ctx, SSL_VERIFY_NONE, NULL);
    }
    for (int i = 0; i < n; i++) {
        set->c[i].fd = -1;
        set->c[i].port = port;
        set->c[i].from.s_addr = htonl(INADDR_LOOPBACK + 1 + (uint32_t)(i % addrs));
    }
    if (pthread_create(&set->th, NULL, slow_main, set) != 0)
        die("cannot start the slow clients");
}

static int slow_held(const struct slow_set *set)
{
    int n = 0;
    for (int i = 0; i < set->n; i++)
        n += set->c[i].state == 2;
    return n;
}

static void slow_stop(struct slow_set *set)
{
    set->stop = 1;
    pthread_join(set->th, NULL);
    if (set->ctx)
        SSL_CTX_free(set->ctx);
    free(set->c);
}

/* What starting a webhook needs. */
struct wh_launch {
    const char *bin;
    const char *kubeconfig;
    const char *dir; /* certificates */
    const char *threads;
    int old; /* a binary before issue 11: no --health-port */
};

/* Starts the webhook on fresh ports and waits until its caches synced. */
static void launch(const struct wh_launch *l, struct target *t, int *mport, int *hport)
{
    int wport = free_port();
    *mport = free_port();
    *hport = l->old ? 0 : free_port();
    char ps[16], ms[16], hs[16];
    snprintf(ps, sizeof(ps), "%d", wport);
    snprintf(ms, sizeof(ms), "%d", *mport);
    snprintf(hs, sizeof(hs), "%d", *hport);
    char *argv[] = {(char *)l->bin,
                    "--kubeconfig",
                    (char *)l->kubeconfig,
                    "--cert-dir",
                    (char *)l->dir,
                    "--bind-address",
                    "127.0.0.1",
                    "--port",
                    ps,
                    "--metrics-bind-address",
                    "127.0.0.1",
                    "--metrics-port",
                    ms,
                    "--threads",
                    (char *)l->threads,
                    "--log-level",
                    "warn",
                    l->old ? NULL : "--health-port",
                    hs,
                    "--health-bind-address",
                    "127.0.0.1",
                    NULL};
    t->pid = spawn(argv);
    snprintf(t->base, sizeof(t->base), "https://127.0.0.1:%d", wport);
    char murl[128];
    snprintf(murl, sizeof(murl), "http://127.0.0.1:%d/metrics", *mport);
    double deadline = now_s() + 30;
    while (probe(murl, "mkueue_webhook_cache_synced{cluster=\"worker-2\"} 1") < 0 ||
           probe(murl, "mkueue_webhook_cache_synced{cluster=\"worker-1\"} 1") < 0 ||
           probe(murl, "mkueue_webhook_cache_synced{cluster=\"manager\"} 1") < 0) {
        if (now_s() > deadline)
            die("the webhook did not sync its caches within 30 s");
        usleep(100 * 1000);
    }
}

/* Runs the checks and prints their figures; returns the number of failures. */
static int hardening(const struct wh_launch *l, const char *ca, const char *create)
{
    int failures = 0;
    struct target t = {.name = "webhook", .ca = ca};
    int mport, hport;
    char url[256];

    printf("\nmkueue-webhook defences (issue 11), peak RSS is VmHWM of a fresh process:\n");
    /* 1. memory: idle, hostile body, legitimate big UPDATE */
    launch(l, &t, &mport, &hport);
    double idle = status_mib(t.pid, "VmHWM");
    size_t hlen, ulen;
    char *hostile = hostile_review(&hlen);
    snprintf(url, sizeof(url), "%s/validate-batch-v1-job", t.base);
    long hcode = post_review(url, ca, hostile, hlen, NULL);
    free(hostile);
    double after_hostile = status_mib(t.pid, "VmHWM");
    double bound = idle + CAP_INFLIGHT_MIB + CAP_CONNECTIONS * 64.0 / 1024.0;
    printf("  %-52s %8.1f MiB\n", "peak RSS idle", idle);
    printf("  %-52s %8.1f MiB  (HTTP %ld; bound %.0f MiB)\n",
           "peak RSS after a 3 MiB body of empty objects", after_hostile, hcode, bound);
    if (after_hostile > bound) {
        printf("  FAIL: the hostile body took the webhook past the bound of its caps\n");
        failures++;
    }
    char *update = legit_update(create, &ulen);
    int decided = 0;
    long ucode = post_review(url, ca, update, ulen, &decided);
    free(update);
    printf("  %-52s %8.1f MiB  (HTTP %ld, %s)\n", "peak RSS after a 2.9 MiB UPDATE (object+old)",
           status_mib(t.pid, "VmHWM"), ucode, decided ? "decided" : "NOT decided");
    if (!decided) {
        printf("  FAIL: the legitimate %zu-byte UPDATE was not decided\n", ulen);
        failures++;
    }
    stop(t.pid);

    /* 2. slow clients: 500 TLS on admission, 64 plain on metrics */
    launch(l, &t, &mport, &hport);
    struct slow_set adm, met;
    slow_start(&adm, SLOW_CONNS, atoi(strchr(t.base + 8, ':') + 1), 1, SLOW_ADDRS);
    slow_start(&met, SLOW_METRICS, mport, 0, 1);
    sleep(3); /* all connected and trickling */
    int reviews = 0, reviews_ok = 0, mh = 0, mh_ok = 0, hh = 0, hh_ok = 0, held_max = 0;
    char murl[128], hurl[128];
    snprintf(murl, sizeof(murl), "http://127.0.0.1:%d/healthz", mport);
    snprintf(hurl, sizeof(hurl), "http://127.0.0.1:%d/healthz", hport);
    /* 20 s: longer than the request deadline, so cuts and reconnects happen */
    for (double end = now_s() + 20; now_s() < end;) {
        int held = slow_held(&adm);
        held_max = held > held_max ? held : held_max;
        int d = 0;
        reviews++;
        snprintf(url, sizeof(url), "%s/validate-batch-v1-job", t.base);
        if (post_review(url, ca, body, body_len, &d) == 200 && d)
            reviews_ok++;
        mh++;
        mh_ok += probe(murl, "ok") == 0;
        if (hport) {
            hh++;
            hh_ok += probe(hurl, "ok") == 0;
        }
        sleep(1);
    }
    double slow_peak = status_mib(t.pid, "VmHWM");
    slow_stop(&adm);
    slow_stop(&met);
    printf("  %-52s %8.1f MiB\n", "peak RSS under 500 slow TLS + 64 slow plain clients", slow_peak);
    printf("  %-52s %8d of %d (%ld cut at their deadline, %ld refused at connect)\n",
           "slow TLS connections held at most", held_max, SLOW_CONNS, adm.closed_by_server,
           adm.refused);
    printf("  %-52s %5d/%d\n", "valid reviews decided meanwhile", reviews_ok, reviews);
    printf("  %-52s %5d/%d\n", "/healthz answered on the metrics port", mh_ok, mh);
    if (hport)
        printf("  %-52s %5d/%d\n", "/healthz answered on the probe port", hh_ok, hh);
    if (reviews_ok < reviews || (hport ? hh_ok < hh : mh_ok < mh)) {
        printf("  FAIL: slow clients kept valid reviews or /healthz from an answer\n");
        failures++;
    }
    stop(t.pid);
    return failures;
}

/* ---- main ----------------------------------------------------------------------- */

/* One figure of every target: printed as a row (with each target's ratio to
 * mkueue's) and kept for webhook.json. */
#define MAX_TARGETS 4
#define MAX_ROWS    16
struct row {
    char metric[64];
    const char *unit, *better, *fmt;
    double v[MAX_TARGETS];
};

struct report {
    struct target *t[MAX_TARGETS];
    int nt;
    struct row rows[MAX_ROWS];
    int nrows;
};

static void add_row(struct report *rep, const char *metric, const char *unit, const char *better,
                    const char *fmt, const double *v)
{
    if (rep->nrows == MAX_ROWS)
        die("too many rows");
    struct row *r = &rep->rows[rep->nrows++];
    snprintf(r->metric, sizeof(r->metric), "%s", metric);
    r->unit = unit, r->better = better, r->fmt = fmt;
    memcpy(r->v, v, sizeof(r->v));
}

static void print_report(const struct report *rep)
{
    printf("\n  %-34s", "");
    for (int k = 0; k < rep->nt; k++)
        printf(" %10s", rep->t[k]->name);
    for (int k = 1; k < rep->nt; k++)
        printf(" %6s/%-5s", "mkueue", rep->t[k]->name);
    printf("\n");
    for (int i = 0; i < rep->nrows; i++) {
        const struct row *r = &rep->rows[i];
        printf("  %-34s", r->metric);
        for (int k = 0; k < rep->nt; k++) {
            char x[32];
            snprintf(x, sizeof(x), r->fmt, r->v[k]);
            printf(" %10s", r->v[k] < 0 ? "-" : x);
        }
        for (int k = 1; k < rep->nt; k++) {
            if (r->v[k] > 0 && r->v[0] >= 0)
                printf(" %12.2f", r->v[0] / r->v[k]);
            else
                printf(" %12s", "-");
        }
        printf("\n");
    }
}

/* build/bench/webhook.json: {"bench":TITLE,"host":{...},"rows":[...]},
 * one member per target in each row's values (a figure not measured is
 * left out). */
static void write_json(const struct report *rep, const char *path, const char *title, double load1,
                       const char *cond)
{
    json_t *rows = json_array();
    for (int i = 0; i < rep->nrows; i++) {
        const struct row *r = &rep->rows[i];
        json_t *vals = json_object();
        for (int k = 0; k < rep->nt; k++)
            if (r->v[k] >= 0 && strcmp(rep->t[k]->name, "baseline") != 0)
                json_object_set_new(vals, rep->t[k]->name, json_real(round(r->v[k] * 1000) / 1000));
        json_array_append_new(rows, json_pack("{s:s, s:s, s:s, s:o}", "metric", r->metric, "unit",
                                              r->unit, "better", r->better, "values", vals));
    }
    json_t *doc = json_pack("{s:s, s:{s:i, s:f}, s:s, s:o}", "bench", title, "host", "cores",
                            (int)sysconf(_SC_NPROCESSORS_ONLN), "load1", load1, "conditions", cond,
                            "rows", rows);
    if (!doc || json_dump_file(doc, path, JSON_INDENT(1) | JSON_REAL_PRECISION(6)) != 0)
        die("cannot write the JSON file");
    json_decref(doc);
}

static double load1(void)
{
    double l = -1;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f && fscanf(f, "%lf", &l) != 1)
        l = -1;
    if (f)
        fclose(f);
    return l;
}

int main(int argc, char **argv)
{
    const char *webhook = "bin/mkueue-webhook";
    double rate = 1000, secs = 10;
    int nconn = 8, nfresh = 200, rounds = 3;
    unsigned threads = 2;
    static struct option opts[] = {
        {"webhook", required_argument, 0, 'w'},   {"rate", required_argument, 0, 'r'},
        {"duration", required_argument, 0, 'd'},  {"connections", required_argument, 0, 'c'},
        {"threads", required_argument, 0, 't'},   {"static-server", required_argument, 0, 's'},
        {"hardening", no_argument, 0, 'H'},       {"old", no_argument, 0, 'O'},
        {"no-hardening", no_argument, 0, 'N'},    {"fresh", required_argument, 0, 'F'},
        {"kueue-url", required_argument, 0, 'k'}, {"kueue-ca", required_argument, 0, 'a'},
        {"kueue-pid", required_argument, 0, 'p'}, {"json", required_argument, 0, 'j'},
        {"trace", required_argument, 0, 'T'},     {"help", no_argument, 0, 'h'},
        {"baseline", required_argument, 0, 'b'},  {"rounds", required_argument, 0, 'R'},
        {"title", required_argument, 0, 'L'},     {0, 0, 0, 0},
    };
    int o, static_port = 0, only_hardening = 0, old = 0, no_hardening = 0;
    const char *trace_path = NULL, *kueue_url = NULL, *kueue_ca = NULL, *json_path = NULL;
    const char *baseline = NULL, *title = "webhook";
    pid_t kueue_pid = 0;
    while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (o) {
        case 'w':
            webhook = optarg;
            break;
        case 'r':
            rate = atof(optarg);
            break;
        case 'd':
            secs = atof(optarg);
            break;
        case 'c':
            nconn = atoi(optarg);
            break;
        case 't':
            threads = (unsigned)atoi(optarg);
            break;
        case 's':
            static_port = atoi(optarg);
            break;
        case 'H':
            only_hardening = 1;
            break;
        case 'O':
            old = 1;
            break;
        case 'N':
            no_hardening = 1;
            break;
        case 'F':
            nfresh = atoi(optarg);
            break;
        case 'k':
            kueue_url = optarg;
            break;
        case 'a':
            kueue_ca = optarg;
            break;
        case 'p':
            kueue_pid = (pid_t)atoi(optarg);
            break;
        case 'j':
            json_path = optarg;
            break;
        case 'T':
            trace_path = optarg;
            break;
        case 'b':
            baseline = optarg;
            break;
        case 'R':
            rounds = atoi(optarg);
            break;
        case 'L':
            title = optarg;
            break;
        default:
            printf("usage: wh-bench [--webhook BIN] [--rate N] [--duration S] [--connections N]\n"
                   "                [--threads N] [--fresh N] [--json FILE] [--trace FILE]\n"
                   "                [--kueue-url URL --kueue-ca FILE [--kueue-pid PID]]\n"
                   "                [--baseline BIN] [--rounds N] [--hardening | --no-hardening]\n"
                   "                [--old] [--title NAME]\n"
                   "  --fresh N      reviews on a new TLS connection each, per server (200)\n"
                   "  --rounds N     the fixed-rate and closed-loop phases N times each, the\n"
                   "                 servers taking turns; the median round is reported (3)\n"
                   "  --json FILE    the figures as JSON (build/bench/webhook.json)\n"
                   "  --title NAME   the JSON's bench name, the table's heading (webhook)\n"
                   "  --trace FILE   per request of the fixed-rate phases: server, send time\n"
                   "                 (s), latency (ms), new connections made\n"
                   "  --kueue-url    Kueue's webhook server (https://host:port), answering the\n"
                   "                 same review beside mkueue's; --kueue-pid for its RSS\n"
                   "  --baseline BIN another mkueue-webhook (the one before a change) measured\n"
                   "                 in the same run, column baseline (not in the JSON)\n"
                   "  --hardening    only the defence checks (peak RSS, slow clients)\n"
                   "  --no-hardening only the figures\n"
                   "  --old          the binary predates the probe listener (no --health-port)\n");
            return o == 'h' ? 0 : 2;
        }
    }
    log_set_level(LOG_ERROR);
    if (static_port) /* the child: argv[optind] is the cert folder */
        return run_static_server(static_port, argv[optind], threads);
    if (rate <= 0 || secs <= 0 || nconn < 1 || threads < 1 || nfresh < 1 || rounds < 1 ||
        rounds > MAX_ROUNDS || (kueue_url && !kueue_ca))
        die("bad arguments");
    double load_start = load1();
    signal(SIGPIPE, SIG_IGN);
    curl_global_init(CURL_GLOBAL_DEFAULT);

    char dir[] = "/tmp/wh-bench-XXXXXX";
    if (!mkdtemp(dir))
        die("cannot create a temporary folder");
    char path[512], err[256];

    /* the fake API and the kubeconfigs pointing at it */
    struct th_server *api = th_start(NULL);
    if (!api)
        die("cannot start the fake API server");
    char *ca_pem = th_read_data("test-ca.pem", NULL);
    if (!ca_pem)
        die("cannot read test-ca.pem (set MKUEUE_TEST_DATA)");
    char *ca_b64 = b64(ca_pem), *kubeconfig = NULL;
    if (asprintf(&kubeconfig,
                 "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: %s\n"
                 "    certificate-authority-data: %s\nusers:\n- name: u\n  user:\n    token: t\n"
                 "contexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n",
                 th_url(api), ca_b64) < 0)
        die("out of memory");
    char *kc_b64 = b64(kubeconfig);
    if (asprintf(&secrets_list,
                 "{\"kind\":\"SecretList\",\"metadata\":{\"resourceVersion\":\"10\"},\"items\":["
                 "{\"metadata\":{\"namespace\":\"mkueue-system\",\"name\":\"worker-1-kubeconfig\","
                 "\"resourceVersion\":\"5\"},\"data\":{\"kubeconfig\":\"%s\"}},"
                 "{\"metadata\":{\"namespace\":\"mkueue-system\",\"name\":\"worker-2-kubeconfig\","
                 "\"resourceVersion\":\"6\"},\"data\":{\"kubeconfig\":\"%s\"}}]}",
                 kc_b64, kc_b64) < 0)
        die("out of memory");
    for (int i = 0; i < 2; i++)
        if (asprintf(&secret_one[i],
                     "{\"kind\":\"Secret\",\"metadata\":{\"namespace\":\"mkueue-system\","
                     "\"name\":\"worker-%d-kubeconfig\",\"resourceVersion\":\"%d\"},"
                     "\"data\":{\"kubeconfig\":\"%s\"}}",
                     i + 1, 5 + i, kc_b64) < 0)
            die("out of memory");
    th_set_handler(api, fake_api, NULL);
    snprintf(path, sizeof(path), "%s/manager.yaml", dir);
    write_file(path, kubeconfig);

    /* serving certificate */
    static const char *const ips[] = {"127.0.0.1", NULL};
    struct tls_cert_opts co = {.cn = "mkueue-webhook", .ips = ips, .days = 1};
    char *cac, *cak, *crt, *key;
    if (tls_gen_ca("bench-ca", 1, &cac, &cak, err, sizeof(err)) < 0 ||
        tls_gen_cert(cac, cak, &co, &crt, &key, err, sizeof(err)) < 0)
        die(err);
    char ca_file[512];
    snprintf(ca_file, sizeof(ca_file), "%s/ca.crt", dir);
    write_file(ca_file, cac);
    snprintf(path, sizeof(path), "%s/tls.crt", dir);
    write_file(path, crt);
    snprintf(path, sizeof(path), "%s/tls.key", dir);
    write_file(path, key);

    char th0[16];
    snprintf(th0, sizeof(th0), "%u", threads);
    struct wh_launch wl = {webhook, path, dir, th0, old};
    char kcpath[512];
    snprintf(kcpath, sizeof(kcpath), "%s/manager.yaml", dir);
    wl.kubeconfig = kcpath;
    int failures = 0;
    if (only_hardening) {
        body = make_review();
        body_len = strlen(body);
        failures = hardening(&wl, ca_file, body);
        goto cleanup;
    }

    /* the two servers */
    int wport = free_port(), mport = free_port(), sport = free_port();
    char kc[512], ps[16], ms[16], ss[16], th[16], self[4096];
    snprintf(kc, sizeof(kc), "%s/manager.yaml", dir);
    snprintf(ps, sizeof(ps), "%d", wport);
    snprintf(ms, sizeof(ms), "%d", mport);
    snprintf(ss, sizeof(ss), "%d", sport);
    snprintf(th, sizeof(th), "%u", threads);
    ssize_t sl = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (sl < 0)
        die("cannot find myself");
    self[sl] = '\0';
    char *wargv[] = {
        (char *)webhook,  "--kubeconfig",   kc,       "--cert-dir", dir,
        "--bind-address", "127.0.0.1",      "--port", ps,           "--metrics-bind-address",
        "127.0.0.1",      "--metrics-port", ms,       "--threads",  th,
        "--log-level",    "warn",           NULL};
    char *sargv[] = {self, "--threads", th, "--static-server", ss, dir, NULL};
    struct target wt = {.name = "webhook", .ca = ca_file, .pid = spawn(wargv)};
    struct target st = {.name = "static", .ca = ca_file, .pid = spawn(sargv)};
    snprintf(wt.base, sizeof(wt.base), "https://127.0.0.1:%d", wport);
    snprintf(st.base, sizeof(st.base), "https://127.0.0.1:%d", sport);

    char murl[128];
    snprintf(murl, sizeof(murl), "http://127.0.0.1:%d/metrics", mport);
    double deadline = now_s() + 30;
    while (probe(murl, "mkueue_webhook_cache_synced{cluster=\"worker-2\"} 1") < 0 ||
           probe(murl, "mkueue_webhook_cache_synced{cluster=\"worker-1\"} 1") < 0 ||
           probe(murl, "mkueue_webhook_cache_synced{cluster=\"manager\"} 1") < 0) {
        if (now_s() > deadline)
            die("the webhook did not sync its caches within 30 s");
        usleep(100 * 1000);
    }
    body = make_review();
    body_len = strlen(body);

    struct target kt = {.name = "kueue", .ca = kueue_ca, .pid = kueue_pid};
    wt.name = "mkueue";
    st.name = "floor";
    struct target bt = {.name = "baseline", .ca = ca_file};
    struct report rep = {.t = {&wt, &st}, .nt = 2};
    if (kueue_url) {
        snprintf(kt.base, sizeof(kt.base), "%s", kueue_url);
        rep.t[rep.nt++] = &kt;
    }
    if (baseline) {
        struct wh_launch bl = wl;
        int bm, bh;
        bl.bin = baseline;
        launch(&bl, &bt, &bm, &bh);
        rep.t[rep.nt++] = &bt;
    }
    struct pool pools[MAX_TARGETS];
    for (int k = 0; k < rep.nt; k++) {
        pool_init(&pools[k], rep.t[k], nconn);
        /* one answer of each, as a check that the full path is taken */
        struct result chk = load(rep.t[k], &pools[k], 1, 10, 0.2);
        if (chk.errors) {
            fprintf(stderr, "wh-bench: %s answers with errors\n", rep.t[k]->name);
            exit(1);
        }
    }

    printf("mkueue-webhook benchmark (%s): %u server threads, %d kept-alive TLS connections, "
           "%zu-byte Job AdmissionReview (mutate and validate alternating), median of %d "
           "rounds%s\n",
           title, threads, nconn, body_len, rounds,
           kueue_url ? "; Kueue's controller-manager answers the same review" : "");
    struct result fixed[MAX_TARGETS], closed[MAX_TARGETS];
    double idle[MAX_TARGETS], fr[MAX_TARGETS][2];
    for (int k = 0; k < rep.nt; k++)
        idle[k] = rep.t[k]->pid > 0 ? rss_mib(rep.t[k]->pid) : -1;
    if (trace_path && !(trace = fopen(trace_path, "w")))
        die("cannot write the trace file");
    /* Before each measured phase, a short closed loop (re)opens every
     * connection: a server may have closed those idle through the other
     * servers' phases (mkueue's --idle-timeout is 30 s), and the fixed rate
     * uses a few of them only. */
    struct result fr_r[MAX_TARGETS][MAX_ROUNDS], cl_r[MAX_TARGETS][MAX_ROUNDS];
    for (int i = 0; i < rounds; i++)
        for (int k = 0; k < rep.nt; k++) {
            load(rep.t[k], &pools[k], nconn, 0, 0.3);
            load(rep.t[k], &pools[k], nconn, rate, 1); /* warm-up */
            fr_r[k][i] = load(rep.t[k], &pools[k], nconn, rate, secs);
        }
    if (trace)
        fclose(trace);
    trace = NULL;
    for (int i = 0; i < rounds; i++)
        for (int k = 0; k < rep.nt; k++) {
            load(rep.t[k], &pools[k], nconn, 0, 0.3);
            cl_r[k][i] = load(rep.t[k], &pools[k], nconn, 0, secs);
        }
    for (int k = 0; k < rep.nt; k++) {
        fixed[k] = median_round(fr_r[k], rounds);
        closed[k] = median_round(cl_r[k], rounds);
    }
    for (int k = 0; k < rep.nt; k++)
        pool_clear(&pools[k]);
    fresh(rep.t, rep.nt, nfresh, fr);

    double v[MAX_TARGETS];
    char what[64];
#define ROW(metric, unit, better, fmt, expr)                                                       \
    do {                                                                                           \
        for (int k = 0; k < MAX_TARGETS; k++)                                                      \
            v[k] = k < rep.nt ? (expr) : -1;                                                       \
        add_row(&rep, metric, unit, better, fmt, v);                                               \
    } while (0)
    snprintf(what, sizeof(what), "p50 ms at %.0f/s", rate);
    ROW(what, "ms", "lower", "%.3f", fixed[k].p50_ms);
    snprintf(what, sizeof(what), "p99 ms at %.0f/s", rate);
    ROW(what, "ms", "lower", "%.3f", fixed[k].p99_ms);
    snprintf(what, sizeof(what), "max ms at %.0f/s", rate);
    ROW(what, "ms", "lower", "%.3f", fixed[k].max_ms);
    snprintf(what, sizeof(what), "achieved reviews/s at %.0f/s", rate);
    ROW(what, "reviews/s", "higher", "%.0f", fixed[k].achieved);
    snprintf(what, sizeof(what), "new connections at %.0f/s", rate);
    ROW(what, "connections", "lower", "%.0f", (double)fixed[k].connects);
    snprintf(what, sizeof(what), "server CPU us per review at %.0f/s", rate);
    ROW(what, "us", "lower", "%.0f", fixed[k].cpu_us);
    ROW("max reviews/s (closed loop)", "reviews/s", "higher", "%.0f", closed[k].achieved);
    ROW("server CPU us per review at max", "us", "lower", "%.0f", closed[k].cpu_us);
    ROW("p99 ms at max", "ms", "lower", "%.3f", closed[k].p99_ms);
    ROW("p50 ms on a new TLS connection", "ms", "lower", "%.3f", fr[k][0]);
    ROW("p99 ms on a new TLS connection", "ms", "lower", "%.3f", fr[k][1]);
    ROW("RSS MiB idle", "MiB", "lower", "%.1f", idle[k]);
    ROW("RSS MiB peak under load", "MiB", "lower", "%.1f",
        rep.t[k]->pid > 0 ? fmax(fixed[k].rss_peak, closed[k].rss_peak) : -1);
    ROW("errors", "reviews", "lower", "%.0f", (double)(fixed[k].errors + closed[k].errors));
#undef ROW
    print_report(&rep);
    printf("\n  goal (issue 15, not enforced): p99 < 2 ms at 1000 req/s on 2 cores and within "
           "1.5x the floor's,\n  RSS < 20 MiB");
    if (kueue_url)
        printf("; kueue is Kueue's whole controller-manager (its RSS too), not a webhook alone");
    printf("\n  load average (1 min) %.2f at the start, %.2f at the end, %ld cores\n", load_start,
           load1(), sysconf(_SC_NPROCESSORS_ONLN));
    if (json_path) {
        char cond[256];
        snprintf(cond, sizeof(cond),
                 "%u server threads, %d kept-alive TLS connections, %.0f reviews/s for %.0f s, "
                 "median of %d rounds, load1 %.2f at the end",
                 threads, nconn, rate, secs, rounds, load1());
        write_json(&rep, json_path, title, load_start, cond);
    }

    stop(wt.pid);
    stop(st.pid);
    if (baseline)
        stop(bt.pid);
    if (!no_hardening)
        failures = hardening(&wl, ca_file, body);
cleanup:
    th_free(api);
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "wh-bench: could not remove %s\n", dir);
    free((char *)body);
    free(ca_pem);
    free(ca_b64);
    free(kubeconfig);
    free(kc_b64);
    free(secrets_list);
    free(secret_one[0]);
    free(secret_one[1]);
    free(cac);
    free(cak);
    free(crt);
    free(key);
    curl_global_cleanup();
    return failures ? 1 : 0;
}
