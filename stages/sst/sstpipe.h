/*
 * sstpipe.h: libsstpipe, the public C API for reading sstpipe SSTables.
 * Installed as <sstpipe/sstpipe.h>; link with `pkg-config --libs sstpipe`.
 *
 * This is the one way tables are read: the sstpipe commands (get, dump, the
 * server) use it too. A table is opened once and then serves point lookups
 * and ordered scans; it is never written through this API.
 *
 * Errors. Every call that can fail returns a failure value (NULL or -1) and,
 * when errmsg is not NULL, sets *errmsg to a malloc'd one-line message
 * (free it with sstpipe_free) that names the file and, where it applies,
 * the block and byte offset. On success *errmsg is left untouched. The
 * library prints nothing, installs no signal handlers and never exits.
 *
 * Integrity. Every block is checked (checksum, trailer, restart points,
 * first key against the index) before any byte of it is returned; a
 * corrupt block is an error (-1), never data.
 *
 * Threads. One sstpipe_table may be used from any number of threads at once
 * for sstpipe_get, sstpipe_get_many, sstpipe_iter_new and the accessors. An
 * sstpipe_iter belongs to one thread at a time. sstpipe_close must not race any other
 * call on the same table, and every iterator of a table must be freed
 * before the table is closed.
 *
 * Lifetimes. A table is mapped by default: a value returned by sstpipe_get
 * points into the mapping and stays valid until sstpipe_close. With direct
 * I/O (sstpipe_options_set_direct_io) each lookup reads its block into a
 * buffer of the calling thread: the value stays valid until that thread's
 * next sstpipe_get or sstpipe_get_many on any direct-I/O table, or until
 * sstpipe_close. A compressed table's value (format version 2, mapped or
 * not) is a copy in a buffer of the calling thread, since the block it
 * came from may leave the table's cache (sstpipe_options_set_block_cache)
 * at any time: it stays valid until that thread's next sstpipe_get or
 * sstpipe_get_many on any compressed or direct-I/O table (a batch's
 * values together), even past sstpipe_close. Keys and
 * values from sstpipe_iter_next stay valid until the next call on that
 * iterator or its sstpipe_iter_free. Copy what must live longer.
 *
 * Names. Every object is made by one call and released by its pair: a
 * table, which holds open files, by sstpipe_open (or sstpipe_open_with)
 * and sstpipe_close; the others, memory alone, by the type's _new and
 * _free calls (sstpipe_iter_new and sstpipe_iter_free,
 * sstpipe_options_new and sstpipe_options_free). Every release takes NULL
 * and does nothing. Calls on an object are named after it:
 * sstpipe_iter_next, sstpipe_options_set_direct_io. The two names from
 * before this rule, sstpipe_options_init and sstpipe_options_destroy, are
 * kept for compatibility and do what the new ones do.
 *
 * Published tables are never written in place, only replaced by rename, so
 * an open table keeps reading the file it opened.
 *
 * Table sets. A sharded build writes a table set: a directory of shard
 * tables, each holding one key range, and a manifest, tableset.json
 * (TABLESET.md, installed beside FORMAT.md). sstpipe_open of the directory
 * or of its tableset.json gives one handle that reads as the one table of
 * all its records: every call below works on it, lookups go to the shard
 * whose range holds the key, iterators walk the shards in key order, and
 * sstpipe_info_get sums the shards. The sstpipe_shard_* calls (since 1.1) list
 * the shards; a plain table is a set of one shard with no bounds.
 */
#ifndef SSTPIPE_SSTPIPE_H
#define SSTPIPE_SSTPIPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The library is built with hidden visibility; what this header declares
 * is its interface (also listed in its linker version script). */
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

/* The library's version, as "MAJOR.MINOR.PATCH". Thread-safe; static string. */
const char *sstpipe_version(void);

/* Frees a message set through an errmsg argument (NULL is ignored). */
void sstpipe_free(void *p);

/* Options for sstpipe_open_with. Not thread-safe; may be freed right
 * after the open that used them. */
typedef struct sstpipe_options sstpipe_options;

/* Since 1.3. NULL only when out of memory. */
sstpipe_options *sstpipe_options_new(void);
/* NULL is ignored. */
void sstpipe_options_free(sstpipe_options *opt);
/* Kept for compatibility: the same as sstpipe_options_new and
 * sstpipe_options_free (the names before 1.3). */
