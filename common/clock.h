/* The process's one clock for timers, and stop-aware sleeps on it.
 *
 * Every timer, timeout and deadline in mkueue is measured on
 * CLOCK_MONOTONIC, which never jumps when the wall clock is stepped, so a
 * wall clock set back cannot stall a sleep and one set forward cannot cut
 * it short. Wall time is only for timestamps written into objects and
 * logs. Condition variables that are waited on with a deadline are
 * initialised here (clk_cond_init) so that their timed waits run on the
 * same clock.
 *
 * struct clk_stop is a stop flag with its own mutex and condition
 * variable: threads sleep on it until a deadline, and clk_stop_signal()
 * wakes them all at once. All functions are thread-safe once the struct
 * is initialised; init and destroy are not. */
#ifndef MKUEUE_CLOCK_H
#define MKUEUE_CLOCK_H

#include <pthread.h>
#include <stdint.h>

#include "errf.h"

/* Milliseconds and nanoseconds on CLOCK_MONOTONIC (arbitrary origin). */
long long clk_now_ms(void);
uint64_t clk_now_ns(void);

/* The CPU time the calling thread has used, in ms (CLOCK_THREAD_CPUTIME_ID):
 * what a piece of work cost, without the time it waited. */
long long clk_thread_cpu_ms(void);

/* Sleeps ms on CLOCK_MONOTONIC, not interruptible by a stop (signals
 * resume it): for short waits only, e.g. a rate limiter's. */
void clk_nap_ms(long ms);

/* Fills *ca (initialised here; caller destroys it) for condition variables
 * whose timed waits run on CLOCK_MONOTONIC. Returns 0 or MK_ERR_IO (errno says why). */
int clk_condattr_init(pthread_condattr_t *ca);
/* Initialises cv on CLOCK_MONOTONIC. Returns 0 or MK_ERR_IO (errno says why). */
int clk_cond_init(pthread_cond_t *cv);
/* One wait on cv (mu held; cv from clk_cond_init) until it is signalled or
 * the monotonic time reaches deadline_ms. Returns 1 when the deadline has
 * passed, 0 otherwise (signalled or spurious: the caller re-checks its
 * condition). */
int clk_cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, long long deadline_ms);

struct clk_stop {
    pthread_mutex_t mu;
    pthread_cond_t cv; /* on CLOCK_MONOTONIC */
    int stop;          /* under mu */
};

/* Returns 0 or MK_ERR_IO, errno saying why (nothing to destroy on failure). */
int clk_stop_init(struct clk_stop *s);
void clk_stop_destroy(struct clk_stop *s);
/* Sets the flag and wakes every sleeper; later sleeps return at once. */
void clk_stop_signal(struct clk_stop *s);
/* 1 once clk_stop_signal was called. */
int clk_stopped(struct clk_stop *s);
/* Sleeps until the monotonic time reaches deadline_ms (a deadline already
 * past returns at once) or the stop is signalled. Returns 1 when stopped,
 * 0 when the deadline was reached. */
int clk_sleep_until(struct clk_stop *s, long long deadline_ms);
/* clk_sleep_until(s, clk_now_ms() + ms). */
int clk_sleep_ms(struct clk_stop *s, long ms);

#endif
