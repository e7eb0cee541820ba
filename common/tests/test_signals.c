#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <signal.h>

#include "signals.h"

static void *mask_of_thread(void *arg)
{
    pthread_sigmask(SIG_SETMASK, NULL, (sigset_t *)arg);
    return NULL;
}

static void test_block_stop(void **state)
{
    (void)state;
    sigset_t stop, cur;
    assert_int_equal(sigs_block_stop(&stop), 0);
    assert_true(sigismember(&stop, SIGTERM));
    assert_true(sigismember(&stop, SIGINT));
    assert_false(sigismember(&stop, SIGPIPE));
    /* a thread started afterwards has them blocked too */
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, mask_of_thread, &cur), 0);
    pthread_join(t, NULL);
    assert_true(sigismember(&cur, SIGTERM));
    assert_true(sigismember(&cur, SIGINT));
    /* SIGPIPE is ignored */
    struct sigaction sa;
    assert_int_equal(sigaction(SIGPIPE, NULL, &sa), 0);
    assert_true(sa.sa_handler == SIG_IGN);
    /* a pending SIGTERM waits for sigwait, it does not kill */
    assert_int_equal(raise(SIGTERM), 0);
    int sig = 0;
    assert_int_equal(sigwait(&stop, &sig), 0);
    assert_int_equal(sig, SIGTERM);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_block_stop),
    };
    return cmocka_run_group_tests_name("signals", tests, NULL, NULL);
}
