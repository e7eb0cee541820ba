/* Bounded growable byte buffer. Appends past `cap` or failed allocations set
 * a sticky flag (`overflow` or `oom`) instead of growing, so callers can
 * append freely and check once. `data` is always NUL-terminated when len > 0
 * or after buf_cstr(). Every buffer has a cap: there is no unbounded one.
 * Not thread-safe: one owner at a time. */
#ifndef MKUEUE_BUF_H
#define MKUEUE_BUF_H

#include <stddef.h>

/* The caps of the buffers the code builds, in one list (as curl's
 * dynbuf.h): each names what its buffer holds. Buffers of untrusted input
 * take their cap from the reader's own limit (a body, a watch line). */
#define BUF_CAP_URL      (64u * 1024)        /* a URL, path, query or header line */
#define BUF_CAP_JSON_PTR (64u * 1024)        /* a JSON Pointer into a document */
#define BUF_CAP_LOG_LINE (64u * 1024)        /* one log record */
#define BUF_CAP_REPLY    (16u * 1024 * 1024) /* an HTTP answer the webhook builds */
#define BUF_CAP_METRICS  (64u * 1024 * 1024) /* one /metrics exposition */
#define BUF_CAP_MESSAGE  (64u * 1024)        /* a message for a client, e.g. a denial's reasons */
#define BUF_CAP_JSON_TEXT                                                                          \
    (16u * 1024 * 1024)      /* an object serialized: a request body, a patch, a hash's input */
#define BUF_CAP_NAMES (400u) /* names listed in a condition message */
#define BUF_CAP_RECORD                                                                             \
    (16u * 1024 *                                                                                  \
     1024) /* a cache record: one object's fields and deflated text (a watch event's cap) */

struct buf {
    char *data;   /* owned; NULL until the first append */
    size_t len;   /* bytes used, excluding the terminating NUL */
    size_t alloc; /* bytes allocated */
    size_t cap;   /* maximum len (a BUF_CAP_* or the reader's own limit; 0 holds nothing) */
    int overflow; /* an append would have exceeded cap */
    int oom;      /* an allocation failed */
};

/* An empty buffer of at most cap bytes: one of the BUF_CAP_* above, or the
 * limit of the reader it serves (a body, a watch line). */
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
/* Copies src (len bytes, or up to a NUL) into dst as valid UTF-8: each byte
 * of an invalid or truncated sequence becomes U+FFFD, and the copy ends on
 * a character boundary so that it fits dstlen with its NUL. jansson refuses
 * strings that are not UTF-8, so untrusted text (a worker's error body)
 * goes through this before it becomes a JSON string. Returns the bytes
 * written (without the NUL); dstlen 0 writes nothing. */
size_t buf_utf8_copy(char *dst, size_t dstlen, const char *src, size_t len);
/* buf_utf8_copy of s onto itself (s is a NUL-terminated string in an array
 * of size bytes); without memory for the copy, bytes >= 0x80 become '?'. */
void buf_utf8_sanitize(char *s, size_t size);
/* Text cut to a fixed array as Kueue cuts a condition message: snprintf
 * into out (cap bytes) that, when the text does not fit, ends it with
 * " ..." on a whole UTF-8 character (a cut inside one leaves text jansson
 * and the API server refuse). Returns the length written. */
size_t buf_cut_fmt(char *out, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The same, appended at *len (the length so far, < cap; updated). Once a
 * cut was marked *len is cap and later appends add nothing. */
void buf_cut_appendf(char *out, size_t cap, size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Always returns a NUL-terminated string ("" when empty), or NULL on oom. */
const char *buf_cstr(struct buf *b);
/* Takes ownership of the data (caller frees); leaves the buffer empty. */
char *buf_steal(struct buf *b);
void buf_reset(struct buf *b);
/* Drops the first n bytes, keeping the rest. */
void buf_consume(struct buf *b, size_t n);
/* Frees the data; the buffer is empty and keeps its cap, so it can be
 * filled again. */
void buf_free(struct buf *b);
/* True when no append has failed. */
#define buf_ok(b) (!(b)->overflow && !(b)->oom)

#endif
