#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"

static char *render(struct mt_registry *reg)
{
    struct buf b;
    buf_init(&b, BUF_CAP_METRICS);
    assert_int_equal(mt_render(reg, &b), 0);
    buf_cstr(&b);
    return buf_steal(&b);
}

static void test_golden(void **state)
{
    (void)state;
    struct mt_registry *reg = mt_registry_new();
    assert_non_null(reg);
    static const char *const rl[] = {"cluster", "code", NULL};
    struct mt_family *req = mt_counter(reg, "mkueue_requests_total", "Requests sent.", rl);
    struct mt_family *up = mt_gauge(reg, "mkueue_up", "1 when up.", NULL);
    struct mt_family *empty = mt_gauge(reg, "mkueue_empty", "Never set.", rl);
    static const double b[] = {0.1, 1};
    static const char *const hl[] = {"op", NULL};
    struct mt_family *lat = mt_histogram(reg, "mkueue_latency_seconds", "Latency.", hl, b, 2);
    assert_non_null(req);
    assert_non_null(up);
    assert_non_null(empty);
    assert_non_null(lat);

    const char *w2_200[] = {"worker-2", "200"};
    const char *w1_500[] = {"worker-1", "500"};
    const char *w1_200[] = {"worker-1", "200"};
    assert_int_equal(mt_inc(req, w2_200, 1), 0);
    assert_int_equal(mt_inc(req, w1_500, 2), 0);
    assert_int_equal(mt_inc(req, w1_200, 0.5), 0);
    assert_int_equal(mt_inc(req, w1_200, 1), 0);
    assert_int_equal(mt_set(up, NULL, 1), 0);
    const char *get[] = {"get"};
    assert_int_equal(mt_observe(lat, get, 0.05), 0);
    assert_int_equal(mt_observe(lat, get, 0.5), 0);
    assert_int_equal(mt_observe(lat, get, 3), 0);

    char *out = render(reg);
    assert_string_equal(out, "# HELP mkueue_requests_total Requests sent.\n"
                             "# TYPE mkueue_requests_total counter\n"
                             "mkueue_requests_total{cluster=\"worker-1\",code=\"200\"} 1.5\n"
                             "mkueue_requests_total{cluster=\"worker-1\",code=\"500\"} 2\n"
                             "mkueue_requests_total{cluster=\"worker-2\",code=\"200\"} 1\n"
                             "# HELP mkueue_up 1 when up.\n"
                             "# TYPE mkueue_up gauge\n"
                             "mkueue_up 1\n"
                             "# HELP mkueue_latency_seconds Latency.\n"
                             "# TYPE mkueue_latency_seconds histogram\n"
                             "mkueue_latency_seconds_bucket{op=\"get\",le=\"0.1\"} 1\n"
                             "mkueue_latency_seconds_bucket{op=\"get\",le=\"1\"} 2\n"
                             "mkueue_latency_seconds_bucket{op=\"get\",le=\"+Inf\"} 3\n"
                             "mkueue_latency_seconds_sum{op=\"get\"} 3.55\n"
                             "mkueue_latency_seconds_count{op=\"get\"} 3\n");
    free(out);
    mt_registry_free(reg);
}

static void test_unlabeled_starts_at_zero(void **state)
{
    (void)state;
    struct mt_registry *reg = mt_registry_new();
    struct mt_family *c = mt_counter(reg, "c_total", "", NULL);
    struct mt_family *h = mt_histogram(reg, "h", "", NULL, NULL, 0);
    char *out = render(reg);
    assert_non_null(strstr(out, "# HELP c_total \n# TYPE c_total counter\nc_total 0\n"));
    /* default buckets: 11 bounds + Inf */
    assert_non_null(strstr(out, "h_bucket{le=\"0.005\"} 0\n"));
    assert_non_null(strstr(out, "h_bucket{le=\"10\"} 0\nh_bucket{le=\"+Inf\"} 0\n"
                                "h_sum 0\nh_count 0\n"));
    double v = -1;
    assert_int_equal(mt_value(c, NULL, &v), 0);
    assert_true(v == 0);
    assert_int_equal(mt_value(h, NULL, &v), 0);
    free(out);
    mt_registry_free(reg);
}

