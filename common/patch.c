#include "patch.h"
#include "errf.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JP_MAX_SEGS 64

struct jp {
    json_t *doc; /* the document with every op applied; shares what no op touched */
    json_t *ops; /* array of op objects */
};

/* ---- shared helpers ---------------------------------------------------- */

/* A canonical RFC 6901 array index: "0" or digits without a leading zero. */
static int parse_index(const char *s, size_t *out)
{
    size_t len = strlen(s);
    if (len == 0 || len > 18 || (len > 1 && s[0] == '0'))
        return 0;
    size_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return 0;
        v = v * 10 + (size_t)(s[i] - '0');
    }
    *out = v;
    return 1;
}

/* The member or element `key` of a container, or NULL. */
static json_t *child(const json_t *node, const char *key)
{
    size_t idx;
    if (json_is_object(node))
        return json_object_get(node, key);
    if (json_is_array(node) && parse_index(key, &idx))
        return json_array_get(node, idx);
    return NULL;
}

int jp_append_token(struct buf *out, const char *key)
{
    int rc = buf_append(out, "/", 1);
    const char *run = key;
    for (const char *k = key; *k; k++) {
        if (*k == '~' || *k == '/') {
            rc |= buf_append(out, run, (size_t)(k - run));
            rc |= buf_append_str(out, *k == '~' ? "~0" : "~1");
            run = k + 1;
        }
    }
    rc |= buf_append_str(out, run);
    return rc ? -1 : 0;
}

/* ---- RFC 6901 pointers ------------------------------------------------- */

struct ptr {
    char *mem;  /* unescaped tokens, NUL-separated */
    char **tok; /* into mem */
    size_t n;
};

static void ptr_free(struct ptr *p)
{
    free(p->mem);
    free(p->tok);
    memset(p, 0, sizeof(*p));
}

/* Returns 0, MK_ERR_INVAL when `s` is not a valid pointer, MK_ERR_NOMEM. */
static int ptr_parse(const char *s, struct ptr *p)
{
    memset(p, 0, sizeof(*p));
    if (*s == '\0')
        return 0;
    if (*s != '/')
        return MK_ERR_INVAL;
    size_t n = 0;
    for (const char *q = s; *q; q++)
        n += *q == '/';
    p->mem = malloc(strlen(s) + 1);
    p->tok = calloc(n, sizeof(*p->tok));
    if (!p->mem || !p->tok) {
        ptr_free(p);
        return MK_ERR_NOMEM;
    }
    char *w = p->mem;
    const char *r = s;
    while (*r) {
        r++; /* the '/' */
        p->tok[p->n++] = w;
        while (*r && *r != '/') {
            if (*r != '~') {
                *w++ = *r++;
            } else if (r[1] == '0' || r[1] == '1') {
                *w++ = r[1] == '0' ? '~' : '/';
                r += 2;
            } else {
                ptr_free(p);
                return MK_ERR_INVAL;
            }
        }
        *w++ = '\0';
    }
    return 0;
}

/* The node at the first `n` tokens, or NULL. */
static json_t *ptr_get(json_t *root, const struct ptr *p, size_t n)
{
    json_t *cur = root;
    for (size_t i = 0; i < n && cur; i++)
        cur = child(cur, p->tok[i]);
    return cur;
}

/* ---- the applier ------------------------------------------------------- */

#define FAIL(code, ...)                                                                            \
    do {                                                                                           \
        rc = errf(err, errlen, code, __VA_ARGS__);                                                 \
        goto out;                                                                                  \
    } while (0)

/* At the root (no tokens) `value` (stolen) replaces the document: 1.
 * Else 0, with *parent the node that holds `p` and *key its last token. */
static int target(json_t **root, const struct ptr *p, json_t *value, json_t **parent,
                  const char **key)
{
    if (p->n == 0) {
        json_decref(*root);
        *root = value;
        return 1;
    }
    *parent = ptr_get(*root, p, p->n - 1);
    *key = p->tok[p->n - 1];
    return 0;
}

