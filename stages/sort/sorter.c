/*
 * sorter.c: the external merge sort; see sorter.h.
 *
 * Memory: one mapping of exactly the budget (budget_map). While records
 * arrive it is cut into parts (one, or one per thread feeding the sort),
 * each a write buffer and an arena holding a chunk (chunk.h); during the
 * merge the same bytes become one write buffer, the run readers (merge
 * sources, merge.h), their buffers and a buffer for the largest record, so
 * the budget holds in both phases.
 *
 * Disk: each part appends its runs to an anonymous scratch file of its
 * own, from its own thread: in one shared file the parts' writes would
 * queue on the file's lock (ext4 takes the inode's exclusively for each
 * buffered write), one thread at a time however many there are. Part 0's
 * file is fd[0], opened by sorter_init; another part's is opened at its
 * first spill, so a sort that never spills opens no other: fd[0], one
 * more per other part that spilled, and fd[1] in a merge of several
 * passes are all the descriptors it holds. A pass with more runs than the
 * fan-in merges groups of consecutive runs (of the list of every part's
 * runs, part after part) into a pass file, fd[1] and fd[0] in turn, each
 * record keeping its seq. Between equal keys the merge takes the highest
 * seq, then the later run: with one part every seq is 0 and "the later
 * record wins" means "the later run wins", as consecutive groups keep it;
 * with several, the seq (the record's place in the input) decides across
 * parts, and runs of one part are in the list in its order. Merged regions
 * are punched out as the pass goes and the files it read are emptied
 * after it, so disk use stays near one copy of the data.
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
#include <sys/mman.h>
#include <unistd.h>
#if __has_include(<valgrind/memcheck.h>)
#include <valgrind/memcheck.h>
#else
#define VALGRIND_MAKE_MEM_UNDEFINED(addr, len) ((void)(addr), (void)(len))
#endif

/* The smallest read buffer a run gets in a merge: below this, reads get
 * too small to stream from disk efficiently. */
#define MIN_RUN_BUFFER (64u << 10)
#define ALIGN 64

struct sort_part {
    sorter *s;
    uint8_t *wbuf; /* its spills' write buffer, then its chunk's arena */
    size_t wbuf_cap;
    chunk chunk;
    uint64_t place; /* the seq of the records added next */
    uint64_t max_record;
    bool sorted;
    sort_stats stats;   /* records_in, duplicates_replaced, runs, spilled_bytes */
    int fd;             /* its scratch file (part 0's is the sorter's fd[0]) */
    uint64_t spill_end; /* end of its last run in fd */
    run_region *runs;   /* its runs, in the order it wrote them */
    size_t nruns, runs_cap;
    /* sort_part_end's spill failed (it cannot return it): the error
     * sorter_finish returns. */
    bool failed;
    sp_error err;
};