static void test_escaping(void **state)
{
    (void)state;
    struct mt_registry *reg = mt_registry_new();
    static const char *const l[] = {"v", NULL};
    struct mt_family *g = mt_gauge(reg, "g", "a \\ back\nslash \"quoted\"", l);
    const char *vals[] = {"q\"b\\s\nn"};
    assert_int_equal(mt_set(g, vals, -2.5), 0);
    char *out = render(reg);
    assert_string_equal(out, "# HELP g a \\\\ back\\nslash \"quoted\"\n"
                             "# TYPE g gauge\n"
                             "g{v=\"q\\\"b\\\\s\\nn\"} -2.5\n");
    free(out);
    mt_registry_free(reg);
}

static void test_histogram_cumulative(void **state)
{
    (void)state;
    struct mt_registry *reg = mt_registry_new();
    static const double b[] = {1, 2, 5, INFINITY}; /* trailing +Inf is dropped */
    struct mt_family *h = mt_histogram(reg, "h", "x", NULL, b, 4);
    assert_non_null(h);
    const double obs[] = {0.5, 1, 1.5, 2, 4, 5, 7, 100, -3};
    double sum = 0;
    for (size_t i = 0; i < sizeof(obs) / sizeof(obs[0]); i++) {
        assert_int_equal(mt_observe(h, NULL, obs[i]), 0);
        sum += obs[i];
    }
    char *out = render(reg);
    char want[512];
    /* bounds are inclusive: 1 falls in le="1" */
    snprintf(want, sizeof(want),
             "h_bucket{le=\"1\"} 3\nh_bucket{le=\"2\"} 5\nh_bucket{le=\"5\"} 7\n"
             "h_bucket{le=\"+Inf\"} 9\nh_sum %g\nh_count 9\n",
             sum);
    assert_non_null(strstr(out, want));
    free(out);
    double n = 0;
    assert_int_equal(mt_value(h, NULL, &n), 0);
    assert_true(n == 9);
    /* NaN counts, lands only in +Inf, poisons the sum as in Prometheus */
    assert_int_equal(mt_observe(h, NULL, NAN), 0);
    out = render(reg);
    assert_non_null(strstr(out, "h_bucket{le=\"5\"} 7\nh_bucket{le=\"+Inf\"} 10\nh_sum NaN\n"));
    free(out);
    mt_registry_free(reg);
}

struct worker {
    struct mt_family *c, *g, *h;
    int id;
};

#define PER_THREAD 20000

static void *hammer(void *arg)
{
    const struct worker *w = arg;
    const char *even[] = {"even"}, *odd[] = {"odd"};
    char own[16];
    snprintf(own, sizeof(own), "t%d", w->id);
    const char *mine[] = {own};
    for (int i = 0; i < PER_THREAD; i++) {
        mt_inc(w->c, i % 2 ? odd : even, 1);
        mt_inc(w->c, mine, 1); /* creates series concurrently */
        mt_add(w->g, NULL, i % 2 ? -1 : 2);
        mt_observe(w->h, NULL, (double)(i % 3));
    }
    return NULL;
}

