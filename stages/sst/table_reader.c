/*
 * table_reader.c: opening an SSTable (footer and index checked, index kept
 * in memory) and reading its blocks; see table_reader.h and FORMAT.md.
 *
 * Open runs the table check (table_check.h) in its stopping mode, which
 * checks everything a later read relies on, so that a lookup needs no more
 * than one pread of one block: the footer's fields against the real file
 * size and against each other, the regions' checksums and padding, and
 * every index entry. With each block's own checksum checked when it is
 * read, every byte of the file is covered.
 *
 * A version 2 table's meta region is read and checked at open too; its
 * dictionary stays loaded for the blocks' decompression, and its filter
 * (filter.h) in memory beside the index: a point lookup of a key the
 * filter rules out answers "absent" without reading a block. A lookup of the
 * unmapped reader (sst_reader_get) decompresses one group into the
 * reader's buffer. The lookups that may run on several threads at once
 * copy their values into the calling thread's (block_cache.h): a lookup
 * decompresses the one group of its block that may hold the key, in a block
 * the caller read (direct I/O) or, mapped, into the reader's bounded cache
 * with a record directory of it, where later lookups find it.
 */
#include "stages/sst/table_reader.h"

#include "stages/common/fileio.h"
#include "stages/common/key.h"
#include "stages/sst/block_cache.h"
#include "stages/sst/block_dir.h"
#include "stages/sst/coding.h"
#include "stages/sst/table_check.h"

#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* What each mapped block's first lookup in this process left: NULL before it; after the block
 * passed the full check, its record directory, or &no_dir once the directories' budget is spent
 * (the block is then searched from its restart points, as a copied block is). */
typedef struct mapping {
    size_t dir_budget;
    _Atomic size_t dir_bytes;
    _Atomic(block_dir *) dirs[];
} mapping;

static block_dir *const no_dir = (block_dir *)&no_dir;

struct sst_reader {
    char *path;
    int fd;
    sst_footer footer;
    uint8_t *index;      /* the index entries as stored */
    uint64_t *entry_pos; /* index offset of each block's entry */
    /* The first 8 bytes of each block's first key, big-endian and zero-padded:
     * the index search compares these in one contiguous array and decodes an
     * entry only when they tie. */
    uint64_t *first_prefix;
    uint8_t *block; /* block_size bytes, aligned for direct I/O */
    block_view view;
    sst_blocks blocks; /* where blocks are read and checked */
    mapping *map;      /* sst_reader_map */
    /* Version 2: the meta region (its header decoded into meta), the
     * loaded dictionary, the unmapped lookup's unpacked group or block,
     * and the mapped lookups' cache of unpacked blocks (made by
     * sst_reader_map, of cache_budget bytes). */
    uint8_t *meta_region;
    sst_meta meta;
    sst_filter filter; /* in meta_region; bytes NULL: none (every key may be there) */
    packed_dict *dict;
    block_plain plain;
    size_t cache_budget;
    sst_block_cache *cache;
};

void sst_reader_close(sst_reader *r) {
    if (!r)
        return;
    sst_blocks_release(&r->blocks);
    if (r->fd >= 0)
        close(r->fd);
    if (r->map) {
        for (uint64_t i = 0; i < r->footer.data_blocks; i++) {
            block_dir *d = atomic_load_explicit(&r->map->dirs[i], memory_order_relaxed);
            if (d != no_dir)
                block_dir_destroy(d);
        }
        free(r->map);
    }
    sst_block_cache_free(r->cache);
    packed_dict_free(r->dict);
    free(r->meta_region);
    block_plain_free(&r->plain);
    free(r->path);
    free(r->index);
    free(r->entry_pos);
    free(r->first_prefix);
    free(r->block);
    free(r);
}

/* Keeps block i's index entry: where it starts and its key's prefix. */
static void keep_entry(void *ctx, uint64_t i, const uint8_t *key, uint32_t klen,
                       uint64_t entry_pos) {
    sst_reader *r = ctx;
    r->entry_pos[i] = entry_pos;
    r->first_prefix[i] = sp_key_prefix(key, klen);
}

