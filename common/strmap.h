/* String-keyed hash map with void * values (chained, power-of-two buckets).
 * Keys are copied; values are owned by the caller. Not thread-safe: callers
 * lock around it. */
#ifndef MKUEUE_STRMAP_H
#define MKUEUE_STRMAP_H

#include <stddef.h>
#include <stdint.h>

struct smap;

/* Returns a new empty map (smap_free it) or NULL on allocation failure. */
struct smap *smap_new(void);
/* Frees the map and its keys; free_val (may be NULL) is called on each value. */
void smap_free(struct smap *m, void (*free_val)(void *));

/* The value stored under key, or NULL. */
void *smap_get(const struct smap *m, const char *key);
/* Stores val under key. When the key existed, its previous value goes to
 * *old (if old is not NULL) and is otherwise forgotten; else *old = NULL.
 * Returns 0, or -1 on allocation failure (then the map is unchanged). */
int smap_put(struct smap *m, const char *key, void *val, void **old);
/* Removes key and returns its value (NULL when absent). */
void *smap_del(struct smap *m, const char *key);
size_t smap_len(const struct smap *m);
/* The map's string hash (FNV-1a, 64 bits); also a cheap stable spread. */
uint64_t smap_hash(const char *s);

/* Calls fn for each entry (unspecified order) until it returns non-zero,
 * which is then returned. fn must not modify the map. */
int smap_foreach(const struct smap *m, int (*fn)(const char *key, void *val, void *ud), void *ud);

#endif