sstpipe_options *sstpipe_options_init(void);
void sstpipe_options_destroy(sstpipe_options *opt);
/* Direct I/O (O_DIRECT): every lookup is exactly one aligned read of one
 * block, bypassing the page cache ("cold" reads), checked whole each time.
 * Default false: the data region is mapped and lookups read it in place,
 * each block checked whole on its first lookup in the process. A file
 * system or device that refuses O_DIRECT makes sstpipe_open_with fail with
 * a message saying so (no silent fallback: open it without the option).
 * Iterators read with ordinary buffered reads in either mode. */
void sstpipe_options_set_direct_io(sstpipe_options *opt, bool direct_io);
/* Since 1.6: the bytes of decompressed records a compressed table (format
 * version 2) keeps for its lookups, shared by the threads that use it, a
 * group of records at a time (a lookup decompresses the one group of its
 * block that may hold its key), the least recently used group giving way
 * to a new one; 0 keeps none (each lookup then decompresses its group).
 * Default 64 MiB; of a table set, each compressed shard's. Scans never
 * fill it. A version 1 table, read in place, has no use for it. */
void sstpipe_options_set_block_cache(sstpipe_options *opt, size_t bytes);

typedef struct sstpipe_table sstpipe_table;

/* Opens path, reading and checking its footer and index. NULL on failure,
 * with *errmsg set. Thread-safe.
 *
 * path may be a table set (a directory, or a file named tableset.json):
 * the manifest is checked (TABLESET.md's rules), then every shard is
 * opened as a table and checked against it: its footer's records and file
 * size against the manifest's, its options against the set's (all shards
 * share one block size, cluster size and value bound), and its first and
 * last key against its range (the first from the index, the last from its
 * last block, read and checked whole). Any failure is NULL with a message
 * naming the manifest, the shard file and what is wrong. The shards stay
 * open (one descriptor and mapping each) until sstpipe_close. */
sstpipe_table *sstpipe_open(const char *path, char **errmsg);
sstpipe_table *sstpipe_open_with(const char *path, const sstpipe_options *opt, char **errmsg);

/* Closes t and frees everything of it; NULL is ignored. */
void sstpipe_close(sstpipe_table *t);

/* What the table's footer says (of a set: the sums over its shards, and
 * their common options). Filled by sstpipe_info_get; plain data. Every
 * field is described here and in sstpipe(3). */
typedef struct sstpipe_info {
    uint64_t records;            /* key/value records, each key once */
    uint64_t data_blocks;        /* data blocks, each block_size bytes */
    uint64_t key_bytes;          /* sum of key lengths */
    uint64_t value_bytes;        /* sum of value lengths */
    uint64_t file_size;          /* bytes of the file (of a set: of all its shards) */
    uint32_t block_size;         /* bytes of a data block (a lookup reads one) */
    uint32_t cluster_size;       /* the alignment of regions (version 1; 2 pads none) */
    uint32_t max_value_bytes;    /* every value is at most this long */
    uint32_t format_version;     /* the file format's version (sstpipe-format(5)) */
    uint32_t restart_interval;   /* records between restart points in a block */
    uint64_t index_bytes;        /* the index's entries, without padding */
    uint64_t index_region_bytes; /* the index region (version 1: padded to cluster_size) */
} sstpipe_info;

/* Thread-safe; never fails on an open table. */
void sstpipe_info_get(const sstpipe_table *t, sstpipe_info *info);

/* Since 1.5: how the table's data blocks are stored. Format version 1
 * stores records as they are; version 2 compresses them (zstd, with a
 * dictionary trained per table), each block still block_size bytes. Of a
 * set: the sums over its shards, "zstd" when any is compressed. */
typedef struct sstpipe_compression {
    const char *method;        /* "none" (version 1) or "zstd" (version 2); static */
    uint64_t plain_bytes;      /* the blocks' records uncompressed (version 1: the blocks' bytes) */
    uint64_t dictionary_bytes; /* the compression dictionary's bytes, 0 for none */
    uint64_t filter_bytes;     /* the absent-key filter's bytes, 0 for none */
} sstpipe_compression;

/* Thread-safe; never fails on an open table. */
void sstpipe_compression_get(const sstpipe_table *t, sstpipe_compression *c);
/* The path t was opened with; valid until sstpipe_close. */
const char *sstpipe_path(const sstpipe_table *t);

