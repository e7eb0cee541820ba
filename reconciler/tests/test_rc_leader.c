/* The Lease election (leader.c): its pure rules, and the thread against a
 * scripted API server that keeps one Lease. The wall clock of this binary reads an hour ahead of
 * the kernel timers' (as right after it was stepped back by an hour), so
 * a wait computed on CLOCK_REALTIME would stall; alarm() ends the test. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../leader.h"
#include "clock.h"
#include "jsonx.h"
#include "kube_client.h"
#include "tests/support/test_https.h"

int clock_gettime(clockid_t id, struct timespec *ts)
{
    long rc = syscall(SYS_clock_gettime, id, ts);
    if (rc == 0 && id == CLOCK_REALTIME)
        ts->tv_sec += 3600;
    return (int)rc;
}

/* ---- a Lease store ---------------------------------------------------------- */

struct store {
    pthread_mutex_t mu;
    json_t *lease;
    int rv;
    int writes;           /* successful POST/PUT */
    long long written_ms; /* when the last one was answered (monotonic) */
    int hang;             /* from now on answer 503 after 2 s */
};

static int lease_handler(const struct th_request *req, struct th_response *resp, void *ud)
{
    struct store *st = ud;
    pthread_mutex_lock(&st->mu);
    if (st->hang) {
        pthread_mutex_unlock(&st->mu);
        resp->status = 503;
        resp->delay_ms = 2000;
        resp->body = "{\"kind\":\"Status\",\"code\":503}";
        return 0;
    }
    if (strcmp(req->method, "GET") == 0) {
        if (st->lease) {
            resp->body_alloc = json_dumps(st->lease, JSON_COMPACT);
        } else {
            resp->status = 404;
            resp->body = "{\"kind\":\"Status\",\"code\":404,\"reason\":\"NotFound\"}";
        }
    } else {
        json_t *in = json_loadb(req->body, req->body_len, 0, NULL);
        const char *rv = jx_str(in, "metadata.resourceVersion");
        char cur[16];
        snprintf(cur, sizeof(cur), "%d", st->rv);
        int ok = in && (strcmp(req->method, "POST") == 0 ? !st->lease
                                                         : st->lease && rv && !strcmp(rv, cur));
        if (ok) {
            st->rv++;
            snprintf(cur, sizeof(cur), "%d", st->rv);
            json_object_set_new(json_object_get(in, "metadata"), "resourceVersion",
                                json_string(cur));
            json_decref(st->lease);
            st->lease = json_incref(in);
            st->writes++;
            st->written_ms = th_now_ms();
            resp->body_alloc = json_dumps(in, JSON_COMPACT);
        } else {
            resp->status = 409;
            resp->body = "{\"kind\":\"Status\",\"code\":409,\"reason\":\"Conflict\"}";
        }
        json_decref(in);
    }
    pthread_mutex_unlock(&st->mu);
    return 0;
}

struct env {
    struct th_server *s;
    struct kcfg cfg;
    struct kc_client *c;
    struct store st;
    pthread_mutex_t mu;
    int started, lost;
};

static void on_started(void *ud)
{
    struct env *e = ud;
    pthread_mutex_lock(&e->mu);
    e->started++;
    pthread_mutex_unlock(&e->mu);
}

static void on_lost(void *ud)
{
    struct env *e = ud;
    pthread_mutex_lock(&e->mu);
    e->lost++;
    pthread_mutex_unlock(&e->mu);
}

static int count(struct env *e, int *what)
{
    pthread_mutex_lock(&e->mu);
    int n = *what;
    pthread_mutex_unlock(&e->mu);
    return n;
}

static int writes(struct env *e)
{
    pthread_mutex_lock(&e->st.mu);
    int n = e->st.writes;
    pthread_mutex_unlock(&e->st.mu);
    return n;
}

static void env_up(struct env *e)
{
    memset(e, 0, sizeof(*e));
    pthread_mutex_init(&e->mu, NULL);
    pthread_mutex_init(&e->st.mu, NULL);
    e->s = th_start(NULL);
    assert_non_null(e->s);
    th_set_handler(e->s, lease_handler, &e->st);
    e->cfg.server = strdup(th_url(e->s));
    e->cfg.ca_pem = th_read_data("test-ca.pem", &e->cfg.ca_len);
    e->cfg.token = strdup("tok");
    pthread_mutex_init(&e->cfg.lock, NULL);
    char err[256] = "";
    /* as the manager client used to be: 15 s per request */
    struct kc_options o = {.qps = -1, .timeout_ms = 15000};
    e->c = kc_new(&e->cfg, &o, err, sizeof(err));
    if (!e->c)
        fail_msg("kc_new: %s", err);
}

static void env_down(struct env *e)
{
    kc_free(e->c);
    th_free(e->s);
    json_decref(e->st.lease);
    free(e->cfg.server);
    free(e->cfg.ca_pem);
    free(e->cfg.token);
    pthread_mutex_destroy(&e->cfg.lock);
}

static struct rc_leader_opts opts(struct env *e)
{
    return (struct rc_leader_opts){.namespace = "ns",
                                   .name = "lease",
                                   .identity = "me",
                                   .lease_duration_ms = 1000,
                                   .renew_deadline_ms = 600,
                                   .retry_period_ms = 50,
                                   .on_started = on_started,
                                   .on_lost = on_lost,
                                   .ud = e};
}

/* Waits (bounded, to fail rather than hang) until *what >= n. */
static int wait_for(struct env *e, int *what, int n)
{
    for (int i = 0; i < 20000 && count(e, what) < n; i++)
        clk_nap_ms(1);
    return count(e, what) >= n;
}

