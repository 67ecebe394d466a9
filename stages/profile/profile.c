/*
 * profile.c: running a profile and reducing its timings to figures; see
 * profile.h. The table (or set) is opened once, through libsstpipe, as a
 * user would open it; the keys are drawn from it (profile_keys.c), its
 * files are then dropped from the page cache in cold mode, and only the
 * library's calls themselves (profile_io.c) are timed.
 */
#include "stages/profile/profile.h"

#include "stages/profile/profile_io.h"
#include "stages/profile/profile_keys.h"
#include "stages/read/info_json.h"
#include "stages/sst/block_source.h"
#include "stages/sst/sstpipe.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
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

static void reduce(profile_result *res, const double *reads, double seconds) {
    uint64_t n = res->lookups;
    uint64_t *lat = res->latencies_ns;
    uint64_t sum = 0;
    double all_reads = 0;
    res->min_reads_per_lookup = reads[0];
    res->max_reads_per_lookup = reads[0];
    for (uint64_t i = 0; i < n; i++) {
        sum += lat[i];
        all_reads += reads[i];
        if (reads[i] < res->min_reads_per_lookup)
            res->min_reads_per_lookup = reads[i];
        if (reads[i] > res->max_reads_per_lookup)
            res->max_reads_per_lookup = reads[i];
    }
    /* Each key's share of its call's reads, summed back to whole reads. */
    res->reads = (uint64_t)(all_reads + 0.5);
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

/* Opens path once, as the lookups will read it: mapped, or (cold) with
 * direct I/O, every lookup's block read from the device. */
static sstpipe_table *open_table(const char *path, bool cold, sp_error *err) {
    char *msg = NULL;
    sstpipe_table *t = NULL;
    sstpipe_options *o = cold ? sstpipe_options_new() : NULL;
    if (cold && o)
        sstpipe_options_set_direct_io(o, true);
    if (!cold || o)
        t = sstpipe_open_with(path, o, &msg);
    sstpipe_options_free(o);
    if (!t)
        sp_errorf(err, "%s", msg ? msg : "out of memory");
    sstpipe_free(msg);
    return t;
}

/* Drops every file of t from the page cache, as --cold always has: the
 * blocks that drawing the keys read through the cache go, and the
 * lookups' O_DIRECT reads find nothing there to write back first. */
static int drop_cache(sstpipe_table *t, sp_error *err) {
    for (size_t i = 0; i < sstpipe_shard_count(t); i++) {
        const char *p = sstpipe_path(sstpipe_shard(t, i));
        int fd = open(p, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            return sp_errorf_errno(err, "%s: cannot open", p);
        int e = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
        close(fd);
        if (e)
            return sp_errorf(err, "%s: cannot drop the file from the page cache: %s", p,
                             strerror(e));
    }
    return 0;
}

/* The table's figures (of a set: the sums) and the keys. */
static int draw_keys(sstpipe_table *t, uint64_t n, const profile_options *opts, profile_keys *keys,
                     profile_result *res, sp_error *err) {
    sstpipe_info f;
    sstpipe_info_get(t, &f);
    res->file_size = f.file_size;
    res->records = f.records;
    res->data_blocks = f.data_blocks;
    res->block_size = f.block_size;
    res->cluster_size = f.cluster_size;
    res->shards = sstpipe_shard_count(t);
    sstpipe_compression z;
    sstpipe_compression_get(t, &z);
    res->filter_bytes = z.filter_bytes;
    res->filter_bits_per_key = info_filter_bits_per_key(&f, &z);
    return profile_keys_draw(t, n, opts->misses_pct, opts->seed, keys, err);
}

/* Whether an io_uring of the batch's depth can be set up here: a cold
 * batch's reads go through one, and a depth the kernel refuses is said
 * up front rather than read one after another unnoticed. */
static int uring_probe(unsigned depth, sp_error *err) {
    sst_block_ring *ring = sst_block_ring_new(depth, err);
    if (!ring)
        return -1;
    sst_block_ring_free(ring);
    return 0;
}

int profile_run(const char *path, const profile_options *opts, profile_result *res, sp_error *err) {
    if (check_options(opts, err))
        return -1;
    bool batched = opts->queue_depth > 1;
    if (opts->cold && batched && uring_probe(opts->queue_depth, err))
        return -1;
    res->opts = *opts;
    if (!(res->path = strdup(path)))
        return sp_errorf(err, "%s: out of memory", path);

    uint64_t n = opts->n;
    unsigned threads = opts->threads;
    profile_keys keys = {0};
    int rc = -1;
    double *reads = calloc(n, sizeof *reads);
    lookup_job *jobs = calloc(threads, sizeof *jobs);
    pthread_t *tids = calloc(threads, sizeof *tids);
    res->latencies_ns = calloc(n, sizeof *res->latencies_ns);
    sstpipe_table *t = open_table(path, opts->cold, err);
    if (!t || draw_keys(t, n, opts, &keys, res, err))
        goto out;
    res->key_sequence_hash = keys.hash;
    res->misses_requested = keys.n_absent;
    if (!reads || !jobs || !tids || !res->latencies_ns) {
        sp_errorf(err, "out of memory for %llu lookups", (unsigned long long)n);
        goto out;
    }
    if (opts->cold && drop_cache(t, err))
        goto out;
    res->io = !opts->cold ? "mapped" : batched ? "io_uring" : "pread";
    for (unsigned k = 0; k < threads; k++)
        jobs[k] = (lookup_job){.t = t,
                               .keys = &keys,
                               .first = n * k / threads,
                               .count = n * (k + 1) / threads - n * k / threads,
                               .batch = opts->queue_depth,
                               .reads_are = !opts->cold ? LOOKUP_RUN_CALLS
                                            : batched   ? LOOKUP_DISK_BLOCKS
                                                        : LOOKUP_READ_CALLS,
                               .block_size = res->block_size,
                               .lat_ns = res->latencies_ns,
                               .reads = reads};
    if (opts->progress)
        sp_progress_phase(opts->progress, SP_PHASE_PROFILING);
    unsigned started = 0;
    for (; started < threads; started++)
        if (pthread_create(&tids[started], NULL, lookup_job_run, &jobs[started]) != 0)
            break;
    for (unsigned k = 0; k < started; k++)
        pthread_join(tids[k], NULL);
    if (started < threads) {
        sp_errorf(err, "cannot start %u lookup threads", threads);
        goto out;
    }
    uint64_t busy_ns = 0;
    for (unsigned k = 0; k < threads; k++) {
        if (jobs[k].rc) {
            sp_errorf(err, "%s", jobs[k].err.msg);
            goto out;
        }
        res->hits += jobs[k].hits;
        res->misses += jobs[k].misses;
        res->bytes_read += jobs[k].bytes;
        if (jobs[k].busy_ns > busy_ns)
            busy_ns = jobs[k].busy_ns;
    }
    res->lookups = n;
    /* Every key drawn lies in the range of one block, the one its lookup
     * searches. */
    res->blocks_searched = n;
    if (opts->progress)
        sp_progress_store(&opts->progress->records, n);
    /* The threads ran side by side: the phase took as long as the
     * busiest one spent in its calls (the counting between them not
     * included). */
    reduce(res, reads, (double)busy_ns / 1e9);
    double miss_reads = 0;
    for (uint64_t i = 0; i < n; i++)
        if (keys.absent[i])
            miss_reads += reads[i];
    res->reads_per_miss = keys.n_absent ? miss_reads / (double)keys.n_absent : 0;
    rc = 0;
out:
    sstpipe_close(t);
    profile_keys_destroy(&keys);
    free(reads);
    free(jobs);
    free(tids);
    return rc;
}
