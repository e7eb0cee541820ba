/* Command-line flags from a table: one entry per flag (name, type, field of
 * the config struct by offset, bounds, help), found by name, so the order of
 * the table never matters. Both binaries parse their flags with it; the
 * reconciler's config file sets the same fields through fl_set.
 *
 * Syntax: "--name=value" or "--name value"; a boolean also takes "--name"
 * alone (true, unless the next argument is a value not starting with "--"),
 * "--name=false" and "--no-name". Stateless: thread-safe on distinct configs. */
#ifndef MKUEUE_FLAGS_H
#define MKUEUE_FLAGS_H

#include <stddef.h>
#include <stdio.h>

#include "errf.h"

enum fl_type {
    FL_STR,  /* const char *: the value itself (borrowed, e.g. from argv) */
    FL_BUF,  /* char[size]: a copy; a value that does not fit is refused */
    FL_INT,  /* int, long or size_t (by size), decimal */
    FL_DUR,  /* long milliseconds from a Go-style duration ("1m30s", "250ms", "0") */
    FL_BOOL, /* int 0 or 1: true/True/yes/1, false/False/no/0 */
    FL_DBL,  /* double, finite */
    FL_LIST, /* char[max][size / max], comma-separated items (trimmed, empty ones
              * dropped), the int count at offset aux; a new value replaces the list */
    FL_FUNC, /* set(field, value) parses and stores (enums); 0 or negative */
};

struct fl_flag {
    const char *name; /* without "--" */
    enum fl_type type;
    size_t off, size; /* FL_F(struct, member); FL_FUNC may take the whole struct */
    /* FL_INT, FL_DUR (ms): the value must be in [min, max] when max > min
     * (FL_INT always fits its field); FL_STR, FL_BUF: min 1 refuses an empty
     * value; FL_LIST: max is the number of items */
    long long min, max;
    size_t aux; /* FL_LIST: offsetof the int count */
    int (*set)(void *field, const char *value);
    const char *arg;  /* usage: the value's name ("N", "PATH") */
    const char *help; /* usage: lines separated by '\n' */
    const char *key;  /* the same setting's name elsewhere (a config file key), or NULL */
};

#define FL_F(type, member) offsetof(type, member), sizeof(((type *)0)->member)

/* The entry called name (len bytes, without "--"), or NULL. */
const struct fl_flag *fl_find(const struct fl_flag *t, size_t n, const char *name, size_t len);

/* Parses value into f's field of cfg; the field is unchanged on error.
 * Returns 0, or MK_ERR_INVAL with the reason in err (naming the value, not the flag:
 * callers say where it came from). */
int fl_set(const struct fl_flag *f, void *cfg, const char *value, char *err, size_t errlen);

/* Applies argv[1..argc-1] to cfg. Returns 0, or MK_ERR_INVAL with err naming the flag
 * (an unknown flag, a missing or bad value, a positional argument). */
int fl_parse(const struct fl_flag *t, size_t n, void *cfg, int argc, char **argv, char *err,
             size_t errlen);

/* One line per flag ("  --name ARG  help [key]"), continuation lines aligned. */
void fl_usage(FILE *out, const struct fl_flag *t, size_t n);

/* A Go-style duration ("1h2m3s", "1.5s", "250ms", "0"; a unit is required)
 * in milliseconds. Returns 0, or -1 on a malformed, negative or overflowing value. */
int fl_parse_duration(const char *s, long *ms);

/* FL_FUNC setter of an enum log_level field (log.h's names). */
int fl_log_level(void *field, const char *value);

#endif
