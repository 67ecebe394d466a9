/*
 * block_packed.c: version 2 data blocks, built and read; see
 * block_packed.h and FORMAT.md ("Version 2").
 *
 * Frames are zstd's magicless format without checksum, dictionary ID or
 * content size: the block's checksum covers them and its directory holds
 * each group's plain length, so those bytes would be said twice. A frame
 * is decompressed into exactly its directory's plain length (never more:
 * zstd stops at the destination's end), so hostile bytes can fail or give
 * wrong entries, which block.c's checks then refuse, but never write or
 * read outside the buffers.
 *
 * The builder adds a record to the open group when even incompressible
 * data would fit (zstd's compression bound), and past that when its entry
 * is expected to fit, at the ratio the table's groups have compressed at
 * so far, after the group's last frame that fit; when it is not, a frame
 * of the group with the record decides. A group's frame made when it
 * closes is checked: where it does not fit, the group keeps the longest
 * prefix of its entries that does, found by halving those added by the
 * estimate, and the others are carried into the next block. So a block
 * takes records until their compressed form would not fit, as a frame per
 * record near its end would find (a prefix's frame grows with its
 * entries), with each group compressed about once and a few frames more
 * a block; every block is valid and the blocks depend on the records
 * alone, whatever the estimate said.
 */
#include "stages/sst/block_packed.h"

#include "stages/common/key.h"
#include "stages/common/size.h"
#include "stages/sst/block_entry.h"
#include "stages/sst/coding.h"
#include "stages/sst/format.h"
#include "stages/sst/thread_slot.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>
#define ZSTD_STATIC_LINKING_ONLY /* magicless frames, CCtx_params, createCDict_advanced2 */
#include <zstd.h>

/* A directory entry's longest form: two 32-bit varints and the longest key
 * with its length. */
#define DIR_ENTRY_MAX (2 * SST_VARINT32_MAX + SST_VARINT32_MAX + SP_MAX_KEY_BYTES)
/* The least level whose frames are searched as ZSTD_lazy does at least
 * (block_packer_init): below it, a level is a choice of speed. */
#define LAZY_FROM_LEVEL 3

int sst_packed_check_fit(uint32_t block_size, uint32_t max_value_bytes, sp_error *err) {
    uint64_t plain = 1 + sst_varint_len(SP_MAX_KEY_BYTES) + sst_varint_len(max_value_bytes) +
                     SP_MAX_KEY_BYTES + (uint64_t)max_value_bytes;
    uint64_t need = ZSTD_COMPRESSBOUND(plain) + DIR_ENTRY_MAX + SST_BLOCK_TRAILER_FIXED;
    if (need <= block_size)
        return 0;
    char have[32];
    return sp_errorf(err,
                     "compressed block size %s cannot hold a record with a %u-byte key and a "
                     "%u-byte value that does not compress (%llu bytes)",
                     sp_format_size(block_size, have, sizeof have), SP_MAX_KEY_BYTES,
                     max_value_bytes, (unsigned long long)need);
}

void block_plain_free(block_plain *p) {
    free(p->buf);
    p->buf = NULL;
    p->cap = 0;
}

static int plain_reserve(block_plain *p, size_t n, const char *what, sp_error *err) {
    if (n <= p->cap)
        return 0;
    uint8_t *b = realloc(p->buf, n);
    if (!b)
        return sp_errorf(err, "%s: out of memory for %zu bytes of unpacked records", what, n);
    p->buf = b;
    p->cap = n;
    return 0;
}

/* ---------------------------------------------------------------- reader */

struct packed_dict {
    ZSTD_DDict *ddict; /* NULL: frames without a dictionary */
};

packed_dict *packed_dict_new(const uint8_t *dict, size_t len, sp_error *err) {
    packed_dict *d = calloc(1, sizeof *d);
    if (!d || (len && !(d->ddict = ZSTD_createDDict(dict, len)))) {
        free(d);
        sp_errorf(err, "cannot load a compression dictionary of %zu bytes", len);
        return NULL;
    }
    return d;
}

void packed_dict_free(packed_dict *d) {
    if (!d)
        return;
    ZSTD_freeDDict(d->ddict);
    free(d);
}

