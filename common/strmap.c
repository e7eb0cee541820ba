#include "strmap.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct smap_entry {
    struct smap_entry *next;
    uint64_t hash;
    void *val;
    char key[]; /* NUL-terminated copy */
};

struct smap {
    struct smap_entry **buckets;
    size_t nbuckets; /* power of two */
    size_t len;
};

/* FNV-1a: keys are short object keys; no need for anything stronger since
 * the load factor is bounded by resizing. */
uint64_t smap_hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ULL;
    }
    return h;
}

struct smap *smap_new(void)
{
    struct smap *m = calloc(1, sizeof(*m));
    if (!m)
        return NULL;
    m->nbuckets = 16;
    m->buckets = calloc(m->nbuckets, sizeof(*m->buckets));
    if (!m->buckets) {
        free(m);
        return NULL;
    }
    return m;
}

void smap_free(struct smap *m, void (*free_val)(void *))
{
    if (!m)
        return;
    for (size_t i = 0; i < m->nbuckets; i++) {
        struct smap_entry *e = m->buckets[i];
        while (e) {
            struct smap_entry *next = e->next;
            if (free_val)
                free_val(e->val);
            free(e);
            e = next;
        }
    }
    free(m->buckets);
    free(m);
}

static struct smap_entry **find_slot(const struct smap *m, const char *key, uint64_t h)
{
    struct smap_entry **p = &m->buckets[h & (m->nbuckets - 1)];
    while (*p && ((*p)->hash != h || strcmp((*p)->key, key) != 0))
        p = &(*p)->next;
    return p;
}

void *smap_get(const struct smap *m, const char *key)
{
    struct smap_entry *e = *find_slot(m, key, smap_hash(key));
    return e ? e->val : NULL;
}

/* Doubles the bucket array; on allocation failure the map just stays denser. */
static void grow(struct smap *m)
{
    size_t n = m->nbuckets * 2;
    struct smap_entry **b = calloc(n, sizeof(*b));
    if (!b)
        return;
    for (size_t i = 0; i < m->nbuckets; i++) {
        struct smap_entry *e = m->buckets[i];
        while (e) {
            struct smap_entry *next = e->next;
            e->next = b[e->hash & (n - 1)];
            b[e->hash & (n - 1)] = e;
            e = next;
        }
    }
    free(m->buckets);
    m->buckets = b;
    m->nbuckets = n;
}

int smap_put(struct smap *m, const char *key, void *val, void **old)
{
    uint64_t h = smap_hash(key);
    struct smap_entry **p = find_slot(m, key, h);
    if (*p) {
        if (old)
            *old = (*p)->val;
        (*p)->val = val;
        return 0;
    }
    if (old)
        *old = NULL;
    size_t klen = strlen(key);
    struct smap_entry *e = malloc(sizeof(*e) + klen + 1);
    if (!e)
        return -1;
    memcpy(e->key, key, klen + 1);
    e->hash = h;
    e->val = val;
    e->next = NULL;
    *p = e;
    m->len++;
    if (m->len > m->nbuckets)
        grow(m);
    return 0;
}

void *smap_del(struct smap *m, const char *key)
{
    struct smap_entry **p = find_slot(m, key, smap_hash(key));
    struct smap_entry *e = *p;
    if (!e)
        return NULL;
    void *val = e->val;
    *p = e->next;
    free(e);
    m->len--;
    return val;
}

size_t smap_len(const struct smap *m)
{
    return m->len;
}

int smap_foreach(const struct smap *m, int (*fn)(const char *key, void *val, void *ud), void *ud)
{
    for (size_t i = 0; i < m->nbuckets; i++) {
        for (struct smap_entry *e = m->buckets[i]; e; e = e->next) {
            int rc = fn(e->key, e->val, ud);
            if (rc)
                return rc;
        }
    }
    return 0;
}
