/*
 * verify.c: the full check of one SSTable file; see verify.h.
 *
 * Every byte of the file belongs to exactly one of: a data block (covered by
 * its checksum), the zero tail of the data region, the index region (index
 * checksum) and the footer region (footer checksum, magic). Checking all
 * four therefore catches any single-byte change; the structural checks on
 * top (key order, index against blocks, counts, bounds, UTF-8) catch files
 * a buggy writer produced with matching checksums.
 *
 * Each region is read once, in large sequential reads: the index first (it
 * is small and the blocks are compared against it), then the data region
 * (verify_blocks.c: read ahead of the check and checked on two threads),
 * then the footer region. The only per-byte work is the block hash, the
 * UTF-8 check of keys and values, and the zero check of padding.
 *
 * When the footer is not where it belongs (a truncated file, bytes appended,
 * a damaged end) the file is still checked as far as it can be: a footer
 * found earlier in the file is used with the extra bytes reported, or, with
 * no footer at all, the data blocks are walked from the start with the block
 * size that makes block 0 valid.
 */
#include "stages/verify/verify.h"

#include "stages/verify/verify_check.h"
#include "stages/verify/verify_problems.h"

#include "stages/common/clock.h"
#include "stages/common/fileio.h"
#include "stages/common/record.h"
#include "stages/common/title_rules.h"
#include "stages/sst/block.h"
#include "stages/sst/coding.h"
#include "stages/sst/format.h"
#include "stages/sst/table_reader.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

static int read_at(checker *c, uint8_t *buf, size_t n, uint64_t off, sp_error *err) {
    if (sp_pread_exact(c->fd, buf, n, off, c->rep->path, err))
        return -1;
    c->rep->bytes += n;
    return 0;
}

/* ---------------------------------------------------------------- footer */

/* XXH3-64 of the footer region up to footer_checksum, reading it in chunks;
 * also reports non-zero bytes before the footer. Reads count as the
 * footer region's one read when count is set. */
static int footer_region_hash(checker *c, uint64_t end, uint32_t cs, bool count, uint64_t *hash,
                              sp_error *err) {
    XXH3_state_t *st = XXH3_createState();
    if (!st)
        return sp_errorf(err, "%s: out of memory", c->rep->path);
    XXH3_64bits_reset(st);
    uint64_t start = end - cs, off = start;
    bool zeros_ok = true;
    int rc = 0;
    while (off < end) {
        size_t n = (size_t)(end - off < c->buf_cap ? end - off : c->buf_cap);
        if (count ? read_at(c, c->buf, n, off, err)
                  : sp_pread_exact(c->fd, c->buf, n, off, c->rep->path, err)) {
            rc = -1;
            break;
        }
        uint64_t hashed_end = end - (SST_FOOTER_BYTES - SST_FOOTER_CHECKSUM);
        if (off < hashed_end)
            XXH3_64bits_update(st, c->buf, (size_t)(hashed_end - off < n ? hashed_end - off : n));
        uint64_t zero_end = end - SST_FOOTER_BYTES;
        if (count && zeros_ok && off < zero_end) {
            size_t m = (size_t)(zero_end - off < n ? zero_end - off : n);
            size_t nz = first_nonzero(c->buf, m);
            if (nz < m) {
                checker_problem(c, -1, off + nz, "non-zero byte in the footer region's padding");
                zeros_ok = false;
            }
        }
        off += n;
    }
    *hash = XXH3_64bits_digest(st);
    XXH3_freeState(st);
    return rc;
}

/*
 * Decodes the footer that ends at byte end. With trust_position (it is at
 * the very end of the file) a damaged footer is still used and its faults
 * become problems; otherwise (a candidate found inside the file) it must be
 * entirely valid. Returns 1 usable, 0 not, -1 on I/O error.
 */