/* A decompression context per thread, made on its first use and freed when
 * the thread ends: lookups run on many threads at once. */
static void *dctx_make(void) {
    ZSTD_DCtx *c = ZSTD_createDCtx();
    if (c && ZSTD_isError(ZSTD_DCtx_setParameter(c, ZSTD_d_format, ZSTD_f_zstd1_magicless))) {
        ZSTD_freeDCtx(c);
        return NULL;
    }
    return c;
}

static void dctx_free(void *p) {
    ZSTD_freeDCtx(p);
}

static sst_thread_slot dctx_slot = SST_THREAD_SLOT(dctx_make, dctx_free);

static ZSTD_DCtx *thread_dctx(void) {
    return sst_thread_slot_get(&dctx_slot, true);
}

/* One group of the directory. */
typedef struct group {
    uint32_t frame_off, frame_len, plain_len;
    const uint8_t *key;
    uint32_t klen;
} group;

/* The block's checksum and trailer, then its directory: *n_groups groups,
 * read one by one with next_group. */
typedef struct packed {
    const uint8_t *data;
    uint32_t block_size;
    uint32_t n_records, n_groups;
    const uint8_t *dir, *dir_end; /* the directory's unread part */
    uint32_t frames_end;          /* frames up to here */
    uint32_t frames_room;         /* where the directory starts */
    uint64_t plain;               /* plain bytes so far */
    uint32_t read;                /* groups read */
    const uint8_t *prev;          /* the previous group's key */
    uint32_t prev_len;
} packed;

static int packed_begin(packed *p, const uint8_t *data, uint32_t bs, const char *what,
                        sp_error *err) {
    if (block_checksum(data, bs, what, err))
        return -1;
    const uint8_t *t = data + bs - SST_BLOCK_TRAILER_FIXED;
    uint32_t dir_len = sst_get_u32(t), n_records = sst_get_u32(t + 4);
    uint32_t n_groups = sst_get_u32(t + 8);
    if (n_records == 0 ||
        n_groups != (n_records + SST_RESTART_INTERVAL - 1) / SST_RESTART_INTERVAL ||
        dir_len > bs - SST_BLOCK_TRAILER_FIXED || dir_len < 4u * n_groups)
        return sp_errorf(err,
                         "%s: corrupt block trailer (directory %u bytes, records %u, groups %u)",
                         what, dir_len, n_records, n_groups);
    *p = (packed){.data = data,
                  .block_size = bs,
                  .n_records = n_records,
                  .n_groups = n_groups,
                  .dir = t - dir_len,
                  .dir_end = t,
                  .frames_room = bs - SST_BLOCK_TRAILER_FIXED - dir_len};
    return 0;
}

/* The next group's entry, checked against the block: its frame inside the
 * room before the directory, the plain bytes within the bound, keys
 * increasing; at the last group, the directory's and the padding's end. */
static int next_group(packed *p, group *g, const char *what, sp_error *err) {
    const uint8_t *q = p->dir;
    uint32_t at = (uint32_t)(q - p->data);
    if (!(q = sst_get_varint32(q, p->dir_end, &g->frame_len)) ||
        !(q = sst_get_varint32(q, p->dir_end, &g->plain_len)) ||
        !(q = sst_get_varint32(q, p->dir_end, &g->klen)) || g->frame_len == 0 ||
        g->plain_len == 0 || g->klen == 0 || g->klen > SP_MAX_KEY_BYTES ||
        g->klen > (uint64_t)(p->dir_end - q) || g->frame_len > p->frames_room - p->frames_end ||
        p->plain + g->plain_len > sst_packed_plain_max(p->block_size) ||
        (p->read > 0 && sp_key_cmp(p->prev, p->prev_len, q, g->klen) >= 0))
        return sp_errorf(err, "%s: corrupt group directory entry %u at byte %u of the block", what,
                         p->read, at);
    g->key = q;
    g->frame_off = p->frames_end;
    p->dir = q + g->klen;
    p->frames_end += g->frame_len;
    p->plain += g->plain_len;
    p->prev = g->key;
    p->prev_len = g->klen;
    if (++p->read == p->n_groups) {
        if (p->dir != p->dir_end)
            return sp_errorf(err, "%s: %u bytes follow the last group's directory entry", what,
                             (unsigned)(p->dir_end - p->dir));
        for (uint32_t i = p->frames_end; i < p->frames_room; i++)
            if (p->data[i])
                return sp_errorf(err, "%s: padding byte %u of the block is not zero", what, i);
    }
    return 0;
}

