/*
 * table_reader.c: opening an SSTable (footer and index checked, index kept
 * in memory) and reading its blocks; see table_reader.h and FORMAT.md.
 *
 * Open checks everything a later read relies on, so that a lookup needs no
 * more than one pread of one block: the footer's fields against the real
 * file size and against each other, both checksums, the data region's
 * padding, and every index entry. With each block's own checksum checked
 * when it is read, every byte of the file is covered.
 */
#include "stages/sst/table_reader.h"

#include "stages/common/fileio.h"
#include "stages/common/key.h"
#include "stages/common/size.h"
#include "stages/sst/block_dir.h"
#include "stages/sst/coding.h"
#include "stages/sst/index_cursor.h"

#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#define CHUNK_BYTES (1u << 20) /* reads of padding while checksumming */
/* A streamed reader's index buffer at open. */
#define SST_READER_STREAM_BYTES (64u << 10)

/* The data region mapped for lookups, and what each block's first lookup
 * in this process left: NULL before it; after the block passed the full
 * check, its record directory, or &no_dir once the directories' budget is
 * spent (the block is then searched from its restart points, as a copied
 * block is). */
typedef struct mapping {
    const uint8_t *data;
    size_t len;
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
    mapping *map; /* sst_reader_map */
};

void sst_reader_close(sst_reader *r) {
    if (!r)
        return;
    if (r->fd >= 0)
        close(r->fd);
    if (r->map) {
        munmap((void *)r->map->data, r->map->len);
        for (uint64_t i = 0; i < r->footer.data_blocks; i++) {
            block_dir *d = atomic_load_explicit(&r->map->dirs[i], memory_order_relaxed);
            if (d != no_dir)
                block_dir_destroy(d);
        }
        free(r->map);
    }
    free(r->path);
    free(r->index);
    free(r->entry_pos);
    free(r->first_prefix);
    free(r->block);
    free(r);
}

/* Feeds n file bytes at off into h. */
static int hash_range(sst_reader *r, XXH3_state_t *h, uint64_t off, uint64_t n, sp_error *err) {
    uint8_t *buf = malloc(n < CHUNK_BYTES ? (size_t)n + 1 : CHUNK_BYTES);
    if (!buf)
        return sp_errorf(err, "%s: out of memory", r->path);
    while (n) {
        size_t k = n < CHUNK_BYTES ? (size_t)n : CHUNK_BYTES;
        if (sp_pread_exact(r->fd, buf, k, off, r->path, err)) {
            free(buf);
            return -1;
        }
        XXH3_64bits_update(h, buf, k);
        off += k;
        n -= k;
    }
    free(buf);
    return 0;
}

/* The data region's tail padding is covered by no checksum, so it is
 * checked to be the zeros the format requires. */
static int check_zeros(sst_reader *r, uint64_t off, uint64_t n, sp_error *err) {
    uint8_t *buf = malloc(n < CHUNK_BYTES ? (size_t)n + 1 : CHUNK_BYTES);
    if (!buf)
        return sp_errorf(err, "%s: out of memory", r->path);
    int rc = 0;
    while (n && !rc) {
        size_t k = n < CHUNK_BYTES ? (size_t)n : CHUNK_BYTES;
        rc = sp_pread_exact(r->fd, buf, k, off, r->path, err);
        for (size_t i = 0; i < k && !rc; i++)
            if (buf[i])
                rc = sp_errorf(err, "%s: byte %llu in the data region's padding is not zero",
                               r->path, (unsigned long long)(off + i));
        off += k;
        n -= k;
    }
    free(buf);
    return rc;
}

/* The footer's fields against the file and each other; f->file_size was
 * already found equal to the real size, a multiple of cluster_size. */