static void test_concurrent(void **state)
{
    (void)state;
    struct mt_registry *reg = mt_registry_new();
    static const char *const l[] = {"k", NULL};
    static const double b[] = {0.5, 1.5};
    struct worker w[4];
    pthread_t t[4];
    for (int i = 0; i < 4; i++) {
        w[i] = (struct worker){mt_counter(reg, "c", "", l), mt_gauge(reg, "g", "", NULL),
                               mt_histogram(reg, "h", "", NULL, b, 2), i};
        assert_non_null(w[i].c);
        assert_ptr_equal(w[i].c, w[0].c); /* re-registration returns the same family */
        assert_int_equal(pthread_create(&t[i], NULL, hammer, &w[i]), 0);
    }
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    double v;
    const char *even[] = {"even"}, *odd[] = {"odd"}, *t3[] = {"t3"};
    assert_int_equal(mt_value(w[0].c, even, &v), 0);
    assert_true(v == 4 * PER_THREAD / 2);
    assert_int_equal(mt_value(w[0].c, odd, &v), 0);
    assert_true(v == 4 * PER_THREAD / 2);
    assert_int_equal(mt_value(w[0].c, t3, &v), 0);
    assert_true(v == PER_THREAD);
    assert_int_equal(mt_value(w[0].g, NULL, &v), 0);
    assert_true(v == 4 * PER_THREAD / 2);
    char *out = render(reg);
    char want[128];
    snprintf(want, sizeof(want), "h_bucket{le=\"+Inf\"} %d\n", 4 * PER_THREAD);
    assert_non_null(strstr(out, want));
    free(out);
    mt_registry_free(reg);
}

static void test_invalid_names(void **state)
{
    (void)state;
    struct mt_registry *reg = mt_registry_new();
    assert_null(mt_counter(reg, "1abc", "", NULL));
    assert_null(mt_counter(reg, "a-b", "", NULL));
    assert_null(mt_counter(reg, "", "", NULL));
    assert_null(mt_counter(reg, NULL, "", NULL));
    assert_non_null(mt_counter(reg, "ns:sub_total", "", NULL)); /* colons allowed */
    assert_non_null(mt_counter(reg, "_x", "", NULL));
    const char *const colon[] = {"a:b", NULL};
    const char *const reserved[] = {"__name", NULL};
    const char *const digit[] = {"9a", NULL};
    const char *const dup[] = {"a", "b", "a", NULL};
    const char *const le[] = {"le", NULL};
    const char *const nine[] = {"a", "b", "c", "d", "e", "f", "g", "h", "i", NULL};
    const char *const eight[] = {"a", "b", "c", "d", "e", "f", "g", "h", NULL};
    assert_null(mt_counter(reg, "m1", "", colon));
    assert_null(mt_counter(reg, "m2", "", reserved));
    assert_null(mt_counter(reg, "m3", "", digit));
    assert_null(mt_counter(reg, "m4", "", dup));
    assert_null(mt_histogram(reg, "m5", "", le, NULL, 0));
    assert_non_null(mt_gauge(reg, "m6", "", le)); /* "le" is only reserved for histograms */
    assert_null(mt_gauge(reg, "m7", "", nine));
    assert_non_null(mt_gauge(reg, "m8", "", eight));
    const double down[] = {1, 0.5}, nan[] = {NAN}, same[] = {1, 1};
    assert_null(mt_histogram(reg, "m9", "", NULL, down, 2));
    assert_null(mt_histogram(reg, "m10", "", NULL, nan, 1));
    assert_null(mt_histogram(reg, "m11", "", NULL, same, 2));
    double many[MT_MAX_BUCKETS + 1];
    for (int i = 0; i <= MT_MAX_BUCKETS; i++)
        many[i] = i;
    assert_null(mt_histogram(reg, "m12", "", NULL, many, MT_MAX_BUCKETS + 1));
    assert_non_null(mt_histogram(reg, "m12", "", NULL, many, MT_MAX_BUCKETS));

    /* duplicates: same shape returns the family, another shape is refused */
    const char *const ab[] = {"a", "b", NULL}, *const ba[] = {"b", "a", NULL};
    struct mt_family *f = mt_counter(reg, "dup_total", "one", ab);
    assert_non_null(f);
    assert_ptr_equal(mt_counter(reg, "dup_total", "other help", ab), f);
    assert_null(mt_gauge(reg, "dup_total", "one", ab));
    assert_null(mt_counter(reg, "dup_total", "one", ba));
    assert_null(mt_counter(reg, "dup_total", "one", NULL));
    const double b1[] = {1, 2}, b2[] = {1, 3};
    struct mt_family *h = mt_histogram(reg, "dh", "", NULL, b1, 2);
    assert_ptr_equal(mt_histogram(reg, "dh", "", NULL, b1, 2), h);
    assert_null(mt_histogram(reg, "dh", "", NULL, b2, 2));
    assert_null(mt_counter(NULL, "x", "", NULL));
    mt_registry_free(reg);
}