/* Decompresses group g into dst (g->plain_len bytes). */
static int unpack_group(const packed *p, const group *g, const packed_dict *d, uint8_t *dst,
                        const char *what, sp_error *err) {
    ZSTD_DCtx *c = thread_dctx();
    if (!c)
        return sp_errorf(err, "%s: out of memory for a decompression context", what);
    size_t r = ZSTD_DCtx_refDDict(c, d ? d->ddict : NULL);
    if (!ZSTD_isError(r))
        r = ZSTD_decompressDCtx(c, dst, g->plain_len, p->data + g->frame_off, g->frame_len);
    if (ZSTD_isError(r) || r != g->plain_len)
        return sp_errorf(err, "%s: group %u at byte %u does not decompress to its %u bytes (%s)",
                         what, p->read - 1, g->frame_off, g->plain_len,
                         ZSTD_isError(r) ? ZSTD_getErrorName(r) : "wrong length");
    return 0;
}

/* Group n's first entry stores its whole key, which must be the
 * directory's. */
static int check_first_key(const block_view *v, uint32_t pos, const group *g, uint32_t n,
                           const char *what, sp_error *err) {
    entry e;
    if (decode_entry(v, pos, 0, &e, what, err))
        return -1;
    if (e.shared != 0 || sp_key_cmp(e.suffix, e.unshared, g->key, g->klen) != 0)
        return sp_errorf(err, "%s: group %u's first key differs from its directory entry", what, n);
    return 0;
}

int packed_open(block_view *v, const uint8_t *data, uint32_t block_size, const packed_dict *d,
                block_plain *plain, const char *what, sp_error *err) {
    packed p;
    if (packed_begin(&p, data, block_size, what, err))
        return -1;
    /* The restart array follows the entries in the same buffer. */
    size_t cap = sst_packed_plain_max(block_size) + 4 * (size_t)p.n_groups;
    if (plain_reserve(plain, cap, what, err))
        return -1;
    uint8_t *restarts = plain->buf + sst_packed_plain_max(block_size);
    *v = (block_view){.data = plain->buf, .block_size = block_size, .n_records = p.n_records};
    for (uint32_t i = 0; i < p.n_groups; i++) {
        group g;
        uint32_t at = (uint32_t)p.plain;
        if (next_group(&p, &g, what, err) || unpack_group(&p, &g, d, plain->buf + at, what, err))
            return -1;
        sst_put_u32(restarts + 4 * i, at);
        v->entries_len = (uint32_t)p.plain;
        if (check_first_key(v, at, &g, i, what, err))
            return -1;
        v->n_restarts = i + 1;
    }
    v->restarts = restarts;
    return 0;
}

/* A group's one restart point: its first entry, at 0. */
static const uint8_t group_restart[4];

