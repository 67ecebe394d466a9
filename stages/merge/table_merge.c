/*
 * table_merge.c: the table merge; see table_merge.h.
 *
 * The inputs other than the base go through the merger (stages/sort/
 * merge.h), which already keeps the latest input's record of a key. The
 * base is walked beside it block by block: at the start of a base block,
 * if the merger's next key sorts after the block's last key, nothing of
 * the other inputs falls into the block and it is copied whole; otherwise
 * its records are merged one by one with the merger's (on a shared key the
 * one from the later input wins) and re-encoded. A rebuilt run ends where
 * the next base block can be copied again; the block being filled then is
 * finished early, so blocks next to a change may be less full than build
 * would make them, which the format allows.
 */
#include "stages/merge/table_merge.h"

#include "stages/common/clock.h"
#include "stages/common/key.h"
#include "stages/merge/table_source.h"
#include "stages/merge/title_merge.h"
#include "stages/sort/merge.h"
#include "stages/sst/block_packed.h"
#include "stages/sst/table_writer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_READ_BYTES (256u << 10)
/* The base is read in larger chunks (unless a caller chose read_bytes):
 * it is most of the bytes. 1 MiB stays in a core's L2 cache (about 1 MiB)
 * from its read through its check to the write of its copied blocks; a
 * larger chunk is read from memory again by the check and the write. */
#define BASE_READ_BYTES (1u << 20)
/* The output's index held in memory before it goes on to a scratch file
 * (table_options.index_memory). */
#define INDEX_MEMORY (256u << 10)

void table_merge_options_init(table_merge_options *o) {
    table_options t;
    table_options_init(&t);
    *o = (table_merge_options){.read_bytes = DEFAULT_READ_BYTES,
                               .titles = true,
                               .compression_level = t.compression_level,
                               .dictionary_size = t.dictionary_size};
}

/* What the merge is doing, for the phase times (table_merge_stats). */
enum phase { PHASE_NONE, PHASE_COPY, PHASE_REBUILD };

typedef struct merge_run {
    table_source **tables; /* the inputs, in order */
    unsigned n;
    merge_source **others; /* the merger's sources: the inputs but the base */
    unsigned *other_index; /* input number of each */
    unsigned *heap;
    table_writer *w;
    table_merge_stats *st;
    const table_merge_key *drop; /* the drop list, from the first key not yet passed */
    const table_merge_key *drop_end;
    enum phase phase;
    uint64_t phase_since; /* sp_clock_ns() when it began */
} merge_run;

/* Ends the current phase (its time added to its sum) and begins p. The
 * clock is read only where the phase changes: twice a rebuilt run. */
static void phase_enter(merge_run *r, enum phase p) {
    if (r->phase == p)
        return;
    uint64_t now = sp_clock_ns();
    if (r->phase == PHASE_COPY)
        r->st->copy_ns += now - r->phase_since;
    else if (r->phase == PHASE_REBUILD)
        r->st->rebuild_ns += now - r->phase_since;
    r->phase = p;
    r->phase_since = now;
}

/* Passes the drop list's keys below key (the output goes in key order, so
 * they are behind it) and says whether the next one is key itself. */
static bool drop_next_is(merge_run *r, const uint8_t *key, uint32_t len) {
    while (r->drop < r->drop_end && sp_key_cmp(r->drop->key, r->drop->len, key, len) < 0)
        r->drop++;
    return r->drop < r->drop_end && sp_key_cmp(r->drop->key, r->drop->len, key, len) == 0;
}

static int put(merge_run *r, const sp_record *rec, sp_error *err) {
    if (drop_next_is(r, rec->key, rec->key_len)) {
        r->st->dropped++;
        return 0;
    }
    if (table_writer_add(r->w, rec, err))
        return -1;
    r->st->records++;
    return 0;
}

