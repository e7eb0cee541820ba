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
    int saved = 0; /* errno for MK_ERR_IO: close and free may change it */
    if (fd < 0)
        return MK_ERR_IO;
    buf_init(&b, max);
    if (fstat(fd, &st) < 0) {
        rc = MK_ERR_IO;
        saved = errno;
        goto out;
    }
    if (!S_ISREG(st.st_mode)) { /* no devices, FIFOs or sockets */
        rc = MK_ERR_IO;
        saved = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
        goto out;
    }
    for (;;) {
        ssize_t n = read(fd, chunk, sizeof(chunk));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = MK_ERR_IO;
            saved = errno;
            goto out;
        }
        if (n == 0)
            break;
        if (buf_append(&b, chunk, (size_t)n) < 0) {
            rc = b.oom ? MK_ERR_NOMEM : MK_ERR_TOOBIG;
            goto out;
        }
    }
    if (!buf_cstr(&b)) {
        rc = MK_ERR_NOMEM;
        goto out;
    }
    if (len)
        *len = b.len;
    *out = buf_steal(&b);
out:
    close(fd);
    buf_free(&b);
    if (rc == MK_ERR_IO)
        errno = saved;
    return rc;
}

const char *fio_strerror(int rc)
{
    return strerror(rc == MK_ERR_TOOBIG ? EFBIG : rc == MK_ERR_NOMEM ? ENOMEM : errno);
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