int packed_find_group(const uint8_t *data, uint32_t block_size, const packed_dict *d,
                      const uint8_t *first, uint32_t flen, block_plain *plain, const uint8_t *key,
                      size_t klen, packed_group_view *gv, const char *what, sp_error *err) {
    packed p;
    if (packed_begin(&p, data, block_size, what, err))
        return -1;
    /* The last group whose first key is <= key, and the one after it; the
     * directory is read to its end all the same, so that every lookup
     * checks it whole. */
    group g, hit = {0};
    uint32_t at = 0;
    bool found = false;
    gv->hi = NULL;
    gv->hi_len = 0;
    for (uint32_t i = 0; i < p.n_groups; i++) {
        if (next_group(&p, &g, what, err))
            return -1;
        if (i == 0 && sp_key_cmp(g.key, g.klen, first, flen) != 0)
            return sp_errorf(err, "%s: first key differs from the index", what);
        if (sp_key_cmp(g.key, g.klen, key, klen) <= 0) {
            hit = g;
            at = i;
            found = true;
        } else if (found && !gv->hi) {
            gv->hi = g.key;
            gv->hi_len = g.klen;
        }
    }
    if (!found)
        return 0;
    if (plain_reserve(plain, hit.plain_len, what, err) ||
        unpack_group(&p, &hit, d, plain->buf, what, err))
        return -1;
    uint32_t records = p.n_records - at * SST_RESTART_INTERVAL;
    gv->view =
        (block_view){.data = plain->buf,
                     .block_size = block_size,
                     .entries_len = hit.plain_len,
                     .n_records = records < SST_RESTART_INTERVAL ? records : SST_RESTART_INTERVAL,
                     .n_restarts = 1,
                     .restarts = group_restart};
    gv->lo = hit.key;
    gv->lo_len = hit.klen;
    return check_first_key(&gv->view, 0, &hit, at, what, err) ? -1 : 1;
}

int packed_find(const uint8_t *data, uint32_t block_size, const packed_dict *d,
                const uint8_t *first, uint32_t flen, block_plain *plain, const uint8_t *key,
                size_t klen, const void **value, size_t *vlen, const char *what, sp_error *err) {
    packed_group_view g;
    int rc = packed_find_group(data, block_size, d, first, flen, plain, key, klen, &g, what, err);
    if (rc != 1)
        return rc;
    uint8_t cur[SP_MAX_KEY_BYTES];
    return scan_entries(&g.view, 0, g.view.entries_len, cur, 0, key, klen, value, vlen, what, err);
}

/* ---------------------------------------------------------------- builder */

/* A finished group: its frame in frames, its first key. */
typedef struct packed_group {
    uint32_t frame_len, plain_len, klen;
    uint8_t key[SP_MAX_KEY_BYTES];
} packed_group;

/* A frame of the open group's first plain_len bytes: its buffer, of
 * ZSTD_compressBound(sst_packed_plain_max) bytes, and frame_len. */
typedef struct trial {
    uint8_t *buf;
    size_t frame_len;
    uint32_t plain_len;
} trial;

struct block_packer {
    uint32_t block_size;
    ZSTD_CCtx *cctx;
    ZSTD_CDict *cdict;
    uint8_t *frames; /* the finished groups' frames, frames_len bytes */
    uint32_t frames_len;
    uint32_t dir_len; /* their directory entries' bytes */
    packed_group *groups;
    uint32_t n_groups, max_groups;
    uint32_t n_records;
    uint64_t plain; /* plain bytes of every group, the open one's too */
    /* The open group: its entries, records, first key; fit, the last
     * compression of a prefix of it that fits the block (plain_len 0:
     * none since the group opened), and spare, a buffer for the next. */
    uint8_t *open;
    uint32_t open_len, open_records;
    trial fit, spare;
    /* The open group's first sure_len bytes fit by zstd's bound alone. */
    uint32_t sure_len;
    /* Frame and plain bytes of every group closed so far: the ratio a
     * record's entry is expected to compress at. */
    uint64_t seen_frames, seen_plain;
    uint32_t last_len;
    uint8_t last_key[SP_MAX_KEY_BYTES];
    /* Records taken back from a block (close_group) for the next: their
     * entries, each stored against the record before it, carry_key the
     * key before carry[carry_at]. */
    uint8_t *carry;
    size_t carry_at, carry_len, carry_cap;
    uint32_t carry_key_len;
    uint8_t carry_key[SP_MAX_KEY_BYTES];
    uint8_t *block; /* the finished block */
    uint64_t finished_plain;
};