static sst_reader *open_reader(const char *path, bool streamed, sp_error *err) {
    sst_reader *r = calloc(1, sizeof *r);
    if (!r || !(r->path = strdup(path))) {
        free(r);
        sp_errorf(err, "%s: out of memory", path);
        return NULL;
    }
    sst_blocks_init(&r->blocks, r->path, -1, 0, 0);
    r->fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (r->fd < 0 || fstat(r->fd, &st) != 0) {
        sp_errorf_errno(err, "%s: cannot open", path);
        goto fail;
    }
    if (!S_ISREG(st.st_mode)) {
        sp_errorf(err, "%s: not a regular file", path);
        goto fail;
    }
    sst_check chk = {.path = r->path, .fd = r->fd};
    sst_footer *f = &r->footer;
    if (sst_check_open_footer(&chk, (uint64_t)st.st_size, f, err) ||
        sst_check_data_padding(&chk, f, err))
        goto fail;
    if (!streamed) {
        r->index = malloc(f->index_length + 1);
        r->entry_pos = malloc((f->data_blocks + 1) * sizeof *r->entry_pos);
        r->first_prefix = malloc((f->data_blocks + 1) * sizeof *r->first_prefix);
        if (!r->index || !r->entry_pos || !r->first_prefix) {
            sp_errorf(err, "%s: out of memory for an index of %llu bytes", path,
                      (unsigned long long)f->index_length);
            goto fail;
        }
    }
    if (sst_check_index(&chk, f, r->index, streamed ? NULL : keep_entry, r, err))
        goto fail;
    if (posix_memalign((void **)&r->block, 4096, f->block_size) != 0) {
        r->block = NULL;
        sp_errorf(err, "%s: out of memory", path);
        goto fail;
    }
    sst_blocks_init(&r->blocks, r->path, r->fd, f->block_size, f->data_blocks);
    if (f->format_version == SST_FORMAT_VERSION_PACKED) {
        if (sst_check_meta(&chk, f, &r->meta, &r->meta_region, err))
            goto fail;
        sp_error e = {0};
        if (!(r->dict = packed_dict_new(r->meta_region + SST_META_HEADER_BYTES,
                                        r->meta.dictionary_length, &e))) {
            sp_errorf(err, "%s: %s", path, e.msg);
            goto fail;
        }
        r->cache_budget = SST_BLOCK_CACHE_DEFAULT;
        r->blocks.packed = r->dict;
        if (r->meta.filter_length)
            r->filter = (sst_filter){.bytes = r->meta_region + SST_META_HEADER_BYTES +
                                              r->meta.dictionary_length,
                                     .length = r->meta.filter_length,
                                     .hashes = r->meta.filter_hashes};
    }
    return r;
fail:
    sst_reader_close(r);
    return NULL;
}

sst_reader *sst_reader_open(const char *path, sp_error *err) {
    return open_reader(path, false, err);
}

sst_reader *sst_reader_open_streamed(const char *path, sp_error *err) {
    return open_reader(path, true, err);
}

const sst_footer *sst_reader_footer(const sst_reader *r) {
    return &r->footer;
}

sp_table_identity sst_reader_identity(const sst_reader *r) {
    const sst_footer *f = sst_reader_footer(r);
    return (sp_table_identity){.file_size = f->file_size, .footer_checksum = f->footer_checksum};
}

const char *sst_reader_path(const sst_reader *r) {
    return r->path;
}

int sst_reader_fd(const sst_reader *r) {
    return r->fd;
}

const sst_blocks *sst_reader_blocks(const sst_reader *r) {
    return &r->blocks;
}

sst_blocks *sst_reader_blocks_mut(sst_reader *r) {
    return &r->blocks;
}

const uint8_t *sst_reader_block_first_key(const sst_reader *r, uint64_t i, uint32_t *klen) {
    const uint8_t *p = r->index + r->entry_pos[i];
    /* Parsed and checked at open. */
    return sst_get_varint32(p, r->index + r->footer.index_length, klen);
}

