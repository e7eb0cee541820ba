/* The watch stream decoder (the informer is tested in test_kube_informer.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonx.h"
#include "kube_watch.h"

/* Records "TYPE:name" (or "ERROR:code:reason:message") per event. */
struct seen {
    char log[4096];
    int n;
    int stop_at; /* return 5 from the callback at this event number (1-based) */
    json_t *kept;
};

static int record(const struct kw_event *ev, void *ud)
{
    static const char *const names[] = {"ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"};
    struct seen *s = ud;
    size_t len = strlen(s->log);
    s->n++;
    if (ev->type == KW_ERROR) {
        snprintf(s->log + len, sizeof(s->log) - len, "ERROR:%ld:%s:%s;", ev->code, ev->reason,
                 ev->message);
    } else {
        json_t *md = json_object_get(ev->object, "metadata");
        const char *name = json_string_value(json_object_get(md, "name"));
        const char *rv = json_string_value(json_object_get(md, "resourceVersion"));
        snprintf(s->log + len, sizeof(s->log) - len, "%s:%s@%s;", names[ev->type],
                 name ? name : "-", rv ? rv : "-");
    }
    if (!s->kept)
        s->kept = json_incref(ev->object);
    return s->n == s->stop_at ? 5 : 0;
}

static void seen_free(struct seen *s)
{
    json_decref(s->kept);
}

static const char STREAM[] =
    "{\"type\":\"ADDED\",\"object\":{\"kind\":\"Job\",\"metadata\":{\"name\":\"a\","
    "\"namespace\":\"ns\",\"resourceVersion\":\"10\"},\"spec\":{\"x\":\"{[\\\"\"}}}\n"
    "{\"type\":\"MODIFIED\",\"object\":{\"kind\":\"Job\",\"metadata\":{\"name\":\"a\","
    "\"resourceVersion\":\"11\"}}}\r\n"
    "\n"
    "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Job\",\"metadata\":{\"resourceVersion\":\"12\"}}"
    "}"
    "\n"
    "{\"type\":\"DELETED\",\"object\":{\"kind\":\"Job\",\"metadata\":{\"name\":\"a\","
    "\"resourceVersion\":\"13\"}}}\n";
static const char STREAM_LOG[] = "ADDED:a@10;MODIFIED:a@11;BOOKMARK:-@12;DELETED:a@13;";

static void test_one_chunk(void **state)
{
    (void)state;
    struct kw_decoder d;
    struct seen s = {0};
    kw_decoder_init(&d, 0, 0);
    assert_int_equal(kw_decoder_feed(&d, STREAM, strlen(STREAM), record, &s), 0);
    assert_string_equal(s.log, STREAM_LOG);
    assert_int_equal(kw_decoder_finish(&d, record, &s), 0);
    assert_int_equal(s.n, 4);
    /* An object kept with json_incref outlives the callback. */
    assert_string_equal(json_string_value(json_object_get(s.kept, "kind")), "Job");
    seen_free(&s);
    kw_decoder_free(&d);
}

/* managedFields, which nothing here reads, never reaches a handler
 * (kc_unread); the rest of the object does. */
static void test_managed_fields_left_out(void **state)
{
    (void)state;
    static const char ev[] =
        "{\"type\":\"ADDED\",\"object\":{\"kind\":\"Job\",\"metadata\":{\"name\":\"a\","
        "\"managedFields\":[{\"manager\":\"kubectl\",\"fieldsV1\":{\"f:spec\":{}}}],"
        "\"resourceVersion\":\"10\"},\"spec\":{\"metadata\":{\"managedFields\":[]}}}}\n";
    struct kw_decoder d;
    struct seen s = {0};
    kw_decoder_init(&d, 0, 0);
    assert_int_equal(kw_decoder_feed(&d, ev, strlen(ev), record, &s), 0);
    assert_string_equal(s.log, "ADDED:a@10;");
    assert_null(jx_get(s.kept, "metadata.managedFields"));
    assert_non_null(jx_get(s.kept, "spec.metadata.managedFields")); /* only the object's own */
    seen_free(&s);
    kw_decoder_free(&d);
}

