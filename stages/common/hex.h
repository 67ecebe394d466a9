/*
 * hex.h: bytes as lowercase hex digits, the one spelling of a binary key in
 * text.
 *
 * Keys are arbitrary bytes, so wherever one has to live in JSON or in a
 * message (a table set's shard bounds in TABLESET.md, the cluster plan's
 * split points, `info --json`, errors naming a key) it is written as two
 * lowercase hex digits a byte. Readers accept exactly that form (no
 * uppercase, no prefix), so a bound has one text and manifests compare as
 * strings.
 */
#ifndef SSTPIPE_COMMON_HEX_H
#define SSTPIPE_COMMON_HEX_H

#include <stddef.h>
#include <stdint.h>

/* Writes the 2n digits of bytes[0..n) and a NUL into out (2n + 1 bytes). */
void sp_hex_write(const void *bytes, size_t n, char *out);

/* The same as a malloc'd string; NULL when out of memory. */
char *sp_hex_encode(const void *bytes, size_t n);

/* Decodes digits[0..ndigits) (ndigits even) into out (ndigits / 2 bytes).
 * Returns ndigits when every character is a lowercase hex digit, else the
 * position of the first that is not (out is then partly written). */
size_t sp_hex_decode(const char *digits, size_t ndigits, uint8_t *out);

#endif
