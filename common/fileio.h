/* Small file helpers shared by modules that read credentials and configs. */
#ifndef MKUEUE_FILEIO_H
#define MKUEUE_FILEIO_H

#include <stddef.h>

#include "errf.h"

/* Reads a whole regular file (symlinks followed) of at most `max` bytes. On
 * success *out is a malloc'd, NUL-terminated copy the caller frees, and *len
 * (if non-NULL) its length. Returns 0, MK_ERR_TOOBIG when the file is larger
 * than max, MK_ERR_NOMEM, or MK_ERR_IO with errno saying why (from open/read,
 * EISDIR for a folder, EINVAL for a device, FIFO or socket) for the caller's
 * strerror(errno). */
int fio_read_file(const char *path, size_t max, char **out, size_t *len);
/* strerror's text for a fio_read_file (or other MK_ERR_IO) return: call it
 * before anything else can change errno. Static storage. */
const char *fio_strerror(int rc);

/* Joins `base` and `path` unless path is absolute or base is NULL/empty.
 * Returns a malloc'd string or NULL on oom. */
char *fio_join(const char *base, const char *path);

#endif