static void test_every_split(void **state)
{
    (void)state;
    size_t len = strlen(STREAM);
    /* Byte by byte... */
    struct kw_decoder d;
    struct seen s = {0};
    kw_decoder_init(&d, 0, 0);
    for (size_t i = 0; i < len; i++)
        assert_int_equal(kw_decoder_feed(&d, STREAM + i, 1, record, &s), 0);
    assert_string_equal(s.log, STREAM_LOG);
    seen_free(&s);
    kw_decoder_free(&d);
    /* ...and in two parts split at every position. */
    for (size_t cut = 0; cut <= len; cut++) {
        struct seen t = {0};
        kw_decoder_init(&d, 0, 0);
        assert_int_equal(kw_decoder_feed(&d, STREAM, cut, record, &t), 0);
        assert_int_equal(kw_decoder_feed(&d, STREAM + cut, len - cut, record, &t), 0);
        assert_string_equal(t.log, STREAM_LOG);
        seen_free(&t);
        kw_decoder_free(&d);
    }
}

static void test_error_event(void **state)
{
    (void)state;
    const char *ev = "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\","
                     "\"status\":\"Failure\",\"message\":\"too old resource version: 5 (9)\","
                     "\"reason\":\"Expired\",\"code\":410}}\n"
                     "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\"}}\n";
    struct kw_decoder d;
    struct seen s = {0};
    kw_decoder_init(&d, 0, 0);
    assert_int_equal(kw_decoder_feed(&d, ev, strlen(ev), record, &s), 0);
    assert_string_equal(s.log, "ERROR:410:Expired:too old resource version: 5 (9);ERROR:0::;");
    seen_free(&s);
    kw_decoder_free(&d);
}

static void expect_decode_error_n(const char *line, size_t len, const char *needle)
{
    struct kw_decoder d;
    struct seen s = {0};
    kw_decoder_init(&d, 0, 0);
    int rc = kw_decoder_feed(&d, line, len, record, &s);
    if (rc != MK_ERR_DECODE || !strstr(kw_decoder_error(&d), needle))
        fail_msg("line %s: rc %d, error \"%s\", wanted \"%s\"", line, rc, kw_decoder_error(&d),
                 needle);
    assert_int_equal(s.n, 0);
    seen_free(&s);
    kw_decoder_free(&d);
}

static void expect_decode_error(const char *line, const char *needle)
{
    expect_decode_error_n(line, strlen(line), needle);
}

static void test_malformed(void **state)
{
    (void)state;
    expect_decode_error("not json\n", "not JSON");
    expect_decode_error("{\"type\":\"ADDED\",\"object\":{\"metadata\":{}}\n", "not JSON");
    expect_decode_error("[1,2]\n", "type");
    expect_decode_error("{\"object\":{\"metadata\":{}}}\n", "type");
    expect_decode_error("{\"type\":7,\"object\":{\"metadata\":{}}}\n", "type");
    expect_decode_error("{\"type\":\"ADDED\"}\n", "without an \"object\"");
    expect_decode_error("{\"type\":\"ADDED\",\"object\":[]}\n", "without an \"object\"");
    expect_decode_error("{\"type\":\"EXPLODED\",\"object\":{\"metadata\":{}}}\n", "unknown");
    expect_decode_error("{\"type\":\"ADDED\",\"object\":{\"kind\":\"Job\"}}\n", "metadata");
    expect_decode_error("{\"type\":\"ADDED\",\"object\":{\"metadata\":{}}} trailing\n", "JSON");
    /* A raw NUL byte inside a line. */
    static const char nul[] = "{\"type\":\"ADDED\",\"object\":{\"metadata\":{}}}\0\n";
    expect_decode_error_n(nul, sizeof(nul) - 1, "not JSON");
    static const char nul2[] = "{\"type\":\"AD\0DED\",\"object\":{\"metadata\":{}}}\n";
    expect_decode_error_n(nul2, sizeof(nul2) - 1, "not JSON");
}

