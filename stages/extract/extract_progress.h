/*
 * extract_progress.h: extract's counts into the caller's sp_progress, from
 * the single-threaded reader (extract.c), the parse pool (parse_pool.c) and
 * the build when its reading ends (pipeline/build). A header of its own so
 * that those files share it without depending on each other.
 */
#ifndef SSTPIPE_EXTRACT_EXTRACT_PROGRESS_H
#define SSTPIPE_EXTRACT_EXTRACT_PROGRESS_H

#include "stages/common/progress.h"
#include "stages/extract/extract.h"

/* The counts so far into p (the input through sp_progress_input). */
static inline void extract_progress(sp_progress *p, const extract_stats *so_far) {
    sp_progress_input(p, so_far->input_bytes);
    sp_progress_store(&p->xml_bytes, so_far->xml_bytes);
    sp_progress_store(&p->pages, so_far->pages);
    sp_progress_store(&p->records, so_far->records);
}

#endif
