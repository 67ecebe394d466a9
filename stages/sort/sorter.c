/*
 * sorter.c: the external merge sort; see sorter.h.
 *
 * Memory: one allocation of exactly the budget, split into a write buffer
 * and an arena. While records arrive the arena holds a chunk (chunk.h);
 * during the merge the same bytes become the run readers (merge sources,
 * merge.h), their buffers and
 * a buffer for the largest record, so the budget holds in both phases.
 *
 * Disk: the runs of one pass are regions of one anonymous scratch file; a
 * pass with more runs than the fan-in merges groups of consecutive runs
 * into the other scratch file (consecutive, so "the later record wins"
 * keeps meaning "the later run wins"). Merged regions are punched out as
 * the pass goes, so disk use stays near one copy of the data.
 */
#include "stages/sort/sorter.h"

#include "stages/common/fileio.h"
#include "stages/common/size.h"
#include "stages/sort/chunk.h"
#include "stages/sort/merge.h"
#include "stages/sort/run_file.h"

#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The smallest read buffer a run gets in a merge: below this, reads get
 * too small to stream from disk efficiently. */
#define MIN_RUN_BUFFER (64u << 10)
#define ALIGN 64

struct sorter {
    sort_options opts;
    char *scratch_name; /* for error messages */
    uint64_t record_limit;
    uint8_t *mem; /* the budget: write buffer, then arena */
    uint8_t *wbuf;
    size_t wbuf_cap;
    uint8_t *arena;
    size_t arena_cap;
    chunk chunk;
    int fd[2];
    run_region *runs;
    size_t nruns, runs_cap;
    uint64_t spill_end;  /* end of the last run in fd[0] */
    uint64_t max_record; /* largest record added, in run layout */
    bool finished;
    sort_stats stats;
};

void sort_options_init(sort_options *opts) {
    opts->memory = SORT_DEFAULT_MEMORY;
    opts->tmp_dir = NULL;
    opts->fan_in = 0;
}

static const char *scratch_dir(const char *dir) {
    if (!dir || !*dir)
        dir = getenv("TMPDIR");
    return dir && *dir ? dir : "/tmp";
}

sorter *sorter_init(const sort_options *opts, sp_error *err) {
    char a[32], b[32];
    if (opts->memory < SORT_MIN_MEMORY) {
        sp_errorf(err, "sort memory %s is below the minimum of %s",
                  sp_format_size(opts->memory, a, sizeof a),
                  sp_format_size(SORT_MIN_MEMORY, b, sizeof b));
        return NULL;
    }
    if (opts->fan_in == 1) {
        sp_errorf(err, "sort fan-in must be at least 2 (or 0 to pick from the memory budget)");
        return NULL;
    }
    sorter *s = calloc(1, sizeof *s);
    if (!s) {
        sp_errorf(err, "sort: out of memory");
        return NULL;
    }
    s->opts = *opts;
    s->fd[0] = s->fd[1] = -1;
    const char *dir = scratch_dir(opts->tmp_dir);
    size_t n = strlen(dir) + 32;
    if (!(s->scratch_name = malloc(n))) {
        sp_errorf(err, "sort: out of memory");
        sorter_destroy(s);
        return NULL;
    }
    snprintf(s->scratch_name, n, "sort scratch file in %s", dir);
    /* Opened now, not at the first spill, so a missing or read-only
     * directory fails before any work rather than hours into it. */
    if ((s->fd[0] = sp_tmpfile_open(dir, err)) < 0) {
        sorter_destroy(s);
        return NULL;
    }
    s->record_limit = opts->memory / 4;
    s->wbuf_cap = (size_t)(opts->memory / 16) / ALIGN * ALIGN; /* keeps the arena aligned */
    if (s->wbuf_cap > (1u << 20))
        s->wbuf_cap = 1u << 20;
    /* Pages are touched only as records arrive, so a small sort under a
     * large budget stays small. */
    if (!(s->mem = malloc((size_t)opts->memory))) {
        sp_errorf(err, "sort: cannot allocate the memory budget of %s",
                  sp_format_size(opts->memory, a, sizeof a));
        sorter_destroy(s);
        return NULL;
    }
    s->wbuf = s->mem;
    s->arena = s->mem + s->wbuf_cap;
    s->arena_cap = (size_t)opts->memory - s->wbuf_cap;
    chunk_init(&s->chunk, s->arena, s->arena_cap);
    return s;
}