block_packer *block_packer_init(uint32_t block_size, const uint8_t *dict, size_t dict_len,
                                int level, sp_error *err) {
    block_packer *p = calloc(1, sizeof *p);
    if (!p) {
        sp_errorf(err, "out of memory for a block builder");
        return NULL;
    }
    p->block_size = block_size;
    size_t plain_max = sst_packed_plain_max(block_size);
    /* A group is at least one record of at least 4 bytes of frame. */
    p->max_groups = block_size / 4 + 1;
    p->cctx = ZSTD_createCCtx();
    p->frames = malloc(block_size);
    p->groups = malloc(p->max_groups * sizeof *p->groups);
    p->open = malloc(plain_max);
    p->fit.buf = malloc(ZSTD_compressBound(plain_max));
    p->spare.buf = malloc(ZSTD_compressBound(plain_max));
    if (posix_memalign((void **)&p->block, 4096, block_size) != 0)
        p->block = NULL;
    if (!p->cctx || !p->frames || !p->groups || !p->open || !p->fit.buf || !p->spare.buf ||
        !p->block)
        goto fail;
    /* From level LAZY_FROM_LEVEL, a group's frame is searched at least as
     * hard as ZSTD_lazy does: a group is a few KiB, for which zstd's
     * tables give the default level a faster search that found fewer
     * matches (in the dictionary most of all), where lazy's made the
     * tables of issue 31's corpora and dumps a twentieth smaller for a
     * little more of a build's CPU. Frames stay standard ones. A CDict
     * made from the same parameters keeps them (ZSTD_createCDict's own
     * would supersede them). */
    ZSTD_CCtx_params *cp = ZSTD_createCCtxParams();
    ZSTD_compressionParameters cpar = ZSTD_getCParams(level, plain_max, dict_len);
    bool lazy = level >= LAZY_FROM_LEVEL && cpar.strategy < ZSTD_lazy;
    int bad =
        !cp || ZSTD_isError(ZSTD_CCtxParams_init(cp, level)) ||
        (lazy && ZSTD_isError(ZSTD_CCtxParams_setParameter(cp, ZSTD_c_strategy, ZSTD_lazy))) ||
        ZSTD_isError(ZSTD_CCtxParams_setParameter(cp, ZSTD_c_format, ZSTD_f_zstd1_magicless)) ||
        ZSTD_isError(ZSTD_CCtxParams_setParameter(cp, ZSTD_c_checksumFlag, 0)) ||
        ZSTD_isError(ZSTD_CCtxParams_setParameter(cp, ZSTD_c_contentSizeFlag, 0)) ||
        ZSTD_isError(ZSTD_CCtxParams_setParameter(cp, ZSTD_c_dictIDFlag, 0)) ||
        ZSTD_isError(ZSTD_CCtx_setParametersUsingCCtxParams(p->cctx, cp));
    if (!bad && dict_len)
        bad = !(p->cdict = ZSTD_createCDict_advanced2(dict, dict_len, ZSTD_dlm_byCopy,
                                                      ZSTD_dct_auto, cp, ZSTD_defaultCMem)) ||
              ZSTD_isError(ZSTD_CCtx_refCDict(p->cctx, p->cdict));
    ZSTD_freeCCtxParams(cp);
    if (bad)
        goto fail;
    return p;
fail:
    sp_errorf(err, "cannot set up zstd compression at level %d with a %zu-byte dictionary", level,
              dict_len);
    block_packer_destroy(p);
    return NULL;
}

/* Compresses the open group's first plain_len bytes into t. */
static int compress_open(block_packer *p, uint32_t plain_len, trial *t, sp_error *err) {
    size_t r =
        ZSTD_compress2(p->cctx, t->buf, ZSTD_compressBound(sst_packed_plain_max(p->block_size)),
                       p->open, plain_len);
    if (ZSTD_isError(r))
        return sp_errorf(err, "zstd compression of %u bytes failed: %s", plain_len,
                         ZSTD_getErrorName(r));
    t->frame_len = r;
    t->plain_len = plain_len;
    return 0;
}

/* The block's bytes besides the open group's frame: the finished groups,
 * the open group's directory entry at its longest, the trailer. */
static uint64_t fixed_bytes(const block_packer *p, uint32_t first_len) {
    return (uint64_t)p->frames_len + p->dir_len + 2 * SST_VARINT32_MAX + sst_varint_len(first_len) +
           first_len + SST_BLOCK_TRAILER_FIXED;
}

