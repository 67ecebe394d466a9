/*
 * size.h: sizes as users write them ("8K", "512M", "1G", "4096").
 *
 * Suffixes are binary (K = 1024) and case-insensitive; an optional trailing
 * "B" or "iB" is accepted ("8KiB", "8KB"). Anything else is an error, so a
 * typo in a config file or flag never silently becomes a default.
 */
#ifndef SSTPIPE_COMMON_SIZE_H
#define SSTPIPE_COMMON_SIZE_H

#include "stages/common/error.h"

#include <stddef.h>
#include <stdint.h>

/* Parses text into *out. what names the option for the error message. */
int sp_parse_size(const char *text, const char *what, uint64_t *out, sp_error *err);

/* Like sp_parse_size, and also requires a power of two in [min, max]. */
int sp_parse_pow2_size(const char *text, const char *what, uint64_t min, uint64_t max,
                       uint64_t *out, sp_error *err);

/* Parses a plain whole number in [min, max] (no suffixes). */
int sp_parse_count(const char *text, const char *what, uint64_t min, uint64_t max, uint64_t *out,
                   sp_error *err);

/* Writes a human form of n ("8K", "1.5M", "123") into buf. */
const char *sp_format_size(uint64_t n, char *buf, size_t cap);

/* Writes a time to three significant digits in the unit a person reads it
 * in ("0.84 s", "31.8 ms", "754 us", "12.3 s") into buf. */
const char *sp_format_seconds(double seconds, char *buf, size_t cap);

/* Writes a byte count to three significant digits in the binary unit a
 * person reads it in ("312 bytes", "136 KiB", "256 MiB") into buf. */
const char *sp_format_bytes(double n, char *buf, size_t cap);

#endif
