/* Schema detection (schema.h): whether the manager's batch/v1 schema keeps
 * managedBy, read from a capped, bounded OpenAPI v3 document. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/support/test_json.h"

#include <string.h>

#include "../schema.h"
#include "jsonx.h"
#include "kinds/adapters.h"

static void test_schema_managed_by(void **state)
{
    (void)state;
    json_t *old = tj_parse("{\"definitions\":{\"io.k8s.api.batch.v1.JobSpec\":{\"properties\":"
                           "{\"parallelism\":{}}}}}");
    json_t *now = tj_parse("{\"definitions\":{\"io.k8s.api.batch.v1.JobSpec\":{\"properties\":"
                           "{\"managedBy\":{}}}}}");
    assert_int_equal(rc_schema_keeps_managed_by(old, &mk_kind_job), 0);
    assert_int_equal(rc_schema_keeps_managed_by(now, &mk_kind_job), 1);
    assert_int_equal(rc_schema_keeps_managed_by(old, &mk_kind_jobset), 1);
    assert_int_equal(rc_schema_keeps_managed_by(NULL, &mk_kind_job), 1);
    json_decref(old);
    json_decref(now);
}

/* Issue 11 item 9: the schema comes from the batch/v1 OpenAPI v3 document,
 * read under a cap and decoded with bounds. */
static void test_schema_v3_capped(void **state)
{
    (void)state;
    char err[600];
    static const char v3[] = "{\"openapi\":\"3.0.0\",\"components\":{\"schemas\":{"
                             "\"io.k8s.api.batch.v1.JobSpec\":{\"properties\":{"
                             "\"managedBy\":{\"type\":\"string\"}}}}}}";
    json_t *doc = rc_schema_parse(v3, sizeof(v3) - 1, 0, err, sizeof(err));
    assert_non_null(doc);
    assert_int_equal(rc_schema_keeps_managed_by(doc, &mk_kind_job), 1);
    json_decref(doc);
    static const char v3old[] = "{\"components\":{\"schemas\":{"
                                "\"io.k8s.api.batch.v1.JobSpec\":{\"properties\":{"
                                "\"parallelism\":{}}}}}}";
    doc = rc_schema_parse(v3old, sizeof(v3old) - 1, 0, err, sizeof(err));
    assert_int_equal(rc_schema_keeps_managed_by(doc, &mk_kind_job), 0);
    json_decref(doc);
    /* more than the cap arrived: refused, whatever was kept */
    assert_null(rc_schema_parse(v3, sizeof(v3) - 1, 1, err, sizeof(err)));
    assert_string_equal(err, "/openapi/v3/apis/batch/v1 is larger than 4194304 bytes");
    assert_null(rc_schema_parse(NULL, 0, 0, err, sizeof(err)));
    assert_non_null(strstr(err, "empty answer"));
    assert_null(rc_schema_parse("{\"a\":", 5, 0, err, sizeof(err)));
    assert_non_null(strstr(err, "/openapi/v3/apis/batch/v1: "));
    assert_null(rc_schema_parse("[1]", 3, 0, err, sizeof(err)));
    assert_non_null(strstr(err, "not a JSON object"));
    /* nesting past RC_OPENAPI_MAX_DEPTH */
    char deep[2 * (RC_OPENAPI_MAX_DEPTH + 1) + 1];
    for (int i = 0; i <= RC_OPENAPI_MAX_DEPTH; i++) {
        deep[i] = '[';
        deep[2 * (RC_OPENAPI_MAX_DEPTH + 1) - 1 - i] = ']';
    }
    deep[sizeof(deep) - 1] = '\0';
    assert_null(rc_schema_parse(deep, sizeof(deep) - 1, 0, err, sizeof(err)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_schema_managed_by),
        cmocka_unit_test(test_schema_v3_capped),
    };
    return cmocka_run_group_tests_name("rc_schema", tests, NULL, NULL);
}