static void test_error_is_sticky_until_reset(void **state)
{
    (void)state;
    struct kw_decoder d;
    struct seen s = {0};
    kw_decoder_init(&d, 0, 0);
    const char *bad = "garbage\n";
    const char *good = "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"x\"}}}\n";
    assert_int_equal(kw_decoder_feed(&d, bad, strlen(bad), record, &s), MK_ERR_DECODE);
    assert_int_equal(kw_decoder_feed(&d, good, strlen(good), record, &s), MK_ERR_DECODE);
    assert_int_equal(kw_decoder_finish(&d, record, &s), MK_ERR_DECODE);
    assert_int_equal(s.n, 0);
    kw_decoder_reset(&d);
    assert_string_equal(kw_decoder_error(&d), "");
    assert_int_equal(kw_decoder_feed(&d, good, strlen(good), record, &s), 0);
    assert_string_equal(s.log, "ADDED:x@-;");
    seen_free(&s);
    kw_decoder_free(&d);
}

static void test_line_limit(void **state)
{
    (void)state;
    const char *ev = "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"x\"}}}";
    size_t n = strlen(ev);
    struct kw_decoder d;
    struct seen s = {0};
    /* Exactly max_line bytes (newline excluded) is fine, in pieces too. */
    kw_decoder_init(&d, n, 0);
    assert_int_equal(kw_decoder_feed(&d, ev, 10, record, &s), 0);
    assert_int_equal(kw_decoder_feed(&d, ev + 10, n - 10, record, &s), 0);
    assert_int_equal(kw_decoder_feed(&d, "\n", 1, record, &s), 0);
    assert_int_equal(s.n, 1);
    kw_decoder_free(&d);
    /* One more byte is refused before the newline arrives: no unbounded growth. */
    kw_decoder_init(&d, n - 1, 0);
    assert_int_equal(kw_decoder_feed(&d, ev, 10, record, &s), 0);
    assert_int_equal(kw_decoder_feed(&d, ev + 10, n - 10, record, &s), MK_ERR_TOOBIG);
    assert_non_null(strstr(kw_decoder_error(&d), "longer than"));
    assert_true(d.line.len == 0);
    assert_int_equal(s.n, 1);
    kw_decoder_free(&d);
    /* A complete over-long line inside one chunk too. */
    kw_decoder_init(&d, 8, 0);
    assert_int_equal(kw_decoder_feed(&d, "{\"a\":123456}\n", 13, record, &s), MK_ERR_TOOBIG);
    kw_decoder_free(&d);
    seen_free(&s);
}

