/*
 * table_writer.c: streams sorted records into data blocks, then writes the
 * index and the footer; see table_writer.h and FORMAT.md.
 *
 * Blocks are filled greedily and copied into a 4 MiB batch that is written
 * with one write() when full, so the disk sees large sequential writes and
 * each block stays at a block_size-aligned file offset. The index grows in
 * memory in its on-disk encoding (a few bytes per block), and nothing is
 * allocated per record. With index_memory set (merge: its memory must not
 * grow with the table), the index buffer is written to a scratch file
 * beside the output whenever it fills and read back after the data region
 * at the end, through the same buffer, into the writes of the index
 * region: the same bytes as when it stays in memory.
 *
 * Blocks copied from another table (table_writer_copy_block, for merge)
 * are written from the bytes the caller checked, where they lie (its read
 * buffer), not copied into the batch first, which was a second pass over
 * them: the batch holds the blocks built here, and a write is one writev
 * of the pieces pending in order, batch slices and copied runs, however
 * copied and rebuilt runs alternate. Copied runs are written once 256 KiB
 * are pending, while they are still in the caches (COPY_WRITE_BYTES); the
 * caller tells the writer when the memory they are in is about to go
 * (table_writer_flush_copies). Where the file system shares extents
 * (FICLONERANGE: XFS, btrfs, ...) and its blocks divide block_size, a run
 * of blocks consecutive in their table is instead collected into one
 * pending range and shared with one ioctl, before anything after it is
 * written; the first clone the file system refuses as unsupported turns
 * sharing off for the rest of the table, its range read from the source
 * into the batch, silently. copy_file_range is not used: on a file system
 * without reflinks it is a splice through the page cache, a second pass
 * over bytes the merge has just read and checked, which cost more CPU
 * than copying them into the batch, and made the merge slower than the
 * writev of the checked bytes that replaced that copy.
 *
 * With table_options.background (a build on several threads) a full batch
 * is handed to a thread of the writer's own, which writes it while the
 * caller builds blocks into a second batch: the write, the kernel's copy
 * into the page cache, is a large share of the CPU of a build's merge and
 * write phase on short pages. One batch is written at a time and every
 * other write waits for it first, so the file gets the same bytes in the
 * same order, a write for each batch as without the thread.
 * A compressed table (below) with table_options.background has a second
 * thread of the writer's own, which builds the blocks: compression is
 * most of a version 2 write's CPU, and the merge feeding the writer goes
 * on while it runs. The caller copies the records into a batch and hands
 * it over when full; the thread packs the batches one at a time, in
 * order, and everything that touches the blocks or the writes on the
 * caller's thread (copied blocks, sealing) first waits for it. Where a
 * block ends depends on the records alone, so the file is the same bytes
 * as when the caller packs them, whatever the threads' timing.
 *
 * With table_options.compress the table is version 2 (FORMAT.md): blocks
 * are built by block_packed.c, and the dictionary they are compressed with
 * is trained first, on the values of the records held in memory until
 * about a hundred times dictionary_size has come (zstd's advice for
 * ZDICT), or the table ends, its size following theirs and kept only
 * where it pays for its own bytes (start_packing); those records are then
 * built into blocks as any others.
 * The meta region (its header, the dictionary and the filter for absent
 * keys) follows the index. The filter's size follows from the count of
 * keys, known at the end: each key's hash is kept until then, and the
 * filter is built from them when the table is sealed. The hashes, 8 bytes
 * a record, would grow with the table outside any budget: they are held
 * in a buffer of HASH_BUFFER and go on to an anonymous scratch file in
 * the output's directory when it is full, read back through it at the
 * end, so the writer's memory is the filter's own bytes (10 bits a key),
 * and those only while the meta region is written.
 * Merge gives the base's dictionary instead of one trained
 * (table_writer_use_dictionary), so that it can copy the base's blocks in
 * as they are; their keys, which merge walked in checking them, are hashed
 * for the filter as the records added are.
 */
#include "stages/sst/table_writer.h"

#include "stages/common/clock.h"
#include "stages/common/fileio.h"
#include "stages/common/key.h"
#include "stages/common/record.h"
#include "stages/common/size.h"
#include "stages/sst/block.h"
#include "stages/sst/block_packed.h"
#include "stages/sst/coding.h"
#include "stages/sst/filter.h"
#include "stages/sst/format.h"
#include "stages/sst/handoff.h"
#include "stages/sst/table_check.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include <xxhash.h>
#include <zdict.h>
#include <zstd.h>

#define BATCH_BYTES (4u << 20) /* a multiple of every block size */
/* Writeback is started every this many bytes, so the final fsync finds
 * little left to flush and the disk works while the merge goes on. */
#define WRITEBACK_BYTES (8u << 20)
/* Pieces a write gathers (batch slices and runs of copied blocks): room
 * for many rebuilt and copied runs alternating. */
#define MAX_PIECES 256
/* Pending pieces are written once this many bytes of them are, when a
 * block is copied: the copied blocks were just read by the caller's check
 * and are still in the CPU's caches (a core's L2 holds about 1 MiB), so
 * the kernel's copy into the page cache reads them from there. Written 4
 * MiB at a time, they were read from memory again: that merge spent more
 * CPU than the batch's memcpy it saved, where 256 KiB spent less. */
#define COPY_WRITE_BYTES (256u << 10)
/* The least index buffer with index_memory set: many longest entries. */
#define INDEX_MIN_MEMORY (4u << 10)
/* The records a dictionary is trained on: held in memory until their
 * bytes are this many times dictionary_size (zstd's advice for ZDICT),
 * and at most SAMPLE_MAX_BYTES, or the table ends. */
#define SAMPLE_FACTOR 100u
/* The dictionary trained on them: this many times smaller than their
 * values, up to dictionary_size. zstd advises a hundredth; on the real
 * corpora of issue 31 (tests/bench/format2_bench.py), whose tables are
 * their own sample, a larger share made the frames and the dictionary
 * together smaller. */
#define DICT_SHARE 50u
#define SAMPLE_MAX_BYTES (16u << 20)
/* Records handed to the packing thread at a time (or one record, when
 * longer): many blocks' worth, so that the hand-offs cost little. */
#define PACK_BATCH_BYTES (512u << 10)
/* The filter's key hashes held in memory; the rest wait on a scratch file
 * until the filter is built. */
