/*
 * profile.c: running a profile and reducing its timings to figures; see
 * profile.h. The keys are drawn first (profile_keys.c), the file is then
 * dropped from the page cache in cold mode, and only the lookups themselves
 * (profile_io.c) are timed.
 */
#include "stages/profile/profile.h"

#include "stages/common/clock.h"
#include "stages/profile/profile_io.h"
#include "stages/profile/profile_keys.h"
#include "stages/sst/table_reader.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void profile_options_init(profile_options *opts) {
    memset(opts, 0, sizeof *opts);
    opts->threads = 1;
    opts->queue_depth = 1;
}

void profile_result_init(profile_result *res) {
    memset(res, 0, sizeof *res);
}

void profile_result_destroy(profile_result *res) {
    free(res->path);
    free(res->latencies_ns);
    memset(res, 0, sizeof *res);
}

static int check_options(const profile_options *o, sp_error *err) {
    if (o->n == 0)
        return sp_errorf(err, "profile: the number of lookups must be at least 1");
    if (o->threads == 0)
        return sp_errorf(err, "profile: threads must be at least 1");
    if (o->queue_depth == 0)
        return sp_errorf(err, "profile: queue depth must be at least 1");
    if (!(o->misses_pct >= 0 && o->misses_pct <= 100))
        return sp_errorf(err, "profile: misses must be a percentage from 0 to 100");
    return 0;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of a sorted array. */
static uint64_t percentile(const uint64_t *v, uint64_t n, double p) {
    uint64_t rank = (uint64_t)((p / 100.0) * (double)n + 0.999999999);
    if (rank < 1)
        rank = 1;
    if (rank > n)
        rank = n;
    return v[rank - 1];
}

static void reduce(profile_result *res, const uint32_t *reads, double seconds) {
    uint64_t n = res->lookups;
    uint64_t *lat = res->latencies_ns;
    uint64_t sum = 0;
    res->min_reads_per_lookup = UINT64_MAX;
    for (uint64_t i = 0; i < n; i++) {
        sum += lat[i];
        res->reads += reads[i];
        if (reads[i] < res->min_reads_per_lookup)
            res->min_reads_per_lookup = reads[i];
        if (reads[i] > res->max_reads_per_lookup)
            res->max_reads_per_lookup = reads[i];
    }
    qsort(lat, n, sizeof *lat, cmp_u64);
    res->min_ns = lat[0];
    res->max_ns = lat[n - 1];
    res->avg_ns = (double)sum / (double)n;
    res->p50_ns = percentile(lat, n, 50);
    res->p90_ns = percentile(lat, n, 90);
    res->p99_ns = percentile(lat, n, 99);
    res->p999_ns = percentile(lat, n, 99.9);
    res->seconds = seconds;
    res->lookups_per_sec = seconds > 0 ? (double)n / seconds : 0;
    res->reads_per_lookup = (double)res->reads / (double)n;
    res->blocks_per_lookup = (double)res->blocks_searched / (double)n;
    res->bytes_per_lookup = (double)res->bytes_read / (double)n;
}

/* Opens the file for the timed reads: through the page cache, or (cold)
 * dropped from it and opened for direct I/O, so every read reaches the disk. */
static int open_for_lookups(const char *path, bool cold, int *fd, sp_error *err) {
    *fd = open(path, O_RDONLY | O_CLOEXEC);
    if (*fd < 0)
        return sp_errorf_errno(err, "%s: cannot open", path);
    if (!cold)
        return 0;
    int e = posix_fadvise(*fd, 0, 0, POSIX_FADV_DONTNEED);
    close(*fd);
    if (e)
        return sp_errorf(err, "%s: cannot drop the file from the page cache: %s", path,
                         strerror(e));
    *fd = open(path, O_RDONLY | O_CLOEXEC | O_DIRECT);
    if (*fd < 0)
        return sp_errorf_errno(err, "%s: cannot open for direct I/O (--cold)", path);
    return 0;
}

/* The table's figures and the keys, drawn through libsstpipe
 * (profile_keys.h), which also checks a set whole (its manifest, every
 * shard against it); the table is closed again before the lookups, which
 * read through their own readers. */
static int draw_keys(const char *path, uint64_t n, const profile_options *opts, profile_keys *keys,
                     profile_result *res, sp_error *err) {
    char *msg = NULL;
    sstpipe_table *t = sstpipe_open(path, &msg);
    if (!t) {
        sp_errorf(err, "%s", msg ? msg : "out of memory");
        sstpipe_free(msg);
        return -1;
    }
    sstpipe_info f;
    sstpipe_info_get(t, &f);
    res->file_size = f.file_size;
    res->records = f.records;
    res->data_blocks = f.data_blocks;
    res->block_size = f.block_size;
    res->cluster_size = f.cluster_size;
    res->shards = sstpipe_shard_count(t);
    int rc = profile_keys_draw(t, n, opts->misses_pct, opts->seed, keys, err);
    sstpipe_close(t);
    return rc;
}

/* Opens the lookups' reader and descriptor of each shard (the table alone
 * when not a set): mapped, or for reads (cold: dropped from the cache,
 * O_DIRECT). */
static int open_shards(const char *path, const table_set *set, bool cold, bool mapped,
                       profile_shard *sh, size_t n, sp_error *err) {
    for (size_t i = 0; i < n; i++) {
        const char *p = set ? table_set_shard_path(set, i) : path;
        int fd;
        if (!(sh[i].r = sst_reader_open(p, err)) || open_for_lookups(p, cold, &fd, err))
            return -1;
        /* The reader's block source reads the lookups' blocks on fd, and
         * closes it with the reader. */
        sst_reader_blocks_mut(sh[i].r)->lookup_fd = fd;
        if (mapped && sst_reader_map(sh[i].r, SST_READER_DIR_BUDGET, err))
            return -1;
    }
    return 0;
}

int profile_run(const char *path, const profile_options *opts, profile_result *res, sp_error *err) {
    if (check_options(opts, err))
        return -1;
    if (opts->queue_depth > 1 && lookup_uring_probe(opts->queue_depth, err))
        return -1;
    res->opts = *opts;
    if (!(res->path = strdup(path)))
        return sp_errorf(err, "%s: out of memory", path);

    uint64_t n = opts->n;
    unsigned threads = opts->threads;
    profile_keys keys = {0};
    table_set *set = NULL;
    profile_shard *shards = NULL;
    size_t n_shards = 0;
    int rc = -1;
    uint32_t *reads = calloc(n, sizeof *reads);
    lookup_job *jobs = calloc(threads, sizeof *jobs);
    pthread_t *tids = calloc(threads, sizeof *tids);
    res->latencies_ns = calloc(n, sizeof *res->latencies_ns);
    if (draw_keys(path, n, opts, &keys, res, err))
        goto out;
    res->key_sequence_hash = keys.hash;
    res->misses_requested = keys.n_absent;
    if (table_set_is_set_path(path) && !(set = table_set_read(path, err)))
        goto out;
    n_shards = set ? table_set_count(set) : 1;
    if (!reads || !jobs || !tids || !res->latencies_ns ||
        !(shards = calloc(n_shards, sizeof *shards))) {
        sp_errorf(err, "out of memory for %llu lookups", (unsigned long long)n);
        goto out;
    }
    bool mapped = !opts->cold && opts->queue_depth == 1;
    res->io = mapped ? "mapped" : opts->queue_depth > 1 ? "io_uring" : "pread";
    if (open_shards(path, set, opts->cold, mapped, shards, n_shards, err))
        goto out;
    for (unsigned t = 0; t < threads; t++)
        jobs[t] = (lookup_job){.shards = shards,
                               .set = set,
                               .mapped = mapped,
                               .keys = &keys,
                               .first = n * t / threads,
                               .count = n * (t + 1) / threads - n * t / threads,
                               .queue_depth = opts->queue_depth,
                               .lat_ns = res->latencies_ns,
                               .reads = reads};
    if (opts->progress)
        sp_progress_phase(opts->progress, SP_PHASE_PROFILING);
    double t0 = sp_clock_seconds();
    unsigned started = 0;
    for (; started < threads; started++)
        if (pthread_create(&tids[started], NULL, lookup_job_run, &jobs[started]) != 0)
            break;
    for (unsigned t = 0; t < started; t++)
        pthread_join(tids[t], NULL);
    double seconds = sp_clock_seconds() - t0;
    if (started < threads) {
        sp_errorf(err, "cannot start %u lookup threads", threads);
        goto out;
    }
    for (unsigned t = 0; t < threads; t++) {
        if (jobs[t].rc) {
            sp_errorf(err, "%s", jobs[t].err.msg);
            goto out;
        }
        res->hits += jobs[t].hits;
        res->misses += jobs[t].misses;
        res->bytes_read += jobs[t].bytes;
        res->blocks_searched += jobs[t].blocks;
    }
    res->lookups = n;
    if (opts->progress)
        sp_progress_store(&opts->progress->records, n);
    reduce(res, reads, seconds);
    rc = 0;
out:
    for (size_t i = 0; shards && i < n_shards; i++) {
        sst_reader_close(shards[i].r);
    }
    free(shards);
    table_set_free(set);
    profile_keys_destroy(&keys);
    free(reads);
    free(jobs);
    free(tids);
    return rc;
}
