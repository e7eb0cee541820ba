/* Writes the cache has not echoed (echo.h): a patch written is not sent
 * again while the cached object is older than the server's answer, and is
 * sent again once the cache caught up, the patch differs, or the entry
 * aged past RC_ECHO_MAX_MS. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>

#include "../echo.h"

static size_t json_refcount_of(const json_t *j)
{
    return j->refcount;
}

static void test_pending_until_echoed(void **state)
{
    (void)state;
    struct rc_echo *e = rc_echo_new();
    assert_non_null(e);
    json_t *p = json_pack("{s:{s:i,s:i}}", "status", "active", 1, "ready", 0);
    json_t *same = json_pack("{s:{s:i,s:i}}", "status", "ready", 0, "active", 1);
    json_t *other = json_pack("{s:{s:i}}", "status", "ready", 1);
    assert_int_equal(rc_echo_pending(e, "jobs/ns/a", p, "10", 1000), 0); /* never written */
    rc_echo_note(e, "jobs/ns/a", p, "12", 1000);
    /* the cache still shows 10 or 11: the same patch (key order aside) waits */
    assert_int_equal(rc_echo_pending(e, "jobs/ns/a", p, "10", 1100), 1);
    assert_int_equal(rc_echo_pending(e, "jobs/ns/a", same, "11", 1100), 1);
    /* another patch, another object, or the cache caught up: sent */
    assert_int_equal(rc_echo_pending(e, "jobs/ns/a", other, "10", 1100), 0);
    assert_int_equal(rc_echo_pending(e, "jobs/ns/b", p, "10", 1100), 0);
    assert_int_equal(rc_echo_pending(e, "jobs/ns/a", p, "12", 1100), 0);
    /* a cache that never catches up costs one write per RC_ECHO_MAX_MS */
    assert_int_equal(rc_echo_pending(e, "jobs/ns/a", p, "10", 1000 + RC_ECHO_MAX_MS), 1);
    assert_int_equal(rc_echo_pending(e, "jobs/ns/a", p, "10", 1001 + RC_ECHO_MAX_MS), 0);
    /* no answer's version: forgotten */
    rc_echo_note(e, "jobs/ns/a", p, NULL, 2000);
    assert_int_equal(rc_echo_pending(e, "jobs/ns/a", p, "10", 2000), 0);
    assert_int_equal(rc_echo_len(e), 0);
    json_decref(p);
    json_decref(same);
    json_decref(other);
    rc_echo_free(e);
}

/* Entries of objects never looked at again go in a later sweep. */
/* The time of the last write, for a running job's status batch window. */
static void test_written_at(void **state)
{
    (void)state;
    struct rc_echo *e = rc_echo_new();
    json_t *p = json_pack("{s:{s:i}}", "status", "active", 1);
    assert_int_equal(rc_echo_written_ms(e, "jobs/status/ns/a"), 0);
    rc_echo_note(e, "jobs/status/ns/a", p, "12", 5000);
    assert_int_equal(rc_echo_written_ms(e, "jobs/status/ns/a"), 5000);
    rc_echo_note(e, "jobs/status/ns/a", p, "13", 5400); /* the latest write */
    assert_int_equal(rc_echo_written_ms(e, "jobs/status/ns/a"), 5400);
    assert_int_equal(rc_echo_written_ms(e, "jobs/status/ns/b"), 0);
    rc_echo_note(e, "jobs/status/ns/a", p, NULL, 5500); /* forgotten */
    assert_int_equal(rc_echo_written_ms(e, "jobs/status/ns/a"), 0);
    json_decref(p);
    rc_echo_free(e);
}

/* Behind: the cache has not shown our last write, whatever its patch. */
static void test_behind_our_write(void **state)
{
    (void)state;
    struct rc_echo *e = rc_echo_new();
    json_t *p = json_pack("{s:{s:s}}", "status", "clusterName", "worker-1");
    assert_int_equal(rc_echo_behind(e, "workloads/ns/w", "10", 1000), 0); /* never written */
    rc_echo_note(e, "workloads/ns/w", p, "12", 1000);
    assert_int_equal(rc_echo_behind(e, "workloads/ns/w", "10", 1100), 1);
    assert_int_equal(rc_echo_behind(e, "workloads/ns/w", "12", 1100), 0); /* shown */
    assert_int_equal(rc_echo_behind(e, "workloads/ns/w", "15", 1100), 0); /* and more since */
    assert_int_equal(rc_echo_behind(e, "workloads/ns/other", "10", 1100), 0);
    /* a cache that never catches up holds nothing back for long */
    assert_int_equal(rc_echo_behind(e, "workloads/ns/w", "10", 1001 + RC_ECHO_MAX_MS), 0);
    json_decref(p);
    rc_echo_free(e);
}

/* An answer kept with a write is taken once, and only while the cache is
 * behind it; the write still holds the next reconciles back. */