static int footer_at(checker *c, uint64_t end, bool trust_position, sp_error *err) {
    uint8_t raw[SST_FOOTER_BYTES];
    if (end < SST_FOOTER_BYTES ||
        sp_pread_exact(c->fd, raw, sizeof raw, end - SST_FOOTER_BYTES, c->rep->path, err))
        return end < SST_FOOTER_BYTES ? 0 : -1;
    uint64_t foff = end - SST_FOOTER_BYTES;
    bool magic_ok = memcmp(raw + SST_FOOTER_MAGIC, SST_MAGIC, 8) == 0;
    if (!magic_ok && !trust_position)
        return 0;
    /* sst_footer_decode checks magic, version and reserved bytes; decode a
     * copy with those three normalised so the fields are read even when
     * one of them is damaged, and report the damage ourselves. */
    uint8_t norm[SST_FOOTER_BYTES];
    memcpy(norm, raw, sizeof norm);
    memcpy(norm + SST_FOOTER_MAGIC, SST_MAGIC, 8);
    sst_put_u32(norm + SST_FOOTER_BLOCK_SIZE + 16, SST_FORMAT_VERSION);
    memset(norm + SST_FOOTER_RESERVED, 0, 8);
    sp_error derr = {0};
    if (sst_footer_decode(norm, &c->f, c->rep->path, &derr))
        return 0;
    const sst_footer *f = &c->f;
    if (!sst_pow2_in(f->cluster_size, SST_MIN_CLUSTER_SIZE, SST_MAX_CLUSTER_SIZE) ||
        f->cluster_size > end)
        return trust_position && magic_ok ? 1 : 0;
    /* A footer at the end with its magic is used as it is (its checksum is
     * checked with the region later); any other must prove itself now. */
    if (trust_position && magic_ok)
        goto faults;
    uint64_t hash;
    if (footer_region_hash(c, end, f->cluster_size, false, &hash, err))
        return -1;
    if (!trust_position && (hash != f->footer_checksum || f->file_size != end ||
                            sst_get_u32(raw + SST_FOOTER_BLOCK_SIZE + 16) != SST_FORMAT_VERSION))
        return 0;
    /* At the end of the file, a damaged magic is believed to be damage only
     * when the rest of the footer proves itself through its checksum. */
    if (!magic_ok && hash != f->footer_checksum)
        return 0;
faults:
    if (!magic_ok)
        checker_problem(c, -1, foff + SST_FOOTER_MAGIC, "footer magic is not \"%s\"", SST_MAGIC);
    uint32_t version = sst_get_u32(raw + SST_FOOTER_BLOCK_SIZE + 16);
    if (version != SST_FORMAT_VERSION)
        checker_problem(c, -1, foff + SST_FOOTER_BLOCK_SIZE + 16,
                        "footer format version %u (expected %u)", version, SST_FORMAT_VERSION);
    if (sst_get_u64(raw + SST_FOOTER_RESERVED) != 0)
        checker_problem(c, -1, foff + SST_FOOTER_RESERVED, "footer reserved bytes are not zero");
    return 1;
}

/* Footer ends remembered by the search; more would mean many values
 * holding the magic text, and the last ones are the likely footers. */
#define MAX_CANDIDATES 64

/* The bytes [0, size) searched for a footer that validates; the last one
 * wins (a value may contain the magic text, but not a valid footer). */
static int find_inner_footer(checker *c, sp_error *err) {
    uint64_t cand[MAX_CANDIDATES];
    size_t n_cand = 0;
    uint64_t off = 0;
    size_t carry = 0; /* bytes kept from the previous chunk, so a split magic is seen */
    while (off < c->size) {
        size_t n = (size_t)(c->size - off < c->buf_cap - 8 ? c->size - off : c->buf_cap - 8);
        if (sp_pread_exact(c->fd, c->buf + carry, n, off, c->rep->path, err))
            return -1;
        const uint8_t *p = c->buf, *lim = c->buf + carry + n;
        uint64_t base = off - carry;
        while ((p = memmem(p, (size_t)(lim - p), SST_MAGIC, 8)) != NULL) {
            cand[n_cand++ % MAX_CANDIDATES] = base + (uint64_t)(p - c->buf) + 8;
            p++;
        }
        off += n;
        carry = carry + n < 7 ? carry + n : 7;
        memmove(c->buf, lim - carry, carry);
    }
    size_t kept = n_cand < MAX_CANDIDATES ? n_cand : MAX_CANDIDATES;
    for (size_t k = 0; k < kept; k++) {
        int r = footer_at(c, cand[(n_cand - 1 - k) % MAX_CANDIDATES], false, err);
        if (r != 0)
            return r;
    }
    return 0;
}

