#include "buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void buf_init(struct buf *b, size_t cap)
{
    memset(b, 0, sizeof(*b));
    b->cap = cap;
}

static int reserve(struct buf *b, size_t extra)
{
    if (extra > b->cap || b->len > b->cap - extra) {
        b->overflow = 1;
        return -1;
    }
    size_t need = b->len + extra + 1;
    if (need <= b->alloc)
        return 0;
    size_t n = b->alloc ? b->alloc : 256;
    while (n < need)
        n = n > ((size_t)-1) / 2 ? need : n * 2;
    char *p = realloc(b->data, n);
    if (!p) {
        b->oom = 1;
        return -1;
    }
    b->data = p;
    b->alloc = n;
    return 0;
}

int buf_reserve(struct buf *b, size_t extra)
{
    if (extra > b->cap || b->len > b->cap - extra) {
        b->overflow = 1;
        return -1;
    }
    size_t need = b->len + extra + 1; /* exactly: the caller knows the size */
    if (need <= b->alloc)
        return 0;
    char *p = realloc(b->data, need);
    if (!p) {
        b->oom = 1;
        return -1;
    }
    b->data = p;
    b->alloc = need;
    return 0;
}

int buf_append(struct buf *b, const void *data, size_t len)
{
    if (reserve(b, len) < 0)
        return -1;
    if (len)
        memcpy(b->data + b->len, data, len);
    b->len += len;
    b->data[b->len] = '\0';
    return 0;
}

int buf_append_str(struct buf *b, const char *s)
{
    return buf_append(b, s, strlen(s));
}

int buf_printf(struct buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || reserve(b, (size_t)n) < 0)
        return -1;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return 0;
}

int buf_append_json_string(struct buf *b, const char *s)
{
    int rc = buf_append(b, "\"", 1);
    const unsigned char *p = (const unsigned char *)s;
    const unsigned char *run = p;
    for (; *p; p++) {
        const char *esc = NULL;
        char tmp[8];
        switch (*p) {
        case '"':
            esc = "\\\"";
            break;
        case '\\':
            esc = "\\\\";
            break;
        case '\n':
            esc = "\\n";
            break;
        case '\r':
            esc = "\\r";
            break;
        case '\t':
            esc = "\\t";
            break;
        default:
            if (*p < 0x20) {
                snprintf(tmp, sizeof(tmp), "\\u%04x", *p);
                esc = tmp;
            }
        }
        if (esc) {
            rc |= buf_append(b, run, (size_t)(p - run));
            rc |= buf_append_str(b, esc);
            run = p + 1;
        }
    }
    rc |= buf_append(b, run, (size_t)(p - run));
    rc |= buf_append(b, "\"", 1);
    return rc ? -1 : 0;
}

const char *buf_cstr(struct buf *b)
{
    if (!b->data && reserve(b, 0) < 0)
        return NULL;
    b->data[b->len] = '\0';
    return b->data;
}

char *buf_steal(struct buf *b)
{
    char *p = b->data;
    b->data = NULL;
    b->len = b->alloc = 0;
    return p;
}

void buf_reset(struct buf *b)
{
    b->len = 0;
    b->overflow = b->oom = 0;
    if (b->data)
        b->data[0] = '\0';
}

void buf_consume(struct buf *b, size_t n)
{
    if (n >= b->len) {
        buf_reset(b);
        return;
    }
    memmove(b->data, b->data + n, b->len - n);
    b->len -= n;
    b->data[b->len] = '\0';
}

void buf_free(struct buf *b)
{
    size_t cap = b->cap; /* reusable after a free, bounded as before */
    free(b->data);
    memset(b, 0, sizeof(*b));
    b->cap = cap;
}

/* Length of the valid UTF-8 sequence at s (n bytes available), 0 if none:
 * no overlong forms, surrogates or code points past U+10FFFF (RFC 3629). */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    size_t len;
    unsigned long cp;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2;
        cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        cp = c & 0x07;
    } else {
        return 0;
    }
    if (n < len)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3F);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return len;
}

size_t buf_utf8_copy(char *dst, size_t dstlen, const char *src, size_t len)
{
    static const char replacement[] = "\xEF\xBF\xBD"; /* U+FFFD */
    const unsigned char *s = (const unsigned char *)src;
    size_t o = 0;
    if (!dstlen)
        return 0;
    for (size_t i = 0; i < len && s[i];) {
        size_t n = utf8_seq(s + i, len - i);
        const char *piece = (const char *)s + i;
        size_t plen = n;
        if (!n) {
            piece = replacement;
            plen = 3;
            n = 1;
        }
        if (o + plen >= dstlen)
            break;
        memcpy(dst + o, piece, plen);
        o += plen;
        i += n;
    }
    dst[o] = '\0';
    return o;
}

void buf_utf8_sanitize(char *s, size_t size)
{
    if (!s || !size)
        return;
    size_t len = strnlen(s, size - 1);
    char *tmp = malloc(len + 1);
    if (!tmp) {
        for (size_t i = 0; i < len; i++)
            if ((unsigned char)s[i] >= 0x80)
                s[i] = '?';
        s[len] = '\0';
        return;
    }
    memcpy(tmp, s, len);
    tmp[len] = '\0';
    buf_utf8_copy(s, size, tmp, len);
    free(tmp);
}

/* Ends s (a text cut to cap - 1 bytes or longer) with " ..." within cap. */
static void mark_cut(char *s, size_t cap)
{
    static const char suffix[] = " ...";
    if (cap < sizeof(suffix)) {
        if (cap)
            s[0] = '\0';
        return;
    }
    size_t keep = cap - sizeof(suffix); /* room for the suffix and the NUL */
    while (keep > 0 && ((unsigned char)s[keep] & 0xC0) == 0x80)
        keep--; /* s[keep] starts a character: cut before it */
    memcpy(s + keep, suffix, sizeof(suffix));
}

static size_t vfmt(char *out, size_t cap, const char *fmt, va_list ap)
{
    if (cap == 0)
        return 0;
    int n = vsnprintf(out, cap, fmt, ap);
    if (n < 0) {
        out[0] = '\0';
        return 0;
    }
    if ((size_t)n >= cap)
        mark_cut(out, cap);
    return strlen(out);
}

size_t buf_cut_fmt(char *out, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t n = vfmt(out, cap, fmt, ap);
    va_end(ap);
    return n;
}

void buf_cut_appendf(char *out, size_t cap, size_t *len, const char *fmt, ...)
{
    if (*len >= cap) /* a cut already marked */
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(out + *len, cap - *len, fmt, ap);
    va_end(ap);
    if (n < 0)
        out[*len] = '\0';
    else if ((size_t)n >= cap - *len) {
        mark_cut(out, cap);
        *len = cap;
        return;
    }
    *len = strlen(out);
}
