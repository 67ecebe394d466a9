/*
 * sstpipe_titles.h: a table's title index (FILE.titles, title_rules.h) in
 * libsstpipe: opened with its table, and the lookups and suggestions
 * (sstpipe_lookup, sstpipe_suggest in sstpipe.h) it serves; private to the
 * library.
 */
#ifndef SSTPIPE_SST_SSTPIPE_TITLES_H
#define SSTPIPE_SST_SSTPIPE_TITLES_H

#include "stages/sst/sstpipe_table.h"

/* Opens t's title index when there is one beside it, built for t (its
 * identity, title_rules.h); t->titles stays NULL when there is none or it
 * was built for another table. -1 with err set when it is there but cannot
 * be read. */
int sstpipe_titles_open(sstpipe_table *t, const sstpipe_options *opt, sp_error *err);
/* Closes t's title index, if any. */
void sstpipe_titles_close(sstpipe_table *t);

#endif
