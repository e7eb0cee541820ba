#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "buf.h"

static void test_append_and_cap(void **state)
{
    (void)state;
    struct buf b;
    buf_init(&b, 8);
    assert_int_equal(buf_append_str(&b, "abcd"), 0);
    assert_int_equal(buf_append_str(&b, "efgh"), 0);
    assert_true(buf_ok(&b));
    assert_int_equal(buf_append_str(&b, "i"), -1);
    assert_true(b.overflow);
    assert_string_equal(buf_cstr(&b), "abcdefgh");
    buf_free(&b);
}

static void test_json_string_escapes(void **state)
{
    (void)state;
    struct buf b;
    buf_init(&b, BUF_CAP_LOG_LINE);
    buf_append_json_string(&b, "a\"b\\c\n\x01z");
    assert_string_equal(buf_cstr(&b), "\"a\\\"b\\\\c\\n\\u0001z\"");
    buf_free(&b);
}

static void test_printf_consume_steal(void **state)
{
    (void)state;
    struct buf b;
    buf_init(&b, BUF_CAP_LOG_LINE);
    assert_int_equal(buf_printf(&b, "%d-%s", 42, "x"), 0);
    buf_consume(&b, 3);
    assert_string_equal(buf_cstr(&b), "x");
    char *s = buf_steal(&b);
    assert_string_equal(s, "x");
    free(s);
    assert_int_equal(b.len, 0);
    assert_string_equal(buf_cstr(&b), "");
    buf_free(&b);
}

/* Cap 0 is no longer "unbounded": a buffer holds at most its cap, so a
 * zero cap holds nothing (and still reads as ""). */
static void test_zero_cap_holds_nothing(void **state)
{
    (void)state;
    struct buf b;
    buf_init(&b, 0);
    assert_int_equal(buf_append_str(&b, "x"), -1);
    assert_true(b.overflow);
    assert_int_equal(buf_reserve(&b, 1), -1);
    assert_string_equal(buf_cstr(&b), "");
    buf_free(&b);
}

/* A freed buffer keeps its cap: filled again, it is bounded as before (with
 * cap 0 gone, losing the cap would make it hold nothing). */
static void test_reuse_after_free(void **state)
{
    (void)state;
    struct buf b;
    buf_init(&b, 4);
    assert_int_equal(buf_append_str(&b, "abc"), 0);
    buf_free(&b);
    assert_int_equal(buf_append_str(&b, "wxyz"), 0);
    assert_int_equal(buf_append_str(&b, "!"), -1);
    assert_string_equal(buf_cstr(&b), "wxyz");
    buf_free(&b);
}

static void test_printf_respects_cap(void **state)
{
    (void)state;
    struct buf b;
    buf_init(&b, 4);
    assert_int_equal(buf_printf(&b, "%s", "12345"), -1);
    assert_int_equal(b.len, 0);
    buf_free(&b);
}

/* Untrusted text becomes valid UTF-8 (invalid bytes as U+FFFD) cut on a
 * character boundary, so that jansson accepts it. */
static void test_utf8_copy(void **state)
{
    (void)state;
    char out[64];
    assert_int_equal(buf_utf8_copy(out, sizeof(out), "plain", 5), 5);
    assert_string_equal(out, "plain");
    buf_utf8_copy(out, sizeof(out),
                  "a\xff"
                  "b\xc3\xa9"
                  "c",
                  6);
    assert_string_equal(out, "a\xef\xbf\xbd"
                             "b\xc3\xa9"
                             "c");
    /* overlong, surrogate, past U+10FFFF, truncated sequence */
    buf_utf8_copy(out, sizeof(out), "\xc0\xaf|\xed\xa0\x80|\xf4\x90\x80\x80|\xe2\x82", 17);
    json_t *j = json_string(out);
    assert_non_null(j);
    json_decref(j);
    assert_null(strchr(out, 0xc0));
    /* "é" (2 bytes) does not fit in the last byte: dropped whole. */
    assert_int_equal(buf_utf8_copy(out, 3, "a\xc3\xa9", 3), 1);
    assert_string_equal(out, "a");
    assert_int_equal(buf_utf8_copy(out, 0, "a", 1), 0);
    char s[7] = "ab\xc3\xa9\xff";
    buf_utf8_sanitize(s, sizeof(s));
    assert_string_equal(s, "ab\xc3\xa9"); /* U+FFFD does not fit: cut before it */
    char t[16] = "ab\xff";
    buf_utf8_sanitize(t, sizeof(t));
    assert_string_equal(t, "ab\xef\xbf\xbd");
}

/* Cut as Kueue cuts a message: " ..." on a whole UTF-8 character. */
static void test_cut_marks_on_a_character(void **state)
{
    (void)state;
    char s[20];
    assert_int_equal(buf_cut_fmt(s, sizeof(s), "%s", "aaaaaaaaaaaaaaaaaaaaaaaaaaaa"), 19);
    assert_string_equal(s + 15, " ...");
    /* never inside a UTF-8 sequence */
    char u[20];
    buf_cut_fmt(u, sizeof(u), "%s", "abcdefghijklmn\xc3\xa9xyzXYZ");
    assert_string_equal(u, "abcdefghijklmn ...");
    /* formatted: a cut marked on a character, whatever the format made */
    char w[20];
    assert_int_equal(buf_cut_fmt(w, sizeof(w), "%s-%s", "abcdefghijklm", "\xc3\xa9xyzXYZ"), 18);
    assert_string_equal(w, "abcdefghijklm- ...");
    assert_int_equal(buf_cut_fmt(w, sizeof(w), "%d", 42), 2);
    size_t len = 0;
    w[0] = '\0';
    buf_cut_appendf(w, sizeof(w), &len, "%s", "abcdefghij");
    buf_cut_appendf(w, sizeof(w), &len, "%s", "klmnopqrs"); /* fits exactly: 19 bytes */
    assert_int_equal(len, 19);
    assert_string_equal(w, "abcdefghijklmnopqrs");
    buf_cut_appendf(w, sizeof(w), &len, "%s", ""); /* nothing more: no cut */
    assert_string_equal(w, "abcdefghijklmnopqrs");
    buf_cut_appendf(w, sizeof(w), &len, "%s", "t"); /* one byte more: marked */
    assert_string_equal(w, "abcdefghijklmno ...");
    buf_cut_appendf(w, sizeof(w), &len, "%s", "u"); /* after a cut: nothing */
    assert_string_equal(w, "abcdefghijklmno ...");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cut_marks_on_a_character),
        cmocka_unit_test(test_append_and_cap),
        cmocka_unit_test(test_utf8_copy),
        cmocka_unit_test(test_json_string_escapes),
        cmocka_unit_test(test_printf_consume_steal),
        cmocka_unit_test(test_zero_cap_holds_nothing),
        cmocka_unit_test(test_printf_respects_cap),
        cmocka_unit_test(test_reuse_after_free),
    };
    return cmocka_run_group_tests_name("buf", tests, NULL, NULL);
}