static void test_wrong_use(void **state)
{
    (void)state;
    struct mt_registry *reg = mt_registry_new();
    static const char *const l[] = {"a", NULL};
    struct mt_family *c = mt_counter(reg, "c", "", l);
    struct mt_family *g = mt_gauge(reg, "g", "", NULL);
    const char *v[] = {"x"};
    assert_int_equal(mt_inc(c, v, -1), -1);
    assert_int_equal(mt_inc(c, v, NAN), -1);
    assert_int_equal(mt_set(c, v, 1), -1);
    assert_int_equal(mt_observe(c, v, 1), -1);
    assert_int_equal(mt_inc(g, NULL, 1), -1);
    assert_int_equal(mt_inc(c, NULL, 1), -1); /* labels need values */
    assert_int_equal(mt_inc(NULL, v, 1), -1);
    assert_int_equal(mt_add(g, NULL, -3), 0);
    double out;
    assert_int_equal(mt_value(c, v, &out), -1); /* reading does not create */
    assert_int_equal(mt_value(g, NULL, &out), 0);
    assert_true(out == -3);
    /* a NULL value is the empty string */
    const char *nullv[] = {NULL};
    assert_int_equal(mt_inc(c, nullv, 1), 0);
    char *s = render(reg);
    assert_non_null(strstr(s, "c{a=\"\"} 1\n"));
    free(s);
    /* a bounded buffer that overflows is reported */
    struct buf small;
    buf_init(&small, 16);
    assert_int_equal(mt_render(reg, &small), -1);
    buf_free(&small);
    mt_registry_free(reg);
}

static void test_cardinality_cap(void **state)
{
    (void)state;
    struct mt_registry *reg = mt_registry_new();
    mt_registry_set_series_limit(reg, 3);
    static const char *const l[] = {"id", NULL};
    struct mt_family *c = mt_counter(reg, "c", "", l);
    char id[16];
    const char *v[] = {id};
    for (int i = 0; i < 5; i++) {
        snprintf(id, sizeof(id), "%d", i);
        assert_int_equal(mt_inc(c, v, 1), i < 3 ? 0 : -1);
    }
    snprintf(id, sizeof(id), "1");
    assert_int_equal(mt_inc(c, v, 1), 0); /* existing series still count */
    char *out = render(reg);
    assert_string_equal(out, "# HELP mkueue_metrics_series_dropped_total Series not created "
                             "because their family reached its series limit.\n"
                             "# TYPE mkueue_metrics_series_dropped_total counter\n"
                             "mkueue_metrics_series_dropped_total{family=\"c\"} 2\n"
                             "# HELP c \n# TYPE c counter\n"
                             "c{id=\"0\"} 1\nc{id=\"1\"} 2\nc{id=\"2\"} 1\n");
    free(out);
    mt_registry_free(reg);

    /* the default limit holds many series and the table keeps growing */
    reg = mt_registry_new();
    c = mt_counter(reg, "c", "", l);
    for (int i = 0; i < MT_DEFAULT_SERIES_LIMIT + 5; i++) {
        snprintf(id, sizeof(id), "%d", i);
        assert_int_equal(mt_inc(c, v, 1), i < MT_DEFAULT_SERIES_LIMIT ? 0 : -1);
    }
    double d;
    const char *cv[] = {"c"};
    assert_int_equal(mt_value(mt_counter(reg, "mkueue_metrics_series_dropped_total", "",
                                         (const char *const[]){"family", NULL}),
                              cv, &d),
                     0);
    assert_true(d == 5);
    snprintf(id, sizeof(id), "%d", MT_DEFAULT_SERIES_LIMIT - 1);
    assert_int_equal(mt_value(c, v, &d), 0);
    mt_registry_free(reg);
}

