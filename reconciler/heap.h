/* The reconciler's allocator, in one place. The reconciler is linked with
 * jemalloc (Debian's libjemalloc2): its heap is tens of thousands of
 * long-lived cache records beside a steady churn of parsed watch events,
 * and glibc's malloc, searching and consolidating its bins, grows slower
 * per allocation as that heap grows (reconciler/README.md, "CPU per
 * dispatched job"). Builds without jemalloc (ASan replaces malloc) use
 * glibc's malloc tuned as below; the functions pick the allocator that is
 * actually linked, at run time. No state: nothing to own or free. */
#ifndef MKUEUE_RC_HEAP_H
#define MKUEUE_RC_HEAP_H

#include <stddef.h>

/* Once, before any thread starts: glibc's arenas and mmap threshold (no-op
 * under jemalloc, configured by its malloc_conf in heap.c). */
void rc_heap_tune(void);

/* On the calling thread, a jemalloc thread cache (none by default): for the
 * few threads that allocate without pause, the reconcile workers. A no-op
 * under glibc's malloc. */
void rc_heap_thread_cache(void);

/* Which threads have a jemalloc cache, as jemalloc read its configuration:
 * "workers" (malloc_conf's), "all threads" (e.g. MALLOC_CONF=tcache:true),
 * "glibc" when glibc's malloc is linked. Logged at start. */
const char *rc_heap_thread_caches(void);

/* Bytes the program has allocated and not freed (the heap metric). */
size_t rc_heap_in_use(void);

/* Give freed pages back to the system, so RSS follows the live set. */
void rc_heap_release(void);

/* "jemalloc" or "glibc": which allocator serves malloc (logged at start). */
const char *rc_heap_allocator(void);

#endif