/* Inserts `value` (stolen, also on failure) at `p` per "add" semantics. */
static int do_add(json_t **root, const struct ptr *p, const char *path, json_t *value, char *err,
                  size_t errlen)
{
    size_t idx;
    json_t *parent;
    const char *key;
    if (target(root, p, value, &parent, &key))
        return 0;
    if (json_is_object(parent)) {
        if (json_object_set_new(parent, key, value) == 0)
            return 0;
        return errf(err, errlen, MK_ERR_NOMEM, "add operation failed at \"%s\": out of memory",
                    path);
    }
    if (!json_is_array(parent)) {
        errf(err, errlen, MK_ERR_INVAL, "add operation does not apply: doc is missing path: \"%s\"",
             path);
    } else if (strcmp(key, "-") != 0 &&
               (!parse_index(key, &idx) || idx > json_array_size(parent))) {
        errf(err, errlen, MK_ERR_INVAL, "add operation does not apply: invalid array index: \"%s\"",
             path);
    } else {
        if (strcmp(key, "-") == 0)
            idx = json_array_size(parent);
        if (json_array_insert_new(parent, idx, value) == 0)
            return 0;
        return errf(err, errlen, MK_ERR_NOMEM, "add operation failed at \"%s\": out of memory",
                    path);
    }
    json_decref(value);
    return MK_ERR_INVAL;
}

/* Replaces the existing node at `p` with `value` (stolen), in place so that
 * object members keep their position. */
static int do_replace(json_t **root, const struct ptr *p, const char *path, json_t *value,
                      char *err, size_t errlen)
{
    size_t idx;
    json_t *parent;
    const char *key;
    if (target(root, p, value, &parent, &key))
        return 0;
    if (json_is_object(parent) && json_object_get(parent, key))
        return json_object_set_new(parent, key, value) < 0 ? MK_ERR_NOMEM : 0;
    if (json_is_array(parent) && parse_index(key, &idx) && idx < json_array_size(parent))
        return json_array_set_new(parent, idx, value) < 0 ? MK_ERR_NOMEM : 0;
    errf(err, errlen, MK_ERR_INVAL, "replace operation does not apply: doc is missing path: \"%s\"",
         path);
    json_decref(value);
    return MK_ERR_INVAL;
}

static int do_remove(json_t *root, const struct ptr *p, const char *path, char *err, size_t errlen)
{
    size_t idx;
    json_t *parent = p->n ? ptr_get(root, p, p->n - 1) : NULL;
    const char *key = p->n ? p->tok[p->n - 1] : "";
    if (p->n == 0) {
        return errf(err, errlen, MK_ERR_INVAL,
                    "remove operation does not apply: cannot remove the document root");
    }
    if (json_is_object(parent) && json_object_del(parent, key) == 0)
        return 0;
    if (json_is_array(parent) && parse_index(key, &idx) && json_array_remove(parent, idx) == 0)
        return 0;
    return errf(err, errlen, MK_ERR_INVAL,
                "remove operation does not apply: doc is missing path: \"%s\"", path);
}

static int is_prefix(const struct ptr *a, const struct ptr *b)
{
    if (a->n > b->n)
        return 0;
    for (size_t i = 0; i < a->n; i++)
        if (strcmp(a->tok[i], b->tok[i]) != 0)
            return 0;
    return 1;
}

/* Applies one operation in place; *root may be replaced. On failure the
 * document may be partly changed only by "move" (jp_apply works on a copy). */
