/* A faster JSON decoder beside jansson's: yajl's lexer and parser, building
 * the same jansson tree as json_loadb would.
 *
 * jansson stays the reference. jy_decode either returns exactly the tree
 * json_loadb would return for the same bytes and flags (equal values, the
 * same types and key order) or declines with NULL, and the caller then decodes with
 * jansson, which gives the verdict and the error message. It declines:
 *   - on any error, so bad input is always refused in jansson's words;
 *   - on input where yajl is laxer than jansson: escapes of NUL and of
 *     UTF-16 surrogates (yajl turns a lone one into '?' or invalid UTF-8),
 *     and vertical tab or form feed (whitespace to yajl, not to JSON);
 *   - on numbers jansson refuses (integer or real overflow), documents
 *     nested deeper than JY_MAX_DEPTH and a top level that is no object or
 *     array.
 * fuzz_json_decoders checks the equivalence on arbitrary bytes.
 *
 * Why: jansson's lexer reads one byte at a time through a callback and took
 * most of the webhook's time per review (webhook/README.md "Session 21").
 *
 * Ownership: the returned tree is the caller's (json_decref). Thread-safe:
 * no state beyond the call; values come from jansson's allocator. */
#ifndef MKUEUE_JSON_YAJL_H
#define MKUEUE_JSON_YAJL_H

#include <stddef.h>

#include <jansson.h>

/* Deeper documents are left to jansson (whose own limit is 2048). */
#define JY_MAX_DEPTH 128

/* flags: 0 or JSON_REJECT_DUPLICATES, as for json_loadb; with any other
 * flag it declines. */
json_t *jy_decode(const char *data, size_t len, size_t flags);

#endif