static void test_answer_taken_once(void **state)
{
    (void)state;
    struct rc_echo *e = rc_echo_new();
    json_t *p = json_pack("{s:{s:[]}}", "status", "conditions");
    json_t *answer = json_pack("{s:{s:s}}", "metadata", "resourceVersion", "12");
    assert_null(rc_echo_take_answer(e, "workloads/ns/w", "10", 1000)); /* never written */
    rc_echo_note_answer(e, "workloads/ns/w", p, "12", answer, 1000);
    assert_null(rc_echo_take_answer(e, "workloads/ns/other", "10", 1000));
    json_t *got = rc_echo_take_answer(e, "workloads/ns/w", "10", 1100);
    assert_ptr_equal(got, answer); /* the caller's reference now */
    json_decref(got);
    assert_null(rc_echo_take_answer(e, "workloads/ns/w", "10", 1100)); /* once */
    assert_int_equal(rc_echo_behind(e, "workloads/ns/w", "10", 1100), 1);

    /* the cache caught up, or the answer aged: dropped, not returned */
    rc_echo_note_answer(e, "workloads/ns/w", p, "12", answer, 2000);
    assert_null(rc_echo_take_answer(e, "workloads/ns/w", "12", 2100));
    assert_null(rc_echo_take_answer(e, "workloads/ns/w", "10", 2100)); /* dropped above */
    rc_echo_note_answer(e, "workloads/ns/w", p, "12", answer, 3000);
    assert_null(rc_echo_take_answer(e, "workloads/ns/w", "10", 3001 + RC_ECHO_MAX_MS));

    /* a later write without an answer replaces the one kept */
    rc_echo_note_answer(e, "workloads/ns/w", p, "12", answer, 4000);
    rc_echo_note(e, "workloads/ns/w", p, "13", 4100);
    assert_null(rc_echo_take_answer(e, "workloads/ns/w", "10", 4200));
    assert_int_equal(json_refcount_of(answer), 1); /* every reference the set took went back */

    /* one kept when the set is freed, or swept, is released too */
    rc_echo_note_answer(e, "workloads/ns/w", p, "14", answer, 5000);
    rc_echo_note_answer(e, "workloads/ns/swept", p, "14", answer, 5000);
    assert_int_equal(json_refcount_of(answer), 3);
    for (int i = 0; i < 1024; i++) {
        char key[32];
        snprintf(key, sizeof(key), "later/%d", i);
        rc_echo_note(e, key, p, "5", 5001 + RC_ECHO_MAX_MS);
    }
    assert_int_equal(json_refcount_of(answer), 1);
    rc_echo_note_answer(e, "workloads/ns/w", p, "14", answer, 6000);
    rc_echo_free(e);
    assert_int_equal(json_refcount_of(answer), 1);
    json_decref(answer);
    json_decref(p);
}

static void test_old_entries_swept(void **state)
{
    (void)state;
    struct rc_echo *e = rc_echo_new();
    json_t *p = json_pack("{s:i}", "a", 1);
    char key[32];
    for (int i = 0; i < 3000; i++) {
        snprintf(key, sizeof(key), "old/%d", i);
        rc_echo_note(e, key, p, "5", 0);
    }
    assert_true(rc_echo_len(e) >= 1024); /* none old enough yet */
    for (int i = 0; i < 1024; i++) {
        snprintf(key, sizeof(key), "new/%d", i);
        rc_echo_note(e, key, p, "5", RC_ECHO_MAX_MS + 1);
    }
    assert_true(rc_echo_len(e) <= 1024); /* the 3000 old ones went */
    json_decref(p);
    rc_echo_free(e);
}

/* A delete answered: its UID counts as deleted for RC_ECHO_MAX_MS, apart
 * from the objects' keys, and is swept with them */
static void test_deleted_uids(void **state)
{
    (void)state;
    struct rc_echo *e = rc_echo_new();
    assert_int_equal(rc_echo_deleted(e, "u-1", 1000), 0);
    rc_echo_note_deleted(e, "u-1", 1000);
    assert_int_equal(rc_echo_deleted(e, "u-1", 1000), 1);
    assert_int_equal(rc_echo_deleted(e, "u-1", 1000 + RC_ECHO_MAX_MS), 1);
    assert_int_equal(rc_echo_deleted(e, "u-1", 1001 + RC_ECHO_MAX_MS), 0);
    assert_int_equal(rc_echo_deleted(e, "u-2", 1000), 0);
    assert_int_equal(rc_echo_behind(e, "u-1", "0", 1000), 0); /* not an object's key */
    rc_echo_note_deleted(e, NULL, 1000);                      /* no UID: nothing noted */
    rc_echo_note_deleted(e, "", 1000);
    assert_int_equal(rc_echo_deleted(e, NULL, 1000), 0);
    assert_int_equal(rc_echo_len(e), 1);
    for (int i = 0; i < 1024; i++) {
        char uid[32];
        snprintf(uid, sizeof(uid), "later-%d", i);
        rc_echo_note_deleted(e, uid, 2000 + RC_ECHO_MAX_MS);
    }
    assert_int_equal(rc_echo_deleted(e, "later-5", 2000 + RC_ECHO_MAX_MS), 1);
    assert_int_equal(rc_echo_len(e), 1024); /* u-1 swept */
    rc_echo_free(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pending_until_echoed), cmocka_unit_test(test_old_entries_swept),
        cmocka_unit_test(test_written_at),           cmocka_unit_test(test_behind_our_write),
        cmocka_unit_test(test_deleted_uids),         cmocka_unit_test(test_answer_taken_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