static int apply_one(json_t **root, const json_t *op, char *err, size_t errlen)
{
    int rc = MK_ERR_INVAL;
    struct ptr p = {0}, from = {0};
    const char *name = json_string_value(json_object_get(op, "op"));
    const char *path = json_string_value(json_object_get(op, "path"));
    const char *from_s = json_string_value(json_object_get(op, "from"));
    const json_t *value = json_object_get(op, "value");
    if (!json_is_object(op) || !name)
        FAIL(MK_ERR_INVAL, "invalid operation: missing \"op\"");
    if (!path)
        FAIL(MK_ERR_INVAL, "invalid %s operation: missing \"path\"", name);
    int prc = ptr_parse(path, &p);
    if (prc < 0)
        FAIL(prc,
             prc == MK_ERR_INVAL ? "invalid %s operation: bad JSON pointer \"%s\""
                                 : "%s \"%s\": out of memory",
             name, path);
    int needs_value = !strcmp(name, "add") || !strcmp(name, "replace") || !strcmp(name, "test");
    int needs_from = !strcmp(name, "move") || !strcmp(name, "copy");
    if (needs_value && !value)
        FAIL(MK_ERR_INVAL, "invalid %s operation: missing \"value\"", name);
    if (needs_from) {
        if (!from_s)
            FAIL(MK_ERR_INVAL, "invalid %s operation: missing \"from\"", name);
        prc = ptr_parse(from_s, &from);
        if (prc < 0)
            FAIL(prc,
                 prc == MK_ERR_INVAL ? "invalid %s operation: bad JSON pointer \"%s\""
                                     : "%s \"%s\": out of memory",
                 name, from_s);
    }

    if (!strcmp(name, "add")) {
        json_t *v = json_deep_copy(value);
        if (!v)
            FAIL(MK_ERR_NOMEM, "add operation failed: out of memory");
        rc = do_add(root, &p, path, v, err, errlen);
    } else if (!strcmp(name, "remove")) {
        rc = do_remove(*root, &p, path, err, errlen);
    } else if (!strcmp(name, "replace")) {
        json_t *v = json_deep_copy(value);
        if (!v)
            FAIL(MK_ERR_NOMEM, "replace operation failed: out of memory");
        rc = do_replace(root, &p, path, v, err, errlen);
    } else if (!strcmp(name, "test")) {
        const json_t *cur = ptr_get(*root, &p, p.n);
        if (!cur)
            FAIL(MK_ERR_INVAL, "test operation does not apply: doc is missing path: \"%s\"", path);
        if (!json_equal(cur, value))
            FAIL(MK_ERR_INVAL, "test operation failed: value at \"%s\" differs", path);
        rc = 0;
    } else if (needs_from) {
        json_t *src = ptr_get(*root, &from, from.n);
        if (!src)
            FAIL(MK_ERR_INVAL, "%s operation does not apply: doc is missing from path: \"%s\"",
                 name, from_s);
        int move = !strcmp(name, "move");
        if (move && is_prefix(&from, &p)) {
            if (from.n == p.n) {
                rc = 0; /* moving onto itself */
                goto out;
            }
            FAIL(MK_ERR_INVAL, "move operation does not apply: \"%s\" is inside \"%s\"", path,
                 from_s);
        }
        json_t *v = move ? json_incref(src) : json_deep_copy(src);
        if (!v)
            FAIL(MK_ERR_NOMEM, "copy operation failed: out of memory");
        if (move && do_remove(*root, &from, from_s, err, errlen) < 0) {
            json_decref(v);
            goto out;
        }
        rc = do_add(root, &p, path, v, err, errlen);
    } else {
        FAIL(MK_ERR_INVAL, "unknown operation \"%s\"", name);
    }
out:
    ptr_free(&p);
    ptr_free(&from);
    return rc;
}

int jp_apply(json_t *doc, const json_t *ops, char *err, size_t errlen)
{
    int rc = MK_ERR_INVAL;
    json_t *work = NULL;
    if (!json_is_object(doc) && !json_is_array(doc))
        FAIL(MK_ERR_INVAL, "document must be an object or an array");
    if (!json_is_array(ops))
        FAIL(MK_ERR_INVAL, "patch must be a JSON array of operations");
    work = json_deep_copy(doc);
    if (!work)
        FAIL(MK_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < json_array_size(ops); i++) {
        char e[256];
        int orc = apply_one(&work, json_array_get(ops, i), e, sizeof(e));
        if (orc < 0)
            FAIL(orc, "operation %zu: %s", i, e);
    }
    if (json_typeof(work) != json_typeof(doc))
        FAIL(MK_ERR_INVAL, "patch replaces the document with a different type");
    /* Commit by swapping contents: the caller keeps its reference to doc. */
    if (json_is_object(doc)) {
        json_object_clear(doc);
        if (json_object_update(doc, work) < 0)
            FAIL(MK_ERR_NOMEM, "out of memory");
    } else {
        json_array_clear(doc);
        if (json_array_extend(doc, work) < 0)
            FAIL(MK_ERR_NOMEM, "out of memory");
    }
    rc = 0;
out:
    json_decref(work);
    return rc;
}

/* ---- the builder ------------------------------------------------------- */

struct jp *jp_new(const json_t *doc)
{
    struct jp *p = calloc(1, sizeof(*p));
    if (!p || !doc)
        goto fail;
    p->doc = json_copy((json_t *)doc); /* shallow: own_parents copies on write */
    p->ops = json_array();
    if (!p->doc || !p->ops)
        goto fail;
    return p;
fail:
    jp_free(p);
    return NULL;
}

void jp_free(struct jp *p)
{
    if (!p)
        return;
    json_decref(p->doc);
    json_decref(p->ops);
    free(p);
}

/* Copy on write: p->doc starts as a shallow copy of the caller's document,
 * so a container is shared with it (referenced from both) until an op
 * changes something under it. Before an op, every container on the way to
 * its parent (the op's first `depth` keys, segs) that is referenced from
 * elsewhere (refcount above 1) is replaced by a shallow copy of its own. A
 * deep copy of a whole Job per mutation was the webhook's largest cost after
 * decoding it. */
