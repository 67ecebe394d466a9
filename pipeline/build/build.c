/*
 * build.c: the fused pipeline behind `sstpipe build` and `sstpipe nightly`.
 *
 * extract -> truncate -> sorter runs as one chain of sinks while the dump is
 * read (run formation); sorter_finish then merges straight into the table
 * writer. With several parsing threads each has its own chain: its
 * truncator and its part of the sort (sorter_split), so records are
 * truncated, sorted into runs and spilled on the thread that parsed them,
 * and the merge puts them back in dump order (parse_pool.h, sorter.h).
 * Extract keeps only max_bytes + 1 bytes of each page's text (the one extra
 * byte tells truncate where a character boundary falls), so no page,
 * however long, costs more memory than that. The result is the same file,
 * byte for byte, as the four stage commands piped together.
 */
#include "pipeline/build/build.h"

#include "stages/sst/title_index.h"

#include "stages/common/clock.h"
#include "stages/common/usage.h"
#include "stages/extract/extract_progress.h"
#include "stages/extract/site_rules.h"
#include "stages/truncate/truncate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void build_options_init(build_options *opts) {
    memset(opts, 0, sizeof *opts);
    extract_options_init(&opts->extract);
    opts->max_bytes = SP_DEFAULT_MAX_VALUE_BYTES;
    sort_options_init(&opts->sort);
    table_options_init(&opts->table);
}

/* The table writer, counting the records written into the progress. */
typedef struct progress_relay {
    sp_progress *p;
    uint64_t written;
    sp_sink table;
} progress_relay;

/* extract_part's hooks over a sort part. */
static void part_begin(void *ctx, uint64_t place) {
    sort_part_begin(ctx, place);
}

static void part_end(void *ctx) {
    sort_part_end(ctx);
}

/* One chain per parsing thread: parts[i] -> truncators[i] -> sort part i. */
typedef struct thread_chains {
    unsigned n;
    truncator *truncators;
    extract_part *parts;
} thread_chains;

static int chains_init(thread_chains *c, unsigned n, sorter *so, uint64_t max_bytes,
                       sp_error *err) {
    c->n = n;
    c->truncators = calloc(n, sizeof *c->truncators);
    c->parts = calloc(n, sizeof *c->parts);
    if (!c->truncators || !c->parts)
        return sp_errorf(err, "build: out of memory for %u threads", n);
    if (sorter_split(so, n, err))
        return -1;
    for (unsigned i = 0; i < n; i++) {
        sort_part *part = sorter_part(so, i);
        truncator_init(&c->truncators[i], max_bytes, sort_part_sink(part));
        c->parts[i] = (extract_part){.sink = truncator_sink(&c->truncators[i]),
                                     .begin = part_begin,
                                     .end = part_end,
                                     .ctx = part};
    }
    return 0;
}

static void chains_destroy(thread_chains *c) {
    free(c->truncators);
    free(c->parts);
}

static int relay_put(void *ctx, const sp_record *rec, sp_error *err) {
    progress_relay *r = ctx;
    if (sp_sink_put(&r->table, rec, err))
        return -1;
    if (++r->written % (64 * 1024) == 0)
        sp_progress_store(&r->p->records, r->written);
    return 0;
}

/* Resource figures of a finished run. */
static void finish_stats(build_stats *stats, uint64_t truncated, sorter *so, double w0, double c0,
                         double w1, double c1) {
    double w2 = sp_clock_seconds(), c2 = sp_process_cpu_seconds();
    stats->truncated = truncated;
    stats->sort = *sorter_stats(so);
    stats->read_phase = (stage_times){w1 - w0, c1 - c0};
    stats->write_phase = (stage_times){w2 - w1, c2 - c1};
    sp_usage u;
    if (sp_usage_get(SP_USAGE_SELF, &u) == 0)
        stats->peak_rss_bytes = u.peak_rss_bytes;
}

/* What both builds do first: *stats made the caller's, or local when it
 * passes none, and zeroed; and the check that a value's bound fits the
 * table's 32 bits. */
static int build_start(const build_options *opts, build_stats **stats, build_stats *local,
                       sp_error *err) {
    if (!*stats)
        *stats = local;
    memset(*stats, 0, sizeof **stats);
    if (opts->max_bytes == 0 || opts->max_bytes > UINT32_MAX)
        return sp_errorf(err, "max-bytes must be from 1 to 4294967295");
    return 0;
}

