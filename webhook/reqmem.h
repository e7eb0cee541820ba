/* Request-scoped memory for the JSON of one admission review.
 *
 * A review's JSON (the decoded tree, the patch, the answer) lives from the
 * body to the answer and no longer, and jansson allocates it value by value:
 * about a thousand malloc and free calls for a Job, a quarter of the
 * webhook's CPU per review (webhook/README.md, "Session 20"). Inside a scope
 * opened by wh_reqmem_begin, jansson's allocations on that thread are carved
 * from the thread's block, its frees of them only count, and wh_reqmem_end
 * makes the whole block reusable at once. Outside a scope (informers,
 * start-up), once the block is full (a review of megabytes), and when no
 * block can be had, jansson uses malloc and free as before.
 *
 * Nothing carved may outlive its scope: the scope counts what it carved and
 * what was freed. A value still alive at wh_reqmem_end (a bug) is never
 * overwritten: its block is retired (never reused, never freed), the error
 * logged, and the thread gets a new block. A free of a block's value on any
 * thread is recognized (every block is registered), so a retired block's
 * values can still be freed later. Under AddressSanitizer a carved value is
 * unpoisoned while alive and poisoned once freed or reset, so use after
 * free and overflows are still reported.
 *
 * Ownership: the blocks belong to this module, one per thread that opened a
 * scope, at most WH_REQMEM_MAX_BLOCKS in the process (past that, malloc);
 * they are never freed (a server thread lives as long as the process).
 * Thread-safe: each thread has its own block and scope. */
#ifndef MKUEUE_WH_REQMEM_H
#define MKUEUE_WH_REQMEM_H

#include <stddef.h>

#define WH_REQMEM_BLOCK      (256u * 1024) /* a 2.8 KB Job review's tree takes 31 KiB */
#define WH_REQMEM_MAX_BLOCKS 64u           /* server threads (at most 64) and tests */

/* Points jansson's allocator at this module (json_set_alloc_funcs). Safe at
 * any time: a value malloc'd before is still freed with free. */
void wh_reqmem_install(void);

/* Opens a scope on this thread: 1 when opened (close it with wh_reqmem_end),
 * 0 when one is open already or no block can be had (jansson then uses
 * malloc for the scope's values; nothing to close). */
int wh_reqmem_begin(void);
/* Closes this thread's scope. Returns 0, or the number of carved values
 * still alive (their block retired, logged). */
size_t wh_reqmem_end(void);

/* For tests: 1 when p was carved from a block. */
int wh_reqmem_owns(const void *p);
/* For tests: blocks made and retired since start. */
void wh_reqmem_counts(size_t *blocks, size_t *retired);

#endif