static char *nested(int depth, int in_string)
{
    size_t cap = (size_t)depth * 2 + 128;
    char *s = malloc(cap);
    assert_non_null(s);
    size_t o = (size_t)snprintf(s, cap, "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":");
    if (in_string) {
        s[o++] = '"';
        for (int i = 0; i < depth; i++)
            s[o++] = '[';
        s[o++] = '"';
    } else {
        for (int i = 0; i < depth; i++)
            s[o++] = '[';
        for (int i = 0; i < depth; i++)
            s[o++] = ']';
    }
    o += (size_t)snprintf(s + o, cap - o, "}}}\n");
    return s;
}

static void test_depth_limit(void **state)
{
    (void)state;
    struct kw_decoder d;
    struct seen s = {0};
    /* The event's own envelope uses 3 levels. */
    char *ok = nested(7, 0), *deep = nested(8, 0), *str = nested(500, 1), *huge = nested(100000, 0);
    kw_decoder_init(&d, 0, 10);
    assert_int_equal(kw_decoder_feed(&d, ok, strlen(ok), record, &s), 0);
    assert_int_equal(kw_decoder_feed(&d, str, strlen(str), record, &s), 0);
    assert_int_equal(s.n, 2); /* brackets inside strings do not count */
    assert_int_equal(kw_decoder_feed(&d, deep, strlen(deep), record, &s), MK_ERR_DECODE);
    assert_non_null(strstr(kw_decoder_error(&d), "deeper than 10"));
    kw_decoder_free(&d);
    kw_decoder_init(&d, 0, 0); /* default depth, no stack trouble */
    assert_int_equal(kw_decoder_feed(&d, huge, strlen(huge), record, &s), MK_ERR_DECODE);
    kw_decoder_free(&d);
    free(ok);
    free(deep);
    free(str);
    free(huge);
    seen_free(&s);
}

static void test_callback_stops(void **state)
{
    (void)state;
    struct kw_decoder d;
    struct seen s = {.stop_at = 2};
    kw_decoder_init(&d, 0, 0);
    assert_int_equal(kw_decoder_feed(&d, STREAM, strlen(STREAM), record, &s), 5);
    assert_string_equal(s.log, "ADDED:a@10;MODIFIED:a@11;");
    seen_free(&s);
    kw_decoder_free(&d);
}

static void test_finish_last_line(void **state)
{
    (void)state;
    const char *ev = "{\"type\":\"DELETED\",\"object\":{\"metadata\":{\"name\":\"z\"}}}";
    struct kw_decoder d;
    struct seen s = {0};
    kw_decoder_init(&d, 0, 0);
    assert_int_equal(kw_decoder_feed(&d, ev, strlen(ev), record, &s), 0);
    assert_int_equal(s.n, 0);
    assert_int_equal(kw_decoder_finish(&d, record, &s), 0);
    assert_string_equal(s.log, "DELETED:z@-;");
    /* A truncated last line is an error at the end of the stream. */
    assert_int_equal(kw_decoder_feed(&d, ev, 20, record, &s), 0);
    assert_int_equal(kw_decoder_finish(&d, record, &s), MK_ERR_DECODE);
    seen_free(&s);
    kw_decoder_free(&d);
}

static void test_decode_line(void **state)
{
    (void)state;
    struct kw_event ev;
    json_t *root;
    char err[128];
    const char *l = "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"7\"}}}";
    assert_int_equal(kw_decode_line(l, strlen(l), 0, &ev, &root, err, sizeof(err)), 0);
    assert_int_equal(ev.type, KW_BOOKMARK);
    assert_ptr_equal(ev.object, json_object_get(root, "object"));
    json_decref(root);
    assert_int_equal(kw_decode_line("{}", 2, 0, &ev, &root, err, sizeof(err)), MK_ERR_DECODE);
    assert_null(root);
    assert_null(ev.object);
}

/* The relist/retry backoff: a pure schedule of jittered, doubling, capped waits. */
static void test_backoff_schedule(void **state)
{
    (void)state;
    struct kw_backoff b;
    kw_backoff_init(&b, 0, 0);
    assert_int_equal(b.initial_ms, KW_BACKOFF_INITIAL_MS);
    assert_int_equal(b.max_ms, KW_BACKOFF_MAX_MS);
    /* r = 0 gives the low end (half), r = the span the high end. */
    static const long lo[] = {400, 800, 1600, 3200, 6400, 12800, 15000, 15000, 15000};
    for (size_t i = 0; i < sizeof(lo) / sizeof(lo[0]); i++)
        assert_int_equal(kw_backoff_next(&b, 0), lo[i]);
    kw_backoff_reset(&b);
    static const long hi[] = {800, 1600, 3200, 6400, 12800, 25600, 30000, 30000};
    for (size_t i = 0; i < sizeof(hi) / sizeof(hi[0]); i++) {
        long span = b.cur_ms - b.cur_ms / 2;
        assert_int_equal(kw_backoff_next(&b, (uint64_t)span), hi[i]);
    }
    /* Any random number stays within [cur/2, cur], and cur never passes max. */
    kw_backoff_init(&b, 100, 1000);
    uint64_t x = 88172645463325252ULL;
    for (int i = 0; i < 1000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        long cur = b.cur_ms, w = kw_backoff_next(&b, x);
        assert_true(w >= cur / 2 && w <= cur);
        assert_true(b.cur_ms <= 1000);
        if (i % 50 == 49)
            kw_backoff_reset(&b);
    }
    /* The first wait is under a second; max below initial is raised. */
    kw_backoff_init(&b, 500, 10);
    assert_int_equal(b.max_ms, 500);
    assert_true(kw_backoff_next(&b, ~0ULL) <= 500);
    assert_int_equal(b.cur_ms, 500);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_chunk),      cmocka_unit_test(test_managed_fields_left_out),
        cmocka_unit_test(test_every_split),    cmocka_unit_test(test_error_event),
        cmocka_unit_test(test_malformed),      cmocka_unit_test(test_error_is_sticky_until_reset),
        cmocka_unit_test(test_line_limit),     cmocka_unit_test(test_depth_limit),
        cmocka_unit_test(test_callback_stops), cmocka_unit_test(test_finish_last_line),
        cmocka_unit_test(test_decode_line),    cmocka_unit_test(test_backoff_schedule),
    };
    return cmocka_run_group_tests_name("kube_watch_decoder", tests, NULL, NULL);
}