#define HASH_BUFFER 8192u

/* The background thread (table_options.background): at most one batch
 * is being written while the caller fills the other. */
typedef struct bg_writer {
    sst_handoff *thread;
    uint8_t *spare; /* the batch the caller fills after the one written now */
} bg_writer;

/* The packing thread (table_options.background with compress): records
 * are copied into fill (each: u32 key length, u32 value length, key,
 * value) and a full one is handed to the thread, which builds them into
 * blocks and writes those (packed_add), while the caller fills the other;
 * at most one batch is packed at a time. */
typedef struct pack_thread {
    sst_handoff *thread;
    uint8_t *fill, *spare; /* the caller's batch, fill_len bytes; the other */
    size_t fill_len, cap;
} pack_thread;

struct table_writer {
    table_options opts;
    char *path;
    sp_outfile out;
    bool sealed; /* index and footer written (table_writer_seal) */
    sp_table_identity identity;
    bool finished;
    block_builder *block;
    uint8_t *batch;
    size_t batch_used;
    /* What the next write writes, in order: slices of the batch and runs
     * of copied blocks in the caller's memory (copied_bytes of them). */
    struct iovec pieces[MAX_PIECES];
    int n_pieces;
    size_t pending, copied_bytes;
    /* table_writer_flush_copies failed: its error, returned by the next
     * call (the caller's hook cannot fail). */
    bool deferred_failed;
    sp_error deferred;
    uint64_t written;   /* bytes written to the file so far */
    uint64_t synced_to; /* writeback started for bytes before this */
    XXH3_state_t *hash;
    bool hashing; /* bytes written are also fed to hash */
    uint8_t *index;
    size_t index_len, index_cap;
    size_t index_limit; /* 0: none; else index_len stays below it */
    int spill_fd;       /* the index before index[0], once it spilled */
    uint64_t spilled;   /* bytes of it there */
    char *spill_name;   /* that file, in errors */
    uint32_t last_len;
    uint8_t last_key[SP_MAX_KEY_BYTES];
    table_stats stats;
    bool no_clone; /* extents are not shared: copied blocks go through the batch */
    int copy_fd;   /* the pending clone: copy_len bytes of copy_fd at copy_off */
    uint64_t copy_off, copy_len;
    bg_writer *bg; /* started at the first full batch, with opts.background */
    /* opts.background with compress: started at the first record packed;
     * no_pack_thread once it could not be. */
    pack_thread *pk;
    bool no_pack_thread;
    /* opts.compress: the block builder, made once the dictionary is
     * trained; until then the records held (each: u32 key length, u32
     * value length, key, value), held_sample bytes of the samples the
     * dictionary is trained on (values, or keys and values); held
     * until held_len reaches the sample's bytes, keys and headers
     * counted, so that small values under long keys stay bounded too. */
    block_packer *packer;
    uint8_t *dict;
    size_t dict_len;
    bool dict_given; /* table_writer_use_dictionary: blocks may be copied in */
    uint8_t *held;
    size_t held_len, held_cap;
    uint64_t held_records, held_sample;
    /* opts.compress: every key's sst_filter_hash, for the filter: the
     * last n_hashes here, those before on hash_fd (hashes_spilled). */
    uint64_t *key_hashes;
    size_t n_hashes;
    int hash_fd;
    uint64_t hashes_spilled;
};

void table_options_init(table_options *opts) {
    opts->block_size = SST_DEFAULT_BLOCK_SIZE;
    opts->cluster_size = SST_DEFAULT_CLUSTER_SIZE;
    opts->max_value_bytes = SP_DEFAULT_MAX_VALUE_BYTES;
    opts->index_memory = 0;
    opts->background = false;
    opts->compress = false;
    opts->compression_level = 3;
    opts->dictionary_size = SST_DEFAULT_DICTIONARY_SIZE;
    opts->dictionary_from_keys = false;
}

static int check_options(const table_options *o, sp_error *err) {
    char lo[32], hi[32];
    if (!sst_pow2_in(o->block_size, SST_MIN_BLOCK_SIZE, SST_MAX_BLOCK_SIZE))
        return sp_errorf(err, "block size %u must be a power of two from %s to %s", o->block_size,
                         sp_format_size(SST_MIN_BLOCK_SIZE, lo, sizeof lo),
                         sp_format_size(SST_MAX_BLOCK_SIZE, hi, sizeof hi));
    if (!sst_pow2_in(o->cluster_size, SST_MIN_CLUSTER_SIZE, SST_MAX_CLUSTER_SIZE))
        return sp_errorf(err, "cluster size %u must be a power of two from %s to %s",
                         o->cluster_size, sp_format_size(SST_MIN_CLUSTER_SIZE, lo, sizeof lo),
                         sp_format_size(SST_MAX_CLUSTER_SIZE, hi, sizeof hi));
    if (o->compress)
        return sst_packed_check_fit(o->block_size, o->max_value_bytes, err);
    return sst_check_fit(o->block_size, o->max_value_bytes, err);
}

table_writer *table_writer_init(const char *path, const table_options *opts, sp_error *err) {
    if (check_options(opts, err))
        return NULL;
    table_writer *w = calloc(1, sizeof *w);
    if (!w) {
        sp_errorf(err, "%s: out of memory", path);
        return NULL;
    }
    w->opts = *opts;
    w->out.fd = -1;
    w->copy_fd = -1;
    w->spill_fd = -1;
    w->hash_fd = -1;
    if (opts->index_memory)
        w->index_limit =
            opts->index_memory < INDEX_MIN_MEMORY ? INDEX_MIN_MEMORY : opts->index_memory;
    w->path = strdup(path);
    w->block = block_builder_init(opts->block_size);
    w->hash = XXH3_createState();
    if (posix_memalign((void **)&w->batch, 4096, BATCH_BYTES) != 0)
        w->batch = NULL;
    if (!w->path || !w->block || !w->hash || !w->batch) {
        sp_errorf(err, "%s: out of memory", path);
        w->finished = true;
        table_writer_destroy(w);
        return NULL;
    }
    if (sp_outfile_open(&w->out, path, err)) {
        w->finished = true;
        table_writer_destroy(w);
        return NULL;
    }
    /* A clone's offsets and length must be multiples of the file system's
     * block: blocks smaller than that are never shared. */
    struct stat st;
    w->no_clone = fstat(w->out.fd, &st) || st.st_blksize <= 0 ||
                  opts->block_size % (uint32_t)st.st_blksize != 0;
    return w;
}

