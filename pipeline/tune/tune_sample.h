/*
 * tune_sample.h: the sample `sstpipe tune --sample SIZE` builds its trials
 * from: the first SIZE bytes of the input's XML (decompressed, whatever
 * the compression), cut back to the end of the last whole </page> and
 * closed with </mediawiki>, written as plain XML. The head of a dump keeps
 * its <siteinfo> and real pages in dump order, so the sample has the
 * dump's own mix of titles and text lengths; every trial then reads the
 * same plain file, so decompression does not swamp the build times.
 */
#ifndef SSTPIPE_TUNE_TUNE_SAMPLE_H
#define SSTPIPE_TUNE_TUNE_SAMPLE_H

#include "stages/common/error.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct tune_sample_stats {
    uint64_t xml_bytes; /* written to the sample */
    uint64_t pages;     /* whole pages in it */
    bool whole;         /* the input's XML was no longer than the limit: all of it */
} tune_sample_stats;

/* Writes the sample of input to out_path (created new, removed again on
 * error). -1 with err when the input cannot be read or the first limit
 * bytes hold no whole page. */
int tune_write_sample(const char *input, uint64_t limit, const char *out_path,
                      tune_sample_stats *st, sp_error *err);

#endif
