#include "jsonx.h"
#include "errf.h"
#include "json_yajl.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Walks a path one segment at a time without copying it. */
struct cursor {
    const char *p;
    int started;
};

/* Returns 1 with the next segment in key/len, 0 at the end, -1 when the path
 * is malformed at this point. */
static int next_seg(struct cursor *c, const char **key, size_t *len)
{
    const char *p = c->p;
    if (*p == '\0')
        return 0;
    if (c->started) {
        if (*p == '.')
            p++;
        else if (*p != '[')
            return -1;
    }
    c->started = 1;
    if (*p == '[') {
        const char *q = strchr(p + 1, ']');
        if (!q)
            return -1;
        *key = p + 1;
        *len = (size_t)(q - p - 1);
        c->p = q + 1;
        return 1;
    }
    size_t n = strcspn(p, ".[]");
    if (n == 0 || p[n] == ']')
        return -1;
    *key = p;
    *len = n;
    c->p = p + n;
    return 1;
}

/* Counts the segments of a path, or returns -1 when it is malformed. */
static int count_segs(const char *path)
{
    struct cursor c = {path, 0};
    const char *key;
    size_t len;
    int n = 0, rc;
    while ((rc = next_seg(&c, &key, &len)) > 0)
        n++;
    return rc < 0 ? -1 : n;
}

/* A canonical array index: digits, no leading zero, small enough. */
static int parse_index(const char *key, size_t len, size_t *out)
{
    if (len == 0 || len > 18 || (len > 1 && key[0] == '0'))
        return 0;
    size_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (key[i] < '0' || key[i] > '9')
            return 0;
        v = v * 10 + (size_t)(key[i] - '0');
    }
    *out = v;
    return 1;
}

static json_t *child(const json_t *node, const char *key, size_t len)
{
    size_t idx;
    if (json_is_object(node))
        return json_object_getn(node, key, len);
    if (json_is_array(node) && parse_index(key, len, &idx))
        return json_array_get(node, idx);
    return NULL;
}

json_t *jx_get(const json_t *root, const char *path)
{
    if (!root || !path)
        return NULL;
    struct cursor c = {path, 0};
    const char *key;
    size_t len;
    json_t *cur = (json_t *)root;
    int rc;
    while (cur && (rc = next_seg(&c, &key, &len)) != 0) {
        if (rc < 0)
            return NULL;
        cur = child(cur, key, len);
    }
    return cur;
}

json_t *jx_getl(const json_t *root, ...)
{
    va_list ap;
    va_start(ap, root);
    json_t *cur = (json_t *)root;
    const char *key;
    while (cur && (key = va_arg(ap, const char *)) != NULL)
        cur = child(cur, key, strlen(key));
    va_end(ap);
    return cur;
}

const char *jx_str(const json_t *root, const char *path)
{
    return json_string_value(jx_get(root, path));
}

long long jx_int(const json_t *root, const char *path, long long def)
{
    const json_t *v = jx_get(root, path);
    return json_is_integer(v) ? (long long)json_integer_value(v) : def;
}

int jx_bool(const json_t *root, const char *path, int def)
{
    const json_t *v = jx_get(root, path);
    return json_is_boolean(v) ? json_is_true(v) : def;
}

/* Walks to the parent of the last segment, creating missing objects when
 * `create` is set. Returns the parent with the last key, or NULL. */
static json_t *walk_parent(json_t *root, const char *path, int create, const char **key,
                           size_t *len)
{
    int n = count_segs(path);
    if (!root || n <= 0)
        return NULL;
    struct cursor c = {path, 0};
    json_t *cur = root;
    for (int i = 0; i < n; i++) {
        next_seg(&c, key, len);
        if (i == n - 1)
            break;
        json_t *next = child(cur, *key, *len);
        if (!next && create && json_is_object(cur)) {
            next = json_object();
            if (!next || json_object_setn_new(cur, *key, *len, next) < 0)
                return NULL;
        }
        if (!json_is_object(next) && !json_is_array(next))
            return NULL;
        cur = next;
    }
    return cur;
}

int jx_set(json_t *root, const char *path, json_t *value)
{
    const char *key;
    size_t len, idx;
    json_t *parent = value ? walk_parent(root, path, 1, &key, &len) : NULL;
    if (json_is_object(parent))
        return json_object_setn_new(parent, key, len, value) < 0 ? -1 : 0;
    if (json_is_array(parent) && parse_index(key, len, &idx) && idx < json_array_size(parent))
        return json_array_set_new(parent, idx, value) < 0 ? -1 : 0;
    json_decref(value);
    return -1;
}

int jx_set_new_str(json_t *root, const char *path, const char *s)
{
    return jx_set(root, path, s ? json_string(s) : NULL);
}

int jx_del(json_t *root, const char *path)
{
    const char *key;
    size_t len, idx;
    json_t *parent = walk_parent(root, path, 0, &key, &len);
    if (json_is_object(parent))
        return json_object_deln(parent, key, len) < 0 ? -1 : 0;
    if (json_is_array(parent) && parse_index(key, len, &idx))
        return json_array_remove(parent, idx) < 0 ? -1 : 0;
    return -1;
}