/* The open group's directory entry, its frame of frame_len bytes. */
static uint32_t open_dir_bytes(const block_packer *p, size_t frame_len) {
    return sst_varint_len(frame_len) + sst_varint_len(p->open_len) +
           sst_varint_len(p->groups[p->n_groups].klen) + p->groups[p->n_groups].klen;
}

/* Decodes the entry at pos of entries the builder wrote (so it decodes),
 * after key (key_len bytes), which becomes the entry's key. */
static entry next_entry(const uint8_t *buf, size_t len, size_t pos, uint8_t *key,
                        uint32_t *key_len) {
    block_view v = {.data = buf, .entries_len = (uint32_t)len};
    entry e = {0};
    sp_error ignored;
    (void)decode_entry(&v, (uint32_t)pos, *key_len, &e, "", &ignored);
    memcpy(key + e.shared, e.suffix, e.unshared);
    *key_len = e.shared + e.unshared;
    return e;
}

/* The records of the open group's entries before plain byte end, and the
 * last one's key (from the group's first entry, whose key is whole). */
static uint32_t open_walk(const block_packer *p, uint32_t end, uint8_t *key, uint32_t *key_len) {
    uint32_t records = 0;
    *key_len = 0;
    for (size_t pos = 0; pos < end; records++)
        pos = next_entry(p->open, p->open_len, pos, key, key_len).next;
    return records;
}

/* Takes the open group's entries from byte at on out of the block, in
 * front of the records carried already (which follow them). */
static int carry_tail(block_packer *p, uint32_t at, sp_error *err) {
    size_t tail = p->open_len - at, rest = p->carry_len - p->carry_at;
    if (tail + rest == 0) { /* nothing to carry (and maybe no buffer yet) */
        p->carry_at = p->carry_len = 0;
        return 0;
    }
    if (tail + rest > p->carry_cap) {
        size_t cap = tail + rest;
        uint8_t *c = malloc(cap);
        if (!c)
            return sp_errorf(err, "out of memory for %zu bytes of records", cap);
        if (rest) /* the first carry: no buffer before */
            memcpy(c + tail, p->carry + p->carry_at, rest);
        free(p->carry);
        p->carry = c;
        p->carry_cap = cap;
    } else {
        memmove(p->carry + tail, p->carry + p->carry_at, rest);
    }
    /* The first entry taken may store its key against the one before it. */
    memcpy(p->carry, p->open + at, tail);
    p->carry_at = 0;
    p->carry_len = tail + rest;
    return 0;
}

/* Keeps the longest prefix of the open group's entries whose frame fits
 * the block (fixed bytes besides it), in fit, and carries the others to
 * the next block; the whole group's frame did not fit. The entries after
 * the longest prefix known to fit (by the bound, or by a frame) are
 * halved: a prefix's frame grows with its entries, so that this finds
 * where a frame per record would have stopped. */
static int keep_prefix(block_packer *p, uint64_t fixed, sp_error *err) {
    uint32_t ends[SST_RESTART_INTERVAL], n = 0, lo = 0, hi = p->open_records;
    uint32_t known = p->fit.plain_len > p->sure_len ? p->fit.plain_len : p->sure_len;
    uint8_t key[SP_MAX_KEY_BYTES];
    uint32_t key_len = 0;
    for (size_t pos = 0; pos < p->open_len;) {
        pos = next_entry(p->open, p->open_len, pos, key, &key_len).next;
        ends[n++] = (uint32_t)pos;
        if (pos <= known)
            lo = n;
    }
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (compress_open(p, ends[mid - 1], &p->spare, err))
            return -1;
        if (fixed + p->spare.frame_len <= p->block_size) {
            trial t = p->fit;
            p->fit = p->spare;
            p->spare = t;
            lo = mid;
        } else {
            hi = mid;
        }
    }
    uint32_t keep = lo ? ends[lo - 1] : 0;
    if (keep && p->fit.plain_len != keep && compress_open(p, keep, &p->fit, err))
        return -1;
    if (carry_tail(p, keep, err))
        return -1;
    open_walk(p, keep, p->carry_key, &p->carry_key_len);
    p->n_records -= p->open_records - lo;
    p->plain -= p->open_len - keep;
    p->open_len = keep;
    p->open_records = lo;
    return 0;
}

