/*
 * bz2_streams.h: where the streams of a multistream bzip2 file start.
 *
 * Wikimedia's -multistream dumps are many bzip2 streams end to end (the
 * header and <siteinfo>, then 100 pages a stream), so a part of the file
 * that begins at a stream start decompresses on its own. A cluster build
 * cuts such a dump into map tasks there (pipeline/cluster/cluster_plan.h). When
 * the dump's -multistream-index.txt.bz2 is not at hand, the starts are
 * found in the compressed bytes: a stream begins, at a byte boundary, with
 * "BZh" and a level digit followed by the 48-bit block magic (or the end of
 * stream magic for an empty stream), found with bz2_scan.h's search.
 */
#ifndef SSTPIPE_EXTRACT_BZ2_STREAMS_H
#define SSTPIPE_EXTRACT_BZ2_STREAMS_H

#include "stages/common/error.h"

#include <stdint.h>

/*
 * Finds the first stream of fd (a regular file; name for errors) that
 * starts at a byte in [from, end). Returns 1 and sets *at, 0 when none
 * does, -1 on a read error.
 */
int bz2_stream_find(int fd, const char *name, uint64_t from, uint64_t end, uint64_t *at,
                    sp_error *err);

#endif
