/* Small file helpers shared by modules that read credentials and configs. */
#ifndef MKUEUE_FILEIO_H
#define MKUEUE_FILEIO_H

#include <stddef.h>

/* Reads a whole regular file (symlinks followed) of at most `max` bytes. On
 * success *out is a malloc'd, NUL-terminated copy the caller frees, and *len
 * (if non-NULL) its length. Returns 0, -EFBIG when the file is larger than
 * max, -EISDIR for a folder, -EINVAL for a device, FIFO or socket, -ENOMEM,
 * or -errno from open/read. */
int fio_read_file(const char *path, size_t max, char **out, size_t *len);

/* Joins `base` and `path` unless path is absolute or base is NULL/empty.
 * Returns a malloc'd string or NULL on oom. */
char *fio_join(const char *base, const char *path);

#endif