/* Starts writeback of what was written since the last start. */
static void written(table_writer *w, uint64_t n) {
    w->written += n;
    if (w->written - w->synced_to >= WRITEBACK_BYTES) {
        /* Only a hint: where the file system cannot, fsync does it all. */
        sync_file_range(w->out.fd, (off64_t)w->synced_to, (off64_t)(w->written - w->synced_to),
                        SYNC_FILE_RANGE_WRITE);
        w->synced_to = w->written;
    }
}

/* The background thread's job: writes a batch. written() is the
 * caller's too, which waits while a batch is out. */
static int bg_write(void *ctx, const uint8_t *buf, size_t n, sp_error *err) {
    table_writer *w = ctx;
    if (sp_write_all(w->out.fd, buf, n, w->path, err))
        return -1;
    written(w, n);
    return 0;
}

/* Starts the background thread with its second batch; false when that
 * cannot be had, and the writes stay on the caller's thread. */
static bool bg_start(table_writer *w) {
    bg_writer *bg = calloc(1, sizeof *bg);
    if (!bg)
        return false;
    if (posix_memalign((void **)&bg->spare, 4096, BATCH_BYTES) != 0 ||
        !(bg->thread = sst_handoff_start(bg_write, w))) {
        free(bg->spare);
        free(bg);
        return false;
    }
    w->bg = bg;
    return true;
}

/* Waits until no batch is being written: 0, or -1 with the error of a
 * write that failed (then, and at every wait after). */
static int bg_wait(table_writer *w, sp_error *err) {
    return w->bg ? sst_handoff_wait(w->bg->thread, err) : 0;
}

/* Lets the background thread finish its batch and leave. */
static void bg_stop(table_writer *w) {
    bg_writer *bg = w->bg;
    if (!bg)
        return;
    w->stats.background_cpu_seconds += sst_handoff_stop(bg->thread);
    w->bg = NULL;
    free(bg->spare);
    free(bg);
}

/* Writes the pending pieces; the batch is empty again. */
static int flush(table_writer *w, sp_error *err) {
    if (bg_wait(w, err))
        return -1;
    if (w->n_pieces && sp_writev_all(w->out.fd, w->pieces, w->n_pieces, w->path, err))
        return -1;
    written(w, w->pending);
    w->n_pieces = 0;
    w->pending = w->copied_bytes = w->batch_used = 0;
    return 0;
}

/* The batch is full (or its pieces are): with opts.background and nothing
 * copied pending, handed to the background thread (started the first
 * time) while the caller fills the other batch; else written here. */
static int flush_full(table_writer *w, sp_error *err) {
    /* Without copied blocks the pending bytes are one piece, the batch's. */
    if (!w->opts.background || w->copied_bytes || w->n_pieces != 1)
        return flush(w, err);
    if (!w->bg && !bg_start(w)) {
        w->opts.background = false;
        return flush(w, err);
    }
    bg_writer *bg = w->bg;
    uint8_t *full = w->batch;
    if (sst_handoff_give(bg->thread, full, w->pending, err))
        return -1;
    w->batch = bg->spare;
    bg->spare = full;
    w->stats.background_batches++;
    w->n_pieces = 0;
    w->pending = w->batch_used = 0;
    return 0;
}

/* Appends n bytes at p to the pending pieces (the caller made room). */
static void add_piece(table_writer *w, const uint8_t *p, size_t n) {
    struct iovec *last = w->n_pieces ? &w->pieces[w->n_pieces - 1] : NULL;
    if (last && (const uint8_t *)last->iov_base + last->iov_len == p)
        last->iov_len += n;
    else
        w->pieces[w->n_pieces++] = (struct iovec){.iov_base = (void *)p, .iov_len = n};
    w->pending += n;
}

/* The pending range, read from its table into the (empty) batch: where
 * the file system refused to share it. */
static int copy_through_batch(table_writer *w, sp_error *err) {
    while (w->copy_len) {
        size_t k = w->copy_len < BATCH_BYTES ? (size_t)w->copy_len : BATCH_BYTES;
        if (sp_pread_exact(w->copy_fd, w->batch, k, w->copy_off, w->path, err) ||
            sp_write_all(w->out.fd, w->batch, k, w->path, err))
            return -1;
        written(w, k);
        w->copy_off += k;
        w->copy_len -= k;
    }
    return 0;
}

/* Errors of FICLONERANGE that say the file system (or this pair of files)
 * cannot share extents, rather than that the disk failed. */
static bool clone_unsupported(int e) {
    return e == EOPNOTSUPP || e == ENOTTY || e == ENOSYS || e == EXDEV || e == EINVAL ||
           e == EBADF || e == EPERM || e == ETXTBSY;
}

/* Shares the pending range at the end of the file (after the batch). */
static int run_clone(table_writer *w, sp_error *err) {
    if (flush(w, err))
        return -1;
    struct file_clone_range r = {.src_fd = w->copy_fd,
                                 .src_offset = w->copy_off,
                                 .src_length = w->copy_len,
                                 .dest_offset = w->written};
    if (ioctl(w->out.fd, FICLONERANGE, &r) == 0) {
        /* The clone does not move the file offset the writes go on from. */
        if (lseek(w->out.fd, (off_t)(w->written + w->copy_len), SEEK_SET) < 0)
            return sp_errorf_errno(err, "%s: seek after sharing blocks failed", w->path);
        written(w, w->copy_len);
        w->stats.cloned_blocks += w->copy_len / w->opts.block_size;
    } else if (clone_unsupported(errno)) {
        w->no_clone = true;
        if (copy_through_batch(w, err))
            return -1;
    } else {
        return sp_errorf(err, "%s: sharing %llu bytes of blocks at byte %llu (FICLONERANGE): %s",
                         w->path, (unsigned long long)w->copy_len, (unsigned long long)w->written,
                         strerror(errno));
    }
    w->copy_len = 0;
    w->copy_fd = -1;
    return 0;
}

