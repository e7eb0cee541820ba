/* fakeclock: an LD_PRELOAD stand-in for a wall clock stepped back, for the
 * e2e scenario 48-reconciler-wallclock.bats only (never linked into mkueue).
 *
 * The machine's real clock may not be stepped in a test: it would disturb
 * every process on the bed, and CI may lack CAP_SYS_TIME. This shim makes
 * one process read CLOCK_REALTIME (clock_gettime, gettimeofday, time) an
 * offset ahead of the kernel's, the offset in seconds read from the file
 * named by FAKECLOCK_FILE (re-read at most every 100 ms, so a test can
 * change it while the process runs; no file or no number: 0).
 *
 * The kernel's timed waits are left alone. A deadline the process computes
 * from its wall clock and hands to a CLOCK_REALTIME wait (a condition
 * variable with the default clock, sem_timedwait, clock_nanosleep with
 * TIMER_ABSTIME) is then offset + interval away for the kernel: exactly the
 * wait a process gets when the wall clock is stepped back by the offset
 * while it waits. CLOCK_MONOTONIC and the other clocks are not touched, so
 * timers on the monotonic clock see nothing of it. What differs from a
 * real step: the process's timestamps read ahead by the offset. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define FAKECLOCK_REREAD_NS 100000000LL

typedef int (*clock_gettime_fn)(clockid_t, struct timespec *);

static clock_gettime_fn real_clock_gettime(void)
{
    static clock_gettime_fn fn;
    clock_gettime_fn f = __atomic_load_n(&fn, __ATOMIC_ACQUIRE);
    if (!f) {
        f = (clock_gettime_fn)dlsym(RTLD_NEXT, "clock_gettime");
        __atomic_store_n(&fn, f, __ATOMIC_RELEASE);
    }
    return f;
}

/* The offset in seconds, from FAKECLOCK_FILE. */
static long long read_offset(void)
{
    const char *path = getenv("FAKECLOCK_FILE");
    if (!path)
        return 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    char b[32];
    ssize_t n = read(fd, b, sizeof(b) - 1);
    close(fd);
    if (n <= 0)
        return 0;
    b[n] = '\0';
    return strtoll(b, NULL, 10);
}

static long long offset_s(void)
{
    static long long cached, next_ns;
    struct timespec m;
    if (real_clock_gettime()(CLOCK_MONOTONIC, &m) != 0)
        return __atomic_load_n(&cached, __ATOMIC_RELAXED);
    long long now = (long long)m.tv_sec * 1000000000LL + m.tv_nsec;
    if (now >= __atomic_load_n(&next_ns, __ATOMIC_RELAXED)) {
        __atomic_store_n(&cached, read_offset(), __ATOMIC_RELAXED);
        __atomic_store_n(&next_ns, now + FAKECLOCK_REREAD_NS, __ATOMIC_RELAXED);
    }
    return __atomic_load_n(&cached, __ATOMIC_RELAXED);
}

int clock_gettime(clockid_t id, struct timespec *ts)
{
    clock_gettime_fn f = real_clock_gettime();
    if (!f)
        return -1;
    int rc = f(id, ts);
    if (rc == 0 && (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE))
        ts->tv_sec += (time_t)offset_s();
    return rc;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz)
{
    (void)tz;
    struct timespec ts;
    if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
        return -1;
    tv->tv_sec = ts.tv_sec; /* declared nonnull by glibc */
    tv->tv_usec = ts.tv_nsec / 1000;
    return 0;
}

time_t time(time_t *t)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
        return (time_t)-1;
    if (t)
        *t = ts.tv_sec;
    return ts.tv_sec;
}

int timespec_get(struct timespec *ts, int base)
{
    return base == TIME_UTC && clock_gettime(CLOCK_REALTIME, ts) == 0 ? base : 0;
}