static int put_source(merge_run *r, merge_source *s, sp_error *err) {
    sp_record rec = {
        .key = s->key, .key_len = s->key_len, .value_len = s->value_len, .value_fd = -1};
    if (s->ops->value(s, &rec.value, err))
        return -1;
    return put(r, &rec, err);
}

/* Takes the merger's next record into the output (or drops it, when the
 * base's record of the same key wins). */
static int take_other(merge_run *r, merger *m, bool keep, sp_error *err) {
    sp_record rec;
    unsigned from;
    if (merger_next(m, &rec, &from, err) < 0)
        return -1;
    return keep ? put(r, &rec, err) : 0;
}

static int copy_block(merge_run *r, const table_source_block *b, sp_error *err) {
    phase_enter(r, PHASE_COPY);
    table_block_copy c = {.fd = b->fd,
                          .offset = b->offset,
                          .data = b->data,
                          .first = b->first,
                          .first_len = b->first_len,
                          .last = b->last,
                          .last_len = b->last_len,
                          .records = b->records,
                          .key_bytes = b->key_bytes,
                          .value_bytes = b->value_bytes,
                          .view = b->view};
    if (table_writer_copy_block(r->w, &c, err))
        return -1;
    r->st->records += b->records;
    r->st->blocks_copied++;
    return 0;
}

/* The merge proper, base (input base_i) walked beside the merger. */
static int run_merge(merge_run *r, table_source *base, unsigned base_i, sp_error *err) {
    merger m;
    if (merger_init(&m, r->others, r->n - (base ? 1 : 0), r->heap, err))
        return -1;
    merge_source *bs = base ? table_source_merge_source(base) : NULL;
    int bgot = bs ? bs->ops->next(bs, err) : 0;
    if (bgot < 0)
        return -1;
    uint64_t replaced = 0;
    for (;;) {
        const uint8_t *ok;
        uint32_t okl;
        unsigned of;
        int ogot = merger_peek(&m, &ok, &okl, &of, err);
        if (ogot < 0)
            return -1;
        if (!bgot) {
            if (!ogot)
                break;
            phase_enter(r, PHASE_REBUILD);
            if (take_other(r, &m, true, err))
                return -1;
            continue;
        }
        table_source_block b;
        if (table_source_at_block_start(base, &b)) {
            /* Copied whole only when no key of the others and none to drop falls into it. */
            bool untouched = (!ogot || sp_key_cmp(ok, okl, b.last, b.last_len) > 0) &&
                             !drop_next_is(r, b.first, b.first_len) &&
                             (r->drop == r->drop_end ||
                              sp_key_cmp(r->drop->key, r->drop->len, b.last, b.last_len) > 0);
            if (untouched) {
                if (copy_block(r, &b, err) || (bgot = table_source_skip_block(base, err)) < 0)
                    return -1;
                continue;
            }
            r->st->blocks_rebuilt++;
            phase_enter(r, PHASE_REBUILD);
        }
        int c = ogot ? sp_key_cmp(bs->key, bs->key_len, ok, okl) : -1;
        if (c > 0) {
            if (take_other(r, &m, true, err))
                return -1;
            continue;
        }
        bool other_wins = c == 0 && r->other_index[of] > base_i;
        if (c == 0)
            replaced++;
        if (other_wins) {
            if (take_other(r, &m, true, err))
                return -1;
        } else {
            if (put_source(r, bs, err) || (c == 0 && take_other(r, &m, false, err)))
                return -1;
        }
        if ((bgot = bs->ops->next(bs, err)) < 0)
            return -1;
    }
    phase_enter(r, PHASE_NONE);
    r->st->replaced = m.dups + replaced;
    return 0;
}

/* Whether a title is one the merge leaves out (title_merge_filter): below
 * lo, at or above hi, or dropped. */
static bool title_left_out(const void *ctx, const uint8_t *t, uint32_t tl) {
    const table_merge_options *o = ctx;
    if ((o->lo.key && sp_key_cmp(t, tl, o->lo.key, o->lo.len) < 0) ||
        (o->hi.key && sp_key_cmp(t, tl, o->hi.key, o->hi.len) >= 0))
        return true;
    size_t lo = 0, hi = o->n_drop;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = sp_key_cmp(o->drop[mid].key, o->drop[mid].len, t, tl);
        if (c == 0)
            return true;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return false;
}

