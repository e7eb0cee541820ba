#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio.h"

static char dir[] = "/tmp/test_fileio.XXXXXX";
static char path[512], fifo[512];

static int setup(void **state)
{
    (void)state;
    if (!mkdtemp(dir))
        return -1;
    snprintf(path, sizeof(path), "%s/f", dir);
    snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    unlink(path);
    unlink(fifo);
    rmdir(dir);
    return 0;
}

static void test_read_and_limit(void **state)
{
    (void)state;
    char *out = NULL;
    size_t len = 0;
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("hello\n", f);
    fclose(f);

    assert_int_equal(fio_read_file(path, 6, &out, &len), 0);
    assert_int_equal(len, 6);
    assert_string_equal(out, "hello\n");
    free(out);
    out = NULL;
    assert_int_equal(fio_read_file(path, 5, &out, &len), MK_ERR_TOOBIG);
    assert_null(out);

    f = fopen(path, "w");
    fclose(f);
    assert_int_equal(fio_read_file(path, 5, &out, &len), 0); /* empty file: "" */
    assert_int_equal(len, 0);
    assert_string_equal(out, "");
    free(out);
}

static void test_not_regular(void **state)
{
    (void)state;
    char *out = NULL;
    /* MK_ERR_IO, errno saying why (and kept past the close) */
    assert_int_equal(fio_read_file(dir, 100, &out, NULL), MK_ERR_IO);
    assert_int_equal(errno, EISDIR);
    assert_string_equal(fio_strerror(MK_ERR_IO), strerror(EISDIR));
    assert_int_equal(fio_read_file("/dev/null", 100, &out, NULL), MK_ERR_IO);
    assert_int_equal(errno, EINVAL);
    /* a FIFO without a writer would block a plain open() */
    assert_int_equal(mkfifo(fifo, 0600), 0);
    assert_int_equal(fio_read_file(fifo, 100, &out, NULL), MK_ERR_IO);
    assert_int_equal(errno, EINVAL);
    assert_int_equal(fio_read_file("/nonexistent/x", 100, &out, NULL), MK_ERR_IO);
    assert_int_equal(errno, ENOENT);
    assert_null(out);
}

static void test_join(void **state)
{
    (void)state;
    char *s;
    assert_string_equal(s = fio_join("/a/b", "c.crt"), "/a/b/c.crt");
    free(s);
    assert_string_equal(s = fio_join("/a/b", "/etc/c.crt"), "/etc/c.crt");
    free(s);
    assert_string_equal(s = fio_join(NULL, "c.crt"), "c.crt");
    free(s);
    assert_string_equal(s = fio_join("", "c.crt"), "c.crt");
    free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_read_and_limit),
        cmocka_unit_test(test_not_regular),
        cmocka_unit_test(test_join),
    };
    return cmocka_run_group_tests_name("fileio", tests, setup, teardown);
}
