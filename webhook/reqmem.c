/* Request-scoped memory for jansson (reqmem.h). */
#include "reqmem.h"

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define POISON(p, n)   ASAN_POISON_MEMORY_REGION(p, n)
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#define REDZONE        16u   /* poisoned bytes after each value: overflows are reported */
#define ALIGN          16u   /* as malloc's */
#define HEADER         ALIGN /* the value's size, before it, to poison it once freed */
#else
#define POISON(p, n)   ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#define REDZONE        0u
/* jansson's structures hold pointers, sizes, long long and double at most;
 * no header: a review's tree is a third smaller, fewer cache lines to fill */
#define ALIGN          8u
#define HEADER         0u
#endif

struct block {
    char *base;    /* WH_REQMEM_BLOCK bytes */
    size_t used;   /* carved since the last reset */
    size_t carved; /* values carved since the last reset (owner thread only) */
    size_t freed;  /* of those, freed on the owner thread */
};

/* Registered blocks: an entry is written before n is raised (release), so
 * a reader that loads n (acquire) sees every entry below it. */
static struct block blocks[WH_REQMEM_MAX_BLOCKS];
static atomic_size_t nblocks, nretired;
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;

static _Thread_local struct block *mine; /* this thread's block, NULL before its first scope */
static _Thread_local int open_scope;

static int in_block(const struct block *b, const void *p)
{
    const char *c = p;
    return b->base && c >= b->base && c < b->base + WH_REQMEM_BLOCK;
}

static struct block *block_of(const void *p)
{
    if (mine && in_block(mine, p))
        return mine;
    size_t n = atomic_load_explicit(&nblocks, memory_order_acquire);
    for (size_t i = 0; i < n; i++)
        if (in_block(&blocks[i], p))
            return &blocks[i];
    return NULL;
}

static void *rm_malloc(size_t size)
{
    struct block *b = mine;
    size_t need = HEADER + ((size + !size + ALIGN - 1) & ~(size_t)(ALIGN - 1)) + REDZONE;
    if (!open_scope || !b || size > WH_REQMEM_BLOCK || need > WH_REQMEM_BLOCK - b->used)
        return malloc(size);
    char *h = b->base + b->used;
    b->used += need;
    b->carved++;
#if defined(__SANITIZE_ADDRESS__)
    UNPOISON(h, HEADER);
    memcpy(h, &size, sizeof(size));
    POISON(h, HEADER);
    UNPOISON(h + HEADER, size);
#endif
    return h + HEADER;
}

static void rm_free(void *p)
{
    if (!p)
        return;
    struct block *b = block_of(p);
    if (!b) {
        free(p);
        return;
    }
    if (b == mine)
        b->freed++;
#if defined(__SANITIZE_ADDRESS__)
    size_t size;
    char *h = (char *)p - HEADER;
    UNPOISON(h, HEADER);
    memcpy(&size, h, sizeof(size));
    POISON(h, HEADER);
    POISON(p, size);
#endif
}

void wh_reqmem_install(void)
{
    json_set_alloc_funcs(rm_malloc, rm_free);
}

/* A new registered block for this thread, or NULL (registry full, oom). */
static struct block *new_block(void)
{
    struct block *b = NULL;
    pthread_mutex_lock(&reg_lock);
    size_t n = atomic_load_explicit(&nblocks, memory_order_relaxed);
    char *base = n < WH_REQMEM_MAX_BLOCKS ? malloc(WH_REQMEM_BLOCK) : NULL;
    if (base) {
        POISON(base, WH_REQMEM_BLOCK);
        b = &blocks[n];
        b->base = base;
        atomic_store_explicit(&nblocks, n + 1, memory_order_release);
    }
    pthread_mutex_unlock(&reg_lock);
    return b;
}

int wh_reqmem_begin(void)
{
    if (open_scope)
        return 0;
    if (!mine)
        mine = new_block();
    if (!mine)
        return 0;
    open_scope = 1;
    return 1;
}

size_t wh_reqmem_end(void)
{
    struct block *b = mine;
    open_scope = 0;
    if (!b)
        return 0;
    size_t alive = b->carved - b->freed;
    if (alive) {
        /* never overwritten: a value of it is still referenced somewhere */
        atomic_fetch_add(&nretired, 1);
        mine = NULL;
        char n[24];
        snprintf(n, sizeof(n), "%zu", alive);
        LOG_E("reqmem", "JSON values outlived their admission review: their memory is kept",
              "values", n);
        return alive;
    }
    POISON(b->base, b->used);
    b->used = b->carved = b->freed = 0;
    return 0;
}

int wh_reqmem_owns(const void *p)
{
    return p && block_of(p) != NULL;
}

void wh_reqmem_counts(size_t *blocks_made, size_t *retired)
{
    *blocks_made = atomic_load(&nblocks);
    *retired = atomic_load(&nretired);
}