/* The block size that makes the first bytes of the file a valid block, or 0. */
static uint32_t guess_block_size(checker *c, sp_error *err, int *rc) {
    *rc = 0;
    for (uint64_t bs = SST_MIN_BLOCK_SIZE; bs <= SST_MAX_BLOCK_SIZE && bs <= c->size; bs *= 2) {
        if (sp_pread_exact(c->fd, c->buf, (size_t)bs, 0, c->rep->path, err)) {
            *rc = -1;
            return 0;
        }
        block_view v;
        sp_error e = {0};
        if (block_open(&v, c->buf, (uint32_t)bs, "", &e) == 0)
            return (uint32_t)bs;
    }
    return 0;
}

/* ---------------------------------------------------------------- index */

static void parse_index(checker *c, uint64_t ioff) {
    const sst_footer *f = &c->f;
    const uint8_t *p = c->index, *end = c->index + f->index_length;
    uint64_t cap = f->data_blocks < (f->index_length / 2) ? f->data_blocks : f->index_length / 2;
    c->entries = calloc(cap ? cap : 1, sizeof *c->entries);
    if (!c->entries) {
        checker_problem(c, -1, ioff, "index too large to hold in memory (%llu entries)",
                        (unsigned long long)f->data_blocks);
        return;
    }
    while (p < end) {
        uint64_t at = ioff + (uint64_t)(p - c->index);
        uint32_t klen;
        uint64_t off;
        const uint8_t *k = sst_get_varint32(p, end, &klen), *q = NULL;
        if (k && klen > 0 && klen <= SP_MAX_KEY_BYTES && (uint64_t)(end - k) >= klen)
            q = sst_get_varint(k + klen, end, SST_VARINT64_MAX, &off);
        if (!q) {
            checker_problem(c, -1, at, "corrupt index entry %llu",
                            (unsigned long long)c->n_entries);
            return;
        }
        if (c->n_entries == cap) {
            checker_problem(c, -1, at, "index has more entries than the footer's %llu data blocks",
                            (unsigned long long)f->data_blocks);
            return;
        }
        uint64_t i = c->n_entries++;
        if (off != i * c->bs)
            checker_problem(c, (int64_t)i, at, "index entry %llu points at byte %llu, not %llu",
                            (unsigned long long)i, (unsigned long long)off,
                            (unsigned long long)(i * c->bs));
        c->entries[i] = (index_entry){.key = k, .klen = klen, .offset = off};
        p = q;
    }
    if (c->n_entries != f->data_blocks)
        checker_problem(c, -1, ioff + f->index_length,
                        "index has %llu entries, the footer says %llu data blocks",
                        (unsigned long long)c->n_entries, (unsigned long long)f->data_blocks);
}