/* Since 1.1: the shards of a table set. Thread-safe, no I/O, never fail on
 * an open table. */
/* Whether t was opened as a table set (even a set of one shard). */
bool sstpipe_is_set(const sstpipe_table *t);
/* The number of shards: 1 for a plain table. */
size_t sstpipe_shard_count(const sstpipe_table *t);
/* Shard i (i < sstpipe_shard_count) as a table of its own, to read alone
 * (sstpipe_path, sstpipe_info_get, lookups, iterators: e.g. one thread a
 * shard); for a plain table, shard 0 is t itself. Owned by t: valid until
 * sstpipe_close(t), never closed by the caller. NULL when i is out of
 * range. */
sstpipe_table *sstpipe_shard(const sstpipe_table *t, size_t i);
/* Shard i's key range [lo, hi): *lo (*lo_len) is NULL (0) when unbounded
 * below, *hi likewise above; a plain table's one shard is unbounded both
 * ways. The bounds are valid until sstpipe_close. 0, or -1 when i is out
 * of range (nothing set). */
int sstpipe_shard_range(const sstpipe_table *t, size_t i, const void **lo, size_t *lo_len,
                        const void **hi, size_t *hi_len);

/* The first key of data block i (i < sstpipe_info's data_blocks), from the
 * index held in memory: no I/O. In a set, blocks are numbered across the
 * shards in order (block i of shard 1 is block data_blocks(shard 0) + i). NULL (and *klen
 * untouched) when i is out of range. Blocks are all block_size bytes, so these keys cut a table
 * into ranges of about equal size: iterators from consecutive split keys scan it in parallel, and a
 * block drawn at random samples it (profile draws its keys this way). Valid until sstpipe_close;
 * thread-safe. */
const void *sstpipe_block_first_key(const sstpipe_table *t, uint64_t i, size_t *klen);

/* Point lookup. 1 found (*value, *vlen set; see Lifetimes), 0 absent (an
 * empty key, or one longer than 320 bytes, is always absent), -1 error
 * (corrupt block, I/O) with *errmsg set. Thread-safe. */
int sstpipe_get(sstpipe_table *t, const void *key, size_t klen, const void **value, size_t *vlen,
                char **errmsg);

/* Since 1.2: batched point lookups, for a disk that gives its throughput
 * only to reads in flight together (a networked disk's IOPS). Looks up the
 * n keys keys[i] (klens[i] bytes each; duplicates and keys of any length
 * allowed) and sets values[i] and vlens[i] for each as sstpipe_get would,
 * or NULL and 0 when it is absent (a value found is never NULL, even an
 * empty one). Each distinct block the keys need is read once, all of them
 * together: with direct I/O, one read each submitted at once through
 * io_uring (one after another where the kernel refuses io_uring); mapped,
 * the kernel is asked for all of them at once (POSIX_FADV_WILLNEED)
 * before the searches read them in place. n 0 does nothing. 0 done, -1
 * error (corrupt block, I/O, out of memory) with *errmsg set, the outputs
 * then undefined. Thread-safe.
 *
 * Lifetimes as sstpipe_get's: with direct I/O the calling thread's buffer
 * holds every distinct block of the batch at once (it keeps the size of the
 * largest batch until the thread exits), so the caller bounds n. */
int sstpipe_get_many(sstpipe_table *t, size_t n, const void *const *keys, const size_t *klens,
                     const void **values, size_t *vlens, char **errmsg);

/*
 * Titles (1.3). A table built from a dump has a title index beside it,
 * FILE.titles (sstpipe_open opens it when it is there and was built for
 * this table, which it names by size and footer checksum; a table without
 * one, or beside one built for another table, answers sstpipe_lookup
 * exactly as sstpipe_get, and sstpipe_suggest with an error; a table set
 * has one beside each shard, and without one beside every shard answers
 * the same way). With it, a
 * title is looked up the way people type it: the exact key first, then the
 * title as MediaWiki would store it by the dump's rules (an underscore is
 * a space, surrounding spaces go, the first letter is upper-cased where
 * the title's namespace is first-letter, a namespace prefix is recognised
 * in any case). A redirect is followed to its target's record
 * (SSTPIPE_REDIRECT_HOPS at most, a loop stopped, a "#section" dropped).
 * The calls are thread-safe; the strings of a result
 * are the caller's.
 */
