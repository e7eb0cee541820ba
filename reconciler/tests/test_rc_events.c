/* Kubernetes Events about a Workload (events.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/support/test_json.h"

#include "../events.h"
#include "jsonx.h"

static void test_event(void **state)
{
    (void)state;
    json_t *wl = tj_parse("{\"apiVersion\":\"kueue.x-k8s.io/v1beta2\",\"kind\":\"Workload\","
                          "\"metadata\":{\"name\":\"w\",\"namespace\":\"ns\",\"uid\":\"u\"}}");
    json_t *ev = rc_event_build(wl, "Normal", "MultiKueue", "msg", "T");
    assert_string_equal(jx_str(ev, "involvedObject.kind"), "Workload");
    assert_string_equal(jx_str(ev, "involvedObject.uid"), "u");
    assert_string_equal(jx_str(ev, "metadata.namespace"), "ns");
    assert_string_equal(jx_str(ev, "metadata.generateName"), "w.");
    assert_string_equal(jx_str(ev, "reason"), "MultiKueue");
    json_decref(ev);
    json_decref(wl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_event),
    };
    return cmocka_run_group_tests_name("rc_events", tests, NULL, NULL);
}
