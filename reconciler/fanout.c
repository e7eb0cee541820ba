#include "fanout.h"

#include <pthread.h>

/* Helpers' stacks: the calls are a few HTTP requests (curl keeps its
 * state on the heap); glibc's default would reserve 8 MiB each. */
#define FANOUT_STACK (256 * 1024)

struct fanout {
    void (*fn)(void *arg, size_t i);
    void *arg;
    size_t n;
    size_t next; /* the next index to take (atomic) */
};

static void *take_all(void *p)
{
    struct fanout *f = p;
    for (;;) {
        size_t i = __atomic_fetch_add(&f->next, 1, __ATOMIC_RELAXED);
        if (i >= f->n)
            return NULL;
        f->fn(f->arg, i);
    }
}

void rc_fanout(size_t n, void (*fn)(void *arg, size_t i), void *arg, struct rc_fanout_stats *stats)
{
    struct fanout f = {fn, arg, n, 0};
    pthread_t helpers[RC_FANOUT_WIDTH - 1];
    size_t started = 0;
    pthread_attr_t attr;
    int have_attr = n > 1 && pthread_attr_init(&attr) == 0;
    if (have_attr)
        pthread_attr_setstacksize(&attr, FANOUT_STACK); /* else the default */
    for (size_t t = 1; have_attr && t < n && t < RC_FANOUT_WIDTH; t++)
        if (pthread_create(&helpers[started], &attr, take_all, &f) == 0)
            started++;
    if (have_attr)
        pthread_attr_destroy(&attr);
    take_all(&f);
    for (size_t t = 0; t < started; t++)
        pthread_join(helpers[t], NULL);
    if (stats)
        stats->threads = started + 1;
}
