/*
 * title_index.h: the title index written next to a table, <table>.titles
 * (title_rules.h has its records): by a build, from the records on their
 * way to the table; by a merge, from its inputs' indexes' records.
 *
 * The table's records come in title order; the index is in folded-title
 * order, so its records go through a sorter of their own (spilling past
 * its budget like the build's) and are written when the table's last
 * record is in, after the table's file is complete (sealed, not yet in
 * place), so that the index records the table's identity (title_rules.h).
 * The index is published before the table: a reader that sees the new
 * table finds its index beside it. It replaces the earlier index by an
 * exchange, so a table that then fails puts the earlier index back; until
 * the table is in place too, both are registered with cleanup.h, so a
 * signal leaves no index rather than the wrong one. After SIGKILL between
 * the two renames the new index stays beside the old table, whose
 * identity it does not carry, and every reader ignores it.
 */
#ifndef SSTPIPE_SST_TITLE_INDEX_H
#define SSTPIPE_SST_TITLE_INDEX_H

#include "stages/common/record.h"
#include "stages/common/title_rules.h"
#include "stages/sort/sorter.h"
#include "stages/sst/table_writer.h"

typedef struct title_index title_index;

/* For the table at table_path, under the site's rules (copied); the
 * index's blocks are the table's size, its sort of budget sort->memory. */
title_index *title_index_init(const char *table_path, const sp_title_rules *rules,
                              const sort_options *sort, const table_options *table, sp_error *err);
/* A sink that hands each record to `to` and its title to the index. */
sp_sink title_index_tee(title_index *x, const sp_sink *to);
/* Adds a page record of another title index (a merge's inputs'), its key
 * and value in the layout x writes (title_rules.h, SP_TITLES_LAYOUT): of
 * two with the same key, the one added last stays. */
int title_index_add_entry(title_index *x, const sp_record *rec, sp_error *err);
/* Sorts and writes the index for the table of identity `table` (sealed,
 * not yet in place), and publishes it, undoably: title_index_unpublish
 * puts the earlier index back; until it or title_index_keep, a signal
 * removes both. */
int title_index_finish(title_index *x, const sp_table_identity *table, sp_error *err);
/* Its table is in place too: the index stays, the earlier one goes. */
void title_index_keep(title_index *x);
/* Takes a published index back (the table it was for was not published):
 * the earlier index, if any, is back in place. */
void title_index_unpublish(title_index *x);
/* Puts tw's table in place with its index x, both or neither: tw sealed,
 * x finished for its identity, then the table published, x taken back
 * when the table fails before its rename. x NULL: the table alone, and an
 * index left beside it (built for the table it replaces) is removed once
 * it is in place, so no reader pairs the new table with an old index.
 * table_path is tw's. */
int title_index_publish(title_index *x, table_writer *tw, const char *table_path, sp_error *err);
/* Frees x; an index not published leaves nothing behind. */
void title_index_destroy(title_index *x);

#endif
