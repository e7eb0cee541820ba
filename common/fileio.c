#include "fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"

int fio_read_file(const char *path, size_t max, char **out, size_t *len)
{
    struct buf b;
    struct stat st;
    char chunk[16384];
    int rc = 0;
    /* O_NONBLOCK: opening a FIFO must not wait for a writer */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return -errno;
    buf_init(&b, max);
    if (fstat(fd, &st) < 0) {
        rc = -errno;
        goto out;
    }
    if (!S_ISREG(st.st_mode)) { /* no devices, FIFOs or sockets */
        rc = S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
        goto out;
    }
    for (;;) {
        ssize_t n = read(fd, chunk, sizeof(chunk));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = -errno;
            goto out;
        }
        if (n == 0)
            break;
        if (buf_append(&b, chunk, (size_t)n) < 0) {
            rc = b.oom ? -ENOMEM : -EFBIG;
            goto out;
        }
    }
    if (!buf_cstr(&b)) {
        rc = -ENOMEM;
        goto out;
    }
    if (len)
        *len = b.len;
    *out = buf_steal(&b);
out:
    close(fd);
    buf_free(&b);
    return rc;
}

char *fio_join(const char *base, const char *path)
{
    char *s = NULL;
    if (path[0] == '/' || !base || !base[0])
        return strdup(path);
    if (asprintf(&s, "%s/%s", base, path) < 0)
        return NULL;
    return s;
}
