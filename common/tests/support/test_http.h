/* A plain-HTTP GET for tests of the servers on 127.0.0.1 (common/httpd.h
 * and its users). */
#ifndef MKUEUE_TEST_HTTP_H
#define MKUEUE_TEST_HTTP_H

#include <stddef.h>

#include "buf.h"

/* GET http://127.0.0.1:<port><path>; the body is appended to `body` (owned
 * by the caller) and, when allow is not NULL, the Allow header is copied
 * into it ("" when absent). Returns the HTTP status, 0 when no answer came. */
long th_http_get(int port, const char *path, struct buf *body, char *allow, size_t allowlen);

#endif
