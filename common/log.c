#include "log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"

static enum log_level cur_level = LOG_INFO;
static FILE *out_stream;
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *const level_names[] = {"error", "warn", "info", "debug", "trace"};

void log_set_level(enum log_level level)
{
    __atomic_store_n(&cur_level, level, __ATOMIC_RELAXED);
}

enum log_level log_get_level(void)
{
    return __atomic_load_n(&cur_level, __ATOMIC_RELAXED);
}

int log_parse_level(const char *s, enum log_level *out)
{
    for (int i = 0; i <= LOG_TRACE; i++) {
        if (strcmp(s, level_names[i]) == 0) {
            *out = (enum log_level)i;
            return 0;
        }
    }
    if (s[0] >= '0' && s[0] <= '4' && s[1] == '\0') {
        *out = (enum log_level)(s[0] - '0');
        return 0;
    }
    return -1;
}

void log_set_stream(FILE *f)
{
    pthread_mutex_lock(&out_lock);
    out_stream = f;
    pthread_mutex_unlock(&out_lock);
}

static void put_pair(struct buf *b, const char *key, const char *value)
{
    buf_append_str(b, ",");
    buf_append_json_string(b, key);
    buf_append_str(b, ":");
    if (value)
        buf_append_json_string(b, value);
    else
        buf_append_str(b, "null");
}

void log_kv(enum log_level level, const char *logger, const char *msg, ...)
{
    if (level > log_get_level())
        return;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    char when[40];
    size_t n = strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(when + n, sizeof(when) - n, ".%06ldZ", ts.tv_nsec / 1000);

    struct buf b;
    buf_init(&b, BUF_CAP_LOG_LINE);
    buf_append_str(&b, "{\"ts\":\"");
    buf_append_str(&b, when);
    buf_append_str(&b, "\"");
    put_pair(&b, "level", level_names[level]);
    put_pair(&b, "msg", msg ? msg : "");
    if (logger)
        put_pair(&b, "logger", logger);
    va_list ap;
    va_start(ap, msg);
    for (;;) {
        const char *k = va_arg(ap, const char *);
        if (!k)
            break;
        const char *v = va_arg(ap, const char *);
        put_pair(&b, k, v);
    }
    va_end(ap);
    buf_append_str(&b, "}\n");

    pthread_mutex_lock(&out_lock);
    FILE *f = out_stream ? out_stream : stderr;
    if (b.oom)
        fputs("{\"level\":\"error\",\"msg\":\"log line dropped: out of memory\"}\n", f);
    else
        fwrite(b.data, 1, b.len, f);
    fflush(f);
    pthread_mutex_unlock(&out_lock);
    buf_free(&b);
}