int build_sorted(const char *input, const build_options *opts, const sp_sink *sink,
                 build_stats *stats, sp_error *err) {
    build_stats local;
    if (build_start(opts, &stats, &local, err))
        return -1;
    sorter *so = sorter_init(&opts->sort, err);
    if (!so)
        return -1;

    truncator tr;
    truncator_init(&tr, opts->max_bytes, sorter_sink(so));
    sp_sink to_truncate = truncator_sink(&tr);
    extract_options xopts = opts->extract;
    xopts.value_cap = opts->max_bytes + 1;
    xopts.threads = extract_threads(&xopts);
    thread_chains chains = {0};
    if (xopts.threads > 1) {
        if (chains_init(&chains, xopts.threads, so, opts->max_bytes, err)) {
            chains_destroy(&chains);
            sorter_destroy(so);
            return -1;
        }
        xopts.parts = chains.parts;
    }
    progress_relay relay = {.p = opts->progress};
    xopts.progress = opts->progress;
    if (opts->progress)
        sp_progress_phase(opts->progress, SP_PHASE_READING);

    double w0 = sp_clock_seconds(), c0 = sp_process_cpu_seconds();
    int rc = extract_file(input, &xopts, &to_truncate, &stats->extract, err);
    double w1 = sp_clock_seconds(), c1 = sp_process_cpu_seconds();
    if (rc == 0) {
        sp_sink to_table = *sink;
        if (opts->progress) {
            extract_progress(opts->progress, &stats->extract);
            sp_progress_store(&opts->progress->records_total, stats->extract.records);
            sp_progress_store(&opts->progress->records, 0);
            sp_progress_phase(opts->progress, SP_PHASE_WRITING);
            relay.table = to_table;
            to_table = (sp_sink){.put = relay_put, .ctx = &relay};
        }
        rc = sorter_finish(so, &to_table, err);
    }
    uint64_t truncated = tr.truncated;
    for (unsigned i = 0; i < chains.n; i++)
        truncated += chains.truncators[i].truncated;
    chains_destroy(&chains);
    finish_stats(stats, truncated, so, w0, c0, w1, c1);
    sorter_destroy(so);
    return rc;
}

/* A table written to a device or a pipe has no file beside it for a title
 * index; a regular file (or a new one) has. */
static bool wants_title_index(const char *output) {
    struct stat st;
    return stat(output, &st) != 0 || S_ISREG(st.st_mode);
}

int build_run(const char *input, const char *output, const build_options *opts, build_stats *stats,
              sp_error *err) {
    build_stats local;
    if (build_start(opts, &stats, &local, err))
        return -1;
    table_options topts = opts->table;
    topts.max_value_bytes = (uint32_t)opts->max_bytes;
    /* With more than one thread the table's writes go on a thread of
     * their own while the merge goes on (table_writer.h); with one,
     * nothing more is started. */
    topts.background = extract_threads(&opts->extract) > 1;
    /* Options are checked, and the output created, before the dump is read:
     * a bad block size or an unwritable directory fails in milliseconds,
     * not after an hour of decompression. */
    table_writer *tw = table_writer_init(output, &topts, err);
    if (!tw)
        return -1;
    /* The title index: the dump's title rules, and every title on its way
     * to the table, through a sort of a quarter of the build's budget
     * (the build's own sort is merging, which needs less). */
    sp_title_rules rules;
    sort_options xsort = opts->sort;
    xsort.memory = xsort.memory / 4 < SORT_MIN_MEMORY ? SORT_MIN_MEMORY : xsort.memory / 4;
    title_index *titles = NULL;
    sp_sink to_writer = table_writer_sink(tw), to_table = to_writer;
    if (wants_title_index(output)) {
        if (site_rules_read(input, &rules, err) == 0)
            titles = title_index_init(output, &rules, &xsort, &topts, err);
        if (!titles) {
            table_writer_destroy(tw);
            return -1;
        }
        to_table = title_index_tee(titles, &to_writer);
    }
    int rc = build_sorted(input, opts, &to_table, stats, err);
    /* The write phase includes the table's index, footer and fsync, and
     * the title index: written for the complete table's identity and
     * published first (title_index.h). */
    double w = sp_clock_seconds(), c = sp_process_cpu_seconds();
    if (rc == 0)
        rc = title_index_publish(titles, tw, output, err);
    title_index_destroy(titles);
    stats->write_phase.wall_seconds += sp_clock_seconds() - w;
    stats->write_phase.cpu_seconds += sp_process_cpu_seconds() - c;
    stats->table = *table_writer_stats(tw);
    table_writer_destroy(tw);
    return rc;
}

void build_print_stats(FILE *out, const build_stats *s) {
    char line[256];
    extract_stats_format(&s->extract, line, sizeof line);
    fprintf(out, "%s\n", line);
    truncate_stats_format(s->extract.records, s->truncated, line, sizeof line);
    fprintf(out, "%s\n", line);
    sort_stats_format(&s->sort, line, sizeof line);
    fprintf(out, "%s\n", line);
    table_stats_format(&s->table, line, sizeof line);
    fprintf(out, "%s\n", line);
    fprintf(out,
            "build: read_seconds=%.3f write_seconds=%.3f cpu_seconds=%.3f peak_rss=%llu "
            "read_cpu_seconds=%.3f parse_cpu_seconds=%.3f caller_cpu_seconds=%.3f "
            "write_cpu_seconds=%.3f write_background_cpu_seconds=%.3f "
            "write_background_batches=%llu write_commit_seconds=%.3f parse_chunks=%llu "
            "stream_cuts=%llu guessed_cuts=%llu\n",
            s->read_phase.wall_seconds, s->write_phase.wall_seconds,
            s->read_phase.cpu_seconds + s->write_phase.cpu_seconds,
            (unsigned long long)s->peak_rss_bytes, s->read_phase.cpu_seconds,
            s->extract.parse_cpu_seconds, s->extract.caller_cpu_seconds, s->write_phase.cpu_seconds,
            s->table.background_cpu_seconds, (unsigned long long)s->table.background_batches,
            (double)s->table.commit_ns / 1e9, (unsigned long long)s->extract.parse_chunks,
            (unsigned long long)s->extract.stream_cuts,
            (unsigned long long)s->extract.guessed_cuts);
}
