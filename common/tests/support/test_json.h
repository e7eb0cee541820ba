/* JSON fixtures for tests: parse a literal or fail the test naming it.
 * Header-only so that support objects linked outside cmocka (the bench) do
 * not need it. Include after <cmocka.h>. */
#ifndef MKUEUE_TEST_JSON_H
#define MKUEUE_TEST_JSON_H

#include <jansson.h>

static inline json_t *tj_parse(const char *s)
{
    json_error_t e;
    json_t *j = json_loads(s, JSON_DECODE_ANY, &e); /* scalars too */
    if (!j)
        fail_msg("bad test JSON %s: %s", s, e.text);
    return j;
}

#endif
