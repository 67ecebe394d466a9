/*
 * utf8.h: the two UTF-8 facts the pipeline needs: where a value may be cut
 * without splitting a character, and whether bytes are valid UTF-8.
 */
#ifndef SSTPIPE_COMMON_UTF8_H
#define SSTPIPE_COMMON_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Length of the longest prefix of s[0..len) that is at most max bytes and
 * ends on a character boundary. Needs s[max] when len > max (that byte tells
 * whether position max starts a new character).
 */
size_t sp_utf8_cut(const uint8_t *s, size_t len, size_t max);

/* True when s[0..len) is valid UTF-8 (no overlongs, surrogates or > U+10FFFF).
 * On false, *bad (if not NULL) is the offset of the first invalid byte. */
bool sp_utf8_valid(const uint8_t *s, size_t len, size_t *bad);

#endif
