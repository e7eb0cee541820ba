#include "clock.h"

#include <errno.h>
#include <time.h>

long long clk_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

uint64_t clk_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

long long clk_thread_cpu_ms(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
        return 0;
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void clk_nap_ms(long ms)
{
    if (ms <= 0)
        return;
    struct timespec ts = {(time_t)(ms / 1000), (ms % 1000) * 1000000L};
    while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR)
        ;
}

/* MK_ERR_IO with errno set to a pthread function's error number. */
static int io_err(int e)
{
    errno = e;
    return MK_ERR_IO;
}

int clk_condattr_init(pthread_condattr_t *ca)
{
    int e = pthread_condattr_init(ca);
    if (e != 0)
        return io_err(e);
    e = pthread_condattr_setclock(ca, CLOCK_MONOTONIC);
    if (e != 0) {
        pthread_condattr_destroy(ca);
        return io_err(e);
    }
    return 0;
}

int clk_cond_init(pthread_cond_t *cv)
{
    pthread_condattr_t ca;
    int rc = clk_condattr_init(&ca);
    if (rc < 0)
        return rc;
    int e = pthread_cond_init(cv, &ca);
    pthread_condattr_destroy(&ca);
    return e ? io_err(e) : 0;
}

int clk_cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, long long deadline_ms)
{
    if (clk_now_ms() >= deadline_ms)
        return 1;
    struct timespec ts = {(time_t)(deadline_ms / 1000), (long)(deadline_ms % 1000) * 1000000L};
    /* ETIMEDOUT alone is not trusted: the clock decides */
    pthread_cond_timedwait(cv, mu, &ts);
    return clk_now_ms() >= deadline_ms;
}

int clk_stop_init(struct clk_stop *s)
{
    s->stop = 0;
    int e = pthread_mutex_init(&s->mu, NULL);
    if (e != 0)
        return io_err(e);
    int rc = clk_cond_init(&s->cv);
    if (rc < 0)
        pthread_mutex_destroy(&s->mu);
    return rc;
}

void clk_stop_destroy(struct clk_stop *s)
{
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
}

void clk_stop_signal(struct clk_stop *s)
{
    pthread_mutex_lock(&s->mu);
    s->stop = 1;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

int clk_stopped(struct clk_stop *s)
{
    pthread_mutex_lock(&s->mu);
    int stop = s->stop;
    pthread_mutex_unlock(&s->mu);
    return stop;
}

int clk_sleep_until(struct clk_stop *s, long long deadline_ms)
{
    pthread_mutex_lock(&s->mu);
    while (!s->stop && !clk_cond_wait_until(&s->cv, &s->mu, deadline_ms))
        ;
    int stop = s->stop;
    pthread_mutex_unlock(&s->mu);
    return stop;
}

int clk_sleep_ms(struct clk_stop *s, long ms)
{
    return clk_sleep_until(s, clk_now_ms() + ms);
}
