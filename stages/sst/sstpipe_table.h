/*
 * sstpipe_table.h: what the files of libsstpipe (sstpipe_table.c,
 * sstpipe_iter.c) share about an open table; private to the library, the
 * public contract is sstpipe.h.
 *
 * An sstpipe_table is an sst_reader (footer and index checked at open, the
 * index in memory) plus how lookups read blocks: through the reader's
 * read-only mapping (the default), or with O_DIRECT into a buffer of the
 * calling thread. Nothing in it changes after open except the mapping's
 * per-block check state, which is atomic (table_reader.c), so lookups need
 * no lock.
 */
#ifndef SSTPIPE_SST_SSTPIPE_TABLE_H
#define SSTPIPE_SST_SSTPIPE_TABLE_H

#include "stages/common/error.h"
#include "stages/sst/sstpipe.h"
#include "stages/sst/table_reader.h"

#include <stdbool.h>

struct sstpipe_table {
    sst_reader *r;
    bool direct_io;
    int direct_fd; /* O_DIRECT descriptor of the file, or -1 when mapped */
};

/* Sets *errmsg (when errmsg is not NULL) to a malloc'd copy of err's
 * message; *errmsg stays NULL if even that allocation fails. */
void sstpipe_set_errmsg(char **errmsg, const sp_error *err);

#endif
