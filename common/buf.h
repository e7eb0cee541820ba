/* Bounded growable byte buffer. Appends past `cap` or failed allocations set
 * a sticky flag (`overflow` or `oom`) instead of growing, so callers can
 * append freely and check once. `data` is always NUL-terminated when len > 0
 * or after buf_cstr(). */
#ifndef MKUEUE_BUF_H
#define MKUEUE_BUF_H

#include <stddef.h>

struct buf {
    char *data;   /* owned; NULL until the first append */
    size_t len;   /* bytes used, excluding the terminating NUL */
    size_t alloc; /* bytes allocated */
    size_t cap;   /* maximum len; 0 means unbounded */
    int overflow; /* an append would have exceeded cap */
    int oom;      /* an allocation failed */
};

void buf_init(struct buf *b, size_t cap);
/* Returns 0, or -1 if the data did not fit (then nothing is appended). */
int buf_append(struct buf *b, const void *data, size_t len);
/* Allocates room for exactly `extra` more bytes now (so appends up to that
 * do not reallocate). Returns 0, or -1 past cap or on oom (flags set as appends). */
int buf_reserve(struct buf *b, size_t extra);
int buf_append_str(struct buf *b, const char *s);
int buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends `s` as a quoted JSON string (escapes quotes, backslash, control
 * characters; bytes >= 0x80 pass through). */
int buf_append_json_string(struct buf *b, const char *s);
/* Always returns a NUL-terminated string ("" when empty), or NULL on oom. */
const char *buf_cstr(struct buf *b);
/* Takes ownership of the data (caller frees); leaves the buffer empty. */
char *buf_steal(struct buf *b);
void buf_reset(struct buf *b);
/* Drops the first n bytes, keeping the rest. */
void buf_consume(struct buf *b, size_t n);
void buf_free(struct buf *b);
/* True when no append has failed. */
#define buf_ok(b) (!(b)->overflow && !(b)->oom)

#endif
