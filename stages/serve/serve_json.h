/*
 * serve_json.h: a JSON string written straight into a buffer, for the
 * replies built often enough that building a jansson tree and dumping it
 * is a good part of their cost (the suggestions, typed a character at a
 * time). The bytes are jansson's for the same string (json_dumps without
 * flags): '"' and '\' escaped, the control characters as \b \f \n \r \t
 * or \u00XX, everything else, UTF-8 of any plane included, as it is.
 */
#ifndef SSTPIPE_SERVE_SERVE_JSON_H
#define SSTPIPE_SERVE_SERVE_JSON_H

#include <stddef.h>

/* The most bytes serve_json_string writes for n bytes of text: each one
 * escaped as \u00XX, and the quotes. */
#define SERVE_JSON_STRING_MAX(n) (6 * (n) + 2)

/* Writes text (n bytes of UTF-8) as a JSON string, quoted, at out; the
 * bytes written. */
size_t serve_json_string(char *out, const void *text, size_t n);

#endif