/* Moves the open group (compressed) to the finished ones: 1, or 0 when its
 * frame does not fit the block after all (records were added by an
 * estimate of their frame, see add_one): then the group keeps the records
 * that fit (keep_prefix), possibly none, and the block ends. */
static int close_group(block_packer *p, sp_error *err) {
    int closed = 1;
    if (p->fit.plain_len != p->open_len) {
        uint64_t fixed = fixed_bytes(p, p->groups[p->n_groups].klen);
        if (compress_open(p, p->open_len, &p->spare, err))
            return -1;
        if (fixed + p->spare.frame_len <= p->block_size || p->sure_len == p->open_len) {
            trial t = p->fit;
            p->fit = p->spare;
            p->spare = t;
        } else {
            if (keep_prefix(p, fixed, err))
                return -1;
            closed = 0;
        }
    }
    if (p->open_records) {
        packed_group *g = &p->groups[p->n_groups];
        g->frame_len = (uint32_t)p->fit.frame_len;
        g->plain_len = p->open_len;
        p->dir_len += open_dir_bytes(p, p->fit.frame_len);
        memcpy(p->frames + p->frames_len, p->fit.buf, p->fit.frame_len);
        p->frames_len += (uint32_t)p->fit.frame_len;
        p->n_groups++;
        p->seen_frames += p->fit.frame_len;
        p->seen_plain += p->open_len;
    }
    p->open_len = p->open_records = 0;
    p->fit.plain_len = p->sure_len = 0;
    return closed;
}

/* Whether the open group's first plain bytes are expected to fit, fixed
 * bytes besides their frame: the last frame that fit, and the entries
 * after it at the ratio of the groups closed so far, an eighth and a few
 * bytes more (before any: zstd's bound, they fit surely). */
static bool expect_fit(const block_packer *p, uint64_t fixed, size_t plain) {
    uint64_t delta = plain - p->fit.plain_len, grown;
    if (p->seen_plain)
        grown = delta * p->seen_frames * 9 / (p->seen_plain * 8) + 16;
    else
        grown = ZSTD_COMPRESSBOUND(delta);
    return fixed + p->fit.frame_len + grown <= p->block_size;
}

/* Adds one record to the open group (closing it first when full): 1, 0
 * when the block is full (the record not added), -1. */
static int add_one(block_packer *p, const uint8_t *key, size_t klen, const uint8_t *val,
                   size_t vlen, sp_error *err) {
    if (p->open_records == SST_RESTART_INTERVAL) {
        int rc = close_group(p, err);
        if (rc <= 0)
            return rc;
    }
    bool starts = p->open_records == 0;
    size_t shared = starts ? 0 : entry_shared_prefix(p->last_key, p->last_len, key, klen);
    size_t unshared = klen - shared;
    size_t ebytes =
        sst_varint_len(shared) + sst_varint_len(unshared) + sst_varint_len(vlen) + unshared + vlen;
    if (p->plain + ebytes > sst_packed_plain_max(p->block_size))
        return 0;
    packed_group *g = &p->groups[p->n_groups];
    uint64_t fixed = fixed_bytes(p, starts ? (uint32_t)klen : g->klen);
    size_t plain = p->open_len + ebytes;
    /* The entry is written after the open entries either way: a record
     * that does not fit leaves them as they were (open_len unchanged). */
    uint8_t *e = p->open + p->open_len;
    e += sst_put_varint(e, shared);
    e += sst_put_varint(e, unshared);
    e += sst_put_varint(e, vlen);
    memcpy(e, key + shared, unshared);
    memcpy(e + unshared, val, vlen);
    /* The record fits surely when the whole group would, incompressible;
     * else it is added when its frame is expected to fit (expect_fit),
     * checked when the group's frame is made (close_group); else a frame
     * of the group with the record decides. So a block's groups are
     * compressed about once, and again near its end, not once a record. */
    if (fixed + ZSTD_COMPRESSBOUND(plain) <= p->block_size) {
        p->sure_len = (uint32_t)plain;
    } else if (p->n_records == 0) {
        return sp_errorf(err, "a record of %zu bytes does not fit an empty block of %u",
                         klen + vlen, p->block_size);
    } else if (!expect_fit(p, fixed, plain)) {
        if (compress_open(p, (uint32_t)plain, &p->spare, err))
            return -1;
        if (fixed + p->spare.frame_len > p->block_size)
            return 0;
        trial t = p->fit;
        p->fit = p->spare;
        p->spare = t;
    }
    p->open_len = (uint32_t)plain;
    if (starts) {
        g->klen = (uint32_t)klen;
        memcpy(g->key, key, klen);
    }
    p->open_records++;
    p->n_records++;
    p->plain += ebytes;
    memcpy(p->last_key + shared, key + shared, unshared);
    p->last_len = (uint32_t)klen;
    return 1;
}

