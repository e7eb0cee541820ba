#include "test_http.h"

#include <curl/curl.h>
#include <stdio.h>

static size_t collect(char *p, size_t s, size_t n, void *ud)
{
    buf_append(ud, p, s * n);
    return s * n;
}

long th_http_get(int port, const char *path, struct buf *body, char *allow, size_t allowlen)
{
    char url[128];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", port, path);
    if (allow && allowlen)
        allow[0] = '\0';
    CURL *c = curl_easy_init();
    if (!c)
        return 0;
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, body);
    long code = 0;
    if (curl_easy_perform(c) == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    struct curl_header *h;
    if (allow && curl_easy_header(c, "Allow", 0, CURLH_HEADER, -1, &h) == CURLHE_OK)
        snprintf(allow, allowlen, "%s", h->value);
    curl_easy_cleanup(c);
    return code;
}
