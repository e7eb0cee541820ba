#include "json_yajl.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <yajl/yajl_parse.h>

/* Longest number text converted here; longer ones are left to jansson. */
#define JY_NUMBER_MAX 63

const char jy_each[] = "[*]";

struct builder {
    json_t *root;
    json_t *stack[JY_MAX_DEPTH]; /* open containers, innermost last */
    int depth;
    size_t flags;
    /* Pruning: the paths (bits of prune->path) each open container is on,
     * those the pending key continues and whether it ends one; the
     * containers open inside a left-out value. */
    const struct jy_prune *prune;
    uint64_t on[JY_MAX_DEPTH];
    uint64_t key_on;
    int key_ends;
    int skip;
    yajl_handle parser;
    size_t end; /* bytes up to the end of the top-level value */
    /* The key of the value that comes next: copied, because yajl reuses
     * its buffer for the next escaped string. */
    char *key;
    size_t key_len, key_cap;
};

/* RFC 3629 UTF-8 as jansson checks it (no overlong forms, no surrogates,
 * nothing past U+10FFFF): for left-out strings, which jansson never sees. */
static int utf8_valid(const unsigned char *s, size_t len)
{
    size_t i = 0;
    while (i < len) {
        unsigned c = s[i], cp, min;
        size_t n;
        if (c < 0x80) {
            i++;
            continue;
        }
        if (c >= 0xC2 && c <= 0xDF) {
            n = 1, cp = c & 0x1F, min = 0x80;
        } else if ((c & 0xF0) == 0xE0) {
            n = 2, cp = c & 0x0F, min = 0x800;
        } else if (c >= 0xF0 && c <= 0xF4) {
            n = 3, cp = c & 0x07, min = 0x10000;
        } else {
            return 0;
        }
        if (len - i <= n)
            return 0;
        for (size_t k = 1; k <= n; k++) {
            if ((s[i + k] & 0xC0) != 0x80)
                return 0;
            cp = cp << 6 | (s[i + k] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return 0;
        i += n + 1;
    }
    return 1;
}

static int path_ends(const struct jy_path *p, int level)
{
    return level + 1 == JY_PATH_MAX || !p->key[level + 1];
}

/* Of the paths in `on`, those whose key at `level` is k (JY_EACH for an
 * array element) and go deeper; *ends is set when one ends there. */
static uint64_t step(const struct jy_prune *pr, uint64_t on, int level, const char *k, size_t len,
                     int *ends)
{
    uint64_t next = 0;
    for (; on; on &= on - 1) {
        int i = __builtin_ctzll(on);
        const struct jy_path *p = &pr->path[i];
        const char *pk = p->key[level];
        int hit =
            k == JY_EACH ? pk == JY_EACH : pk != JY_EACH && strncmp(pk, k, len) == 0 && !pk[len];
        if (!hit)
            continue;
        if (path_ends(p, level))
            *ends = 1;
        else
            next |= UINT64_C(1) << i;
    }
    return next;
}

/* 1 when the value starting now is left out; else *on is the paths it is
 * on (for a container). */
static int left_out(struct builder *b, uint64_t *on)
{
    *on = 0;
    if (b->depth == 0) {
        for (size_t i = 0; b->prune && i < b->prune->n; i++)
            if (b->prune->path[i].key[0])
                *on |= UINT64_C(1) << i;
        return 0;
    }
    uint64_t parent = b->on[b->depth - 1];
    if (!parent)
        return 0;
    if (json_is_array(b->stack[b->depth - 1])) {
        int ends = 0;
        *on = step(b->prune, parent, b->depth - 1, JY_EACH, 0, &ends);
        return ends;
    }
    *on = b->key_on;
    return b->key_ends;
}

/* 1 when the scalar starting now is not built (inside or as a left-out
 * value). */
static int scalar_left_out(struct builder *b)
{
    uint64_t on;
    return b->skip || left_out(b, &on);
}

/* Adds v (stolen) under the pending key or at the end of the innermost
 * array, or makes it the root. Returns 1, or 0 to stop the parse. */
static int add(struct builder *b, json_t *v)
{
    if (!v)
        return 0;
    if (b->depth == 0) {
        if (b->root) { /* a second top-level value: yajl refuses it anyway */
            json_decref(v);
            return 0;
        }
        b->root = v;
        return 1;
    }
    json_t *parent = b->stack[b->depth - 1];
    if (json_is_array(parent))
        return json_array_append_new(parent, v) == 0;
    size_t before = json_object_size(parent);
    if (json_object_setn_new(parent, b->key, b->key_len, v) != 0)
        return 0; /* oom, or a key that is not valid UTF-8 */
    /* A duplicate replaced the first value: the tree is discarded anyway. */
    return !(b->flags & JSON_REJECT_DUPLICATES) || json_object_size(parent) > before;
}

static int open_container(struct builder *b, json_t *(*make)(void))
{
    if (b->depth + b->skip == JY_MAX_DEPTH)
        return 0;
    uint64_t on;
    if (b->skip || left_out(b, &on)) {
        b->skip++;
        return 1;
    }
    json_t *c = make();
    if (!c)
        return 0;
    json_incref(c); /* the stack's reference, while it is open */
    if (!add(b, c)) {
        json_decref(c);
        return 0;
    }
    b->on[b->depth] = on;
    b->stack[b->depth++] = c;
    return 1;
}

static int on_close(void *ctx)
{
    struct builder *b = ctx;
    if (b->skip) {
        b->skip--;
        return 1;
    }
    json_decref(b->stack[--b->depth]);
    if (b->depth == 0)
        b->end = yajl_get_bytes_consumed(b->parser);
    return 1;
}

static int on_start_map(void *ctx)
{
    return open_container(ctx, json_object);
}

static int on_start_array(void *ctx)
{
    return open_container(ctx, json_array);
}

static int on_key(void *ctx, const unsigned char *key, size_t len)
{
    struct builder *b = ctx;
    if (b->skip)
        return utf8_valid(key, len);
    b->key_on = 0;
    b->key_ends = 0;
    uint64_t parent = b->on[b->depth - 1];
    if (parent) {
        b->key_on = step(b->prune, parent, b->depth - 1, (const char *)key, len, &b->key_ends);
        if (b->key_ends)
            return utf8_valid(key, len); /* never added, so never checked by jansson */
    }
    if (len >= b->key_cap) {
        size_t cap = len < 64 ? 64 : len + 1;
        char *k = realloc(b->key, cap);
        if (!k)
            return 0;
        b->key = k;
        b->key_cap = cap;
    }
    memcpy(b->key, key, len);
    b->key_len = len;
    return 1;
}

static int on_null(void *ctx)
{
    return scalar_left_out(ctx) || add(ctx, json_null());
}

static int on_boolean(void *ctx, int value)
{
    return scalar_left_out(ctx) || add(ctx, json_boolean(value));
}

/* As jansson: an integer unless there is a fraction or an exponent; what
 * does not fit (ERANGE, an infinite real) is jansson's to refuse, also in
 * a left-out value. */
static int on_number(void *ctx, const char *text, size_t len)
{
    char num[JY_NUMBER_MAX + 1];
    if (len > JY_NUMBER_MAX)
        return 0;
    int out = scalar_left_out(ctx);
    memcpy(num, text, len);
    num[len] = '\0';
    char *end;
    errno = 0;
    if (!memchr(num, '.', len) && !memchr(num, 'e', len) && !memchr(num, 'E', len)) {
        long long i = strtoll(num, &end, 10);
        if (errno == ERANGE || *end != '\0')
            return 0;
        return out || add(ctx, json_integer(i));
    }
    double d = strtod(num, &end);
    if (*end != '\0' || isinf(d))
        return 0;
    return out || add(ctx, json_real(d));
}

static int on_string(void *ctx, const unsigned char *s, size_t len)
{
    if (scalar_left_out(ctx))
        return utf8_valid(s, len);
    /* json_stringn refuses what is not valid UTF-8, as jansson's lexer */
    return add(ctx, json_stringn((const char *)s, len));
}

static const yajl_callbacks callbacks = {
    .yajl_null = on_null,
    .yajl_boolean = on_boolean,
    .yajl_number = on_number, /* the text, so the conversion is jansson's */
    .yajl_string = on_string,
    .yajl_start_map = on_start_map,
    .yajl_map_key = on_key,
    .yajl_end_map = on_close,
    .yajl_start_array = on_start_array,
    .yajl_end_array = on_close,
};

/* yajl lets an unfinished token after the value pass (`{} "x`, `{} 1`):
 * only JSON's whitespace may follow, as for jansson. */
static int only_space(const char *p, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (p[i] != ' ' && p[i] != '\t' && p[i] != '\n' && p[i] != '\r')
            return 0;
    return 1;
}

/* Bytes on which yajl and jansson could differ: an escaped NUL or UTF-16
 * surrogate, a vertical tab or a form feed. A backslash that escapes a
 * backslash is skipped with it, so "\\u0000" in the text is harmless. */
static int lax_spot(const char *data, size_t len)
{
    if (memchr(data, '\v', len) || memchr(data, '\f', len))
        return 1;
    const char *p = data, *end = data + len;
    while ((p = memchr(p, '\\', (size_t)(end - p))) != NULL) {
        if (end - p >= 6 && p[1] == 'u') {
            const char *h = p + 2;
            if ((h[0] == 'd' || h[0] == 'D') && h[1] && strchr("89abcdefABCDEF", h[1]))
                return 1;
            if (h[0] == '0' && h[1] == '0' && h[2] == '0' && h[3] == '0')
                return 1;
        }
        p += 2; /* the escaped character cannot start another escape */
        if (p >= end)
            break;
    }
    return 0;
}

json_t *jy_decode(const char *data, size_t len, size_t flags, const struct jy_prune *prune)
{
    if (!data || len == 0 || (flags & ~(size_t)JSON_REJECT_DUPLICATES) || lax_spot(data, len) ||
        (prune && prune->n > JY_PRUNE_MAX))
        return NULL; /* other flags (JSON_DECODE_ANY, ...) are jansson's alone */
    struct builder b = {.flags = flags, .prune = prune};
    yajl_handle h = yajl_alloc(&callbacks, NULL, &b);
    if (!h)
        return NULL;
    b.parser = h;
    /* json_stringn and json_object_setn_new check UTF-8, as jansson does */
    yajl_config(h, yajl_dont_validate_strings, 1);
    int ok = yajl_parse(h, (const unsigned char *)data, len) == yajl_status_ok &&
             yajl_complete_parse(h) == yajl_status_ok && b.depth == 0 &&
             (json_is_object(b.root) || json_is_array(b.root)) && b.end <= len &&
             only_space(data + b.end, len - b.end);
    yajl_free(h);
    while (b.depth > 0) /* a parse stopped halfway */
        json_decref(b.stack[--b.depth]);
    free(b.key);
    if (!ok) {
        json_decref(b.root);
        return NULL;
    }
    return b.root;
}

static void prune_at(json_t *node, const struct jy_path *p, int level)
{
    const char *k = p->key[level];
    if (k == JY_EACH) {
        if (!json_is_array(node))
            return;
        if (path_ends(p, level)) {
            json_array_clear(node);
            return;
        }
        for (size_t i = 0; i < json_array_size(node); i++)
            prune_at(json_array_get(node, i), p, level + 1);
        return;
    }
    if (!json_is_object(node))
        return;
    if (path_ends(p, level))
        json_object_del(node, k);
    else
        prune_at(json_object_get(node, k), p, level + 1);
}

void jy_prune(json_t *root, const struct jy_prune *prune)
{
    for (size_t i = 0; root && prune && i < prune->n; i++)
        if (prune->path[i].key[0])
            prune_at(root, &prune->path[i], 0);
}