/* Appends n bytes of src (or zeros when src is NULL) to the file. */
static int emit(table_writer *w, const uint8_t *src, uint64_t n, sp_error *err) {
    if (w->copy_len && run_clone(w, err))
        return -1;
    while (n) {
        if ((w->batch_used == BATCH_BYTES || w->n_pieces == MAX_PIECES) && flush_full(w, err))
            return -1;
        size_t k = BATCH_BYTES - w->batch_used;
        if (k > n)
            k = (size_t)n;
        uint8_t *dst = w->batch + w->batch_used;
        if (src) {
            memcpy(dst, src, k);
            src += k;
        } else {
            memset(dst, 0, k);
        }
        if (w->hashing)
            XXH3_64bits_update(w->hash, dst, k);
        add_piece(w, dst, k);
        w->batch_used += k;
        n -= k;
    }
    return 0;
}

/* Moves the index buffer's bytes to the end of the scratch file (created
 * on the first call). */
static int spill_index(table_writer *w, sp_error *err) {
    if (w->spill_fd < 0) {
        size_t n = strlen(w->path) + 32;
        if (!w->spill_name && !(w->spill_name = malloc(n)))
            return sp_errorf(err, "%s: out of memory", w->path);
        snprintf(w->spill_name, n, "%s (its index's scratch file)", w->path);
        if ((w->spill_fd = sp_outfile_scratch_open(&w->out, err)) < 0)
            return -1;
    }
    if (sp_write_all(w->spill_fd, w->index, w->index_len, w->spill_name, err))
        return -1;
    w->spilled += w->index_len;
    w->index_len = 0;
    return 0;
}

static int index_add(table_writer *w, const uint8_t *key, uint32_t klen, sp_error *err) {
    if (w->index_limit && w->index_len + SST_INDEX_ENTRY_MAX_BYTES > w->index_limit &&
        spill_index(w, err))
        return -1;
    size_t need = w->index_len + SST_VARINT32_MAX + klen + SST_VARINT64_MAX;
    if (need > w->index_cap) {
        size_t cap = w->index_cap ? w->index_cap * 2 : w->index_limit ? w->index_limit : 64 * 1024;
        while (cap < need)
            cap *= 2;
        uint8_t *p = realloc(w->index, cap);
        if (!p)
            return sp_errorf(err, "%s: out of memory for the index (%zu bytes)", w->path, cap);
        w->index = p;
        w->index_cap = cap;
    }
    uint8_t *p = w->index + w->index_len;
    p += sst_put_varint(p, klen);
    memcpy(p, key, klen);
    p += klen;
    p += sst_put_varint(p, w->stats.data_blocks * w->opts.block_size);
    w->index_len = (size_t)(p - w->index);
    return 0;
}

static int end_block(table_writer *w, sp_error *err) {
    if (w->packer) {
        /* The block's first key is known once it is finished: records
         * carried from the block before may come before the one that
         * started it. */
        const uint8_t *b = block_packer_finish(w->packer, err);
        uint32_t klen;
        const uint8_t *first = b ? block_packer_first(w->packer, &klen) : NULL;
        if (!b || index_add(w, first, klen, err) || emit(w, b, w->opts.block_size, err))
            return -1;
        w->stats.plain_bytes += block_packer_plain(w->packer);
        block_packer_reset(w->packer);
    } else {
        if (emit(w, block_builder_finish(w->block), w->opts.block_size, err))
            return -1;
        block_builder_reset(w->block);
    }
    w->stats.data_blocks++;
    return 0;
}

/* Whether the block being filled holds no record. */
static bool block_empty(const table_writer *w) {
    return w->packer ? block_packer_empty(w->packer) : block_builder_empty(w->block);
}

/* A key as it may appear in a one-line message: quoted, at most 60 bytes,
 * control bytes and quotes escaped. */
static const char *show_key(const uint8_t *k, size_t n, char *buf, size_t cap) {
    size_t o = 0;
    buf[o++] = '"';
    for (size_t i = 0; i < n && i < 60 && o + 8 < cap; i++) {
        if (k[i] < 0x20 || k[i] == 0x7F || k[i] == '"' || k[i] == '\\')
            o += (size_t)snprintf(buf + o, cap - o, "\\x%02x", k[i]);
        else
            buf[o++] = (char)k[i];
    }
    snprintf(buf + o, cap - o, "%s\"", n > 60 ? "..." : "");
    return buf;
}

/* The error table_writer_flush_copies kept, if it failed. */
static int deferred(const table_writer *w, sp_error *err) {
    if (!w->deferred_failed)
        return 0;
    *err = w->deferred;
    return -1;
}

/* A record into the compressed blocks: the block being filled, or the
 * next ones: an empty block takes it (sst_packed_check_fit), after the
 * records carried into it, which may fill blocks first. */
static int packed_add(table_writer *w, const uint8_t *key, uint32_t klen, const uint8_t *val,
                      size_t vlen, sp_error *err) {
    int rc;
    while ((rc = block_packer_add(w->packer, key, klen, val, vlen, err)) == 0)
        if (end_block(w, err))
            return -1;
    return rc < 0 ? -1 : 0;
}

/* Finishes the blocks still holding records: one, or more when records
 * are carried out of the last. */
static int end_blocks(table_writer *w, sp_error *err) {
    while (!block_empty(w))
        if (end_block(w, err))
            return -1;
    return 0;
}

/* Builds a batch's records (pack_thread's layout) into blocks: the
 * packing thread's job. The caller touches nothing the packing does (the
 * packer, the index, the writes) while a batch is out: it waits for it
 * first (pack_drain). */
static int pack_records(void *ctx, const uint8_t *buf, size_t len, sp_error *err) {
    table_writer *w = ctx;
    for (size_t p = 0; p < len;) {
        uint32_t kl = sst_get_u32(buf + p), vl = sst_get_u32(buf + p + 4);
        const uint8_t *k = buf + p + 8;
        if (packed_add(w, k, kl, k + kl, vl, err))
            return -1;
        p += 8 + (size_t)kl + vl;
    }
    return 0;
}

static void pack_free(pack_thread *pk) {
    free(pk->fill);
    free(pk->spare);
    free(pk);
}

/* Starts the packing thread with its two batches; false when that cannot
 * be had, and the records are packed on the caller's thread. */
static bool pack_start(table_writer *w) {
    pack_thread *pk = calloc(1, sizeof *pk);
    if (!pk)
        return false;
    size_t longest = 8 + (size_t)SP_MAX_KEY_BYTES + w->opts.max_value_bytes;
    pk->cap = longest > PACK_BATCH_BYTES ? longest : PACK_BATCH_BYTES;
    pk->fill = malloc(pk->cap);
    pk->spare = malloc(pk->cap);
    if (!pk->fill || !pk->spare || !(pk->thread = sst_handoff_start(pack_records, w))) {
        pack_free(pk);
        return false;
    }
    w->pk = pk;
    return true;
}

