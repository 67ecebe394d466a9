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
 *
 * A table set (TABLESET.md) is an sstpipe_table too, with no reader of its
 * own: its sstpipe_set holds the checked manifest and one plain
 * sstpipe_table per shard (sstpipe_set.c), and every call routes to them.
 */
#ifndef SSTPIPE_SST_SSTPIPE_TABLE_H
#define SSTPIPE_SST_SSTPIPE_TABLE_H

#include "stages/common/error.h"
#include "stages/sst/sstpipe.h"
#include "stages/sst/table_reader.h"
#include "stages/sst/table_set.h"

#include <stdbool.h>

struct sstpipe_options {
    bool direct_io;
};

typedef struct sstpipe_set {
    table_set *manifest;
    char *path; /* as opened */
    size_t n;
    sstpipe_table **shards;
    /* Shard i holds the set's data blocks [first_block[i], first_block[i + 1]). */
    uint64_t *first_block;
    sstpipe_info info; /* the sums and the common options */
} sstpipe_set;

struct sstpipe_table {
    sst_reader *r; /* a plain table's; NULL for a set */
    bool direct_io;
    int direct_fd;    /* O_DIRECT descriptor of the file, or -1 when mapped */
    sstpipe_set *set; /* a table set's shards, or NULL */
};

/* sstpipe_set.c: opens the table set at path (its manifest checked, every
 * shard opened with opt and checked against it), or NULL with err set. */
sstpipe_table *sstpipe_set_open(const char *path, const sstpipe_options *opt, sp_error *err);
void sstpipe_set_close(sstpipe_set *s);
/* Which shard holds key. */
size_t sstpipe_set_find(const sstpipe_set *s, const void *key, size_t klen);

/* sstpipe_table.c: opens path as a plain table, never as a set (shards are
 * opened this way, whatever their names). */
sstpipe_table *sstpipe_table_open(const char *path, const sstpipe_options *opt, sp_error *err);

/* Sets *errmsg (when errmsg is not NULL) to a malloc'd copy of err's
 * message; *errmsg stays NULL if even that allocation fails. */
void sstpipe_set_errmsg(char **errmsg, const sp_error *err);

#endif
