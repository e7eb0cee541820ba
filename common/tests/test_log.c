#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

static json_t *capture_line(void (*emit)(void))
{
    char *data = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&data, &len);
    assert_non_null(f);
    log_set_stream(f);
    emit();
    log_set_stream(NULL);
    fclose(f);
    json_error_t jerr;
    json_t *j = len ? json_loadb(data, len, 0, &jerr) : NULL;
    free(data);
    return j;
}

static void emit_info(void)
{
    LOG_I("reconciler", "dispatched \"job\"", "workload", "ns/job-1", "cluster", "worker-1", "none",
          (const char *)NULL);
}

static void emit_debug(void)
{
    LOG_D("reconciler", "hidden");
}

static void test_json_line_has_klog_keys(void **state)
{
    (void)state;
    log_set_level(LOG_INFO);
    json_t *j = capture_line(emit_info);
    assert_non_null(j);
    assert_string_equal(json_string_value(json_object_get(j, "level")), "info");
    assert_string_equal(json_string_value(json_object_get(j, "msg")), "dispatched \"job\"");
    assert_string_equal(json_string_value(json_object_get(j, "logger")), "reconciler");
    assert_string_equal(json_string_value(json_object_get(j, "workload")), "ns/job-1");
    assert_string_equal(json_string_value(json_object_get(j, "cluster")), "worker-1");
    assert_true(json_is_null(json_object_get(j, "none")));
    const char *ts = json_string_value(json_object_get(j, "ts"));
    assert_non_null(ts);
    assert_int_equal(strlen(ts), strlen("2026-01-01T00:00:00.000000Z"));
    json_decref(j);
}

static void test_level_filters(void **state)
{
    (void)state;
    log_set_level(LOG_INFO);
    assert_null(capture_line(emit_debug));
    log_set_level(LOG_DEBUG);
    json_t *j = capture_line(emit_debug);
    assert_non_null(j);
    json_decref(j);
    log_set_level(LOG_INFO);
}

static void test_parse_level(void **state)
{
    (void)state;
    enum log_level l;
    assert_int_equal(log_parse_level("debug", &l), 0);
    assert_int_equal(l, LOG_DEBUG);
    assert_int_equal(log_parse_level("0", &l), 0);
    assert_int_equal(l, LOG_ERROR);
    assert_int_equal(log_parse_level("loud", &l), -1);
    assert_int_equal(log_parse_level("5", &l), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_line_has_klog_keys),
        cmocka_unit_test(test_level_filters),
        cmocka_unit_test(test_parse_level),
    };
    return cmocka_run_group_tests_name("log", tests, NULL, NULL);
}