/* Reads the index region: its checksum, its zero padding, its entries. */
static int check_index(checker *c, sp_error *err) {
    const sst_footer *f = &c->f;
    c->index = malloc(f->index_length ? f->index_length : 1);
    XXH3_state_t *st = XXH3_createState();
    if (!c->index || !st) {
        XXH3_freeState(st);
        return sp_errorf(err, "%s: out of memory for the index (%llu bytes)", c->rep->path,
                         (unsigned long long)f->index_length);
    }
    XXH3_64bits_reset(st);
    bool zeros_ok = true;
    for (uint64_t done = 0; done < f->index_region_length;) {
        uint64_t left = f->index_region_length - done;
        size_t n = (size_t)(left < c->buf_cap ? left : c->buf_cap);
        if (read_at(c, c->buf, n, f->index_offset + done, err)) {
            XXH3_freeState(st);
            return -1;
        }
        XXH3_64bits_update(st, c->buf, n);
        size_t in_index = done < f->index_length
                              ? (size_t)(f->index_length - done < n ? f->index_length - done : n)
                              : 0;
        memcpy(c->index + done, c->buf, in_index);
        size_t nz = first_nonzero(c->buf + in_index, n - in_index);
        if (zeros_ok && nz < n - in_index) {
            checker_problem(c, -1, f->index_offset + done + in_index + nz,
                            "non-zero byte in the index region's padding");
            zeros_ok = false;
        }
        done += n;
    }
    uint64_t hash = XXH3_64bits_digest(st);
    XXH3_freeState(st);
    if (hash != f->index_checksum)
        checker_problem(c, -1, f->index_offset,
                        "index checksum mismatch (stored %016llx, computed %016llx)",
                        (unsigned long long)f->index_checksum, (unsigned long long)hash);
    parse_index(c, f->index_offset);
    return 0;
}

/* ---------------------------------------------------------------- blocks */

/* The zero bytes between the last block and the index region. */
static int check_data_tail(checker *c, uint64_t from, uint64_t to, sp_error *err) {
    for (uint64_t off = from; off < to;) {
        size_t n = (size_t)(to - off < c->buf_cap ? to - off : c->buf_cap);
        if (read_at(c, c->buf, n, off, err))
            return -1;
        size_t nz = first_nonzero(c->buf, n);
        if (nz < n) {
            checker_problem(c, -1, off + nz,
                            "non-zero byte in the padding after the last data block");
            return 0;
        }
        off += n;
    }
    return 0;
}

/* ---------------------------------------------------------------- the file */

/* Footer fields against each other and against the file; false when the
 * geometry is too broken to read the regions by. */
static bool check_footer_fields(checker *c) {
    const sst_footer *f = &c->f;
    uint64_t foff = c->end - SST_FOOTER_BYTES;
    if (!sst_pow2_in(f->block_size, SST_MIN_BLOCK_SIZE, SST_MAX_BLOCK_SIZE)) {
        checker_problem(c, -1, foff + SST_FOOTER_BLOCK_SIZE,
                        "footer block size %u is not a power of two "
                        "from 512 to 1M",
                        f->block_size);
        return false;
    }
    if (!sst_pow2_in(f->cluster_size, SST_MIN_CLUSTER_SIZE, SST_MAX_CLUSTER_SIZE) ||
        f->cluster_size > c->end) {
        checker_problem(
            c, -1, foff + SST_FOOTER_BLOCK_SIZE + 4,
            "footer cluster size %u is not a power of two from 512 to 1G within the file",
            f->cluster_size);
        return false;
    }
    c->bs = f->block_size;
    c->max_value = f->max_value_bytes;
    sp_error e = {0};
    if (sst_check_fit(f->block_size, f->max_value_bytes, &e))
        checker_problem(c, -1, foff + SST_FOOTER_BLOCK_SIZE + 8, "footer value bound: %s", e.msg);
    if (f->restart_interval != SST_RESTART_INTERVAL)
        checker_problem(c, -1, foff + SST_FOOTER_BLOCK_SIZE + 12,
                        "footer restart interval %u (expected %u)", f->restart_interval,
                        SST_RESTART_INTERVAL);
    if (f->checksum_type != SST_CHECKSUM_XXH3_64)
        checker_problem(c, -1, foff + SST_FOOTER_BLOCK_SIZE + 20,
                        "footer checksum type %u (expected %u)", f->checksum_type,
                        SST_CHECKSUM_XXH3_64);
    uint64_t cs = f->cluster_size;
    bool ok = true;
    if (f->data_blocks > c->end / c->bs ||
        f->data_region_length != sst_align_up(f->data_blocks * c->bs, cs)) {
        checker_problem(c, -1, foff + SST_FOOTER_DATA_REGION_LENGTH,
                        "footer data region of %llu bytes does not hold %llu blocks of %u bytes "
                        "padded to the cluster size",
                        (unsigned long long)f->data_region_length,
                        (unsigned long long)f->data_blocks, c->bs);
        ok = false;
    }
    if (f->index_offset != f->data_region_length || f->index_offset % cs) {
        checker_problem(
            c, -1, foff, "footer index offset %llu is not the end of the data region (%llu)",
            (unsigned long long)f->index_offset, (unsigned long long)f->data_region_length);
        ok = false;
    }
    if (f->index_length > f->index_region_length ||
        f->index_region_length != sst_align_up(f->index_length, cs)) {
        checker_problem(c, -1, foff + 16,
                        "footer index region of %llu bytes does not hold %llu bytes "
                        "padded to the cluster size",
                        (unsigned long long)f->index_region_length,
                        (unsigned long long)f->index_length);
        ok = false;
    }
    if (f->file_size != c->end) {
        checker_problem(c, -1, foff + 56, "footer says the file has %llu bytes; it has %llu",
                        (unsigned long long)f->file_size, (unsigned long long)c->end);
    }
    if (ok && f->index_offset + f->index_region_length + cs != c->end) {
        checker_problem(c, -1, foff,
                        "regions (data %llu, index %llu, footer %llu bytes) do not add up "
                        "to the file's %llu bytes",
                        (unsigned long long)f->data_region_length,
                        (unsigned long long)f->index_region_length, (unsigned long long)cs,
                        (unsigned long long)c->end);
        ok = false;
    }
    return ok;
}

