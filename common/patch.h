/* RFC 6902 JSON Patch builder and applier, RFC 7386 merge patch helpers.
 *
 * The builder keeps its own view of the document (copied on write) and
 * applies each operation to it as it is recorded, so later operations see
 * earlier ones: two labels set under an absent metadata.labels give
 *     add /metadata/labels {"a":"1"}
 *     add /metadata/labels/b "2"
 * Paths are given as raw keys (never pre-escaped); the builder escapes them
 * per RFC 6901 ('~' -> "~0", '/' -> "~1"). Against an array, a key that is a
 * canonical index ("0", "12") addresses an element and "-" the end. */
#ifndef MKUEUE_PATCH_H
#define MKUEUE_PATCH_H

#include <stddef.h>

#include <jansson.h>

#include "buf.h"
#include "errf.h"

struct jp;

/* Starts a patch against `doc`, which is never changed: the builder shares
 * its subtrees (holding references) and copies only the containers an op
 * changes. doc must not be modified while the builder lives. Returns NULL
 * on oom or when doc is NULL. Free with jp_free. */
struct jp *jp_new(const json_t *doc);
void jp_free(struct jp *p);

/* Makes the value at the path equal to `value`. Steals `value` (also on
 * failure). Records nothing when it is already equal, `replace` when it
 * differs, `add` when the parent exists, and when parent objects are
 * missing one `add` at the first missing one whose value nests the rest.
 * A JSON null standing where an object is needed is replaced likewise.
 * An empty path replaces the whole document.
 * Returns 0, or -1 when an intermediate node is a scalar or an array index
 * is out of range (nothing recorded). */
int jp_set_path(struct jp *p, const char *const *segs, size_t n, json_t *value);
/* The same with NULL-terminated varargs keys (at most 64). The macros add a
 * typed terminator: jp_set(p, v, "a", "b") calls jp_setl(p, v, "a", "b",
 * (const char *)NULL); jp_set(p, v) addresses the whole document. */
int jp_setl(struct jp *p, json_t *value, ...);
#define jp_set(p, value, ...) jp_setl(p, value, ##__VA_ARGS__, (const char *)NULL)

/* Records `remove` when the path exists; absent is not an error. Returns 0,
 * or -1 for an empty path. */
int jp_remove_path(struct jp *p, const char *const *segs, size_t n);
int jp_removel(struct jp *p, ...);
#define jp_remove(p, ...) jp_removel(p, ##__VA_ARGS__, (const char *)NULL)

/* Appends `value` to the array at the path (`add .../-`); when the array is
 * missing, sets it to [value] as jp_set would. Steals `value`. Returns 0, or
 * -1 when the node exists and is not an array (nor null). */
int jp_append_path(struct jp *p, const char *const *segs, size_t n, json_t *value);
int jp_appendl(struct jp *p, json_t *value, ...);
#define jp_append(p, value, ...) jp_appendl(p, value, ##__VA_ARGS__, (const char *)NULL)

/* The operations recorded so far as a JSON array: a new reference. */
json_t *jp_ops(const struct jp *p);
size_t jp_count(const struct jp *p);
/* The document with every operation applied; borrowed from p. */
const json_t *jp_doc(const struct jp *p);

/* Escapes one key as an RFC 6901 reference token and appends "/token" to
 * `out`. Returns 0 or -1. */
int jp_append_token(struct buf *out, const char *key);

/* Applies RFC 6902 `ops` (add, remove, replace, test, move, copy) to `doc`,
 * all or nothing: on error `doc` is unchanged and `err` says why, e.g.
 *     add operation does not apply: doc is missing path: "/a/b"
 * A patch that replaces the root must keep its type (object or array), as
 * `doc` is modified in place. Returns 0 or -1. */
int jp_apply(json_t *doc, const json_t *ops, char *err, size_t errlen);

/* RFC 7386 merge patch turning `from` into `to`: changed members, null for
 * removed ones, arrays and scalars replaced whole; {} when equal. When either
 * side is not an object the patch is a copy of `to`. A member whose new
 * value is null cannot be expressed (null means delete). New reference, NULL
 * on oom. */
json_t *jp_merge_diff(const json_t *from, const json_t *to);
/* Applies a merge patch to the object `target` in place. Returns 0, or -1
 * when target or patch is not an object, or on oom. */
int jp_merge_apply(json_t *target, const json_t *patch);

#endif
