/*
 * serve_params.h: turning the raw text of a request's query parameters into
 * the bytes and numbers the endpoints take, strictly: a '%' not followed by
 * two hex digits, a key over 320 bytes or a limit that is not a whole
 * number are errors with a one-line reason (the 400 the client gets), never
 * guesses.
 */
#ifndef SSTPIPE_SERVE_SERVE_PARAMS_H
#define SSTPIPE_SERVE_SERVE_PARAMS_H

#include <stddef.h>
#include <stdint.h>

/* The reason buffer every function here fills on error. */
#define SERVE_REASON_CAP 256

/*
 * Decodes percent-encoding ("%C3%A9" -> the two bytes C3 A9) of in into
 * out[0..cap). Every other byte is taken as it is ('+' too: the HTTP layer
 * has already made '+' a space, as form encoding says). The result must be
 * valid UTF-8 and at most cap bytes. Returns the decoded length, or -1 with
 * reason set ("key: bad percent-encoding at byte 3"); name names the
 * parameter in the reason.
 */
long serve_decode_param(const char *name, const char *in, uint8_t *out, size_t cap,
                        char reason[SERVE_REASON_CAP]);

/* A limit: a whole number from 1 up; above max it is cut to max (the
 * configured cap). Returns 0, or -1 with reason set. */
int serve_parse_limit(const char *text, uint32_t max, uint32_t *out, char reason[SERVE_REASON_CAP]);

/* text[0..n) percent-encoded into out (3 * n + 1 bytes): every byte but
 * RFC 3986's unreserved ones, so it is safe in a header, a query value and
 * an HTML attribute (a redirect's headers, the search page's links). */
void serve_percent_encode(const void *text, size_t n, char *out);

#endif
