#include "json_yajl.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <yajl/yajl_parse.h>

/* Longest number text converted here; longer ones are left to jansson. */
#define JY_NUMBER_MAX 63

struct builder {
    json_t *root;
    json_t *stack[JY_MAX_DEPTH]; /* open containers, innermost last */
    int depth;
    size_t flags;
    yajl_handle parser;
    size_t end; /* bytes up to the end of the top-level value */
    /* The key of the value that comes next: copied, because yajl reuses
     * its buffer for the next escaped string. */
    char *key;
    size_t key_len, key_cap;
};

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

static int open_container(struct builder *b, json_t *c)
{
    if (!c || b->depth == JY_MAX_DEPTH) {
        json_decref(c);
        return 0;
    }
    json_incref(c); /* the stack's reference, while it is open */
    if (!add(b, c)) {
        json_decref(c);
        return 0;
    }
    b->stack[b->depth++] = c;
    return 1;
}

static int on_close(void *ctx)
{
    struct builder *b = ctx;
    json_decref(b->stack[--b->depth]);
    if (b->depth == 0)
        b->end = yajl_get_bytes_consumed(b->parser);
    return 1;
}

static int on_start_map(void *ctx)
{
    return open_container(ctx, json_object());
}

static int on_start_array(void *ctx)
{
    return open_container(ctx, json_array());
}

static int on_key(void *ctx, const unsigned char *key, size_t len)
{
    struct builder *b = ctx;
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
    return add(ctx, json_null());
}

static int on_boolean(void *ctx, int value)
{
    return add(ctx, json_boolean(value));
}

/* As jansson: an integer unless there is a fraction or an exponent; what
 * does not fit (ERANGE, an infinite real) is jansson's to refuse. */
static int on_number(void *ctx, const char *text, size_t len)
{
    char num[JY_NUMBER_MAX + 1];
    if (len > JY_NUMBER_MAX)
        return 0;
    memcpy(num, text, len);
    num[len] = '\0';
    char *end;
    errno = 0;
    if (!memchr(num, '.', len) && !memchr(num, 'e', len) && !memchr(num, 'E', len)) {
        long long i = strtoll(num, &end, 10);
        if (errno == ERANGE || *end != '\0')
            return 0;
        return add(ctx, json_integer(i));
    }
    double d = strtod(num, &end);
    if (*end != '\0' || isinf(d))
        return 0;
    return add(ctx, json_real(d));
}

static int on_string(void *ctx, const unsigned char *s, size_t len)
{
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

json_t *jy_decode(const char *data, size_t len, size_t flags)
{
    if (!data || len == 0 || (flags & ~(size_t)JSON_REJECT_DUPLICATES) || lax_spot(data, len))
        return NULL; /* other flags (JSON_DECODE_ANY, ...) are jansson's alone */
    struct builder b = {.flags = flags};
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