struct sorter {
    sort_options opts;
    char *scratch_name; /* for error messages */
    uint64_t record_limit;
    uint8_t *mem;      /* the budget: the parts while records arrive, then the merge's */
    size_t mem_mapped; /* bytes mapped at mem (budget_map), 0 before */
    uint8_t *wbuf;
    size_t wbuf_cap;
    uint8_t *arena;
    size_t arena_cap;
    sort_part *parts;
    unsigned nparts;
    chunk_source *mem_src; /* nparts of each: the merge of parts held in memory */
    merge_source **mem_ptr;
    unsigned *mem_heap;
    int fd[2];        /* the pass files; fd[0] is also part 0's scratch file */
    run_region *runs; /* for the merge: every part's runs, part after part */
    size_t nruns, runs_cap;
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

/* A part in len bytes at base: a write buffer of a sixteenth (at most
 * 1 MiB), the rest its chunk. One part over the whole budget is the
 * single-threaded sort's layout. */
static void part_carve(sort_part *p, sorter *s, uint8_t *base, size_t len) {
    *p = (sort_part){.s = s, .wbuf = base, .fd = -1};
    p->wbuf_cap = len / 16 / ALIGN * ALIGN; /* keeps the arena aligned */
    if (p->wbuf_cap > (1u << 20))
        p->wbuf_cap = 1u << 20;
    chunk_init(&p->chunk, base + p->wbuf_cap, len - p->wbuf_cap);
}

/* The budget's len bytes, mapped anonymous: the kernel gives a page only
 * when it is first touched, so a small sort under a large budget stays
 * small, and takes them back at once when they are unmapped. malloc gives
 * as much, but under the sanitizers an allocation the size of the budget
 * costs its shadow memory at once, in every process that sorts. The page
 * after the budget is mapped without access, so a write past its end
 * faults in every build; valgrind is told the bytes are undefined, as
 * malloc's are, so that a read of a byte never written is still reported.
 * Returns NULL when the mapping fails; *mapped: the bytes to unmap. */
static uint8_t *budget_map(size_t len, size_t *mapped) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t body = (len + page - 1) / page * page;
    uint8_t *p =
        mmap(NULL, body + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    if (mprotect(p + body, page, PROT_NONE) != 0) {
        munmap(p, body + page);
        return NULL;
    }
    (void)VALGRIND_MAKE_MEM_UNDEFINED(p, body);
    *mapped = body + page;
    return p;
}

static void free_parts(sorter *s) {
    for (unsigned i = 0; s->parts && i < s->nparts; i++) {
        if (i > 0 && s->parts[i].fd >= 0)
            close(s->parts[i].fd);
        free(s->parts[i].runs);
    }
    free(s->parts);
}

static int alloc_parts(sorter *s, unsigned n, sp_error *err) {
    free_parts(s);
    free(s->mem_src);
    free(s->mem_ptr);
    free(s->mem_heap);
    s->parts = calloc(n, sizeof *s->parts);
    s->mem_src = calloc(n, sizeof *s->mem_src);
    s->mem_ptr = calloc(n, sizeof *s->mem_ptr);
    s->mem_heap = calloc(n, sizeof *s->mem_heap);
    if (!s->parts || !s->mem_src || !s->mem_ptr || !s->mem_heap)
        return sp_errorf(err, "sort: out of memory for %u parts", n);
    s->nparts = n;
    size_t share = (size_t)s->opts.memory / n / ALIGN * ALIGN;
    for (unsigned i = 0; i < n; i++)
        part_carve(&s->parts[i], s, s->mem + i * share, share);
    s->parts[0].fd = s->fd[0];
    return 0;
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
     * directory fails before any work rather than hours into it; part 0
     * spills into it. */
    if ((s->fd[0] = sp_tmpfile_open(dir, err)) < 0) {
        sorter_destroy(s);
        return NULL;
    }
    s->record_limit = opts->memory / 4;
    if (!(s->mem = budget_map((size_t)opts->memory, &s->mem_mapped))) {
        sp_errorf(err, "sort: cannot allocate the memory budget of %s",
                  sp_format_size(opts->memory, a, sizeof a));
        sorter_destroy(s);
        return NULL;
    }
    /* The merge's layout: the same write buffer, the rest for the readers. */
    s->wbuf = s->mem;
    s->wbuf_cap = (size_t)(opts->memory / 16) / ALIGN * ALIGN;
    if (s->wbuf_cap > (1u << 20))
        s->wbuf_cap = 1u << 20;
    s->arena = s->mem + s->wbuf_cap;
    s->arena_cap = (size_t)opts->memory - s->wbuf_cap;
    if (alloc_parts(s, 1, err)) {
        sorter_destroy(s);
        return NULL;
    }
    return s;
}

int sorter_split(sorter *s, unsigned n, sp_error *err) {
    if (n == 0 || s->parts[0].stats.records_in || s->finished)
        return sp_errorf(err, "sort: split into %u parts after records were added", n);
    return alloc_parts(s, n, err);
}

sort_part *sorter_part(sorter *s, unsigned i) {
    return i < s->nparts ? &s->parts[i] : NULL;
}

void sort_part_begin(sort_part *p, uint64_t place) {
    p->place = place;
}

static int add_run(run_region **runs, size_t *n, size_t *cap, run_region r, sp_error *err) {
    if (*n == *cap) {
        size_t ncap = *cap ? 2 * *cap : 64;
        run_region *nr = realloc(*runs, ncap * sizeof *nr);
        if (!nr)
            return sp_errorf(err, "sort: out of memory for the list of runs");
        *runs = nr;
        *cap = ncap;
    }
    (*runs)[(*n)++] = r;
    return 0;
}

/* A writer appending a run to the part's scratch file, opened here at the
 * part's first spill (from the part's own thread). */
static int start_run(sort_part *p, run_writer *w, sp_error *err) {
    if (p->fd < 0 && (p->fd = sp_tmpfile_open(p->s->opts.tmp_dir, err)) < 0)
        return -1;
    run_writer_init(w, p->fd, p->s->scratch_name, p->wbuf, p->wbuf_cap, p->spill_end);
    return 0;
}

/* The run w has written since start_run, last in the part's list. */
static int publish_run(sort_part *p, const run_writer *w, sp_error *err) {
    run_region r = {p->fd, p->spill_end, run_writer_end(w) - p->spill_end};
    if (add_run(&p->runs, &p->nruns, &p->runs_cap, r, err))
        return -1;
    p->spill_end = run_writer_end(w);
    p->stats.runs++;
    p->stats.spilled_bytes += r.len;
    return 0;
}

/* The part's chunk, sorted, as one run. */
static int spill(sort_part *p, sp_error *err) {
    if (!p->sorted)
        chunk_sort(&p->chunk);
    run_writer w;
    if (start_run(p, &w, err))
        return -1;
    chunk_source cs;
    chunk_source_init(&cs, &p->chunk, &p->stats.duplicates_replaced);
    int got;
    while ((got = cs.src.ops->next(&cs.src, err)) == 1) {
        sp_record rec = {.key = cs.src.key,
                         .key_len = cs.src.key_len,
                         .value = cs.value,
                         .value_len = cs.src.value_len,
                         .value_fd = -1};
        if (run_writer_put(&w, &rec, cs.src.seq, err))
            return -1;
    }
    if (got < 0 || run_writer_flush(&w, err) || publish_run(p, &w, err))
        return -1;
    chunk_reset(&p->chunk);
    p->sorted = false;
    return 0;
}

/* A record too large for a part's chunk (a small share of the budget) is a
 * run of its own, written from where it is. */
static int spill_alone(sort_part *p, const sp_record *rec, const uint8_t *value, sp_error *err) {
    run_writer w;
    if (start_run(p, &w, err))
        return -1;
    sp_record r = *rec;
    r.value = value;
    r.value_fd = -1;
    if (run_writer_put(&w, &r, p->place, err) || run_writer_flush(&w, err))
        return -1;
    return publish_run(p, &w, err);
}

static int part_add(sort_part *p, const sp_record *rec, sp_error *err) {
    sorter *s = p->s;
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
    uint64_t size = RUN_RECORD_HEADER + rec->key_len + rec->value_len;
    if (size > p->max_record)
        p->max_record = size;
    p->stats.records_in++;
    if (!chunk_fits(&p->chunk, rec->key_len, rec->value_len) && p->chunk.n && spill(p, err))
        return -1;
    if (!chunk_fits(&p->chunk, rec->key_len, rec->value_len)) {
        if (rec->value_fd < 0)
            return spill_alone(p, rec, rec->value, err);
        /* Read into the (empty) chunk's arena, which is no use otherwise. */
        if (rec->value_len > p->chunk.cap)
            return sp_errorf(err, "sort: record '%.*s' is larger than a part of the sort memory",
                             kshow, (const char *)rec->key);
        if (sp_pread_exact(rec->value_fd, p->chunk.arena, (size_t)rec->value_len, 0,
                           "spilled page text", err))
            return -1;
        return spill_alone(p, rec, p->chunk.arena, err);
    }
    uint8_t *dst = chunk_append(&p->chunk, rec->key, rec->key_len, rec->value_len, p->place);
    p->sorted = false;
    if (rec->value_fd >= 0) {
        if (sp_pread_exact(rec->value_fd, dst, (size_t)rec->value_len, 0, "spilled page text", err))
            return -1;
    } else {
        memcpy(dst, rec->value, (size_t)rec->value_len);
    }
    return 0;
}

int sorter_add(sorter *s, const sp_record *rec, sp_error *err) {
    return part_add(&s->parts[0], rec, err);
}

static int part_put(void *ctx, const sp_record *rec, sp_error *err) {
    return part_add(ctx, rec, err);
}

sp_sink sort_part_sink(sort_part *p) {
    return (sp_sink){.put = part_put, .ctx = p};
}

void sort_part_end(sort_part *p) {
    /* A part that spilled before spills what it holds here, on its own
     * thread, beside the other parts, rather than in sorter_finish, one
     * part after another on the thread about to merge: the run is the same
     * and comes last in the part's list either way. */
    if (p->nruns && p->chunk.n && !p->failed) {
        p->failed = spill(p, &p->err) != 0;
        return;
    }
    if (!p->sorted) {
        chunk_sort(&p->chunk);
        p->sorted = true;
    }
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

/* Takes every record of m: into a run (w, keeping each record's seq for
 * the next pass) or into out. */
static int drain(sorter *s, merger *m, run_writer *w, const sp_sink *out, uint64_t *emitted,
                 sp_error *err) {
    sp_record rec;
    unsigned from;
    int got;
    while ((got = merger_next(m, &rec, &from, err)) == 1) {
        if (w ? run_writer_put(w, &rec, m->src[from]->seq, err) : sp_sink_put(out, &rec, err))
            return -1;
        (*emitted)++;
    }
    s->stats.duplicates_replaced += m->dups;
    return got;
}

static int merge_group(sorter *s, const merge_layout *m, const run_region *regs, unsigned k,
                       run_writer *w, const sp_sink *out, uint64_t *emitted, sp_error *err) {
    run_reader *readers = (run_reader *)s->arena;
    merge_source **src = (merge_source **)(readers + k);
    unsigned *heap = (unsigned *)(src + k);
    size_t head = round_up(k * (sizeof *readers + sizeof *src + sizeof *heap));
    size_t buf_cap = (m->read_space - head) / k / ALIGN * ALIGN;
    uint8_t *big = s->arena + s->arena_cap - m->big_cap;
    for (unsigned i = 0; i < k; i++) {
        run_reader_init(&readers[i], s->scratch_name, regs[i], s->arena + head + i * buf_cap,
                        buf_cap, big, m->big_cap);
        src[i] = &readers[i].src;
    }
    merger mg;
    if (merger_init(&mg, src, k, heap, err))
        return -1;
    return drain(s, &mg, w, out, emitted, err);
}

/* Returns the disk space of a merged group's runs early; where the file
 * system cannot punch holes the space is returned when the pass ends.
 * Run by run: a group may hold runs of several parts' files. */
static void release(const run_region *regs, unsigned k) {
    for (unsigned i = 0; i < k; i++)
        if (regs[i].len)
            (void)fallocate(regs[i].fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                            (off_t)regs[i].off, (off_t)regs[i].len);
}

static int empty_file(const sorter *s, int fd, sp_error *err) {
    if (ftruncate(fd, 0) != 0)
        return sp_errorf_errno(err, "%s: cannot truncate", s->scratch_name);
    return 0;
}

/* One pass: groups of fan_in consecutive runs (in the parts' files on the
 * first pass, in fd[in] after) become one run each in fd[!in];
 * consecutive, so the later of two runs of one part stays later. */
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
        uint64_t written = 0;
        if (merge_group(s, m, s->runs + g, k, &w, NULL, &written, err) || run_writer_flush(&w, err))
            return -1;
        release(s->runs + g, k);
        /* nout <= g: this group's regions have been read before the slot is reused. */
        s->runs[nout++] = (run_region){s->fd[outi], off, run_writer_end(&w) - off};
        s->stats.spilled_bytes += run_writer_end(&w) - off;
        off = run_writer_end(&w);
    }
    s->nruns = nout;
    if (s->stats.merge_passes) {
        if (empty_file(s, s->fd[in], err))
            return -1;
    } else {
        for (unsigned i = 0; i < s->nparts; i++) /* part 0's is fd[0] */
            if (s->parts[i].fd >= 0 && empty_file(s, s->parts[i].fd, err))
                return -1;
    }
    s->stats.merge_passes++;
    return 0;
}