static void check_counts(checker *c) {
    const sst_footer *f = &c->f;
    uint64_t foff = c->end - SST_FOOTER_BYTES;
    if (c->unreadable_blocks)
        return; /* the sums are short by the unreadable blocks, already reported */
    if (c->records != f->records)
        checker_problem(c, -1, foff + 32, "footer says %llu records; the blocks hold %llu",
                        (unsigned long long)f->records, (unsigned long long)c->records);
    if (c->key_bytes != f->key_bytes)
        checker_problem(c, -1, foff + 40, "footer says %llu key bytes; the blocks hold %llu",
                        (unsigned long long)f->key_bytes, (unsigned long long)c->key_bytes);
    if (c->value_bytes != f->value_bytes)
        checker_problem(c, -1, foff + 48, "footer says %llu value bytes; the blocks hold %llu",
                        (unsigned long long)f->value_bytes, (unsigned long long)c->value_bytes);
}

/* A shard of a table set: its footer's options are the set's and its
 * records and size the manifest's (every key against the range is in
 * verify_blocks.c). */
static void check_against_manifest(checker *c) {
    const verify_options *o = &c->rep->opts;
    const sst_footer *f = &c->f;
    uint64_t foff = c->end - SST_FOOTER_BYTES;
    const table_set_options *so = o->set_options;
    if (so &&
        (f->block_size != so->block_size || f->cluster_size != so->cluster_size ||
         f->max_value_bytes != so->max_value_bytes || f->restart_interval != so->restart_interval ||
         f->format_version != so->format_version))
        checker_problem(c, -1, foff + SST_FOOTER_BLOCK_SIZE,
                        "options (block_size %u, cluster_size %u, max_value_bytes %u) are not "
                        "those of the set in %s (%u, %u, %u)",
                        f->block_size, f->cluster_size, f->max_value_bytes, o->tableset,
                        so->block_size, so->cluster_size, so->max_value_bytes);
    if (f->records != o->shard->records)
        checker_problem(c, -1, foff + 32, "footer says %llu records; %s says %llu for %s",
                        (unsigned long long)f->records, o->tableset,
                        (unsigned long long)o->shard->records, o->shard->file);
}

