#include "heap.h"

#include <malloc.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* jemalloc's control interface, weak: NULL when glibc's malloc is linked
 * (the ASan builds), so the one object serves both */
extern int mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen)
    __attribute__((weak));

/* Read by jemalloc at its initialisation: two arenas, as M_ARENA_MAX below
 * (little contention, less slack than 4 per core); and no per-thread caches
 * except on the threads that ask for one (rc_heap_thread_cache). Most
 * threads are informers asleep on a watch; a thread's cache and its
 * metadata stay resident while it sleeps, about 80 KiB each: 11.6 of an
 * idle reconciler's 39 MiB with two workers (147 threads then, 82 since
 * the informers' resyncs share one thread), and more with every worker. */
const char *malloc_conf = "narenas:2,tcache:false";

#define HEAP_ARENAS_ALL 4096 /* jemalloc's MALLCTL_ARENAS_ALL */

const char *rc_heap_allocator(void)
{
    return mallctl ? "jemalloc" : "glibc";
}

void rc_heap_tune(void)
{
    if (mallctl)
        return;
    /* few malloc arenas: many threads, little contention, much less slack */
    mallopt(M_ARENA_MAX, 2);
    /* a fixed mmap threshold: large transient blocks (list pages, response
     * bodies, the gate's arrays) go back to the system when freed, instead
     * of raising glibc's sliding threshold and staying as heap holes */
    mallopt(M_MMAP_THRESHOLD, 256 * 1024);
}

const char *rc_heap_thread_caches(void)
{
    bool on = true;
    size_t len = sizeof(on);
    if (!mallctl)
        return "glibc";
    if (mallctl("opt.tcache", &on, &len, NULL, 0) != 0)
        return "unknown";
    return on ? "all threads" : "workers";
}

void rc_heap_thread_cache(void)
{
    bool on = true;
    if (mallctl)
        mallctl("thread.tcache.enabled", NULL, NULL, &on, sizeof(on));
}

size_t rc_heap_in_use(void)
{
    if (mallctl) {
        uint64_t epoch = 1;
        size_t allocated = 0, len = sizeof(epoch);
        /* jemalloc's statistics are a snapshot refreshed by a new epoch */
        if (mallctl("epoch", &epoch, &len, &epoch, sizeof(epoch)) != 0)
            return 0;
        len = sizeof(allocated);
        if (mallctl("stats.allocated", &allocated, &len, NULL, 0) != 0)
            return 0;
        return allocated;
    }
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
}

void rc_heap_release(void)
{
    if (mallctl) {
        char name[32];
        snprintf(name, sizeof(name), "arena.%d.purge", HEAP_ARENAS_ALL);
        mallctl(name, NULL, NULL, NULL, 0);
        return;
    }
    malloc_trim(0);
}
