/*
 * truncate.h: the second stage. Cuts each value to the longest prefix of at
 * most max_bytes bytes that ends on a UTF-8 character boundary.
 *
 * As a sink it wraps the next stage's sink, so `build` can run it in-line
 * between extract and sort.
 */
#ifndef SSTPIPE_TRUNCATE_TRUNCATE_H
#define SSTPIPE_TRUNCATE_TRUNCATE_H

#include "stages/common/error.h"
#include "stages/common/record.h"

#include <stddef.h>
#include <stdint.h>

typedef struct truncator {
    uint64_t max_bytes;
    sp_sink next;
    uint64_t records;
    uint64_t truncated; /* records whose value was cut */
} truncator;

void truncator_init(truncator *t, uint64_t max_bytes, sp_sink next);
/*
 * A sink that truncates and forwards to t->next. A value in memory is cut in
 * place; a spilled value (value_fd >= 0) has only its first max_bytes + 1
 * bytes read, so a page of tens of MiB never enters memory. The next sink
 * always receives the value in memory.
 */
sp_sink truncator_sink(truncator *t);

/* The `-v` line, without its newline, into buf (cap bytes; 64 hold it):
 * "truncate: records=N truncated=N". The command prints it. */
void truncate_stats_format(uint64_t records, uint64_t truncated, char *buf, size_t cap);

#endif