void jx_scan(const char *data, size_t len, struct jx_scan *out)
{
    memset(out, 0, sizeof(*out));
    out->bytes = len;
    int depth = 0, in_str = 0, in_lit = 0;
    for (size_t i = 0; data && i < len; i++) {
        if (in_str) {
            /* most bytes are strings' own: jump to the next quote (memchr
             * is vectorized); it ends the string unless an odd number of
             * backslashes escapes it */
            const char *q = memchr(data + i, '"', len - i);
            if (!q)
                break;
            size_t at = (size_t)(q - data), bs = 0;
            while (at - bs > i && data[at - bs - 1] == '\\')
                bs++;
            in_str = bs % 2;
            i = at;
            continue;
        }
        char ch = data[i];
        switch (ch) {
        case '"':
            in_str = 1;
            in_lit = 0;
            out->strings++;
            break;
        case '[':
        case '{':
            if (ch == '[')
                out->arrays++;
            else
                out->objects++;
            if (++depth > out->depth)
                out->depth = depth;
            in_lit = 0;
            break;
        case ']':
        case '}':
            if (depth > 0)
                depth--;
            in_lit = 0;
            break;
        case ':':
            out->members++;
            in_lit = 0;
            break;
        case ',':
        case ' ':
        case '\t':
        case '\n':
        case '\r':
            in_lit = 0;
            break;
        default:
            if (!in_lit)
                out->literals++;
            in_lit = 1;
            break;
        }
    }
}

int jx_scan_depth(const char *data, size_t len, int limit)
{
    struct jx_scan sc;
    jx_scan(data, len, &sc);
    return sc.depth > limit ? limit + 1 : sc.depth;
}

size_t jx_scan_values(const struct jx_scan *s)
{
    size_t scalars = s->strings > s->members ? s->strings - s->members : 0;
    return s->objects + s->arrays + scalars + s->literals;
}

/* Bytes per node, measured with jansson 2.14 on x86-64 (glibc malloc
 * overhead included) and rounded up. */
#define COST_OBJECT  240u
#define COST_ARRAY   144u
#define COST_MEMBER  88u /* hashtable pair and key copy, beyond the key's bytes */
#define COST_STRING  96u /* a string value, beyond its bytes */
#define COST_LITERAL 48u

static size_t add_mul(size_t acc, size_t n, size_t unit)
{
    if (n && unit > (SIZE_MAX - acc) / n)
        return SIZE_MAX;
    return acc + n * unit;
}

size_t jx_scan_cost(const struct jx_scan *s)
{
    size_t scalars = s->strings > s->members ? s->strings - s->members : 0;
    size_t c = s->bytes; /* string bytes end up in the tree, at most once */
    c = add_mul(c, s->objects, COST_OBJECT);
    c = add_mul(c, s->arrays, COST_ARRAY);
    c = add_mul(c, s->members, COST_MEMBER);
    c = add_mul(c, scalars, COST_STRING);
    c = add_mul(c, s->literals, COST_LITERAL);
    return c;
}

json_t *jx_loadb(const char *data, size_t len, size_t flags, const struct jy_prune *prune,
                 json_error_t *err)
{
    json_t *root = jy_decode(data, len, flags, prune);
    if (root)
        return root;
    root = json_loadb(data, len, flags, err); /* jansson has the last word */
    jy_prune(root, prune);
    return root;
}

json_t *jx_loadb_budget(const char *data, size_t len, size_t max_bytes, int max_depth,
                        size_t max_cost, char *err, size_t errlen)
{
    return jx_loadb_scanned(data, len, NULL, max_bytes, max_depth, max_cost, NULL, err, errlen);
}

json_t *jx_loadb_scanned(const char *data, size_t len, const struct jx_scan *sc, size_t max_bytes,
                         int max_depth, size_t max_cost, const struct jy_prune *prune, char *err,
                         size_t errlen)
{
    struct jx_scan own = {0};
    if (!sc) {
        if (data && len <= max_bytes) /* else refused below, unread */
            jx_scan(data, len, &own);
        sc = &own;
    }
    if (!data && len > 0) {
        errf(err, errlen, MK_ERR_INVAL, "invalid JSON: no data");
        return NULL;
    }
    if (len > max_bytes) {
        errf(err, errlen, MK_ERR_INVAL, "JSON document too large: %zu bytes (limit %zu)", len,
             max_bytes);
        return NULL;
    }
    if (sc->depth > max_depth) {
        errf(err, errlen, MK_ERR_INVAL, "JSON nesting deeper than %d levels", max_depth);
        return NULL;
    }
    size_t cost = max_cost ? jx_scan_cost(sc) : 0;
    if (cost > max_cost) {
        errf(err, errlen, MK_ERR_INVAL,
             "JSON document too costly to decode: %zu values would take about %zu KiB "
             "(limit %zu KiB)",
             jx_scan_values(sc), cost / 1024, max_cost / 1024);
        return NULL;
    }
    json_error_t e;
    json_t *root = jx_loadb(data ? data : "", len, JSON_REJECT_DUPLICATES, prune, &e);
    if (!root)
        errf(err, errlen, MK_ERR_INVAL, "invalid JSON at line %d column %d (byte %d): %s", e.line,
             e.column, e.position, e.text);
    return root;
}

json_t *jx_loadb_bounded(const char *data, size_t len, size_t max_bytes, int max_depth, char *err,
                         size_t errlen)
{
    return jx_loadb_budget(data, len, max_bytes, max_depth, 0, err, errlen);
}

static int dump_to_buf(const char *data, size_t len, void *ud)
{
    return buf_append(ud, data, len);
}

int jx_dump(const json_t *v, size_t flags, struct buf *out)
{
    if (!v || json_dump_callback(v, dump_to_buf, out, flags) != 0 || !buf_ok(out))
        return -1;
    return buf_cstr(out) ? 0 : -1;
}