static int wait_writes(struct env *e, int n)
{
    for (int i = 0; i < 20000 && writes(e) < n; i++)
        clk_nap_ms(1);
    return writes(e) >= n;
}

/* Renewals keep coming every retryPeriod although the wall clock reads an
 * hour off: the waits are on the monotonic clock. */
static void test_renews_on_the_monotonic_clock(void **state)
{
    (void)state;
    struct env e;
    env_up(&e);
    struct rc_leader_opts o = opts(&e);
    struct rc_leader *l = NULL;
    assert_int_equal(rc_leader_start(e.c, &o, &l), 0);
    assert_non_null(l);
    assert_true(wait_for(&e, &e.started, 1));
    assert_true(wait_writes(&e, 5)); /* created, then renewed 4 times */
    assert_true(rc_leader_is_leader(l));
    assert_int_equal(count(&e, &e.lost), 0);
    rc_leader_stop(l);
    /* released on stop */
    assert_string_equal(jx_str(e.st.lease, "spec.holderIdentity"), "");
    env_down(&e);
}

/* When the server stops answering, this replica never writes past its renew
 * deadline: rc_leader_may_write() turns 0 no later than renewDeadline after
 * the last lease write the server accepted, although that request may take
 * 15 s by the client's own timeout, and the election gives up then. */
static void test_no_write_after_the_renew_deadline(void **state)
{
    (void)state;
    struct env e;
    env_up(&e);
    struct rc_leader_opts o = opts(&e);
    struct rc_leader *l = NULL;
    assert_int_equal(rc_leader_start(e.c, &o, &l), 0);
    assert_true(wait_for(&e, &e.started, 1));
    assert_true(wait_writes(&e, 3));
    assert_true(rc_leader_may_write(l));
    pthread_mutex_lock(&e.st.mu);
    e.st.hang = 1;
    long long last = e.st.written_ms;
    pthread_mutex_unlock(&e.st.mu);
    int polls = 0;
    while (count(&e, &e.lost) == 0) {
        long long now = clk_now_ms(); /* before the check: the check is later */
        if (rc_leader_may_write(l))
            assert_true(now < last + o.renew_deadline_ms);
        assert_true(++polls < 20000); /* the loss must be seen */
        clk_nap_ms(1);
    }
    assert_false(rc_leader_may_write(l));
    assert_false(rc_leader_is_leader(l));
    /* a second look: the lease was not written while hanging */
    assert_int_equal(e.st.written_ms, last);
    rc_leader_stop(l);
    env_down(&e);
}

static void test_time_left(void **state)
{
    (void)state;
    assert_int_equal(rc_lease_time_left(1000, 600, 1000), 600);
    assert_int_equal(rc_lease_time_left(1000, 600, 1599), 1);
    assert_int_equal(rc_lease_time_left(1000, 600, 1600), 0);
    assert_true(rc_lease_time_left(1000, 600, 5000) < 0);
    assert_false(rc_leader_may_write(NULL));
    assert_false(rc_leader_is_leader(NULL));
}

/* The pure election rules (rc_lease_may_acquire, rc_lease_record). */
static void test_lease_election(void **state)
{
    (void)state;
    struct rc_lease_obs obs = {0};
    assert_int_equal(rc_lease_may_acquire(NULL, "me", 15000, 1000, &obs), 1);
    json_t *l = rc_lease_record(NULL, "ns", "lease", "other", 15000, 0);
    assert_string_equal(jx_str(l, "spec.holderIdentity"), "other");
    assert_int_equal(jx_int(l, "spec.leaseDurationSeconds", 0), 15);
    assert_int_equal(jx_int(l, "spec.leaseTransitions", -1), 0);
    assert_non_null(jx_str(l, "spec.renewTime"));
    jx_set_new_str(l, "metadata.resourceVersion", "1");
    /* held by another: wait a full lease duration on OUR clock since it last changed */
    assert_int_equal(rc_lease_may_acquire(l, "me", 15000, 1000, &obs), 0);
    assert_int_equal(rc_lease_may_acquire(l, "me", 15000, 15999, &obs), 0);
    assert_int_equal(rc_lease_may_acquire(l, "me", 15000, 16000, &obs), 1);
    /* a renewal restarts the wait */
    jx_set_new_str(l, "metadata.resourceVersion", "2");
    assert_int_equal(rc_lease_may_acquire(l, "me", 15000, 17000, &obs), 0);
    assert_int_equal(rc_lease_may_acquire(l, "me", 15000, 31999, &obs), 0);
    /* taking over counts a transition */
    json_t *mine = rc_lease_record(l, "ns", "lease", "me", 15000, 0);
    assert_string_equal(jx_str(mine, "spec.holderIdentity"), "me");
    assert_int_equal(jx_int(mine, "spec.leaseTransitions", -1), 1);
    assert_string_equal(jx_str(mine, "metadata.resourceVersion"), "2"); /* optimistic lock */
    assert_int_equal(rc_lease_may_acquire(mine, "me", 15000, 40000, &obs), 1);
    /* released: anyone may take it at once */
    json_t *rel = rc_lease_record(mine, "ns", "lease", "me", 15000, 1);
    assert_string_equal(jx_str(rel, "spec.holderIdentity"), "");
    struct rc_lease_obs fresh = {0};
    assert_int_equal(rc_lease_may_acquire(rel, "other", 15000, 1, &fresh), 1);
    json_decref(l);
    json_decref(mine);
    json_decref(rel);
}

int main(void)
{
    alarm(120);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lease_election),
        cmocka_unit_test(test_time_left),
        cmocka_unit_test(test_renews_on_the_monotonic_clock),
        cmocka_unit_test(test_no_write_after_the_renew_deadline),
    };
    return cmocka_run_group_tests_name("rc_leader", tests, NULL, NULL);
}