/* A table registers each family with its type, and says when one failed
 * without keeping the others from registering. */
static void test_register_table(void **state)
{
    (void)state;
    struct mt_registry *reg = mt_registry_new();
    assert_non_null(reg);
    static const char *const l[] = {"op", NULL};
    static const double b[] = {1, 2};
    struct mt_family *c = NULL, *g = NULL, *h = NULL, *bad = NULL;
    const struct mt_def ok[] = {
        {&c, MT_COUNTER, "t_total", "C.", l, NULL, 0},
        {&g, MT_GAUGE, "t_gauge", "G.", NULL, NULL, 0},
        {&h, MT_HISTOGRAM, "t_seconds", "H.", l, b, 2},
    };
    assert_int_equal(mt_register(reg, ok, 3), 0);
    assert_non_null(c);
    assert_non_null(g);
    assert_non_null(h);
    const char *const v[] = {"x"};
    assert_int_equal(mt_inc(c, v, 1), 0);
    assert_int_equal(mt_set(g, NULL, 3), 0);
    assert_int_equal(mt_observe(h, v, 1.5), 0);
    assert_int_equal(mt_inc(g, NULL, 1), -1); /* a gauge, not a counter */
    char *out = render(reg);
    assert_non_null(strstr(out, "# TYPE t_total counter\nt_total{op=\"x\"} 1\n"));
    assert_non_null(strstr(out, "# TYPE t_gauge gauge\nt_gauge 3\n"));
    assert_non_null(strstr(out, "t_seconds_bucket{op=\"x\",le=\"2\"} 1\n"));
    free(out);
    struct mt_family *after = NULL;
    const struct mt_def mixed[] = {
        {&bad, MT_COUNTER, "1bad", "Invalid name.", NULL, NULL, 0},
        {&after, MT_GAUGE, "t_after", "Still registered.", NULL, NULL, 0},
    };
    assert_int_equal(mt_register(reg, mixed, 2), -1);
    assert_null(bad);
    assert_non_null(after);
    mt_registry_free(reg);
}

static void test_format_value(void **state)
{
    (void)state;
    struct {
        double v;
        const char *s;
    } cases[] = {
        {0, "0"},
        {-0.0, "0"},
        {1, "1"},
        {-1, "-1"},
        {1e6, "1000000"},
        {9007199254740992.0, "9007199254740992"},
        {1e20, "1e+20"},
        {0.1, "0.1"},
        {2.5, "2.5"},
        {1e-5, "1e-05"},
        {1.0 / 3, "0.3333333333333333"},
        {0.1 + 0.2, "0.30000000000000004"},
        {NAN, "NaN"},
        {INFINITY, "+Inf"},
        {-INFINITY, "-Inf"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char out[64];
        mt_format_value(cases[i].v, out, sizeof(out));
        assert_string_equal(out, cases[i].s);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden),       cmocka_unit_test(test_unlabeled_starts_at_zero),
        cmocka_unit_test(test_escaping),     cmocka_unit_test(test_histogram_cumulative),
        cmocka_unit_test(test_concurrent),   cmocka_unit_test(test_invalid_names),
        cmocka_unit_test(test_wrong_use),    cmocka_unit_test(test_cardinality_cap),
        cmocka_unit_test(test_format_value), cmocka_unit_test(test_register_table),
    };
    return cmocka_run_group_tests_name("metrics", tests, NULL, NULL);
}
