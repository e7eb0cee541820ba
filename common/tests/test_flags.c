#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "flags.h"
#include "log.h"

enum color { RED, BLUE };

struct cfg {
    const char *name;
    char buf[8];
    int port;
    long secs;
    size_t bytes;
    long ms;
    int on;
    double rate;
    char items[3][6];
    int nitems;
    enum color color;
    enum log_level level;
};

static int set_color(void *field, const char *v)
{
    enum color *c = field;
    if (!strcmp(v, "red"))
        *c = RED;
    else if (!strcmp(v, "blue"))
        *c = BLUE;
    else
        return -1;
    return 0;
}

#define C(m) FL_F(struct cfg, m)
static const struct fl_flag table[] = {
    {"name", FL_STR, C(name), .min = 1, .arg = "NAME", .help = "a name"},
    {"buf", FL_BUF, C(buf), .help = "copied"},
    {"port", FL_INT, C(port), .min = 0, .max = 65535, .arg = "N", .help = "a port\nsecond line"},
    {"secs", FL_INT, C(secs), .min = -1, .max = 86400, .help = "seconds"},
    {"bytes", FL_INT, C(bytes), .min = 1024, .max = 4ll << 30, .help = "bytes"},
    {"ms", FL_DUR, C(ms), .key = "timeout"},
    {"on", FL_BOOL, C(on), .help = "a switch"},
    {"rate", FL_DBL, C(rate), .help = "a rate"},
    {"items", FL_LIST, C(items), .max = 3, .aux = offsetof(struct cfg, nitems)},
    {"color", FL_FUNC, C(color), .set = set_color},
    {"log-level", FL_FUNC, C(level), .set = fl_log_level},
};
#define N (sizeof(table) / sizeof(table[0]))

static int parse(struct cfg *c, char **argv, char *err, size_t errlen)
{
    int argc = 0;
    while (argv[argc])
        argc++;
    return fl_parse(table, N, c, argc, argv, err, errlen);
}

static void test_every_type(void **state)
{
    (void)state;
    struct cfg c = {0};
    char err[256] = "";
    char *argv[] = {"x",
                    "--name=n",
                    "--buf",
                    "1234567",
                    "--port",
                    "8080",
                    "--secs=-1",
                    "--bytes=4294967296",
                    "--ms",
                    "1m30s",
                    "--on",
                    "--rate=2.5",
                    "--items",
                    " a, ,bb ,c ",
                    "--color",
                    "blue",
                    "--log-level=debug",
                    NULL};
    assert_int_equal(parse(&c, argv, err, sizeof(err)), 0);
    assert_string_equal(c.name, "n");
    assert_string_equal(c.buf, "1234567");
    assert_int_equal(c.port, 8080);
    assert_int_equal(c.secs, -1);
    assert_int_equal(c.bytes, 4ull << 30);
    assert_int_equal(c.ms, 90000);
    assert_int_equal(c.on, 1);
    assert_true(c.rate > 2.4 && c.rate < 2.6);
    assert_int_equal(c.nitems, 3);
    assert_string_equal(c.items[0], "a");
    assert_string_equal(c.items[1], "bb");
    assert_string_equal(c.items[2], "c");
    assert_int_equal(c.color, BLUE);
    assert_int_equal(c.level, LOG_DEBUG);
}

static void test_bools(void **state)
{
    (void)state;
    struct cfg c = {.on = 1};
    char err[256];
    char *a1[] = {"x", "--no-on", NULL};
    assert_int_equal(parse(&c, a1, err, sizeof(err)), 0);
    assert_int_equal(c.on, 0);
    char *a2[] = {"x", "--on", "--port=1", NULL}; /* bare: the next flag is not its value */
    assert_int_equal(parse(&c, a2, err, sizeof(err)), 0);
    assert_int_equal(c.on, 1);
    char *a3[] = {"x", "--on=false", NULL};
    assert_int_equal(parse(&c, a3, err, sizeof(err)), 0);
    assert_int_equal(c.on, 0);
    char *a4[] = {"x", "--on", "yes", NULL}; /* as the reconciler always took it */
    assert_int_equal(parse(&c, a4, err, sizeof(err)), 0);
    assert_int_equal(c.on, 1);
    char *a5[] = {"x", "--on=maybe", NULL};
    assert_int_equal(parse(&c, a5, err, sizeof(err)), MK_ERR_INVAL);
    assert_non_null(strstr(err, "--on: expected true or false"));
    char *a6[] = {"x", "--no-port", NULL}; /* --no- only for booleans */
    assert_int_equal(parse(&c, a6, err, sizeof(err)), MK_ERR_INVAL);
    assert_non_null(strstr(err, "unknown flag --no-port"));
}

static void expect_error(const char *arg, const char *next, const char *needle)
{
    struct cfg c = {.port = 7, .bytes = 2048, .nitems = 1};
    snprintf(c.items[0], sizeof(c.items[0]), "keep");
    char err[256] = "";
    char *argv[] = {"x", (char *)arg, (char *)next, NULL};
    assert_int_equal(parse(&c, argv, err, sizeof(err)), MK_ERR_INVAL);
    if (!strstr(err, needle))
        fail_msg("%s: error \"%s\" does not mention \"%s\"", arg, err, needle);
    /* refused values leave the fields alone */
    assert_int_equal(c.port, 7);
    assert_int_equal(c.bytes, 2048);
    assert_int_equal(c.nitems, 1);
    assert_string_equal(c.items[0], "keep");
}