#define SSTPIPE_TITLE_MAX 320
#define SSTPIPE_REDIRECT_HOPS 5
/* sstpipe_lookup's flags: the record of the title itself, a redirect not
 * followed. */
#define SSTPIPE_LOOKUP_RAW 1u

typedef struct sstpipe_lookup_result {
    const void *value; /* the record found (see Lifetimes) */
    size_t vlen;
    char title[SSTPIPE_TITLE_MAX + 1]; /* its key, NUL-terminated */
    size_t title_len;
    /* The title that redirected there, as stored; empty when the title
     * looked up was no redirect. */
    char redirect_from[SSTPIPE_TITLE_MAX + 1];
    size_t redirect_from_len;
    /* When 0 is returned for a redirect: the target it names that is not
     * in the table; else empty. */
    char missing_target[SSTPIPE_TITLE_MAX + 1];
    size_t missing_target_len;
} sstpipe_lookup_result;

/* A title's record, redirects followed unless flags has
 * SSTPIPE_LOOKUP_RAW. 1 found (*res filled), 0 absent (res->redirect_from
 * and missing_target say when a redirect's target is what is absent), -1
 * error with *errmsg set. */
int sstpipe_lookup(sstpipe_table *t, const void *title, size_t len, unsigned flags,
                   sstpipe_lookup_result *res, char **errmsg);

/* Since 1.4: sstpipe_lookup of n titles (lens[i] bytes each), into
 * res[0..n): the exact keys looked up together (as sstpipe_get_many), then
 * each one absent or a redirect (unless flags has SSTPIPE_LOOKUP_RAW) as
 * sstpipe_lookup does; a title not found has res[i].value NULL. The values
 * stay valid together (see Lifetimes). 0 done, -1 error with *errmsg set. */
int sstpipe_lookup_many(sstpipe_table *t, size_t n, const void *const *titles, const size_t *lens,
                        unsigned flags, sstpipe_lookup_result *res, char **errmsg);

/* The most suggestions a call returns. */
#define SSTPIPE_SUGGEST_MAX 100

typedef struct sstpipe_suggestion {
    char title[SSTPIPE_TITLE_MAX + 1]; /* NUL-terminated */
    size_t title_len;
    bool redirect;
} sstpipe_suggestion;

/* Up to limit (1..SSTPIPE_SUGGEST_MAX) titles starting with text, case and
 * accents ignored (Unicode casefolding and marks stripped), into out: the
 * title text normalises to first, then articles before redirects, then
 * shorter titles; among all the matches (by the index's lists of the best
 * titles of a prefix matching very many; an index written before them,
 * or a list of long titles shorter than limit, ranks such a prefix's
 * first matches in the index's order). Their count, or -1
 * with *errmsg set: an error, no title index, text empty or not valid
 * UTF-8, or limit out of range. */
int sstpipe_suggest(sstpipe_table *t, const void *text, size_t len, size_t limit,
                    sstpipe_suggestion *out, char **errmsg);

/* Since 1.6: whether t has a title index, so that sstpipe_suggest can
 * answer (a table set: one beside every shard); asked without trying a
 * suggestion. Thread-safe; never fails on an open table. */
bool sstpipe_has_titles(const sstpipe_table *t);

typedef struct sstpipe_iter sstpipe_iter;

/* An iterator in key order over the keys >= from (NULL or flen 0: from the
 * first key) that start with prefix (NULL or plen 0: every key); from and
 * prefix are copied. Nothing is read until the first sstpipe_iter_next.
 * NULL only when out of memory. Thread-safe on t; the iterator itself is
 * not. A range [lo, hi) is from = lo, stopping at the first key >= hi. */
sstpipe_iter *sstpipe_iter_new(sstpipe_table *t, const void *from, size_t flen, const void *prefix,
                               size_t plen);

/* 1 a record (*key, *value set; see Lifetimes), 0 the end, -1 error with
 * *errmsg set (the iterator then stays at the error). */
int sstpipe_iter_next(sstpipe_iter *it, const void **key, size_t *klen, const void **value,
                      size_t *vlen, char **errmsg);

/* NULL is ignored. */
void sstpipe_iter_free(sstpipe_iter *it);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif

#endif