/* Waits until no batch is being packed, then hands the filled one over
 * (if any): 0, or -1 with the error of a batch that failed. */
static int pack_handoff(table_writer *w, sp_error *err) {
    pack_thread *pk = w->pk;
    if (!pk->fill_len)
        return sst_handoff_wait(pk->thread, err);
    if (sst_handoff_give(pk->thread, pk->fill, pk->fill_len, err))
        return -1;
    uint8_t *given = pk->fill;
    pk->fill = pk->spare;
    pk->spare = given;
    pk->fill_len = 0;
    return 0;
}

/* Every record queued is packed (and its blocks written or pending): the
 * caller may touch the packer and the writes again. */
static int pack_drain(table_writer *w, sp_error *err) {
    if (!w->pk)
        return 0;
    return pack_handoff(w, err) ? -1 : sst_handoff_wait(w->pk->thread, err);
}

/* Lets the packing thread finish its batch and leave (records still in
 * the fill batch are not packed: pack_drain first). */
static void pack_stop(table_writer *w) {
    pack_thread *pk = w->pk;
    if (!pk)
        return;
    w->stats.background_cpu_seconds += sst_handoff_stop(pk->thread);
    w->pk = NULL;
    pack_free(pk);
}

/* A record to pack: with opts.background, queued for the packing thread
 * (started by the first); else, or when it cannot be started, packed
 * here. */
static int pack_queue(table_writer *w, const uint8_t *key, uint32_t klen, const uint8_t *val,
                      size_t vlen, sp_error *err) {
    if (!w->pk && !w->no_pack_thread && !pack_start(w))
        w->no_pack_thread = true;
    pack_thread *pk = w->pk;
    if (!pk)
        return packed_add(w, key, klen, val, vlen, err);
    size_t need = 8 + (size_t)klen + vlen;
    if (pk->fill_len + need > pk->cap && pack_handoff(w, err))
        return -1;
    uint8_t *p = pk->fill + pk->fill_len;
    sst_put_u32(p, klen);
    sst_put_u32(p + 4, (uint32_t)vlen);
    memcpy(p + 8, key, klen);
    memcpy(p + 8 + klen, val, vlen);
    pk->fill_len += need;
    return 0;
}

/* The held values compressed as the blocks' groups are, a group's values
 * one frame, at the table's level, with cdict or without (NULL): the bytes
 * of the frames, or 0 when zstd fails (out of memory). */
static size_t sample_frames(const uint8_t *values, const size_t *sizes, size_t n, int level,
                            ZSTD_CCtx *cx, const ZSTD_CDict *cdict, uint8_t *out, size_t cap) {
    size_t total = 0, at = 0;
    for (size_t i = 0; i < n; i += SST_RESTART_INTERVAL) {
        size_t len = 0;
        for (size_t j = i; j < n && j < i + SST_RESTART_INTERVAL; j++)
            len += sizes[j];
        size_t r = cdict ? ZSTD_compress_usingCDict(cx, out, cap, values + at, len, cdict)
                         : ZSTD_compressCCtx(cx, out, cap, values + at, len, level);
        if (ZSTD_isError(r))
            return 0;
        total += r;
        at += len;
    }
    return total;
}

/* Whether the dictionary pays for its own bytes: the held values
 * compressed with it must come out smaller by more than its length than
 * without. A table's first values stand for the rest, so a table as
 * small as its sample, or of values too unlike to share much, stores
 * none. */
static int dictionary_pays(table_writer *w, const uint8_t *values, const size_t *sizes, size_t n,
                           sp_error *err) {
    size_t group = 0;
    for (size_t i = 0; i < n; i += SST_RESTART_INTERVAL) {
        size_t len = 0;
        for (size_t j = i; j < n && j < i + SST_RESTART_INTERVAL; j++)
            len += sizes[j];
        if (len > group)
            group = len;
    }
    size_t cap = ZSTD_compressBound(group);
    uint8_t *out = malloc(cap);
    ZSTD_CCtx *cx = ZSTD_createCCtx();
    ZSTD_CDict *cdict = ZSTD_createCDict(w->dict, w->dict_len, w->opts.compression_level);
    size_t with = 0, without = 0;
    if (out && cx && cdict) {
        with = sample_frames(values, sizes, n, w->opts.compression_level, cx, cdict, out, cap);
        without = sample_frames(values, sizes, n, w->opts.compression_level, cx, NULL, out, cap);
    }
    free(out);
    ZSTD_freeCCtx(cx);
    ZSTD_freeCDict(cdict);
    if (!with || !without)
        return sp_errorf(err, "%s: out of memory weighing the dictionary", w->path);
    return with + w->dict_len < without;
}

/* The dictionary trained on the held samples (values, or keys and values
 * with dictionary_from_keys), DICT_SHARE times smaller than them up to
 * dictionary_size (a larger one stores the sample itself,
 * which is the table's first records and pays only on those), and kept
 * if it pays
 * (dictionary_pays; none either when ZDICT cannot make one of so few);
 * then the block builder, and the held records built into blocks. A
 * function of the records in order alone, so that any writer of the same
 * records (build, merge --canonical, a cluster's reduce) stores the same
 * dictionary. */
