/*
 * zeros.h: finding the first non-zero byte, for the checks of the zero
 * padding a table's format requires (between a block's entries and its
 * trailer, and at the end of each region): the table check of the regions
 * (stages/sst/table_check.c) and verify's check of the blocks.
 */
#ifndef SSTPIPE_COMMON_ZEROS_H
#define SSTPIPE_COMMON_ZEROS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Offset of the first non-zero byte of p[0..n), or n. */
static inline size_t sp_first_nonzero(const uint8_t *p, size_t n) {
    size_t i = 0;
    /* 32 bytes a step while all are zero (a block's padding is often a
     * good part of it), then 8 to find where. */
    for (; i + 32 <= n; i += 32) {
        uint64_t w[4];
        memcpy(w, p + i, 32);
        if (w[0] | w[1] | w[2] | w[3])
            break;
    }
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        if (w)
            break;
    }
    while (i < n && !p[i])
        i++;
    return i;
}

#endif