/* The parts' counts into the sorter's, and their runs into its list, part
 * after part, each in its order (so the later of two runs of one part, a
 * place split by a spill, is later in the list, and the list is the same
 * whatever the timing of the threads). */
static int sum_parts(sorter *s, sp_error *err) {
    for (unsigned i = 0; i < s->nparts; i++) {
        const sort_part *p = &s->parts[i];
        for (size_t r = 0; r < p->nruns; r++)
            if (add_run(&s->runs, &s->nruns, &s->runs_cap, p->runs[r], err))
                return -1;
        s->stats.records_in += p->stats.records_in;
        s->stats.duplicates_replaced += p->stats.duplicates_replaced;
        s->stats.runs += p->stats.runs;
        s->stats.spilled_bytes += p->stats.spilled_bytes;
        if (p->max_record > s->max_record)
            s->max_record = p->max_record;
    }
    return 0;
}

int sorter_finish(sorter *s, const sp_sink *out, sp_error *err) {
    if (s->finished)
        return sp_errorf(err, "sort: finished twice");
    s->finished = true;
    for (unsigned i = 0; i < s->nparts; i++)
        if (s->parts[i].failed) {
            *err = s->parts[i].err;
            return -1;
        }
    bool spilled = false;
    for (unsigned i = 0; i < s->nparts; i++)
        spilled |= s->parts[i].nruns > 0;
    if (!spilled) {
        /* Everything is in memory: the parts' chunks merged straight out. */
        for (unsigned i = 0; i < s->nparts; i++) {
            sort_part_end(&s->parts[i]);
            chunk_source_init(&s->mem_src[i], &s->parts[i].chunk,
                              &s->parts[i].stats.duplicates_replaced);
            s->mem_ptr[i] = &s->mem_src[i].src;
        }
        merger mg;
        int rc = merger_init(&mg, s->mem_ptr, s->nparts, s->mem_heap, err);
        if (rc == 0)
            rc = drain(s, &mg, NULL, out, &s->stats.records_out, err);
        return sum_parts(s, err) ? -1 : rc;
    }
    for (unsigned i = 0; i < s->nparts; i++)
        if (s->parts[i].chunk.n && spill(&s->parts[i], err))
            return -1;
    if (sum_parts(s, err))
        return -1;
    merge_layout m = plan_merge(s);
    int in = 0;
    while (s->nruns > m.fan_in) {
        if (merge_pass(s, &m, in, err))
            return -1;
        in = !in;
    }
    if (merge_group(s, &m, s->runs, (unsigned)s->nruns, NULL, out, &s->stats.records_out, err))
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
    if (s->mem)
        munmap(s->mem, s->mem_mapped);
    free(s->runs);
    free_parts(s);
    free(s->mem_src);
    free(s->mem_ptr);
    free(s->mem_heap);
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