/* The base is about to release the memory of blocks it offered: the
 * writer writes the copied ones it still points to. */
static void base_released(void *w) {
    table_writer_flush_copies(w);
}

/* The input with the most blocks among those of the output's block size
 * and, unless version is 0, of that format version (a version 2 one a
 * table, whose one dictionary the output can take), or -1. */
static int largest(table_source **t, unsigned n, uint32_t block_size, uint32_t version) {
    int best = -1;
    const uint8_t *dict;
    size_t dict_len;
    for (unsigned i = 0; i < n; i++) {
        const sst_footer *f = table_source_footer(t[i]);
        if (f->block_size == block_size && f->data_blocks > 0 &&
            (!version ||
             (f->format_version == version && (version != SST_FORMAT_VERSION_PACKED ||
                                               table_source_dictionary(t[i], &dict, &dict_len)))) &&
            (best < 0 || f->data_blocks > table_source_footer(t[best])->data_blocks))
            best = (int)i;
    }
    return best;
}

/* The output's format version: the options', else the one the base would
 * be (table_merge_options.format_version). */
static uint32_t output_version(table_source **t, unsigned n, const table_merge_options *o,
                               uint32_t block_size) {
    if (o->format_version)
        return o->format_version;
    int i = o->canonical ? -1 : largest(t, n, block_size, 0);
    return table_source_footer(t[i >= 0 ? i : 0])->format_version;
}