static int add_run(sorter *s, run_region r, sp_error *err) {
    if (s->nruns == s->runs_cap) {
        size_t cap = s->runs_cap ? 2 * s->runs_cap : 64;
        run_region *nr = realloc(s->runs, cap * sizeof *nr);
        if (!nr)
            return sp_errorf(err, "sort: out of memory for the list of runs");
        s->runs = nr;
        s->runs_cap = cap;
    }
    s->runs[s->nruns++] = r;
    return 0;
}

static int spill(sorter *s, sp_error *err) {
    chunk_sort(&s->chunk);
    run_writer w;
    run_writer_init(&w, s->fd[0], s->scratch_name, s->wbuf, s->wbuf_cap, s->spill_end);
    sp_sink sink = run_writer_sink(&w);
    uint64_t written = 0;
    if (chunk_emit(&s->chunk, &sink, &s->stats.duplicates_replaced, &written, err) ||
        run_writer_flush(&w, err))
        return -1;
    run_region r = {s->spill_end, run_writer_end(&w) - s->spill_end};
    if (add_run(s, r, err))
        return -1;
    s->spill_end += r.len;
    s->stats.runs++;
    s->stats.spilled_bytes += r.len;
    chunk_reset(&s->chunk);
    return 0;
}

int sorter_add(sorter *s, const sp_record *rec, sp_error *err) {
    int kshow = rec->key_len > 100 ? 100 : (int)rec->key_len;
    if (s->finished)
        return sp_errorf(err, "sort: record added after the sort finished");
    if (rec->key_len == 0 || rec->key_len > SP_MAX_KEY_BYTES)
        return sp_errorf(err, "sort: key of %u bytes (must be 1 to %d): '%.*s'", rec->key_len,
                         SP_MAX_KEY_BYTES, kshow, (const char *)rec->key);
    if (rec->key_len + rec->value_len > s->record_limit) {
        char lim[32];
        return sp_errorf(err,
                         "sort: record '%.*s' is larger than a quarter of the sort memory "
                         "(%s); truncate values first (sstpipe truncate) or raise --memory",
                         kshow, (const char *)rec->key,
                         sp_format_size(s->record_limit, lim, sizeof lim));
    }
    if (!chunk_fits(&s->chunk, rec->key_len, rec->value_len) && spill(s, err))
        return -1;
    uint8_t *dst = chunk_append(&s->chunk, rec->key, rec->key_len, rec->value_len);
    if (rec->value_fd >= 0) {
        if (sp_pread_exact(rec->value_fd, dst, (size_t)rec->value_len, 0, "spilled page text", err))
            return -1;
    } else {
        memcpy(dst, rec->value, (size_t)rec->value_len);
    }
    uint64_t size = RUN_RECORD_HEADER + rec->key_len + rec->value_len;
    if (size > s->max_record)
        s->max_record = size;
    s->stats.records_in++;
    return 0;
}

static int sorter_put(void *ctx, const sp_record *rec, sp_error *err) {
    return sorter_add(ctx, rec, err);
}

sp_sink sorter_sink(sorter *s) {
    return (sp_sink){.put = sorter_put, .ctx = s};
}

/* The arena during a merge: readers and heap, then k read buffers, then the
 * buffer for a value too large for a read buffer. */
typedef struct merge_layout {
    size_t big_cap;
    size_t read_space; /* bytes for readers, heap and read buffers */
    unsigned fan_in;
} merge_layout;

static size_t round_up(size_t n) {
    return (n + ALIGN - 1) / ALIGN * ALIGN;
}

static merge_layout plan_merge(const sorter *s) {
    merge_layout m;
    m.big_cap = round_up((size_t)s->max_record);
    m.read_space = s->arena_cap - m.big_cap;
    size_t per_run =
        MIN_RUN_BUFFER + sizeof(run_reader) + sizeof(merge_source *) + sizeof(unsigned) + ALIGN;
    size_t most = m.read_space / per_run;
    if (most < 2) /* cannot happen above SORT_MIN_MEMORY; buffers just get smaller */
        most = 2;
    m.fan_in = s->opts.fan_in && s->opts.fan_in < most ? s->opts.fan_in : (unsigned)most;
    return m;
}