/* Adds the carried records, in order: 1 when none is left, 0 when the
 * block is full first, -1. */
static int add_carried(block_packer *p, sp_error *err) {
    while (p->carry_at < p->carry_len) {
        uint8_t key[SP_MAX_KEY_BYTES];
        uint32_t klen = p->carry_key_len;
        memcpy(key, p->carry_key, klen);
        entry e = next_entry(p->carry, p->carry_len, p->carry_at, key, &klen);
        int rc = add_one(p, key, klen, e.suffix + e.unshared, e.value_len, err);
        if (rc <= 0)
            return rc;
        memcpy(p->carry_key, key, klen);
        p->carry_key_len = klen;
        p->carry_at = e.next;
    }
    p->carry_at = p->carry_len = 0;
    return 1;
}

int block_packer_add(block_packer *p, const uint8_t *key, size_t klen, const uint8_t *val,
                     size_t vlen, sp_error *err) {
    int rc = add_carried(p, err);
    return rc <= 0 ? rc : add_one(p, key, klen, val, vlen, err);
}

bool block_packer_empty(const block_packer *p) {
    return p->n_records == 0 && p->carry_at == p->carry_len;
}

const uint8_t *block_packer_finish(block_packer *p, sp_error *err) {
    if (p->n_records == 0 && add_carried(p, err) < 0)
        return NULL;
    if (p->open_records && close_group(p, err) < 0)
        return NULL;
    uint32_t bs = p->block_size;
    uint8_t *b = p->block;
    memcpy(b, p->frames, p->frames_len);
    uint32_t dir_at = bs - SST_BLOCK_TRAILER_FIXED - p->dir_len;
    memset(b + p->frames_len, 0, dir_at - p->frames_len);
    uint8_t *q = b + dir_at;
    for (uint32_t i = 0; i < p->n_groups; i++) {
        const packed_group *g = &p->groups[i];
        q += sst_put_varint(q, g->frame_len);
        q += sst_put_varint(q, g->plain_len);
        q += sst_put_varint(q, g->klen);
        memcpy(q, g->key, g->klen);
        q += g->klen;
    }
    uint8_t *t = b + bs - SST_BLOCK_TRAILER_FIXED;
    sst_put_u32(t, p->dir_len);
    sst_put_u32(t + 4, p->n_records);
    sst_put_u32(t + 8, p->n_groups);
    sst_put_u64(t + 12, XXH3_64bits(b, bs - 8));
    p->finished_plain = p->plain;
    return b;
}

const uint8_t *block_packer_first(const block_packer *p, uint32_t *klen) {
    *klen = p->groups[0].klen;
    return p->groups[0].key;
}

uint64_t block_packer_plain(const block_packer *p) {
    return p->finished_plain;
}

void block_packer_reset(block_packer *p) {
    p->frames_len = p->dir_len = p->n_groups = p->n_records = 0;
    p->open_len = p->open_records = p->last_len = 0;
    p->fit.plain_len = p->sure_len = 0;
    p->plain = 0;
}

void block_packer_destroy(block_packer *p) {
    if (!p)
        return;
    ZSTD_freeCCtx(p->cctx);
    ZSTD_freeCDict(p->cdict);
    free(p->frames);
    free(p->groups);
    free(p->open);
    free(p->fit.buf);
    free(p->spare.buf);
    free(p->carry);
    free(p->block);
    free(p);
}