/* A file whose footer is usable: every region, in file order after the index. */
static int check_with_footer(checker *c, sp_error *err) {
    const sst_footer *f = &c->f;
    if (!check_footer_fields(c)) {
        /* Only the footer region can still be trusted to be where it is. */
        uint64_t hash;
        if (!sst_pow2_in(f->cluster_size, SST_MIN_CLUSTER_SIZE, SST_MAX_CLUSTER_SIZE) ||
            f->cluster_size > c->end)
            return 0;
        if (footer_region_hash(c, c->end, f->cluster_size, true, &hash, err))
            return -1;
        if (hash != f->footer_checksum)
            checker_problem(c, -1, c->end - SST_FOOTER_BYTES + SST_FOOTER_CHECKSUM,
                            "footer checksum mismatch");
        return 0;
    }
    /* The buffer holds at least one largest block; reads of data are whole blocks. */
    c->buf_cap = c->buf_cap / c->bs * c->bs;
    if (check_index(c, err) || check_blocks(c, f->data_blocks, false, err) ||
        check_data_tail(c, f->data_blocks * c->bs, f->data_region_length, err))
        return -1;
    uint64_t hash;
    if (footer_region_hash(c, c->end, f->cluster_size, true, &hash, err))
        return -1;
    if (hash != f->footer_checksum)
        checker_problem(c, -1, c->end - SST_FOOTER_BYTES + SST_FOOTER_CHECKSUM,
                        "footer checksum mismatch (stored %016llx, computed %016llx)",
                        (unsigned long long)f->footer_checksum, (unsigned long long)hash);
    check_counts(c);
    if (c->rep->opts.shard)
        check_against_manifest(c);
    return 0;
}

/* A shard's size and XXH3-128 against its manifest entry: a second read. */
static int check_shard_file(checker *c, sp_error *err) {
    const verify_options *o = &c->rep->opts;
    if (c->size != o->shard->bytes)
        checker_problem(c, -1, c->size, "the file has %llu bytes; %s says %llu for %s",
                        (unsigned long long)c->size, o->tableset,
                        (unsigned long long)o->shard->bytes, o->shard->file);
    char sum[TABLE_SET_CHECKSUM_HEX];
    if (table_set_file_checksum(c->rep->path, sum, err))
        return -1;
    if (strcmp(sum, o->shard->checksum) != 0)
        checker_problem(c, -1, 0, "file checksum mismatch: %s says XXH3-128 %s, the file has %s",
                        o->tableset, o->shard->checksum, sum);
    return 0;
}

/* A title index (a FILE.titles whose first record holds title rules)
 * against the table beside it: one built for another table, which readers
 * ignore, is a problem of the index. Anything else is no title index, or
 * has no table to compare with, and is left as it is. */
static void check_title_index(checker *c) {
    const char *path = c->rep->path;
    size_t n = strlen(path), sn = strlen(SP_TITLES_SUFFIX);
    if (n <= sn || strcmp(path + n - sn, SP_TITLES_SUFFIX) != 0)
        return;
    char *table = strndup(path, n - sn);
    sp_error ignored = {0};
    sst_reader *x = sst_reader_open(path, &ignored);
    sst_reader *t = table ? sst_reader_open(table, &ignored) : NULL;
    const void *v;
    size_t vlen;
    sp_title_rules rules;
    if (x && t &&
        sst_reader_get(x, SP_TITLES_RULES_KEY, SP_TITLES_RULES_KEY_LEN, &v, &vlen, &ignored) == 1 &&
        sp_title_rules_decode(v, vlen, &rules) == 0) {
        sp_table_identity have = sst_reader_identity(t);
        if (!sp_table_identity_equal(&rules.table, &have))
            checker_problem(c, -1, 0,
                            "title index built for another table than %s (for %llu bytes, footer "
                            "checksum %016llx; it has %llu bytes, %016llx): lookups ignore it",
                            table, (unsigned long long)rules.table.file_size,
                            (unsigned long long)rules.table.footer_checksum,
                            (unsigned long long)have.file_size,
                            (unsigned long long)have.footer_checksum);
    }
    sst_reader_close(t);
    sst_reader_close(x);
    free(table);
}