static int start_packing(table_writer *w, sp_error *err) {
    size_t n = (size_t)w->held_records;
    uint64_t size = w->held_sample / DICT_SHARE;
    if (size > w->opts.dictionary_size)
        size = w->opts.dictionary_size;
    if (size && n) {
        size_t *sizes = malloc(n * sizeof *sizes);
        uint8_t *values = malloc(w->held_sample + 1);
        w->dict = malloc(size);
        if (!sizes || !values || !w->dict) {
            free(sizes);
            free(values);
            return sp_errorf(err, "%s: out of memory for the dictionary's samples", w->path);
        }
        size_t at = 0, k = 0;
        for (size_t p = 0; p < w->held_len; k++) {
            uint32_t kl = sst_get_u32(w->held + p), vl = sst_get_u32(w->held + p + 4);
            size_t from = w->opts.dictionary_from_keys ? 0 : kl;
            sizes[k] = kl - from + vl;
            memcpy(values + at, w->held + p + 8 + from, sizes[k]);
            at += sizes[k];
            p += 8 + (size_t)kl + vl;
        }
        size_t r = ZDICT_trainFromBuffer(w->dict, (size_t)size, values, sizes, (unsigned)n);
        w->dict_len = ZDICT_isError(r) ? 0 : r;
        int pays = w->dict_len ? dictionary_pays(w, values, sizes, n, err) : 0;
        free(sizes);
        free(values);
        if (pays < 0)
            return -1;
        if (!pays)
            w->dict_len = 0;
    }
    w->stats.dictionary_bytes = w->dict_len;
    if (!(w->packer = block_packer_init(w->opts.block_size, w->dict, w->dict_len,
                                        w->opts.compression_level, err)))
        return -1;
    for (size_t p = 0; p < w->held_len;) {
        uint32_t kl = sst_get_u32(w->held + p), vl = sst_get_u32(w->held + p + 4);
        const uint8_t *k = w->held + p + 8;
        if (packed_add(w, k, kl, k + kl, vl, err))
            return -1;
        p += 8 + (size_t)kl + vl;
    }
    free(w->held);
    w->held = NULL;
    w->held_len = w->held_cap = 0;
    return 0;
}

/* The compressed table's record: held while the dictionary waits for its
 * samples, else built into a block. */
static int compressed_add(table_writer *w, const uint8_t *key, uint32_t klen, const uint8_t *val,
                          size_t vlen, sp_error *err) {
    if (w->packer)
        return w->opts.background ? pack_queue(w, key, klen, val, vlen, err)
                                  : packed_add(w, key, klen, val, vlen, err);
    size_t need = w->held_len + 8 + klen + vlen;
    if (need > w->held_cap) {
        size_t cap = w->held_cap ? w->held_cap : 1u << 20;
        while (cap < need)
            cap *= 2;
        uint8_t *p = realloc(w->held, cap);
        if (!p)
            return sp_errorf(err, "%s: out of memory for the dictionary's samples", w->path);
        w->held = p;
        w->held_cap = cap;
    }
    uint8_t *p = w->held + w->held_len;
    sst_put_u32(p, klen);
    sst_put_u32(p + 4, (uint32_t)vlen);
    memcpy(p + 8, key, klen);
    memcpy(p + 8 + klen, val, vlen);
    w->held_len = need;
    w->held_records++;
    w->held_sample += (w->opts.dictionary_from_keys ? klen : 0) + vlen;
    uint64_t want = (uint64_t)w->opts.dictionary_size * SAMPLE_FACTOR;
    if (want > SAMPLE_MAX_BYTES)
        want = SAMPLE_MAX_BYTES;
    return w->held_len >= want ? start_packing(w, err) : 0;
}

/* Moves the buffered hashes to the end of their scratch file (created on
 * the first call). */
static int spill_hashes(table_writer *w, sp_error *err) {
    if (w->hash_fd < 0 && (w->hash_fd = sp_outfile_scratch_open(&w->out, err)) < 0)
        return -1;
    if (sp_write_all(w->hash_fd, (const uint8_t *)w->key_hashes, w->n_hashes * sizeof(uint64_t),
                     w->path, err))
        return -1;
    w->hashes_spilled += w->n_hashes;
    w->n_hashes = 0;
    return 0;
}

/* The key's hash kept for the filter: in the buffer, which goes on to the
 * scratch file when full. */
static int keep_hash(table_writer *w, const uint8_t *key, uint32_t klen, sp_error *err) {
    if (!w->key_hashes && !(w->key_hashes = malloc(HASH_BUFFER * sizeof *w->key_hashes)))
        return sp_errorf(err, "%s: out of memory for the filter's hashes", w->path);
    if (w->n_hashes == HASH_BUFFER && spill_hashes(w, err))
        return -1;
    w->key_hashes[w->n_hashes++] = sst_filter_hash(key, klen);
    return 0;
}

/* The filter's bits of every key: those spilled, read back through the
 * buffer, then those still in it. */
static int build_filter(table_writer *w, uint8_t *filter, uint64_t len, sp_error *err) {
    if (w->hashes_spilled && spill_hashes(w, err))
        return -1;
    for (uint64_t at = 0; at < w->hashes_spilled;) {
        size_t k =
            w->hashes_spilled - at < HASH_BUFFER ? (size_t)(w->hashes_spilled - at) : HASH_BUFFER;
        if (sp_pread_exact(w->hash_fd, (uint8_t *)w->key_hashes, k * sizeof(uint64_t),
                           at * sizeof(uint64_t), w->path, err))
            return -1;
        sst_filter_build(filter, len, SST_FILTER_HASHES, w->key_hashes, k);
        at += k;
    }
    if (!w->hashes_spilled)
        sst_filter_build(filter, len, SST_FILTER_HASHES, w->key_hashes, w->n_hashes);
    return 0;
}

/* The meta region of a version 2 table: header, dictionary, filter
 * (built here from the keys' hashes), unpadded. */
static int emit_meta(table_writer *w, uint64_t *region_length, sp_error *err) {
    uint64_t filter_len = sst_filter_length(w->stats.records);
    if (filter_len > UINT32_MAX)
        return sp_errorf(err, "%s: %llu keys are more than a filter's 32-bit length can hold",
                         w->path, (unsigned long long)w->stats.records);
    uint8_t *filter = calloc(1, (size_t)filter_len + 1);
    if (!filter)
        return sp_errorf(err, "%s: out of memory for a filter of %llu bytes", w->path,
                         (unsigned long long)filter_len);
    if (filter_len && build_filter(w, filter, filter_len, err)) {
        free(filter);
        return -1;
    }
    w->stats.filter_bytes = filter_len;
    sst_meta m = {.compression = SST_COMPRESSION_ZSTD,
                  .dictionary_length = (uint32_t)w->dict_len,
                  .filter_length = (uint32_t)filter_len,
                  .filter_hashes = filter_len ? SST_FILTER_HASHES : 0,
                  .plain_bytes = w->stats.plain_bytes};
    uint8_t head[SST_META_HEADER_BYTES];
    sst_meta_encode(&m, head);
    *region_length = SST_META_HEADER_BYTES + w->dict_len + filter_len;
    int rc = emit(w, head, sizeof head, err) || emit(w, w->dict, w->dict_len, err) ||
             emit(w, filter, filter_len, err);
    free(filter);
    return rc ? -1 : 0;
}