static int check_footer(sst_reader *r, const sst_footer *f, uint64_t at, sp_error *err) {
    const char *p = r->path;
    unsigned long long a = (unsigned long long)at;
    char lo[32], hi[32];
    if (f->checksum_type != SST_CHECKSUM_XXH3_64)
        return sp_errorf(err, "%s: footer at byte %llu: unknown checksum type %u", p, a,
                         f->checksum_type);
    if (!sst_pow2_in(f->block_size, SST_MIN_BLOCK_SIZE, SST_MAX_BLOCK_SIZE))
        return sp_errorf(err,
                         "%s: footer at byte %llu: block size %u is not a power of two from "
                         "%s to %s",
                         p, a, f->block_size, sp_format_size(SST_MIN_BLOCK_SIZE, lo, sizeof lo),
                         sp_format_size(SST_MAX_BLOCK_SIZE, hi, sizeof hi));
    if (f->restart_interval != SST_RESTART_INTERVAL)
        return sp_errorf(err, "%s: footer at byte %llu: restart interval %u (expected %u)", p, a,
                         f->restart_interval, SST_RESTART_INTERVAL);
    uint64_t cs = f->cluster_size, size = f->file_size;
    if (f->data_blocks > size / f->block_size ||
        f->data_region_length != sst_align_up(f->data_blocks * f->block_size, cs) ||
        f->index_offset != f->data_region_length || f->index_length > size ||
        f->index_region_length != sst_align_up(f->index_length, cs) ||
        f->index_offset > size - cs || f->index_region_length != size - cs - f->index_offset)
        return sp_errorf(err,
                         "%s: footer at byte %llu: regions do not tile the file (data %llu bytes "
                         "for %llu blocks, index at byte %llu of %llu/%llu bytes, file %llu bytes)",
                         p, a, (unsigned long long)f->data_region_length,
                         (unsigned long long)f->data_blocks, (unsigned long long)f->index_offset,
                         (unsigned long long)f->index_length,
                         (unsigned long long)f->index_region_length, (unsigned long long)size);
    if ((f->records == 0) != (f->data_blocks == 0) || f->records < f->data_blocks)
        return sp_errorf(err, "%s: footer at byte %llu: %llu records in %llu blocks", p, a,
                         (unsigned long long)f->records, (unsigned long long)f->data_blocks);
    return 0;
}

/*
 * The checksum check of a region that starts at byte at: XXH3-64 over head
 * (its first head_len bytes, already read) and then the n file bytes at
 * off, against want. The index and the footer region are checked alike,
 * streamed or not; what names the region in the message.
 */
static int check_region_sum(sst_reader *r, const char *what, uint64_t at, const uint8_t *head,
                            size_t head_len, uint64_t off, uint64_t n, uint64_t want,
                            sp_error *err) {
    XXH3_state_t *h = XXH3_createState();
    if (!h)
        return sp_errorf(err, "%s: out of memory", r->path);
    XXH3_64bits_reset(h);
    if (head_len)
        XXH3_64bits_update(h, head, head_len);
    int rc = hash_range(r, h, off, n, err);
    uint64_t sum = XXH3_64bits_digest(h);
    XXH3_freeState(h);
    if (rc)
        return -1;
    if (sum != want)
        return sp_errorf(err,
                         "%s: %s checksum mismatch (%s region at byte %llu: stored %016llx, "
                         "computed %016llx)",
                         r->path, what, what, (unsigned long long)at, (unsigned long long)want,
                         (unsigned long long)sum);
    return 0;
}

/*
 * The index, its checksum and then every entry through a cursor. Loaded
 * (index: the index bytes, read into r->index), each block's entry position
 * and key prefix are kept; streamed (index NULL, see
 * sst_reader_open_streamed), the region is hashed and walked in chunks of a
 * fixed buffer and nothing of it is kept.
 */
static int check_index(sst_reader *r, const uint8_t *index, sp_error *err) {
    const sst_footer *f = &r->footer;
    size_t head = index ? (size_t)f->index_length : 0;
    if (check_region_sum(r, "index", f->index_offset, index, head, f->index_offset + head,
                         f->index_region_length - head, f->index_checksum, err))
        return -1;
    sst_index_cursor *c =
        sst_index_cursor_open(r->path, r->fd, f, index, index ? 0 : SST_READER_STREAM_BYTES, err);
    if (!c)
        return -1;
    const uint8_t *key;
    uint32_t klen;
    int rc;
    while ((rc = sst_index_cursor_next(c, &key, &klen, err)) == 1) {
        if (!index)
            continue;
        uint64_t i = sst_index_cursor_block(c) - 1;
        r->entry_pos[i] = sst_index_cursor_entry_pos(c);
        r->first_prefix[i] = sp_key_prefix(key, klen);
    }
    sst_index_cursor_destroy(c);
    return rc;
}

static int load_index(sst_reader *r, sp_error *err) {
    const sst_footer *f = &r->footer;
    r->index = malloc(f->index_length + 1);
    r->entry_pos = malloc((f->data_blocks + 1) * sizeof *r->entry_pos);
    r->first_prefix = malloc((f->data_blocks + 1) * sizeof *r->first_prefix);
    if (!r->index || !r->entry_pos || !r->first_prefix)
        return sp_errorf(err, "%s: out of memory for an index of %llu bytes", r->path,
                         (unsigned long long)f->index_length);
    if (sp_pread_exact(r->fd, r->index, f->index_length, f->index_offset, r->path, err))
        return -1;
    return check_index(r, r->index, err);
}

