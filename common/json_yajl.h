/* A faster JSON decoder beside jansson's: yajl's lexer and parser, building
 * the same jansson tree as json_loadb would.
 *
 * jansson stays the reference. jy_decode either returns exactly the tree
 * json_loadb would return for the same bytes and flags (equal values, the
 * same types and key order) or declines with NULL, and the caller then decodes with
 * jansson, which gives the verdict and the error message. It declines:
 *   - on any error, so bad input is always refused in jansson's words;
 *   - on input where yajl is laxer than jansson: escapes of NUL and of
 *     UTF-16 surrogates (yajl turns a lone one into '?' or invalid UTF-8),
 *     and vertical tab or form feed (whitespace to yajl, not to JSON);
 *   - on numbers jansson refuses (integer or real overflow), documents
 *     nested deeper than JY_MAX_DEPTH and a top level that is no object or
 *     array.
 * fuzz_json_decoders checks the equivalence on arbitrary bytes.
 *
 * Why: jansson's lexer reads one byte at a time through a callback and took
 * most of the webhook's time per review (webhook/README.md "Session 21").
 *
 * Pruning: a caller may name members that are left out of the tree (the
 * apiserver's metadata.managedFields, which no reader here uses, can hold
 * a third of an object's values). Their bytes are still parsed and must be
 * valid JSON; what they hold is not built, and duplicate keys inside them,
 * or of the pruned key itself, are not looked for (nothing reads them).
 * jy_prune takes the same members out of a tree jansson decoded, so a
 * caller sees the same tree whichever decoder answered.
 *
 * Ownership: the returned tree is the caller's (json_decref); a jy_prune
 * and its paths are the caller's, only read. Thread-safe: no state beyond
 * the call; values come from jansson's allocator. */
#ifndef MKUEUE_JSON_YAJL_H
#define MKUEUE_JSON_YAJL_H

#include <stddef.h>

#include <jansson.h>

/* Deeper documents are left to jansson (whose own limit is 2048). */
#define JY_MAX_DEPTH 128

/* Keys of one pruned member from the top level, NULL after the last
 * unless there are JY_PATH_MAX; JY_EACH stands for every element of an
 * array. A path of no keys prunes nothing. */
#define JY_PATH_MAX 6
extern const char jy_each[];
#define JY_EACH jy_each
struct jy_path {
    const char *key[JY_PATH_MAX];
};
/* The members left out; with more than JY_PRUNE_MAX paths jy_decode
 * declines. */
#define JY_PRUNE_MAX 64
struct jy_prune {
    const struct jy_path *path;
    size_t n;
};
#define JY_PRUNE_OF(paths)                                                                         \
    {                                                                                              \
        (paths), sizeof(paths) / sizeof((paths)[0])                                                \
    }

/* flags: 0 or JSON_REJECT_DUPLICATES, as for json_loadb; with any other
 * flag it declines. prune: the members left out, or NULL. */
json_t *jy_decode(const char *data, size_t len, size_t flags, const struct jy_prune *prune);
/* Deletes prune's members from a decoded tree (no-op for NULL). */
void jy_prune(json_t *root, const struct jy_prune *prune);

#endif