static void test_errors(void **state)
{
    (void)state;
    expect_error("--port=65536", NULL, "--port: expected an integer from 0 to 65535");
    expect_error("--port=-1", NULL, "from 0 to 65535");
    expect_error("--port= 1", NULL, "--port");
    expect_error("--port=1x", NULL, "--port");
    expect_error("--port=", NULL, "--port");
    expect_error("--secs=-2", NULL, "--secs");
    expect_error("--bytes=1023", NULL, "--bytes");
    expect_error("--bytes=4294967297", NULL, "--bytes");
    expect_error("--bytes=99999999999999999999", NULL, "--bytes");
    expect_error("--ms=10", NULL, "--ms: expected a duration");
    expect_error("--rate=fast", NULL, "--rate: expected a number");
    expect_error("--rate=inf", NULL, "--rate");
    expect_error("--name=", NULL, "--name: must not be empty");
    expect_error("--buf=12345678", NULL, "--buf: longer than 7 bytes");
    expect_error("--items=a,b,c,d", NULL, "--items: at most 3 items");
    expect_error("--items=abcdef", NULL, "--items");
    expect_error("--color=green", NULL, "--color: invalid value \"green\"");
    expect_error("--log-level=loud", NULL, "--log-level");
    expect_error("--nope", "1", "unknown flag --nope");
    expect_error("--port", NULL, "--port needs a value");
    expect_error("positional", NULL, "unexpected argument positional");
    expect_error("-p", "1", "unexpected argument -p");
}

/* The table is keyed by name: reversed, it parses the same. */
static void test_reorder_safe(void **state)
{
    (void)state;
    struct fl_flag rev[N];
    for (size_t i = 0; i < N; i++)
        rev[i] = table[N - 1 - i];
    char *argv[] = {"x", "--port=1", "--secs=2", "--bytes=2048", "--ms=3s", "--buf=b", NULL};
    struct cfg a, b;
    memset(&a, 0, sizeof(a)); /* padding too: compared bytewise */
    memset(&b, 0, sizeof(b));
    char err[256];
    assert_int_equal(fl_parse(table, N, &a, 6, argv, err, sizeof(err)), 0);
    assert_int_equal(fl_parse(rev, N, &b, 6, argv, err, sizeof(err)), 0);
    assert_memory_equal(&a, &b, sizeof(a));
    assert_int_equal(b.port, 1);
    assert_int_equal(b.secs, 2);
    assert_int_equal(b.bytes, 2048);
    assert_int_equal(b.ms, 3000);
    assert_ptr_equal(fl_find(rev, N, "port", 4), &rev[N - 3]);
    assert_null(fl_find(rev, N, "por", 3));
}

static void test_set_and_durations(void **state)
{
    (void)state;
    struct cfg c = {0};
    char err[256];
    const struct fl_flag *f = fl_find(table, N, "ms", 2);
    assert_int_equal(fl_set(f, &c, "1h2m3s", err, sizeof(err)), 0);
    assert_int_equal(c.ms, 3723000);
    assert_int_equal(fl_set(f, &c, "soon", err, sizeof(err)), MK_ERR_INVAL);
    assert_null(strstr(err, "--")); /* the caller names where the value came from */
    assert_non_null(strstr(err, "\"soon\""));
    assert_int_equal(fl_set(f, &c, NULL, err, sizeof(err)), MK_ERR_INVAL);
    long ms;
    assert_int_equal(fl_parse_duration("250ms", &ms), 0);
    assert_int_equal(ms, 250);
    assert_int_equal(fl_parse_duration("0", &ms), 0);
    assert_int_equal(ms, 0);
    assert_int_equal(fl_parse_duration("-1s", &ms), -1);
}

/* An entry whose field cannot hold its type is refused, not written past. */
static void test_bad_table(void **state)
{
    (void)state;
    struct small {
        short s;
        char list[5];
        int n;
    } c = {0};
    const struct fl_flag bad[] = {
        {"s", FL_INT, FL_F(struct small, s), .help = "too small"},
        {"l", FL_LIST, FL_F(struct small, list), .max = 2, .help = "5 bytes in 2 items"},
        {"f", FL_FUNC, FL_F(struct small, n), .help = "no setter"},
    };
    char err[256];
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(fl_set(&bad[i], &c, "1", err, sizeof(err)), MK_ERR_INVAL);
        assert_non_null(strstr(err, "bad flag table"));
    }
    assert_int_equal(c.s, 0);
}

static void test_usage(void **state)
{
    (void)state;
    char text[4096] = "";
    FILE *f = fmemopen(text, sizeof(text) - 1, "w");
    assert_non_null(f);
    fl_usage(f, table, N);
    fclose(f);
    assert_non_null(strstr(text, "  --name NAME                a name\n"));
    assert_non_null(strstr(text, "  --port N                   a port\n"
                                 "                             second line\n"));
    assert_non_null(strstr(text, " [timeout]\n"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_type),
        cmocka_unit_test(test_bools),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_reorder_safe),
        cmocka_unit_test(test_set_and_durations),
        cmocka_unit_test(test_bad_table),
        cmocka_unit_test(test_usage),
    };
    return cmocka_run_group_tests_name("flags", tests, NULL, NULL);
}