static sst_reader *open_reader(const char *path, bool streamed, sp_error *err) {
    sst_reader *r = calloc(1, sizeof *r);
    if (!r || !(r->path = strdup(path))) {
        free(r);
        sp_errorf(err, "%s: out of memory", path);
        return NULL;
    }
    r->fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (r->fd < 0 || fstat(r->fd, &st) != 0) {
        sp_errorf_errno(err, "%s: cannot open", path);
        goto fail;
    }
    uint64_t size = (uint64_t)st.st_size;
    if (!S_ISREG(st.st_mode)) {
        sp_errorf(err, "%s: not a regular file", path);
        goto fail;
    }
    if (size < SST_MIN_CLUSTER_SIZE) {
        sp_errorf(err, "%s: %llu bytes is too short for an SSTable (at least %u)", path,
                  (unsigned long long)size, SST_MIN_CLUSTER_SIZE);
        goto fail;
    }
    uint64_t at = size - SST_FOOTER_BYTES;
    uint8_t raw[SST_FOOTER_BYTES];
    sst_footer *f = &r->footer;
    if (sp_pread_exact(r->fd, raw, sizeof raw, at, path, err))
        goto fail;
    sp_error e = {0};
    char where[300];
    snprintf(where, sizeof where, "%s: footer at byte %llu", path, (unsigned long long)at);
    if (sst_footer_decode(raw, f, where, &e)) {
        sp_errorf(err, "%s", e.msg);
        goto fail;
    }
    char lo[32], hi[32];
    if (!sst_pow2_in(f->cluster_size, SST_MIN_CLUSTER_SIZE, SST_MAX_CLUSTER_SIZE)) {
        sp_errorf(err,
                  "%s: footer at byte %llu: cluster size %u is not a power of two from %s to %s",
                  path, (unsigned long long)at, f->cluster_size,
                  sp_format_size(SST_MIN_CLUSTER_SIZE, lo, sizeof lo),
                  sp_format_size(SST_MAX_CLUSTER_SIZE, hi, sizeof hi));
        goto fail;
    }
    if (f->file_size != size || size % f->cluster_size != 0) {
        sp_errorf(err,
                  "%s: footer at byte %llu records a file of %llu bytes, but the file has %llu "
                  "(truncated or appended to)",
                  path, (unsigned long long)at, (unsigned long long)f->file_size,
                  (unsigned long long)size);
        goto fail;
    }
    if (check_region_sum(r, "footer", size - f->cluster_size, NULL, 0, size - f->cluster_size,
                         f->cluster_size - 16, f->footer_checksum, err))
        goto fail;
    if (check_footer(r, f, at, err) ||
        check_zeros(r, f->data_blocks * f->block_size,
                    f->data_region_length - f->data_blocks * f->block_size, err) ||
        (streamed ? check_index(r, NULL, err) : load_index(r, err)))
        goto fail;
    if (posix_memalign((void **)&r->block, 4096, f->block_size) != 0) {
        r->block = NULL;
        sp_errorf(err, "%s: out of memory", path);
        goto fail;
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

int sst_reader_block_error(const sst_reader *r, uint64_t i, const sp_error *block_err,
                           sp_error *err) {
    return sp_errorf(err, "%s: block %llu at byte %llu%s", r->path, (unsigned long long)i,
                     (unsigned long long)(i * r->footer.block_size), block_err->msg);
}

int sst_reader_check_block(const sst_reader *r, uint64_t i, const uint8_t *data, block_view *v,
                           sp_error *err) {
    uint32_t flen = 0; /* set by sst_reader_block_first_key; gcc -O3 cannot see it */
    const uint8_t *first = sst_reader_block_first_key(r, i, &flen);
    return sst_reader_check_block_key(r, i, data, first, flen, v, err);
}

int sst_reader_check_block_key(const sst_reader *r, uint64_t i, const uint8_t *data,
                               const uint8_t *first, uint32_t flen, block_view *v, sp_error *err) {
    sp_error e; /* cleared, not zeroed: every block of a walk comes here */
    sp_error_clear(&e);
    if (block_open(v, data, r->footer.block_size, "", &e))
        return sst_reader_block_error(r, i, &e, err);
    block_iter it;
    block_iter_init(&it, v);
    if (block_iter_next(&it, "", &e) < 0)
        return sst_reader_block_error(r, i, &e, err);
    if (sp_key_cmp(first, flen, it.key, it.key_len) != 0)
        return sp_errorf(err, "%s: block %llu at byte %llu: first key differs from the index",
                         r->path, (unsigned long long)i,
                         (unsigned long long)(i * r->footer.block_size));
    return 0;
}

static int find_in_view(const sst_reader *r, uint64_t i, const block_view *v, const uint8_t *key,
                        size_t klen, const void **value, size_t *vlen, sp_error *err) {
    sp_error e; /* not zeroed: see sst_reader_get_in_block */
    sp_error_clear(&e);
    int rc = block_find(v, key, klen, value, vlen, "", &e);
    return rc < 0 ? sst_reader_block_error(r, i, &e, err) : rc;
}

int sst_reader_read_blocks(const sst_reader *r, uint64_t first, uint64_t n, uint8_t *buf,
                           sp_error *err) {
    const sst_footer *f = &r->footer;
    if (first > f->data_blocks || n > f->data_blocks - first)
        return sp_errorf(err, "%s: blocks %llu to %llu do not exist (%llu blocks)", r->path,
                         (unsigned long long)first, (unsigned long long)(first + n),
                         (unsigned long long)f->data_blocks);
    return sp_pread_exact(r->fd, buf, (size_t)(n * f->block_size), first * f->block_size, r->path,
                          err);
}

int sst_reader_read_block(sst_reader *r, uint64_t i, uint8_t *buf, block_view *v, sp_error *err) {
    const sst_footer *f = &r->footer;
    if (i >= f->data_blocks)
        return sp_errorf(err, "%s: block %llu does not exist (%llu blocks)", r->path,
                         (unsigned long long)i, (unsigned long long)f->data_blocks);
    if (sp_pread_exact(r->fd, buf, f->block_size, i * f->block_size, r->path, err))
        return -1;
    return sst_reader_check_block(r, i, buf, v, err);
}

int sst_reader_search_block(const sst_reader *r, uint64_t i, const uint8_t *buf, const uint8_t *key,
                            size_t klen, const void **value, size_t *vlen, sp_error *err) {
    block_view v;
    if (sst_reader_check_block(r, i, buf, &v, err))
        return -1;
    return find_in_view(r, i, &v, key, klen, value, vlen, err);
}

int sst_reader_map(sst_reader *r, size_t dir_budget, sp_error *err) {
    const sst_footer *f = &r->footer;
    if (r->map || f->data_blocks == 0)
        return 0;
    size_t len = (size_t)(f->data_blocks * f->block_size);
    mapping *m = calloc(1, sizeof *m + (size_t)f->data_blocks * sizeof m->dirs[0]);
    if (!m)
        return sp_errorf(err, "%s: out of memory for the state of %llu mapped blocks", r->path,
                         (unsigned long long)f->data_blocks);
    void *data = mmap(NULL, len, PROT_READ, MAP_SHARED, r->fd, 0);
    if (data == MAP_FAILED) {
        free(m);
        return sp_errorf_errno(err, "%s: cannot map the data region (%zu bytes)", r->path, len);
    }
    /* Lookups touch one block each: reading ahead around it would only
     * evict pages that other lookups need. */
    madvise(data, len, MADV_RANDOM);
    m->data = data;
    m->len = len;
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
    if (sst_reader_check_block(r, i, data, &v, err))
        return NULL;
    block_dir *d = no_dir;
    if (atomic_load_explicit(&m->dir_bytes, memory_order_relaxed) < m->dir_budget) {
        sp_error e = {0};
        if (!(d = block_dir_build(&v, "", &e))) {
            sst_reader_block_error(r, i, &e, err);
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
 * of the reader's two halves (profile). gcc -O3 would not inline it on its
 * own: its 1 KiB sp_error grows the caller's frame past inlining's limit. */
static inline __attribute__((always_inline)) int get_in_block(const sst_reader *r, uint64_t i,
                                                              const uint8_t *key, size_t klen,
                                                              const void **value, size_t *vlen,
                                                              sp_error *err) {
    uint32_t bs = r->footer.block_size;
    const uint8_t *data = r->map->data + i * bs;
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
    return rc < 0 ? sst_reader_block_error(r, i, &e, err) : rc;
}

int sst_reader_get_in_block(const sst_reader *r, uint64_t i, const uint8_t *key, size_t klen,
                            const void **value, size_t *vlen, sp_error *err) {
    return get_in_block(r, i, key, klen, value, vlen, err);
}

int sst_reader_get(sst_reader *r, const void *key, size_t klen, const void **value, size_t *vlen,
                   sp_error *err) {
    if (klen == 0 || klen > SP_MAX_KEY_BYTES)
        return 0;
    int64_t i = sst_reader_find_block(r, key, klen);
    if (i < 0)
        return 0;
    if (r->map)
        return get_in_block(r, (uint64_t)i, key, klen, value, vlen, err);
    if (sst_reader_read_block(r, (uint64_t)i, r->block, &r->view, err))
        return -1;
    return find_in_view(r, (uint64_t)i, &r->view, key, klen, value, vlen, err);
}