static int check_file(checker *c, sp_error *err) {
    c->end = c->size;
    int r = footer_at(c, c->size, true, err);
    if (r < 0)
        return -1;
    if (r == 1)
        return check_with_footer(c, err);
    r = find_inner_footer(c, err);
    if (r < 0)
        return -1;
    if (r == 1) {
        c->end = c->f.file_size;
        checker_problem(c, -1, c->end, "%llu bytes follow the footer that ends at byte %llu",
                        (unsigned long long)(c->size - c->end), (unsigned long long)c->end);
        return check_with_footer(c, err);
    }
    uint32_t bs = guess_block_size(c, err, &r);
    if (r)
        return -1;
    if (!bs)
        return sp_errorf(err, "%s: not an sstpipe SSTable (no footer, and no valid first block)",
                         c->rep->path);
    checker_problem(
        c, -1, c->size,
        "no footer at the end of the file (%llu bytes): the file is truncated or its end "
        "is damaged",
        (unsigned long long)c->size);
    c->bs = bs;
    c->max_value = UINT64_MAX;
    c->rep->bytes = 0;
    c->buf_cap = c->buf_cap / bs * bs;
    return check_blocks(c, c->size / bs, true, err);
}

static int by_offset(const void *a, const void *b) {
    const verify_problem *x = a, *y = b;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

int verify_file(const char *path, verify_report *rep, sp_error *err) {
    double t0 = sp_clock_seconds();
    rep->path = strdup(path);
    if (!rep->path)
        return sp_errorf(err, "%s: out of memory", path);
    checker c = {.rep = rep, .fd = -1, .max_value = UINT64_MAX};
    struct stat st;
    int rc = -1;
    c.fd = open(path, O_RDONLY | O_CLOEXEC);
    if (c.fd < 0) {
        sp_errorf_errno(err, "%s: cannot open", path);
        goto out;
    }
    if (fstat(c.fd, &st)) {
        sp_errorf_errno(err, "%s: cannot stat", path);
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        sp_errorf(err, "%s: not a regular file", path);
        goto out;
    }
    c.size = (uint64_t)st.st_size;
    if (rep->opts.progress) {
        sp_progress_store(&rep->opts.progress->total_bytes, c.size);
        sp_progress_phase(rep->opts.progress, SP_PHASE_CHECKING);
    }
    posix_fadvise(c.fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    /* Room for the largest block, the read size, and an 8-byte carry. */
    c.buf_cap = rep->opts.read_size > SST_MAX_BLOCK_SIZE ? rep->opts.read_size : SST_MAX_BLOCK_SIZE;
    c.buf_cap += 8;
    c.buf = sp_io_alloc(c.buf_cap);
    if (!c.buf) {
        sp_errorf(err, "%s: out of memory for a %zu-byte read buffer", path, c.buf_cap);
        goto out;
    }
    rc = check_file(&c, err);
    if (rc == 0 && rep->opts.shard)
        rc = check_shard_file(&c, err);
    if (rc == 0 && !rep->opts.shard)
        check_title_index(&c);
    rep->records = c.records;
    if (rep->opts.progress) {
        sp_progress_store(&rep->opts.progress->in_bytes, rep->bytes);
        sp_progress_store(&rep->opts.progress->records, c.records);
    }
    /* Found index first, then data, then footer; reported in file order. */
    if (rep->n_problems > 1)
        qsort(rep->problems, rep->n_problems, sizeof *rep->problems, by_offset);
out:
    if (rc)
        rep->error = strdup(err->msg);
    if (c.fd >= 0)
        close(c.fd);
    free(c.buf);
    free(c.index);
    free(c.entries);
    rep->seconds = sp_clock_seconds() - t0;
    rep->mb_per_s = rep->seconds > 0 ? (double)rep->bytes / 1e6 / rep->seconds : 0;
    return rc;
}
