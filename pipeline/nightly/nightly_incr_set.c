/*
 * nightly_incr_set.c: the incremental nightly's merge when the base is a
 * table set ([cluster] shards > 1; see nightly_incr.h).
 *
 * The night's output is a set with the base's shards and their key
 * ranges: output shard k is base shard k merged with the increments' keys
 * in its range, the later day winning exactly as in the one-table merge
 * (table_merge, confined to the range), so the set holds the records of
 * the one-table night and every key stays in the shard whose range holds
 * it. Increments are small and a day's edits touch few ranges of a large
 * base, so the increments are read once first to learn which shards any
 * of their keys (or a title of [input] deletions) falls into; a shard
 * none does is the base's shard itself, a second name (hard link) for the
 * cached file, which is never written again (a rebuilt base is a new file:
 * the cache renames whole sets into place and removes old ones by name),
 * once its checksum is the base manifest's (no merge reads its blocks: a
 * damaged shard is then the base's failure, rebuilt as a damaged cached
 * table is, not a verify failure of every night until the next full dump).
 * Where no link can be made (another file system, a file system without
 * links) such a shard is merged alone, which copies its blocks as they are
 * (copy_file_range, or shared extents where the file system can).
 *
 * The set is made in <name>.tmp.<pid> beside the staged table's name and
 * renamed onto it once its manifest is written (table_set_write_manifest:
 * temp file, fsync, rename, fsync of the directory); on any failure the
 * temporary directory is removed, so no half set ever reaches failed/ or
 * builds/.
 */
#include "pipeline/nightly/nightly_incr.h"

#include "pipeline/nightly/nightly_log.h"
#include "pipeline/nightly/nightly_state.h"
#include "stages/common/publish.h"
#include "stages/common/scratch.h"
#include "stages/merge/table_source.h"
#include "stages/sst/table_reader.h"
#include "stages/sst/table_set.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* What one night's set is made of, freed by set_work_destroy. */
typedef struct set_work {
    table_set *base;
    size_t n; /* shards */
    bool *touched;
    table_set_shard *shards; /* the output's manifest entries */
    char (*sums)[TABLE_SET_CHECKSUM_HEX];
    const char **inputs;     /* one shard's merge inputs: its base shard, then the increments */
    char tmp[PATH_MAX + 32]; /* the set being made; "" once renamed or removed */
} set_work;

static void set_work_destroy(set_work *w) {
    if (w->tmp[0]) {
        sp_remove_tree(w->tmp, NULL);
    }
    table_set_free(w->base);
    free(w->touched);
    free(w->shards);
    free(w->sums);
    free(w->inputs);
}

/* Marks the shards any key of the increments (inputs 1 .. n-1) or of the
 * drop list falls into. A read error names the increment (failed_input). */
static int find_touched(set_work *w, const char *const *paths, unsigned n,
                        const table_merge_options *o, table_merge_stats *st, sp_error *err) {
    for (unsigned i = 1; i < n; i++) {
        table_source *t = table_source_open(paths[i], o->read_bytes, err);
        if (!t) {
            st->failed_input = (int)i;
            return -1;
        }
        merge_source *s = table_source_merge_source(t);
        int rc;
        while ((rc = s->ops->next(s, err)) == 1)
            w->touched[table_set_find(w->base, s->key, s->key_len)] = true;
        table_source_destroy(t);
        if (rc < 0) {
            st->failed_input = (int)i;
            return -1;
        }
    }
    for (size_t i = 0; i < o->n_drop; i++)
        w->touched[table_set_find(w->base, o->drop[i].key, o->drop[i].len)] = true;
    return 0;
}

static void add_stats(table_merge_stats *sum, const table_merge_stats *s) {
    sum->records += s->records;
    sum->replaced += s->replaced;
    sum->dropped += s->dropped;
    sum->blocks_copied += s->blocks_copied;
    sum->blocks_cloned += s->blocks_cloned;
    sum->blocks_rebuilt += s->blocks_rebuilt;
    sum->open_ns += s->open_ns;
    sum->copy_ns += s->copy_ns;
    sum->rebuild_ns += s->rebuild_ns;
    sum->finish_ns += s->finish_ns;
    sum->commit_ns += s->commit_ns;
}

/* Output shard k at out: the base's shard linked, or merged with the
 * increments in its range. */
static int make_shard(nightly_run_state *r, set_work *w, size_t k, const char *out,
                      const char *const *paths, unsigned n, const table_merge_options *o,
                      table_merge_stats *st, sp_error *err) {
    const table_set_shard *b = table_set_shard_at(w->base, k);
    const char *from = table_set_shard_path(w->base, k);
    table_set_shard *s = &w->shards[k];
    *s = *b;
    if (!w->touched[k]) {
        /* Not read by a merge, so checked whole here: a damaged cached
         * shard is the base's failure (rebuilt), not a night's in verify. */
        if (table_set_file_checksum(from, w->sums[k], err)) {
            st->failed_input = 0;
            return -1;
        }
        if (strcmp(w->sums[k], b->checksum)) {
            st->failed_input = 0;
            return sp_errorf(err, "%s: checksum %s, the set's manifest says %s", from, w->sums[k],
                             b->checksum);
        }
        s->checksum = w->sums[k];
        if (link(from, out) == 0) {
            r->plan->shards_reused++;
            st->records += b->records;
            return 0;
        }
        if (errno != EXDEV && errno != EPERM && errno != EMLINK && errno != ENOTSUP)
            return sp_errorf_errno(err, "%s: cannot link into the table set as %s", from, out);
    }
    table_merge_options so = *o;
    so.lo = b->has_lo ? (table_merge_key){b->lo, (uint32_t)b->lo_len} : (table_merge_key){0};
    so.hi = b->has_hi ? (table_merge_key){b->hi, (uint32_t)b->hi_len} : (table_merge_key){0};
    w->inputs[0] = from;
    for (unsigned i = 1; i < n; i++)
        w->inputs[i] = paths[i];
    table_merge_stats ss;
    /* An untouched shard that could not be linked is merged alone. */
    unsigned inputs = w->touched[k] ? n : 1;
    if (table_merge(out, w->inputs, inputs, &so, &ss, err)) {
        st->failed_input = ss.failed_input;
        return -1;
    }
    add_stats(st, &ss);
    s->records = ss.records;
    s->bytes = ss.file_size;
    if (table_set_file_checksum(out, w->sums[k], err))
        return -1;
    s->checksum = w->sums[k];
    return 0;
}