int64_t sst_reader_find_block(const sst_reader *r, const uint8_t *key, size_t klen) {
    /* The last block whose first key is <= key. */
    uint64_t lo = 0, hi = r->footer.data_blocks;
    uint64_t want = sp_key_prefix(key, klen);
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        bool first_le_key;
        if (r->first_prefix[mid] != want) {
            first_le_key = r->first_prefix[mid] < want;
        } else {
            uint32_t flen = 0; /* set by sst_reader_block_first_key; gcc -O3 cannot see it */
            const uint8_t *first = sst_reader_block_first_key(r, mid, &flen);
            first_le_key = sp_key_cmp(first, flen, key, klen) <= 0;
        }
        if (first_le_key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return (int64_t)lo - 1;
}

const sst_meta *sst_reader_meta(const sst_reader *r) {
    return r->dict ? &r->meta : NULL;
}

const uint8_t *sst_reader_dictionary(const sst_reader *r, size_t *len) {
    *len = r->dict ? r->meta.dictionary_length : 0;
    return r->dict ? r->meta_region + SST_META_HEADER_BYTES : NULL;
}

const sst_filter *sst_reader_filter(const sst_reader *r) {
    return &r->filter;
}

int sst_reader_check_block(const sst_reader *r, uint64_t i, const uint8_t *data, block_plain *plain,
                           block_view *v, sp_error *err) {
    uint32_t flen = 0; /* set by sst_reader_block_first_key; gcc -O3 cannot see it */
    const uint8_t *first = sst_reader_block_first_key(r, i, &flen);
    return sst_blocks_check(&r->blocks, i, data, first, flen, plain, v, err);
}

/* Version 2, mapped: the lookup in block i (its bytes at data) through
 * the cache, which on a miss gets the block checked and the one group that
 * may hold key unpacked into the thread's buffer, with its directory. Out
 * of line: a version 1 lookup does not pay for its frame. */
static __attribute__((noinline)) int get_packed(const sst_reader *r, uint64_t i,
                                                const uint8_t *data, const uint8_t *key,
                                                size_t klen, const void **value, size_t *vlen,
                                                sp_error *err) {
    sp_error e;
    sp_error_clear(&e);
    int rc = sst_block_cache_find(r->cache, i, key, klen, value, vlen, &e);
    if (rc == SST_BLOCK_CACHE_MISS) {
        block_plain *plain = sst_thread_plain();
        if (!plain)
            return sp_errorf(err, "%s: out of memory", r->path);
        uint32_t flen = 0; /* set by sst_reader_block_first_key; gcc -O3 cannot see it */
        const uint8_t *first = sst_reader_block_first_key(r, i, &flen);
        packed_group_view g;
        rc = sst_blocks_find_group(&r->blocks, i, data, first, flen, plain, key, klen, &g, err);
        if (rc != 1)
            return rc;
        block_dir *d = block_dir_build(&g.view, "", &e);
        rc = d ? sst_block_cache_add_find(r->cache, i, &g, d, key, klen, value, vlen, &e) : -1;
    }
    return rc < 0 ? sst_blocks_error(&r->blocks, i, &e, err) : rc;
}

static int find_in_view(const sst_reader *r, uint64_t i, const block_view *v, const uint8_t *key,
                        size_t klen, const void **value, size_t *vlen, sp_error *err) {
    sp_error e; /* not zeroed: see sst_reader_get_in_block */
    sp_error_clear(&e);
    int rc = block_find(v, key, klen, value, vlen, "", &e);
    return rc < 0 ? sst_blocks_error(&r->blocks, i, &e, err) : rc;
}

int sst_reader_read_block(sst_reader *r, uint64_t i, uint8_t *buf, block_view *v, sp_error *err) {
    if (sst_blocks_read(&r->blocks, i, buf, NULL, err))
        return -1;
    return sst_reader_check_block(r, i, buf, &r->plain, v, err);
}

int sst_reader_search_block(const sst_reader *r, uint64_t i, const uint8_t *buf, const uint8_t *key,
                            size_t klen, const void **value, size_t *vlen, sp_error *err) {
    if (r->dict) {
        uint32_t flen = 0;
        const uint8_t *first = sst_reader_block_first_key(r, i, &flen);
        block_plain *plain = sst_thread_plain();
        const void *at;
        size_t n;
        if (!plain)
            return sp_errorf(err, "%s: out of memory", r->path);
        int rc = sst_blocks_find(&r->blocks, i, buf, first, flen, plain, key, klen, &at, &n, err);
        if (rc != 1)
            return rc;
        if (!(*value = sst_values_copy(at, n)))
            return sp_errorf(err, "%s: out of memory for a value of %zu bytes", r->path, n);
        *vlen = n;
        return 1;
    }
    block_view v;
    if (sst_reader_check_block(r, i, buf, NULL, &v, err))
        return -1;
    return find_in_view(r, i, &v, key, klen, value, vlen, err);
}

void sst_reader_set_cache(sst_reader *r, size_t budget) {
    r->cache_budget = budget;
}

int sst_reader_map(sst_reader *r, size_t dir_budget, sp_error *err) {
    const sst_footer *f = &r->footer;
    if (r->map || f->data_blocks == 0)
        return 0;
    mapping *m = calloc(1, sizeof *m + (size_t)f->data_blocks * sizeof m->dirs[0]);
    if (!m)
        return sp_errorf(err, "%s: out of memory for the state of %llu mapped blocks", r->path,
                         (unsigned long long)f->data_blocks);
    if (r->dict && !(r->cache = sst_block_cache_new(f->data_blocks, r->cache_budget))) {
        free(m);
        return sp_errorf(err, "%s: out of memory for the cache of %llu blocks", r->path,
                         (unsigned long long)f->data_blocks);
    }
    if (sst_blocks_map(&r->blocks, err)) {
        free(m);
        return -1;
    }
    m->dir_budget = dir_budget;
    r->map = m;
    return 0;
}

/* A mapped block's first lookup: the full check, then its directory (the
 * walk that builds it checks every record too). Two threads may both get
 * here for one block; the first to publish its directory wins. */
static block_dir *check_mapped_block(const sst_reader *r, uint64_t i, const uint8_t *data,
                                     sp_error *err) {
    mapping *m = r->map;
    block_view v;
    if (sst_reader_check_block(r, i, data, NULL, &v, err))
        return NULL;
    block_dir *d = no_dir;
    if (atomic_load_explicit(&m->dir_bytes, memory_order_relaxed) < m->dir_budget) {
        sp_error e = {0};
        if (!(d = block_dir_build(&v, "", &e))) {
            sst_blocks_error(&r->blocks, i, &e, err);
            return NULL;
        }
        atomic_fetch_add_explicit(&m->dir_bytes, block_dir_bytes(d), memory_order_relaxed);
    }
    block_dir *expected = NULL;
    if (!atomic_compare_exchange_strong_explicit(&m->dirs[i], &expected, d, memory_order_release,
                                                 memory_order_acquire)) {
        if (d != no_dir) {
            atomic_fetch_sub_explicit(&m->dir_bytes, block_dir_bytes(d), memory_order_relaxed);
            block_dir_destroy(d);
        }
        d = expected;
    }
    return d;
}

/* The mapped block's search, inlined into both of its callers, the thin
 * exported sst_reader_get_in_block and sst_reader_get (libsstpipe's
 * lookup), so that the library's lookup makes no more calls than a caller
 * of the reader's two halves (a batch's searches). gcc -O3 would not inline it on its
 * own: its 1 KiB sp_error grows the caller's frame past inlining's limit. */
static inline __attribute__((always_inline)) int get_in_block(const sst_reader *r, uint64_t i,
                                                              const uint8_t *key, size_t klen,
                                                              const void **value, size_t *vlen,
                                                              sp_error *err) {
    uint32_t bs = r->footer.block_size;
    const uint8_t *data = sst_blocks_mapped(&r->blocks, i);
    if (__builtin_expect(r->dict != NULL, 0))
        return get_packed(r, i, data, key, klen, value, vlen, err);
    block_dir *d = atomic_load_explicit(&r->map->dirs[i], memory_order_acquire);
    if (!d && !(d = check_mapped_block(r, i, data, err)))
        return -1;
    /* Not "= {0}": zeroing the 1 KiB message was 7% of a warm lookup's CPU
     * time (perf record of lib_bench scaling); an error fills it. */
    sp_error e;
    sp_error_clear(&e);
    int rc;
    if (d != no_dir) {
        rc = block_dir_find(d, data, key, klen, value, vlen, "", &e);
    } else {
        block_view v;
        rc = block_reopen(&v, data, bs, "", &e) ? -1
                                                : block_find(&v, key, klen, value, vlen, "", &e);
    }
    return rc < 0 ? sst_blocks_error(&r->blocks, i, &e, err) : rc;
}

bool sst_reader_in_place(const sst_reader *r) {
    return r->map && !r->dict;
}

int sst_reader_mapped_view(const sst_reader *r, uint64_t i, block_view *v, sp_error *err) {
    const uint8_t *data = sst_blocks_mapped(&r->blocks, i);
    block_dir *d = atomic_load_explicit(&r->map->dirs[i], memory_order_acquire);
    if (!d && !check_mapped_block(r, i, data, err))
        return -1;
    sp_error e;
    sp_error_clear(&e);
    return block_reopen(v, data, r->footer.block_size, "", &e)
               ? sst_blocks_error(&r->blocks, i, &e, err)
               : 0;
}

int sst_reader_get_in_block(const sst_reader *r, uint64_t i, const uint8_t *key, size_t klen,
                            const void **value, size_t *vlen, sp_error *err) {
    return get_in_block(r, i, key, klen, value, vlen, err);
}

int sst_reader_get(sst_reader *r, const void *key, size_t klen, const void **value, size_t *vlen,
                   sp_error *err) {
    if (klen == 0 || klen > SP_MAX_KEY_BYTES || !sst_filter_may_hold_key(&r->filter, key, klen))
        return 0;
    int64_t i = sst_reader_find_block(r, key, klen);
    if (i < 0)
        return 0;
    if (r->map) {
        if (__builtin_expect(r->dict != NULL, 0))
            sst_values_reset();
        return get_in_block(r, (uint64_t)i, key, klen, value, vlen, err);
    }
    if (r->dict) {
        uint32_t flen = 0;
        const uint8_t *first = sst_reader_block_first_key(r, (uint64_t)i, &flen);
        return sst_blocks_read(&r->blocks, (uint64_t)i, r->block, NULL, err)
                   ? -1
                   : sst_blocks_find(&r->blocks, (uint64_t)i, r->block, first, flen, &r->plain, key,
                                     klen, value, vlen, err);
    }
    if (sst_reader_read_block(r, (uint64_t)i, r->block, &r->view, err))
        return -1;
    return find_in_view(r, (uint64_t)i, &r->view, key, klen, value, vlen, err);
}