static int own_parents(struct jp *p, const char *const *segs, size_t depth)
{
    json_t *cur = p->doc;
    for (size_t i = 0; i < depth; i++) {
        json_t *next = child(cur, segs[i]);
        if (!json_is_object(next) && !json_is_array(next))
            return 0; /* the op fails on it, changing nothing */
        if (next->refcount > 1) {
            json_t *own = json_copy(next);
            size_t idx = 0;
            int rc = !own                         ? -1
                     : json_is_object(cur)        ? json_object_set_new(cur, segs[i], own)
                     : parse_index(segs[i], &idx) ? json_array_set_new(cur, idx, own)
                                                  : -1;
            if (rc < 0)
                return -1;
            next = own;
        }
        cur = next;
    }
    return 0;
}

/* Records and applies one op at path, whose parent is reached by the keys
 * segs[0..depth). Steals `value` (may be NULL). */
static int record(struct jp *p, const char *op, struct buf *path, const char *const *segs,
                  size_t depth, json_t *value)
{
    const char *path_s = buf_cstr(path);
    json_t *o = json_object();
    if (!o || !path_s || !buf_ok(path) || own_parents(p, segs, depth) < 0 ||
        json_object_set_new(o, "op", json_string(op)) < 0 ||
        json_object_set_new(o, "path", json_string(path_s)) < 0) {
        json_decref(value);
        json_decref(o);
        return -1;
    }
    if (value && json_object_set_new(o, "value", value) < 0) {
        json_decref(o);
        return -1;
    }
    char err[256];
    if (apply_one(&p->doc, o, err, sizeof(err)) < 0 || json_array_append_new(p->ops, o) < 0) {
        json_decref(o);
        return -1;
    }
    return 0;
}

/* Wraps `value` (stolen) in objects for segs[from..n-1]: {"b":{"c":value}}. */
static json_t *nest(const char *const *segs, size_t from, size_t n, json_t *value)
{
    for (size_t j = n; j > from && value; j--) {
        json_t *o = json_object();
        if (!o || json_object_set_new(o, segs[j - 1], value) < 0) {
            if (!o)
                json_decref(value);
            json_decref(o);
            return NULL;
        }
        value = o;
    }
    return value;
}

int jp_set_path(struct jp *p, const char *const *segs, size_t n, json_t *value)
{
    int rc = -1;
    struct buf path;
    buf_init(&path, BUF_CAP_JSON_PTR);
    json_t *cur = p ? p->doc : NULL;
    if (!cur || !value || (n && !segs))
        goto out;
    for (size_t i = 0; i < n; i++) {
        json_t *next = child(cur, segs[i]);
        int last = i == n - 1;
        if (!next && json_is_object(cur)) {
            /* first missing ancestor: one add carries the nested rest */
            json_t *v = nest(segs, i + 1, n, value);
            value = NULL;
            jp_append_token(&path, segs[i]);
            rc = v ? record(p, "add", &path, segs, i, v) : -1;
            goto out;
        }
        if (!next && json_is_array(cur) && last) {
            size_t idx;
            if (strcmp(segs[i], "-") != 0 &&
                !(parse_index(segs[i], &idx) && idx == json_array_size(cur)))
                goto out;
            jp_append_token(&path, segs[i]);
            rc = record(p, "add", &path, segs, i, value);
            value = NULL;
            goto out;
        }
        if (!next)
            goto out;
        jp_append_token(&path, segs[i]);
        if (!last && json_is_null(next)) {
            json_t *v = nest(segs, i + 1, n, value);
            value = NULL;
            rc = v ? record(p, "replace", &path, segs, i, v) : -1;
            goto out;
        }
        if (!last && !json_is_object(next) && !json_is_array(next))
            goto out;
        cur = next;
    }
    rc = 0;
    if (!json_equal(cur, value)) {
        rc = record(p, "replace", &path, segs, n ? n - 1 : 0, value);
        value = NULL;
    }
out:
    json_decref(value);
    buf_free(&path);
    return rc;
}

int jp_remove_path(struct jp *p, const char *const *segs, size_t n)
{
    int rc = -1;
    struct buf path;
    buf_init(&path, BUF_CAP_JSON_PTR);
    json_t *cur = p ? p->doc : NULL;
    if (!cur || n == 0 || !segs)
        goto out;
    for (size_t i = 0; i < n && cur; i++) {
        cur = child(cur, segs[i]);
        jp_append_token(&path, segs[i]);
    }
    rc = cur ? record(p, "remove", &path, segs, n - 1, NULL) : 0;
out:
    buf_free(&path);
    return rc;
}