int table_writer_add(table_writer *w, const sp_record *rec, sp_error *err) {
    if (deferred(w, err))
        return -1;
    uint64_t n = w->stats.records + 1;
    char a[320], b[320];
    if (rec->key_len == 0 || rec->key_len > SP_MAX_KEY_BYTES)
        return sp_errorf(err, "%s: record %llu: key of %u bytes (keys are 1 to %u bytes)", w->path,
                         (unsigned long long)n, rec->key_len, SP_MAX_KEY_BYTES);
    if (rec->value_fd >= 0)
        return sp_errorf(err, "%s: record %llu: value must be in memory", w->path,
                         (unsigned long long)n);
    if (rec->value_len > w->opts.max_value_bytes)
        return sp_errorf(
            err, "%s: record %llu (key %s): value of %llu bytes exceeds the bound of %u", w->path,
            (unsigned long long)n, show_key(rec->key, rec->key_len, a, sizeof a),
            (unsigned long long)rec->value_len, w->opts.max_value_bytes);
    if (w->stats.records > 0) {
        if (sp_key_cmp(rec->key, rec->key_len, w->last_key, w->last_len) <= 0)
            return sp_errorf(err,
                             "%s: record %llu: key %s does not sort after the previous key %s "
                             "(keys must be strictly increasing)",
                             w->path, (unsigned long long)n,
                             show_key(rec->key, rec->key_len, a, sizeof a),
                             show_key(w->last_key, w->last_len, b, sizeof b));
    }
    size_t vlen = (size_t)rec->value_len;
    if (w->opts.compress) {
        if (keep_hash(w, rec->key, rec->key_len, err) ||
            compressed_add(w, rec->key, rec->key_len, rec->value, vlen, err))
            return -1;
    } else {
        bool fresh = block_builder_empty(w->block);
        if (fresh || !block_builder_add(w->block, rec->key, rec->key_len, rec->value, vlen)) {
            /* The record starts a block, which it fits (the add below
             * cannot fail): sst_check_fit guarantees that of every
             * bounded record. */
            if ((!fresh && end_block(w, err)) || index_add(w, rec->key, rec->key_len, err))
                return -1;
            block_builder_add(w->block, rec->key, rec->key_len, rec->value, vlen);
        }
    }
    memcpy(w->last_key, rec->key, rec->key_len);
    w->last_len = rec->key_len;
    w->stats.records++;
    w->stats.key_bytes += rec->key_len;
    w->stats.value_bytes += vlen;
    return 0;
}

int table_writer_use_dictionary(table_writer *w, const uint8_t *dict, size_t len, sp_error *err) {
    if (!w->opts.compress || w->packer || w->held_records)
        return sp_errorf(err, "%s: a dictionary is given to a compressed table before its records",
                         w->path);
    if (len && !(w->dict = malloc(len)))
        return sp_errorf(err, "%s: out of memory for the dictionary", w->path);
    if (len)
        memcpy(w->dict, dict, len);
    w->dict_len = len;
    w->dict_given = true;
    w->stats.dictionary_bytes = len;
    w->packer =
        block_packer_init(w->opts.block_size, w->dict, w->dict_len, w->opts.compression_level, err);
    return w->packer ? 0 : -1;
}

/* A block copied into a compressed table: its keys' hashes kept for the
 * filter (so the filter covers copied and rebuilt records alike), its
 * records counted, its plain bytes added to the meta region's sum. */
static int copied_keys(table_writer *w, const table_block_copy *c, sp_error *err) {
    block_iter it;
    block_iter_init(&it, c->view);
    sp_error e;
    sp_error_clear(&e);
    for (uint64_t j = 0; j < c->records; j++) {
        if (block_iter_next(&it, "", &e) != 1)
            return sp_errorf(err, "%s: copied block: its records end before its count", w->path);
        if (keep_hash(w, it.key, it.key_len, err))
            return -1;
        w->stats.records++;
    }
    w->stats.plain_bytes += c->view->entries_len;
    return 0;
}

int table_writer_copy_block(table_writer *w, const table_block_copy *c, sp_error *err) {
    if (deferred(w, err) || pack_drain(w, err))
        return -1;
    if (w->opts.compress && !w->dict_given)
        return sp_errorf(err,
                         "%s: a block is copied into a compressed table only with the dictionary "
                         "it was compressed with (table_writer_use_dictionary)",
                         w->path);
    char a[320], b[320];
    if (w->stats.records > 0 && sp_key_cmp(c->first, c->first_len, w->last_key, w->last_len) <= 0)
        return sp_errorf(err,
                         "%s: copied block: first key %s does not sort after the previous key %s",
                         w->path, show_key(c->first, c->first_len, a, sizeof a),
                         show_key(w->last_key, w->last_len, b, sizeof b));
    if (end_blocks(w, err))
        return -1;
    const uint64_t bs = w->opts.block_size;
    /* A pending range this block does not continue is shared first (which
     * may find that the file system cannot). */
    if (w->copy_len && !(w->copy_fd == c->fd && w->copy_off + w->copy_len == c->offset) &&
        run_clone(w, err))
        return -1;
    if (w->no_clone) {
        if (w->n_pieces == MAX_PIECES && flush(w, err))
            return -1;
        add_piece(w, c->data, bs);
        w->copied_bytes += bs;
        if (w->pending >= COPY_WRITE_BYTES && flush(w, err))
            return -1;
    } else {
        if (!w->copy_len) {
            w->copy_fd = c->fd;
            w->copy_off = c->offset;
        }
        w->copy_len += bs;
    }
    if (index_add(w, c->first, c->first_len, err))
        return -1;
    if (w->opts.compress) {
        if (copied_keys(w, c, err))
            return -1;
    } else {
        w->stats.records += c->records;
    }
    w->stats.data_blocks++;
    w->stats.key_bytes += c->key_bytes;
    w->stats.value_bytes += c->value_bytes;
    memcpy(w->last_key, c->last, c->last_len);
    w->last_len = c->last_len;
    return 0;
}

static int sink_put(void *ctx, const sp_record *rec, sp_error *err) {
    return table_writer_add(ctx, rec, err);
}

sp_sink table_writer_sink(table_writer *w) {
    return (sp_sink){.put = sink_put, .ctx = w};
}

