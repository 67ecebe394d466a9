/*
 * serve_get_many.h: POST /v1/get_many, batched lookups over HTTP. The body
 * is a JSON array of keys (strings, 1 to 320 bytes of UTF-8 each); the
 * answer, in their order, is [{"key": K, "value": V or null}, ...], the
 * lookups made by one sstpipe_lookup_many, whose exact keys' blocks are
 * read together (a networked disk serves reads in flight together): keys
 * are titles as people type them, a redirect followed and named in its
 * item ("redirect_from", "redirect_to"); with raw (?raw=1), the exact
 * keys' records, by one sstpipe_get_many. A request is bounded in
 * keys and in body bytes, so that one request holds at most that many
 * blocks (with direct I/O, in its thread's buffer) and that much JSON.
 */
#ifndef SSTPIPE_SERVE_SERVE_GET_MANY_H
#define SSTPIPE_SERVE_SERVE_GET_MANY_H

#include "stages/serve/serve_params.h"
#include "stages/sst/sstpipe.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SERVE_GET_MANY_PATH "/v1/get_many"
/* The most keys of one request, and the most bytes of its body: the keys
 * at their longest, each byte escaped (\u00XX), and the array's commas. */
#define SERVE_GET_MANY_MAX_KEYS 256
#define SERVE_GET_MANY_MAX_BODY (SERVE_GET_MANY_MAX_KEYS * (320 * 6 + 4))

/* Whether the HTTP layer reads the request's body (up to
 * SERVE_GET_MANY_MAX_BODY bytes) for serve_handle: a POST to /v1/get_many. */
bool serve_get_many_wants_body(const char *method, const char *path);

/* The answer to the body (len bytes; over when it was longer than
 * SERVE_GET_MANY_MAX_BODY and was not kept): 200 with *json (malloc'd,
 * *json_len bytes) and *missed set when a key was not found, or a 4xx or
 * 5xx with reason set (400 a body that is not a JSON array of 1 to
 * SERVE_GET_MANY_MAX_KEYS keys of 1 to 320 bytes, 413 a body over the
 * bound, 500 a table error, 503 out of memory). */
unsigned serve_get_many(sstpipe_table *t, bool raw, const uint8_t *body, size_t len, bool over,
                        char **json, size_t *json_len, bool *missed, char reason[SERVE_REASON_CAP]);

#endif