int jp_append_path(struct jp *p, const char *const *segs, size_t n, json_t *value)
{
    json_t *cur = p ? p->doc : NULL;
    if (!cur || !value || (n && !segs)) {
        json_decref(value);
        return -1;
    }
    for (size_t i = 0; i < n && cur; i++)
        cur = child(cur, segs[i]);
    if (!cur || json_is_null(cur)) {
        json_t *arr = json_array();
        if (!arr || json_array_append_new(arr, value) < 0) {
            if (!arr)
                json_decref(value);
            json_decref(arr);
            return -1;
        }
        return jp_set_path(p, segs, n, arr);
    }
    if (!json_is_array(cur)) {
        json_decref(value);
        return -1;
    }
    struct buf path;
    buf_init(&path, BUF_CAP_JSON_PTR);
    for (size_t i = 0; i < n; i++)
        jp_append_token(&path, segs[i]);
    jp_append_token(&path, "-");
    int rc = record(p, "add", &path, segs, n, value);
    buf_free(&path);
    return rc;
}

/* Collects NULL-terminated varargs keys; returns the count or SIZE_MAX. */
static size_t collect(va_list ap, const char **segs)
{
    size_t n = 0;
    for (const char *s; (s = va_arg(ap, const char *)) != NULL;) {
        if (n == JP_MAX_SEGS)
            return SIZE_MAX;
        segs[n++] = s;
    }
    return n;
}

/* jp_set_path or jp_append_path on the varargs keys; value stolen, also
 * when there are more than JP_MAX_SEGS keys. */
static int set_or_append(struct jp *p, json_t *value, int append, va_list ap)
{
    const char *segs[JP_MAX_SEGS];
    size_t n = collect(ap, segs);
    if (n == SIZE_MAX) {
        json_decref(value);
        return MK_ERR_TOOBIG;
    }
    return append ? jp_append_path(p, segs, n, value) : jp_set_path(p, segs, n, value);
}

int jp_setl(struct jp *p, json_t *value, ...)
{
    va_list ap;
    va_start(ap, value);
    int rc = set_or_append(p, value, 0, ap);
    va_end(ap);
    return rc;
}

int jp_removel(struct jp *p, ...)
{
    const char *segs[JP_MAX_SEGS];
    va_list ap;
    va_start(ap, p);
    size_t n = collect(ap, segs);
    va_end(ap);
    return n == SIZE_MAX ? MK_ERR_TOOBIG : jp_remove_path(p, segs, n);
}

int jp_appendl(struct jp *p, json_t *value, ...)
{
    va_list ap;
    va_start(ap, value);
    int rc = set_or_append(p, value, 1, ap);
    va_end(ap);
    return rc;
}

json_t *jp_ops(const struct jp *p)
{
    return p ? json_incref(p->ops) : NULL;
}

size_t jp_count(const struct jp *p)
{
    return p ? json_array_size(p->ops) : 0;
}

const json_t *jp_doc(const struct jp *p)
{
    return p ? p->doc : NULL;
}

/* ---- RFC 7386 merge patch ---------------------------------------------- */

json_t *jp_merge_diff(const json_t *from, const json_t *to)
{
    if (!json_is_object(from) || !json_is_object(to))
        return to ? json_deep_copy(to) : json_null();
    json_t *patch = json_object();
    const char *key;
    json_t *v;
    if (!patch)
        return NULL;
    json_object_foreach((json_t *)from, key, v)
    {
        if (!json_object_get(to, key) && json_object_set_new(patch, key, json_null()) < 0)
            goto fail;
    }
    json_object_foreach((json_t *)to, key, v)
    {
        const json_t *old = json_object_get(from, key);
        json_t *d = NULL;
        if (!old)
            d = json_deep_copy(v);
        else if (json_is_object(old) && json_is_object(v)) {
            d = jp_merge_diff(old, v);
            if (d && json_object_size(d) == 0) {
                json_decref(d);
                continue;
            }
        } else if (!json_equal(old, v))
            d = json_deep_copy(v);
        else
            continue;
        if (!d || json_object_set_new(patch, key, d) < 0)
            goto fail;
    }
    return patch;
fail:
    json_decref(patch);
    return NULL;
}

int jp_merge_apply(json_t *target, const json_t *patch)
{
    if (!json_is_object(target) || !json_is_object(patch))
        return -1;
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)patch, key, v)
    {
        if (json_is_null(v)) {
            json_object_del(target, key);
            continue;
        }
        if (json_is_object(v)) {
            json_t *t = json_object_get(target, key);
            if (!json_is_object(t)) {
                /* merging into {} drops the nulls nested in v */
                t = json_object();
                if (!t || json_object_set_new(target, key, t) < 0)
                    return -1;
            }
            if (jp_merge_apply(t, v) < 0)
                return -1;
            continue;
        }
        if (json_object_set_new(target, key, json_deep_copy(v)) < 0)
            return -1;
    }
    return 0;
}
