/* jansson helpers: access by dotted path, set/delete creating parents, a
 * bounded decoder for untrusted JSON, and the one way to serialize.
 *
 * Path syntax: segments separated by '.'; a segment in brackets is a literal
 * key that may contain dots and slashes, and may follow a segment directly:
 *     metadata.labels[kueue.x-k8s.io/queue-name]
 *     spec.template.spec.containers.0.image
 * A segment of decimal digits without a leading zero ("0", "12") indexes the
 * current node when it is an array, and is an ordinary key otherwise. Plain
 * segments cannot contain '.', '[' or ']'; bracketed ones cannot contain ']'.
 * Empty plain segments ("a..b", ".a") make the path invalid; "[]" is the
 * empty key. An invalid path behaves as a missing one. */
#ifndef MKUEUE_JSONX_H
#define MKUEUE_JSONX_H

#include <stddef.h>

#include <jansson.h>

#include "buf.h"
#include "json_yajl.h"

/* Returns the node at `path` (borrowed from `root`), or NULL when missing,
 * when an intermediate has the wrong type, or when the path is invalid.
 * The empty path returns root. */
json_t *jx_get(const json_t *root, const char *path);
/* Same with raw keys (no path syntax), NULL-terminated. The macro adds a
 * typed terminator: jx_getv(obj, "metadata", "labels", key). Digit keys
 * index arrays as in jx_get. Returns a borrowed reference. */
json_t *jx_getl(const json_t *root, ...);
#define jx_getv(root, ...) jx_getl(root, ##__VA_ARGS__, (const char *)NULL)

/* Typed getters. jx_str returns a string borrowed from root, or NULL when the
 * node is missing or not a string. jx_int accepts JSON integers only and
 * jx_bool true/false only; anything else gives `def`. */
const char *jx_str(const json_t *root, const char *path);
long long jx_int(const json_t *root, const char *path, long long def);
int jx_bool(const json_t *root, const char *path, int def);

/* Sets `path` to `value`, creating missing intermediate objects. Steals
 * `value` (also on failure). An existing array element can be replaced by
 * index. Returns 0, or -1 when the path is invalid or empty, an intermediate
 * or the parent is neither an object nor an indexable array, or on oom. */
int jx_set(json_t *root, const char *path, json_t *value);
/* jx_set with a new string (copied). Returns as jx_set. */
int jx_set_new_str(json_t *root, const char *path, const char *s);
/* Removes the node at `path` (an object member or an array element).
 * Returns 0 when removed, -1 when absent or the path is invalid. */
int jx_del(json_t *root, const char *path);

/* The one way to decode: json_loadb's contract (any of its flags; a new
 * reference, or NULL with `err` filled; err may be NULL), at yajl's speed
 * where yajl is sure to agree (common/json_yajl.h: flags 0 and
 * JSON_REJECT_DUPLICATES). prune: members left out of the tree, whichever
 * decoder answers (json_yajl.h), or NULL. */
json_t *jx_loadb(const char *data, size_t len, size_t flags, const struct jy_prune *prune,
                 json_error_t *err);

/* Decodes untrusted JSON. Before jansson sees it, a linear pre-scan refuses
 * input longer than `max_bytes` and nesting of arrays/objects deeper than
 * `max_depth` (a bare scalar has depth 0, `[]` depth 1); brackets inside
 * strings do not count. The top level must be an object or an array.
 *
 * Duplicate object keys are REJECTED (JSON_REJECT_DUPLICATES): Kubernetes
 * itself keeps the last one, but two parsers that disagree on which
 * duplicate wins is how admission checks get bypassed, and the apiserver
 * never emits duplicates, so refusing them loses nothing legitimate.
 * Embedded NUL characters ("\u0000") are refused too.
 *
 * Returns a new reference (caller decrefs) or NULL with a message in `err`
 * (which includes jansson's line/column/position and text). `err` may be
 * NULL when errlen is 0. */
json_t *jx_loadb_bounded(const char *data, size_t len, size_t max_bytes, int max_depth, char *err,
                         size_t errlen);

/* What a pre-scan of untrusted JSON counts, without decoding it: enough to
 * bound the memory jansson would need before it allocates any of it. */
struct jx_scan {
    size_t bytes;
    size_t objects, arrays;
    size_t members;  /* object keys */
    size_t strings;  /* every string, keys included */
    size_t literals; /* numbers, true, false, null */
    int depth;       /* deepest nesting of arrays/objects */
};

/* Linear pre-scan of `data` (brackets, colons and quotes inside strings do
 * not count). Does not validate: jansson still refuses bad JSON. */
void jx_scan(const char *data, size_t len, struct jx_scan *out);
/* JSON values in the document (containers and scalars; keys are not values). */
size_t jx_scan_values(const struct jx_scan *s);
/* Estimated bytes jansson allocates to decode the scanned document (the
 * tree and its strings), from per-node costs measured on jansson 2.14 and
 * rounded up: an empty object costs about 240 bytes, so 3 MiB of `{},`
 * costs about 250 MiB. Saturates at SIZE_MAX. */
size_t jx_scan_cost(const struct jx_scan *s);

/* jx_loadb_bounded that also refuses, before decoding, a document whose
 * jx_scan_cost exceeds `max_cost` (0 = no cost limit). */
json_t *jx_loadb_budget(const char *data, size_t len, size_t max_bytes, int max_depth,
                        size_t max_cost, char *err, size_t errlen);
/* jx_loadb_budget of a document the caller may have scanned already (sc:
 * jx_scan of the same data and len, or NULL to scan here), so a caller that
 * bounds the decode itself reads the body once, not twice; prune as for
 * jx_loadb. */
json_t *jx_loadb_scanned(const char *data, size_t len, const struct jx_scan *sc, size_t max_bytes,
                         int max_depth, size_t max_cost, const struct jy_prune *prune, char *err,
                         size_t errlen);

/* Depth of arrays/objects in `data` per jx_scan, capped at limit + 1 (any
 * depth past `limit` reads as limit + 1). Exposed for tests and fuzzing. */
int jx_scan_depth(const char *data, size_t len, int limit);

/* Appends v serialized with json_dump flags (JSON_COMPACT, ...) to out.
 * Returns 0, or -1 on oom, on overflow of out's cap, or when jansson
 * refuses (a bare scalar without JSON_ENCODE_ANY). Instead of json_dumps,
 * whose text comes from jansson's allocator and so, inside the webhook's
 * request scope (webhook/reqmem.h), must not reach free(). */
int jx_dump(const json_t *v, size_t flags, struct buf *out);

#endif