/* The base set's options object, as its manifest holds it (the merged
 * shards are written with the same [sst] options), and what the night
 * read: the base dump and the increments. */
static int manifest_texts(const nightly_run_state *r, const set_work *w, char **options,
                          char **inputs, sp_error *err) {
    const nightly_plan *p = r->plan;
    json_error_t je;
    json_t *m = json_load_file(table_set_manifest_path(w->base), 0, &je);
    json_t *o = m ? json_object_get(m, "options") : NULL;
    *options = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(m);
    if (!*options)
        return sp_errorf(err, "%s: cannot read its options: %s", table_set_manifest_path(w->base),
                         m ? "no options object" : je.text);
    json_t *a = json_array();
    for (size_t i = 0; a && i <= p->n_incr; i++) {
        const nightly_dump *d = i ? &p->incr[i - 1] : &p->base;
        json_array_append_new(
            a, json_pack("{s:s, s:I}", "path", d->path, "size", (json_int_t)d->size));
    }
    *inputs = a ? json_dumps(a, JSON_COMPACT) : NULL;
    json_decref(a);
    return *inputs ? 0 : sp_errorf(err, "out of memory");
}

/* The figures `info` gives for the whole set, from each shard's footer. */
static int set_figures(nightly_run_state *r, const set_work *w, sp_error *err) {
    table_stats sum = {0};
    for (size_t k = 0; k < w->n; k++) {
        char path[PATH_MAX * 2];
        snprintf(path, sizeof path, "%s/%s", r->table_path, w->shards[k].file);
        sst_reader *t = sst_reader_open_streamed(path, err);
        if (!t)
            return -1;
        const sst_footer *f = sst_reader_footer(t);
        sum.records += f->records;
        sum.data_blocks += f->data_blocks;
        sum.key_bytes += f->key_bytes;
        sum.value_bytes += f->value_bytes;
        sum.file_size += f->file_size;
        sst_reader_close(t);
    }
    r->build.table = sum;
    r->plan->merge.data_blocks = sum.data_blocks;
    r->plan->merge.file_size = sum.file_size;
    return 0;
}

int nightly_incr_merge_set(nightly_run_state *r, const char *const *paths, unsigned n,
                           const table_merge_options *o, uint64_t *base_bytes, sp_error *err) {
    nightly_plan *p = r->plan;
    table_merge_stats *st = &p->merge;
    memset(st, 0, sizeof *st);
    st->inputs = n;
    st->failed_input = -1;
    p->shards = p->shards_reused = 0;
    set_work w = {0};
    char *options = NULL, *inputs = NULL;
    int rc = -1;
    if (!(w.base = table_set_read(paths[0], err))) {
        st->failed_input = 0;
        goto done;
    }
    w.n = table_set_count(w.base);
    p->shards = w.n;
    *base_bytes = 0;
    for (size_t k = 0; k < w.n; k++)
        *base_bytes += table_set_shard_at(w.base, k)->bytes;
    w.touched = calloc(w.n, sizeof *w.touched);
    w.shards = calloc(w.n, sizeof *w.shards);
    w.sums = calloc(w.n, sizeof *w.sums);
    w.inputs = calloc(n, sizeof *w.inputs);
    if (!w.touched || !w.shards || !w.sums || !w.inputs) {
        sp_errorf(err, "out of memory");
        goto done;
    }
    if (find_touched(&w, paths, n, o, st, err))
        goto done;
    snprintf(w.tmp, sizeof w.tmp, "%s.tmp.%ld", r->table_path, (long)getpid());
    sp_remove_tree(w.tmp, NULL);
    if (mkdir(w.tmp, 0755)) {
        sp_errorf_errno(err, "%s: cannot create the directory", w.tmp);
        w.tmp[0] = '\0';
        goto done;
    }
    for (size_t k = 0; k < w.n; k++) {
        char out[PATH_MAX * 2];
        snprintf(out, sizeof out, "%s/%s", w.tmp, table_set_shard_at(w.base, k)->file);
        if (make_shard(r, &w, k, out, paths, n, o, st, err))
            goto done;
    }
    if (manifest_texts(r, &w, &options, &inputs, err) ||
        table_set_write_manifest(w.tmp, w.shards, w.n, options, inputs, err))
        goto done;
    int pub = sp_publish(w.tmp, r->table_path, 0, NULL, err);
    if (pub != -1)
        w.tmp[0] = '\0'; /* renamed, whether or not its directory's fsync failed */
    if (pub || set_figures(r, &w, err))
        goto done;
    nightly_logf(&r->log,
                 "merge: %zu of %zu shards untouched by the increments, linked as they are",
                 p->shards_reused, w.n);
    rc = 0;
done:
    free(options);
    free(inputs);
    set_work_destroy(&w);
    return rc;
}