int table_merge(const char *out, const char *const *inputs, unsigned n,
                const table_merge_options *o, table_merge_stats *st, sp_error *err) {
    memset(st, 0, sizeof *st);
    uint64_t t0 = sp_clock_ns();
    st->inputs = n;
    st->failed_input = st->titles_missing = -1;
    title_index *titles = NULL;
    if (n == 0)
        return sp_errorf(err, "merge: no input tables");
    merge_run r = {
        .n = n, .st = st, .drop = o->drop, .drop_end = o->drop ? o->drop + o->n_drop : NULL};
    r.tables = calloc(n, sizeof *r.tables);
    r.others = calloc(n, sizeof *r.others);
    r.other_index = calloc(n, sizeof *r.other_index);
    r.heap = calloc(n, sizeof *r.heap);
    int rc = -1;
    if (!r.tables || !r.others || !r.other_index || !r.heap) {
        sp_errorf(err, "merge: out of memory");
        goto done;
    }
    table_options opts;
    table_options_init(&opts);
    opts.max_value_bytes = 0;
    opts.index_memory = INDEX_MEMORY;
    unsigned bound_from = 0; /* the input whose value bound the output takes */
    for (unsigned i = 0; i < n; i++) {
        if (!(r.tables[i] = table_source_open(inputs[i], o->read_bytes, err))) {
            st->failed_input = (int)i;
            goto done;
        }
        table_source_set_range(r.tables[i], o->lo.key, o->lo.len, o->hi.key, o->hi.len);
        const sst_footer *f = table_source_footer(r.tables[i]);
        if (f->max_value_bytes > opts.max_value_bytes) {
            opts.max_value_bytes = f->max_value_bytes;
            bound_from = i;
        }
    }
    const sst_footer *first = table_source_footer(r.tables[0]);
    opts.block_size = o->block_size ? o->block_size : first->block_size;
    opts.cluster_size = o->cluster_size ? o->cluster_size : first->cluster_size;
    uint32_t version = output_version(r.tables, n, o, opts.block_size);
    opts.compress = version == SST_FORMAT_VERSION_PACKED;
    opts.compression_level = o->compression_level;
    opts.dictionary_size = o->dictionary_size;
    /* Named here, before the writer would refuse the options without
     * saying which input's footer asked for them. */
    sp_error fit = {0};
    if (opts.compress ? sst_packed_check_fit(opts.block_size, opts.max_value_bytes, &fit)
                      : sst_check_fit(opts.block_size, opts.max_value_bytes, &fit)) {
        sp_errorf(err,
                  "%s: values of up to %u bytes (its max_value_bytes) cannot go into the "
                  "output: %s",
                  inputs[bound_from], opts.max_value_bytes, fit.msg);
        goto done;
    }
    int base_i = o->canonical ? -1 : largest(r.tables, n, opts.block_size, version);
    if (base_i >= 0 && o->read_bytes == DEFAULT_READ_BYTES)
        table_source_set_read_bytes(r.tables[base_i], BASE_READ_BYTES);
    unsigned k = 0;
    for (unsigned i = 0; i < n; i++)
        if ((int)i != base_i) {
            r.others[k] = table_source_merge_source(r.tables[i]);
            r.other_index[k++] = i;
        }
    if (o->titles && title_merge_read(out, inputs, r.tables, n, o->read_bytes, title_left_out, o,
                                      &opts, &titles, &st->titles_missing, err))
        goto done;
    if (!(r.w = table_writer_init(out, &opts, err)))
        goto done;
    if (base_i >= 0 && opts.compress) {
        /* A version 2 base is a table (largest): its dictionary is the output's. */
        const uint8_t *dict = NULL;
        size_t dict_len = 0;
        table_source_dictionary(r.tables[base_i], &dict, &dict_len);
        if (table_writer_use_dictionary(r.w, dict, dict_len, err))
            goto done;
    }
    if (base_i >= 0)
        table_source_on_release(r.tables[base_i], base_released, r.w);
    st->open_ns = sp_clock_ns() - t0;
    if (run_merge(&r, base_i >= 0 ? r.tables[base_i] : NULL, (unsigned)(base_i >= 0 ? base_i : 0),
                  err))
        goto done;
    uint64_t t1 = sp_clock_ns();
    if (title_index_publish(titles, r.w, out, err))
        goto done;
    const table_stats *ts = table_writer_stats(r.w);
    st->commit_ns = ts->commit_ns;
    st->finish_ns = sp_clock_ns() - t1 - ts->commit_ns;
    st->data_blocks = ts->data_blocks;
    st->file_size = ts->file_size;
    st->blocks_cloned = ts->cloned_blocks;
    rc = 0;
done:
    for (unsigned i = 0; rc && r.tables && i < n; i++)
        if (r.tables[i] && table_source_failed(r.tables[i]))
            st->failed_input = (int)i;
    title_index_destroy(titles);
    table_writer_destroy(r.w);
    for (unsigned i = 0; r.tables && i < n; i++)
        table_source_destroy(r.tables[i]);
    free(r.tables);
    free(r.others);
    free(r.other_index);
    free(r.heap);
    return rc;
}

void table_merge_stats_format(const table_merge_stats *s, char *buf, size_t cap) {
    snprintf(buf, cap,
             "merge: inputs=%u records=%llu replaced=%llu dropped=%llu blocks_copied=%llu "
             "blocks_cloned=%llu blocks_rebuilt=%llu data_blocks=%llu file_size=%llu "
             "us_open=%llu us_copy=%llu us_rebuild=%llu us_finish=%llu us_commit=%llu",
             s->inputs, (unsigned long long)s->records, (unsigned long long)s->replaced,
             (unsigned long long)s->dropped, (unsigned long long)s->blocks_copied,
             (unsigned long long)s->blocks_cloned, (unsigned long long)s->blocks_rebuilt,
             (unsigned long long)s->data_blocks, (unsigned long long)s->file_size,
             (unsigned long long)(s->open_ns / 1000), (unsigned long long)(s->copy_ns / 1000),
             (unsigned long long)(s->rebuild_ns / 1000), (unsigned long long)(s->finish_ns / 1000),
             (unsigned long long)(s->commit_ns / 1000));
}
