/* The reconciler context's enqueueing (ctx.h): jobs' keys go to their own
 * lane, every other key to the main one, and a context without a jobs'
 * lane keeps them all in one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "../ctx.h"
#include "workqueue.h"

/* The one key ready in q, taken and done ("" when none). */
static const char *take(struct wq *q, char *out, size_t outlen)
{
    char *k = NULL;
    out[0] = '\0';
    if (wq_get_timeout(q, &k, 0) == 0) {
        snprintf(out, outlen, "%s", k);
        wq_done(q, k);
        free(k);
    }
    return out;
}

static void test_jobs_have_their_own_lane(void **state)
{
    (void)state;
    char buf[64];
    struct rc_ctx x = {.queue = wq_new(NULL), .job_queue = wq_new(NULL)};
    rc_enqueue(&x, 'j', "ns/a");
    rc_enqueue(&x, 'w', "ns/wl");
    rc_enqueue(&x, 'q', "cq");
    assert_int_equal(wq_len(x.job_queue), 1);
    assert_string_equal(take(x.job_queue, buf, sizeof(buf)), "j/ns/a");
    assert_int_equal(wq_len(x.queue), 2);
    assert_string_equal(take(x.queue, buf, sizeof(buf)), "w/ns/wl");
    assert_string_equal(take(x.queue, buf, sizeof(buf)), "q/cq");
    /* delayed ones too */
    rc_enqueue_after(&x, 'j', "ns/b", 1);
    assert_int_equal(wq_len(x.queue), 0);
    char *k = NULL;
    assert_int_equal(wq_get_timeout(x.job_queue, &k, 1000), 0);
    assert_string_equal(k, "j/ns/b");
    wq_done(x.job_queue, k);
    free(k);
    wq_free(x.queue);
    wq_free(x.job_queue);
}

static void test_one_lane_without_a_jobs_queue(void **state)
{
    (void)state;
    char buf[64];
    struct rc_ctx x = {.queue = wq_new(NULL)};
    rc_enqueue(&x, 'j', "ns/a");
    assert_string_equal(take(x.queue, buf, sizeof(buf)), "j/ns/a");
    wq_free(x.queue);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_jobs_have_their_own_lane),
        cmocka_unit_test(test_one_lane_without_a_jobs_queue),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
