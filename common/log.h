/* Structured logging: one JSON object per line on stderr, klog-style keys
 * (ts, level, msg, logger, then key/value pairs). Thread-safe. */
#ifndef MKUEUE_LOG_H
#define MKUEUE_LOG_H

#include <stdio.h>

enum log_level { LOG_ERROR = 0, LOG_WARN = 1, LOG_INFO = 2, LOG_DEBUG = 3, LOG_TRACE = 4 };

/* Sets the most verbose level printed (default LOG_INFO). */
void log_set_level(enum log_level level);
enum log_level log_get_level(void);
/* Parses "error|warn|info|debug|trace" or a number 0..4; returns 0 or -1. */
int log_parse_level(const char *s, enum log_level *out);
/* Redirects output (default stderr); the stream is not owned. For tests. */
void log_set_stream(FILE *f);

/* Writes one line. `kv` is a NULL-terminated list of const char * key, value
 * pairs; a NULL value prints as JSON null. All strings are JSON-escaped. */
void log_kv(enum log_level level, const char *logger, const char *msg, ...);

#define log_enabled(lvl) ((lvl) <= log_get_level())

#define LOG_E(logger, msg, ...) log_kv(LOG_ERROR, logger, msg, ##__VA_ARGS__, (const char *)NULL)
#define LOG_W(logger, msg, ...) log_kv(LOG_WARN, logger, msg, ##__VA_ARGS__, (const char *)NULL)
#define LOG_I(logger, msg, ...) log_kv(LOG_INFO, logger, msg, ##__VA_ARGS__, (const char *)NULL)
#define LOG_D(logger, msg, ...)                                                                    \
    do {                                                                                           \
        if (log_enabled(LOG_DEBUG))                                                                \
            log_kv(LOG_DEBUG, logger, msg, ##__VA_ARGS__, (const char *)NULL);                     \
    } while (0)

#endif
