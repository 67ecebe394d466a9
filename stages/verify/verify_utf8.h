/*
 * verify_utf8.h: UTF-8 validation for verify's hot loop, private to
 * stages/verify: sp_utf8_valid's contract, at several times its speed.
 *
 * Checking every key and value was half of verify's CPU time. This checks
 * 64 bytes at a time with AVX-512BW, or 32 with AVX2, where the processor
 * has them (the lookup-table method of Keiser and Lemire, "Validating UTF-8
 * in less than one instruction per byte", 2021) and calls sp_utf8_valid for the offset of the
 * first bad byte only when the bytes are invalid, so the answer and the
 * offset are always sp_utf8_valid's.
 */
#ifndef SSTPIPE_VERIFY_VERIFY_UTF8_H
#define SSTPIPE_VERIFY_VERIFY_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* As sp_utf8_valid: true when s[0..len) is valid UTF-8; on false, *bad (if
 * not NULL) is the offset of the first invalid byte. */
bool verify_utf8_valid(const uint8_t *s, size_t len, size_t *bad);

/* The fast path's own answer: 1 valid, 0 invalid, -1 when this processor
 * has none (no AVX2). verify_utf8_valid falls back on sp_utf8_valid
 * whenever this is not 1, which would hide a fast path that rejects valid
 * text; the tests compare this answer itself with sp_utf8_valid's. It is
 * verify_utf8_avx512's where the processor has AVX-512BW, else
 * verify_utf8_avx2's; the tests judge each of the two alone, as each
 * answers only where the processor has its instructions (-1 elsewhere). */
int verify_utf8_fast(const uint8_t *s, size_t len);
int verify_utf8_avx2(const uint8_t *s, size_t len);
int verify_utf8_avx512(const uint8_t *s, size_t len);

/* The path verify_utf8_fast runs, chosen once before main from what the
 * processor has: "AVX-512BW", "AVX2", or NULL (neither: it answers -1, and
 * sp_utf8_valid checks everything). verify's JSON report names it
 * (utf8_check), so a user can tell why verify runs slower on one machine
 * than another; the tests hold it against the processor's own answer, as
 * the paths' answers cannot tell which one ran. */
const char *verify_utf8_fast_path(void);

#endif