/* The index entries after the data region: from memory, or, once they
 * spilled, all of them from the scratch file, read back through the
 * index buffer. */
static int emit_index(table_writer *w, sp_error *err) {
    if (w->spill_fd < 0)
        return emit(w, w->index, w->index_len, err);
    if (w->index_len && spill_index(w, err))
        return -1;
    for (uint64_t off = 0; off < w->spilled;) {
        size_t k = w->spilled - off < w->index_cap ? (size_t)(w->spilled - off) : w->index_cap;
        if (sp_pread_exact(w->spill_fd, w->index, k, off, w->spill_name, err) ||
            emit(w, w->index, k, err))
            return -1;
        off += k;
    }
    return 0;
}

void table_writer_flush_copies(table_writer *w) {
    /* The packing thread's writes may be pending with the copies. */
    if (!w->deferred_failed &&
        (pack_drain(w, &w->deferred) || (w->copied_bytes && flush(w, &w->deferred)))) {
        w->deferred_failed = true;
        /* Nothing pending may point into the caller's memory any more. */
        w->n_pieces = 0;
        w->pending = w->copied_bytes = w->batch_used = 0;
    }
}

int table_writer_seal(table_writer *w, sp_table_identity *id, sp_error *err) {
    if (deferred(w, err) || pack_drain(w, err))
        return -1;
    pack_stop(w);
    const uint64_t bs = w->opts.block_size;
    if (w->opts.compress && !w->packer && start_packing(w, err))
        return -1;
    if (end_blocks(w, err))
        return -1;
    sst_footer f = {.cluster_size = w->opts.cluster_size,
                    .format_version =
                        w->opts.compress ? SST_FORMAT_VERSION_PACKED : SST_FORMAT_VERSION};
    /* Version 2 pads nothing after its blocks (format.h). */
    f.tail_align = w->opts.compress ? 1 : f.cluster_size;
    const uint64_t align = f.tail_align, footer_region = sst_footer_region_bytes(&f);
    uint64_t data_len = w->stats.data_blocks * bs;
    f.data_region_length = sst_align_up(data_len, align);
    if (emit(w, NULL, f.data_region_length - data_len, err))
        return -1;

    f.index_offset = f.data_region_length;
    f.index_length = w->spilled + w->index_len;
    f.index_region_length = sst_align_up(f.index_length, align);
    XXH3_64bits_reset(w->hash);
    w->hashing = true;
    if (emit_index(w, err) || emit(w, NULL, f.index_region_length - f.index_length, err))
        return -1;
    f.index_checksum = XXH3_64bits_digest(w->hash);
    uint64_t meta_region_length = 0;
    if (w->opts.compress) {
        XXH3_64bits_reset(w->hash);
        if (emit_meta(w, &meta_region_length, err))
            return -1;
        f.meta_checksum = XXH3_64bits_digest(w->hash);
    }

    f.data_blocks = w->stats.data_blocks;
    f.records = w->stats.records;
    f.key_bytes = w->stats.key_bytes;
    f.value_bytes = w->stats.value_bytes;
    f.file_size = f.index_offset + f.index_region_length + meta_region_length + footer_region;
    f.block_size = w->opts.block_size;
    f.max_value_bytes = w->opts.max_value_bytes;
    f.restart_interval = SST_RESTART_INTERVAL;
    f.checksum_type = SST_CHECKSUM_XXH3_64;
    uint8_t footer[SST_FOOTER_BYTES];
    sst_footer_encode(&f, footer);
    /* The footer checksum covers the region's zeros and the footer up to
     * the checksum field itself. */
    XXH3_64bits_reset(w->hash);
    if (emit(w, NULL, footer_region - SST_FOOTER_BYTES, err) ||
        emit(w, footer, SST_FOOTER_CHECKSUM, err))
        return -1;
    w->hashing = false;
    f.footer_checksum = XXH3_64bits_digest(w->hash);
    sst_footer_encode(&f, footer);
    if (emit(w, footer + SST_FOOTER_CHECKSUM, SST_FOOTER_BYTES - SST_FOOTER_CHECKSUM, err) ||
        flush(w, err))
        return -1;
    bg_stop(w);
    w->sealed = true;
    w->identity =
        (sp_table_identity){.file_size = f.file_size, .footer_checksum = f.footer_checksum};
    if (id)
        *id = w->identity;
    return 0;
}

/* table_writer_finish, or with pub, table_writer_finish_undoable. */
static int finish(table_writer *w, sp_published *pub, sp_error *err) {
    if (!w->sealed && table_writer_seal(w, NULL, err))
        return -1;
    uint64_t t0 = sp_clock_ns();
    if (pub ? sp_outfile_commit_undoable(&w->out, pub, err) : sp_outfile_commit(&w->out, err))
        return -1;
    w->stats.commit_ns = sp_clock_ns() - t0;
    w->finished = true;
    w->stats.file_size = w->identity.file_size;
    return 0;
}

int table_writer_finish(table_writer *w, sp_error *err) {
    return finish(w, NULL, err);
}

int table_writer_finish_undoable(table_writer *w, sp_published *pub, sp_error *err) {
    return finish(w, pub, err);
}

bool table_writer_in_place(const table_writer *w) {
    return w->out.placed;
}

const table_stats *table_writer_stats(const table_writer *w) {
    return &w->stats;
}

void table_writer_destroy(table_writer *w) {
    if (!w)
        return;
    pack_stop(w);
    bg_stop(w);
    if (!w->finished)
        sp_outfile_abort(&w->out);
    if (w->spill_fd >= 0)
        close(w->spill_fd);
    if (w->hash_fd >= 0)
        close(w->hash_fd);
    free(w->spill_name);
    block_builder_destroy(w->block);
    block_packer_destroy(w->packer);
    free(w->dict);
    free(w->key_hashes);
    free(w->held);
    XXH3_freeState(w->hash);
    free(w->batch);
    free(w->index);
    free(w->path);
    free(w);
}

void table_stats_format(const table_stats *s, char *buf, size_t cap) {
    snprintf(buf, cap,
             "write: records=%llu data_blocks=%llu key_bytes=%llu value_bytes=%llu file_size=%llu",
             (unsigned long long)s->records, (unsigned long long)s->data_blocks,
             (unsigned long long)s->key_bytes, (unsigned long long)s->value_bytes,
             (unsigned long long)s->file_size);
}
