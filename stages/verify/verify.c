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
 * The file's structure (the footer's fields, the regions' checksums and
 * padding, the index entries) is the table check's (stages/sst/table_check.h),
 * the same rules every opener runs, here in the mode that collects every
 * problem; this file adds what only a full check needs: the data blocks
 * against the index (verify_blocks.c), the footer's counts against the
 * blocks, a shard against its manifest, and a damaged end.
 *
 * Each region is read in large sequential reads: the footer region and the
 * index first (they are small and the blocks are compared against the
 * index; the index is walked a buffer at a time, and each chunk's entries
 * are read again with the chunk's blocks), then the data region
 * (verify_blocks.c: read ahead of the check and checked on two threads)
 * and its zero tail. The only per-byte
 * work is the block hash, the UTF-8 check of keys and values, and the zero
 * check of padding.
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
#include "stages/common/title_lists.h"
#include "stages/common/title_rules.h"
#include "stages/sst/block.h"
#include "stages/sst/block_source.h"
#include "stages/sst/cursor.h"
#include "stages/sst/format.h"
#include "stages/sst/table_check.h"
#include "stages/sst/table_reader.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/*
 * Whether the footer that ends at byte end can be used to check the file
 * by. With trust_position (it is at the very end of the file) a damaged
 * footer is still used, its faults then reported by the table check;
 * otherwise (a candidate found inside the file) it must be entirely valid.
 * Returns 1 usable, 0 not, -1 on I/O error.
 */
static int footer_at(checker *c, uint64_t end, bool trust_position, sp_error *err) {
    uint8_t raw[SST_FOOTER_BYTES];
    if (end < SST_FOOTER_BYTES ||
        sp_pread_exact(c->fd, raw, sizeof raw, end - SST_FOOTER_BYTES, c->rep->path, err))
        return end < SST_FOOTER_BYTES ? 0 : -1;
    bool magic_ok = memcmp(raw + SST_FOOTER_MAGIC, SST_MAGIC, 8) == 0;
    if (!magic_ok && !trust_position)
        return 0;
    sst_footer_decode(raw, &c->f);
    const sst_footer *f = &c->f;
    if (!sst_pow2_in(f->cluster_size, SST_MIN_CLUSTER_SIZE, SST_MAX_CLUSTER_SIZE) ||
        sst_footer_region_bytes(f) > end)
        return trust_position && magic_ok ? 1 : 0;
    /* A footer at the end with its magic is used as it is (its checksum is
     * checked with the region later); any other must prove itself now. */
    if (trust_position && magic_ok)
        return 1;
    sst_check chk = {.path = c->rep->path, .fd = c->fd};
    uint64_t hash;
    if (sst_check_footer_sum(&chk, end, sst_footer_region_bytes(f), &hash, err))
        return -1;
    if (!trust_position && (hash != f->footer_checksum || f->file_size != end ||
                            f->format_version != SST_FORMAT_VERSION))
        return 0;
    /* At the end of the file, a damaged magic is believed to be damage only
     * when the rest of the footer proves itself through its checksum. */
    return magic_ok || hash == f->footer_checksum;
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

/* The block size that makes the first bytes of the file a valid block, or 0:
 * one read of the largest candidate, each size then decoded by the block
 * source's one decoder. */
static uint32_t guess_block_size(checker *c, sp_error *err, int *rc) {
    *rc = 0;
    uint64_t have = c->size < SST_MAX_BLOCK_SIZE ? c->size : SST_MAX_BLOCK_SIZE;
    if (have < SST_MIN_BLOCK_SIZE)
        return 0;
    if (sp_pread_exact(c->fd, c->buf, (size_t)have, 0, c->rep->path, err)) {
        *rc = -1;
        return 0;
    }
    for (uint64_t bs = SST_MIN_BLOCK_SIZE; bs <= have; bs *= 2) {
        sst_blocks b;
        sst_blocks_init(&b, c->rep->path, c->fd, (uint32_t)bs, 1);
        block_view v;
        sp_error e = {0};
        if (sst_blocks_decode(&b, c->buf, NULL, &v, &e) == 0)
            return (uint32_t)bs;
    }
    return 0;
}

/* ---------------------------------------------------------------- the file */

static void on_problem(void *ctx, int64_t block, uint64_t offset, const char *what) {
    checker_problem(ctx, block, offset, "%s", what);
}

/* Where the entry of each chunk's first block starts: the blocks' check
 * reads its chunk's entries again from there (verify_blocks.c). */
static void keep_entry(void *ctx, uint64_t i, const uint8_t *key, uint32_t klen,
                       uint64_t entry_pos) {
    (void)key;
    (void)klen;
    checker *c = ctx;
    uint64_t per_chunk = c->buf_cap / c->bs;
    if (i % per_chunk == 0)
        c->chunk_entry[i / per_chunk] = entry_pos;
    c->n_entries = i + 1;
}

/* Walks the index region through the table check, a buffer at a time: on
 * this kind of virtual machine each page of memory a process touches for
 * the first time costs a trap to the host, and a whole index held in
 * memory was most of the time verify spent before the blocks. */
static int check_index(checker *c, sst_check *chk, sp_error *err) {
    const sst_footer *f = &c->f;
    /* An entry takes at least 3 bytes: a corrupt footer's block count
     * does not size the array. */
    uint64_t cap = f->data_blocks < (f->index_length / 2) ? f->data_blocks : f->index_length / 2;
    uint64_t per_chunk = c->buf_cap / c->bs;
    c->chunk_entry = calloc(cap / per_chunk + 1, sizeof *c->chunk_entry);
    if (!c->chunk_entry)
        return sp_errorf(err, "%s: out of memory for the index (%llu bytes)", c->rep->path,
                         (unsigned long long)f->index_length);
    return sst_check_index(chk, f, NULL, keep_entry, c, err);
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

/* Version 2: the meta region checked, its dictionary loaded for the
 * blocks (none when the region cannot give one: the blocks' own problems
 * then follow from it), and its filter kept for the walk's check of
 * every key (none when its header's length or hash count is a problem
 * already reported). */
static int load_dictionary(checker *c, sst_check *chk, sp_error *err) {
    sst_meta m;
    uint8_t *body;
    if (sst_check_meta(chk, &c->f, &m, &body, err))
        return -1;
    sp_error e = {0};
    c->dict = packed_dict_new(body ? body + SST_META_HEADER_BYTES : NULL,
                              body ? m.dictionary_length : 0, &e);
    if (!c->dict && body) {
        checker_problem(c, -1, c->f.index_offset + c->f.index_region_length + SST_META_HEADER_BYTES,
                        "meta region: %s", e.msg);
        c->dict = packed_dict_new(NULL, 0, &e);
    }
    if (body && m.filter_length && m.filter_length % SST_FILTER_LINE_BYTES == 0 &&
        m.filter_hashes && m.filter_hashes <= SST_FILTER_MAX_HASHES) {
        uint64_t at = SST_META_HEADER_BYTES + (uint64_t)m.dictionary_length;
        c->filter =
            (sst_filter){.bytes = body + at, .length = m.filter_length, .hashes = m.filter_hashes};
        c->filter_offset = c->f.index_offset + c->f.index_region_length + at;
    }
    c->meta_body = body;
    return c->dict ? 0 : sp_errorf(err, "%s: %s", c->rep->path, e.msg);
}

/* A file whose footer is usable: its structure by the table check, which
 * reads the footer region and then the index, then the blocks against it. */
static int check_with_footer(checker *c, sp_error *err) {
    const sst_footer *f = &c->f;
    uint8_t raw[SST_FOOTER_BYTES];
    if (sp_pread_exact(c->fd, raw, sizeof raw, c->end - SST_FOOTER_BYTES, c->rep->path, err))
        return -1;
    sst_check chk = {.path = c->rep->path, .fd = c->fd, .problem = on_problem, .ctx = c};
    int usable = sst_check_footer(&chk, raw, c->end, &c->f, err);
    c->rep->bytes += chk.bytes;
    chk.bytes = 0;
    if (usable <= 0)
        return usable;
    c->bs = f->block_size;
    c->max_value = f->max_value_bytes;
    /* The buffer holds at least one largest block; reads of data are whole blocks. */
    c->buf_cap = c->buf_cap / c->bs * c->bs;
    int rc = check_index(c, &chk, err);
    if (rc == 0 && f->format_version == SST_FORMAT_VERSION_PACKED)
        rc = load_dictionary(c, &chk, err);
    c->rep->bytes += chk.bytes;
    chk.bytes = 0;
    if (rc || check_blocks(c, f->data_blocks, false, err))
        return -1;
    rc = sst_check_data_padding(&chk, f, err);
    c->rep->bytes += chk.bytes;
    if (rc)
        return -1;
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

/* A title index's records of layout 3 and later (title_rules.h): every
 * record keyed without the 0x00 of a page record or of the rules is a
 * prefix list (title_lists.h), which holds its prefix's titles in rank
 * order; since layout 4, a page record's value is its kind alone. A block
 * that does not read is the block checks' to report. */
static void check_title_records(checker *c, const sst_reader *x, unsigned layout) {
    sp_error ignored = {0};
    sst_cursor *cur = sst_cursor_table(x, &ignored);
    while (cur && sst_cursor_next(cur) == 1) {
        const char *problem = NULL;
        bool page = memchr(cur->key, 0, cur->key_len) != NULL;
        bool rules = cur->key_len == SP_TITLES_RULES_KEY_LEN &&
                     !memcmp(cur->key, SP_TITLES_RULES_KEY, SP_TITLES_RULES_KEY_LEN);
        if (!page)
            problem = sp_title_list_problem(cur->key, cur->key_len, cur->value, cur->value_len);
        else if (!rules && layout >= 4 &&
                 (cur->value_len != 1 ||
                  (cur->value[0] != SP_TITLE_ARTICLE && cur->value[0] != SP_TITLE_REDIRECT)))
            problem = "a page record's value is not its kind alone (a or r)";
        if (problem)
            checker_problem(c, -1, 0, "title index: %s (the record keyed %.*s)", problem,
                            (int)cur->key_len, (const char *)cur->key);
    }
    sst_cursor_free(cur);
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
    sp_title_rules rules = {.layout = 1};
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
    if (x && t && rules.layout >= 3)
        check_title_records(c, x, rules.layout);
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
    free(c.chunk_entry);
    packed_dict_free(c.dict);
    free(c.meta_body);
    rep->seconds = sp_clock_seconds() - t0;
    rep->mb_per_s = rep->seconds > 0 ? (double)rep->bytes / 1e6 / rep->seconds : 0;
    return rc;
}