static int merge_group(sorter *s, const merge_layout *m, const run_region *regs, unsigned k, int fd,
                       const sp_sink *out, uint64_t *emitted, sp_error *err) {
    run_reader *readers = (run_reader *)s->arena;
    merge_source **src = (merge_source **)(readers + k);
    unsigned *heap = (unsigned *)(src + k);
    size_t head = round_up(k * (sizeof *readers + sizeof *src + sizeof *heap));
    size_t buf_cap = (m->read_space - head) / k / ALIGN * ALIGN;
    uint8_t *big = s->arena + s->arena_cap - m->big_cap;
    for (unsigned i = 0; i < k; i++) {
        run_reader_init(&readers[i], fd, s->scratch_name, regs[i], s->arena + head + i * buf_cap,
                        buf_cap, big, m->big_cap);
        src[i] = &readers[i].src;
    }
    return merge_runs(src, k, heap, out, &s->stats.duplicates_replaced, emitted, err);
}

/* Returns the disk space of a merged group's runs early; where the file
 * system cannot punch holes the space is returned when the pass ends. */
static void release(int fd, const run_region *regs, unsigned k) {
    uint64_t from = regs[0].off, to = regs[k - 1].off + regs[k - 1].len;
    if (to > from)
        (void)fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)from,
                        (off_t)(to - from));
}

/* One pass: groups of fan_in consecutive runs in fd[in] become one run each in fd[!in]. */
static int merge_pass(sorter *s, const merge_layout *m, int in, sp_error *err) {
    int outi = !in;
    if (s->fd[outi] < 0 && (s->fd[outi] = sp_tmpfile_open(s->opts.tmp_dir, err)) < 0)
        return -1;
    uint64_t off = 0;
    size_t nout = 0;
    for (size_t g = 0; g < s->nruns; g += m->fan_in) {
        unsigned k = (unsigned)(s->nruns - g < m->fan_in ? s->nruns - g : m->fan_in);
        run_writer w;
        run_writer_init(&w, s->fd[outi], s->scratch_name, s->wbuf, s->wbuf_cap, off);
        sp_sink sink = run_writer_sink(&w);
        uint64_t written = 0;
        if (merge_group(s, m, s->runs + g, k, s->fd[in], &sink, &written, err) ||
            run_writer_flush(&w, err))
            return -1;
        release(s->fd[in], s->runs + g, k);
        /* nout <= g: this group's regions have been read before the slot is reused. */
        s->runs[nout++] = (run_region){off, run_writer_end(&w) - off};
        s->stats.spilled_bytes += run_writer_end(&w) - off;
        off = run_writer_end(&w);
    }
    s->nruns = nout;
    if (ftruncate(s->fd[in], 0) != 0)
        return sp_errorf_errno(err, "%s: cannot truncate", s->scratch_name);
    s->stats.merge_passes++;
    return 0;
}

int sorter_finish(sorter *s, const sp_sink *out, sp_error *err) {
    if (s->finished)
        return sp_errorf(err, "sort: finished twice");
    s->finished = true;
    if (s->nruns == 0) {
        chunk_sort(&s->chunk);
        return chunk_emit(&s->chunk, out, &s->stats.duplicates_replaced, &s->stats.records_out,
                          err);
    }
    if (s->chunk.n && spill(s, err))
        return -1;
    merge_layout m = plan_merge(s);
    int in = 0;
    while (s->nruns > m.fan_in) {
        if (merge_pass(s, &m, in, err))
            return -1;
        in = !in;
    }
    if (merge_group(s, &m, s->runs, (unsigned)s->nruns, s->fd[in], out, &s->stats.records_out, err))
        return -1;
    s->stats.merge_passes++;
    return 0;
}

const sort_stats *sorter_stats(const sorter *s) {
    return &s->stats;
}

void sorter_destroy(sorter *s) {
    if (!s)
        return;
    for (int i = 0; i < 2; i++)
        if (s->fd[i] >= 0)
            close(s->fd[i]);
    free(s->mem);
    free(s->runs);
    free(s->scratch_name);
    free(s);
}

void sort_stats_format(const sort_stats *s, char *buf, size_t cap) {
    snprintf(buf, cap,
             "sort: records_in=%llu records_out=%llu duplicates_replaced=%llu runs=%llu "
             "merge_passes=%llu spilled_bytes=%llu",
             (unsigned long long)s->records_in, (unsigned long long)s->records_out,
             (unsigned long long)s->duplicates_replaced, (unsigned long long)s->runs,
             (unsigned long long)s->merge_passes, (unsigned long long)s->spilled_bytes);
}
