/*
 * profile_report.c: a profile's figures as text (for people, ending with
 * the three lines of the old `sstable profile` tool so habits and scripts
 * carry over) and as JSON (every figure; fields in stages/profile/README.md).
 */
#include "stages/profile/profile.h"

#include "stages/common/cli.h"
#include "stages/common/fileio.h"
#include "stages/common/report.h"
#include "stages/common/size.h"
#include "stages/profile/profile_fmt.h"

#include <stdlib.h>
#include <string.h>

static const char *mode_name(const profile_result *r) {
    return r->opts.cold ? "cold (O_DIRECT, page cache dropped)" : "warm (page cache)";
}

void profile_print(const profile_result *r, FILE *out) {
    char a[32], b[32], c[32], d[32], e[32], f[32], g[32];
    fprintf(out, "file:        %s (%llu bytes, %llu records in %llu blocks of %s, cluster %s)\n",
            r->path, (unsigned long long)r->file_size, (unsigned long long)r->records,
            (unsigned long long)r->data_blocks, sp_format_size(r->block_size, a, sizeof a),
            sp_format_size(r->cluster_size, b, sizeof b));
    if (r->shards > 1)
        fprintf(out, "table set:   %llu shards; each lookup goes to its shard first\n",
                (unsigned long long)r->shards);
    fprintf(out, "lookups:     %llu (%llu hits, %llu misses; %g%% misses requested)\n",
            (unsigned long long)r->lookups, (unsigned long long)r->hits,
            (unsigned long long)r->misses, r->opts.misses_pct);
    fprintf(out, "mode:        %s, threads %u, queue depth %u, seed %llu\n", mode_name(r),
            r->opts.threads, r->opts.queue_depth, (unsigned long long)r->opts.seed);
    fprintf(out, "latency:     min %s  avg %s  p50 %s  p90 %s  p99 %s  p99.9 %s  max %s\n",
            profile_fmt_ns((double)r->min_ns, a, sizeof a), profile_fmt_ns(r->avg_ns, b, sizeof b),
            profile_fmt_ns((double)r->p50_ns, c, sizeof c),
            profile_fmt_ns((double)r->p90_ns, d, sizeof d),
            profile_fmt_ns((double)r->p99_ns, e, sizeof e),
            profile_fmt_ns((double)r->p999_ns, f, sizeof f),
            profile_fmt_ns((double)r->max_ns, g, sizeof g));
    fprintf(out, "throughput:  %.0f lookups/s (%s)\n", r->lookups_per_sec,
            sp_format_seconds(r->seconds, a, sizeof a));
    fprintf(out, "blocks:      %.2f searched per lookup, read by %s\n", r->blocks_per_lookup,
            r->io);
    if (strcmp(r->io, "mapped") == 0)
        fprintf(out, "reads:       none (blocks read in place through the mapping)\n");
    else
        fprintf(out, "reads:       %.2f per lookup (min %g, max %g), %.0f bytes per lookup\n",
                r->reads_per_lookup, r->min_reads_per_lookup, r->max_reads_per_lookup,
                r->bytes_per_lookup);
    if (r->misses_requested) {
        char filter[96] = "none";
        if (r->filter_bytes)
            snprintf(filter, sizeof filter, "%llu bytes, %.2f bits a key",
                     (unsigned long long)r->filter_bytes, r->filter_bits_per_key);
        if (strcmp(r->io, "mapped") == 0)
            fprintf(out, "misses:      filter for absent keys: %s\n", filter);
        else
            fprintf(out, "misses:      %.3f reads per miss; filter for absent keys: %s\n",
                    r->reads_per_miss, filter);
    }
    fprintf(out, "\nProfile results for %llu lookups:\n", (unsigned long long)r->lookups);
    fprintf(out, "Average time: %s\n", profile_fmt_ns(r->avg_ns, a, sizeof a));
    fprintf(out, "Min time: %s\n", profile_fmt_ns((double)r->min_ns, a, sizeof a));
    fprintf(out, "Max time: %s\n", profile_fmt_ns((double)r->max_ns, a, sizeof a));
}

/* The histogram and sampled CDF the latency chart is drawn from. */
static json_t *chart_json(const profile_result *r) {
    profile_chart *c = malloc(sizeof *c);
    if (!c)
        return NULL;
    profile_chart_from_result(r, c);
    json_t *bins = json_array(), *cdf = json_array();
    for (int i = 0; i < PROFILE_CHART_BINS; i++)
        json_array_append_new(bins, json_integer((json_int_t)c->bins[i]));
    for (uint64_t k = 0; k < c->n_cdf; k++)
        json_array_append_new(cdf, json_integer((json_int_t)c->cdf_ns[k]));
    free(c);
    return json_pack("{s:o, s:o}", "bins", bins, "cdf_ns", cdf);
}

json_t *profile_result_to_json(const profile_result *r) {
    json_t *lat = json_pack("{s:I, s:f, s:I, s:I, s:I, s:I, s:I}", "min", (json_int_t)r->min_ns,
                            "avg", r->avg_ns, "p50", (json_int_t)r->p50_ns, "p90",
                            (json_int_t)r->p90_ns, "p99", (json_int_t)r->p99_ns, "p99_9",
                            (json_int_t)r->p999_ns, "max", (json_int_t)r->max_ns);
    json_t *root =
        json_pack("{s:s, s:I, s:I, s:I, s:i, s:i, s:I, s:s, s:i, s:i, s:f, s:I}", "file", r->path,
                  "file_size", (json_int_t)r->file_size, "records", (json_int_t)r->records,
                  "data_blocks", (json_int_t)r->data_blocks, "block_size", (int)r->block_size,
                  "cluster_size", (int)r->cluster_size, "lookups", (json_int_t)r->lookups, "mode",
                  r->opts.cold ? "cold" : "warm", "threads", (int)r->opts.threads, "queue_depth",
                  (int)r->opts.queue_depth, "misses_pct", r->opts.misses_pct, "seed",
                  (json_int_t)r->opts.seed);
    char hash[24];
    snprintf(hash, sizeof hash, "%016llx", (unsigned long long)r->key_sequence_hash);
    json_object_update_new(
        root,
        json_pack("{s:I, s:I, s:I, s:s, s:I, s:f, s:I, s:I, s:f, s:f, s:f, s:f, s:f, s:f, s:o, "
                  "s:s}",
                  "hits", (json_int_t)r->hits, "misses", (json_int_t)r->misses, "misses_requested",
                  (json_int_t)r->misses_requested, "io", r->io, "blocks_searched",
                  (json_int_t)r->blocks_searched, "blocks_per_lookup", r->blocks_per_lookup,
                  "reads", (json_int_t)r->reads, "bytes_read", (json_int_t)r->bytes_read,
                  "reads_per_lookup", r->reads_per_lookup, "min_reads_per_lookup",
                  r->min_reads_per_lookup, "max_reads_per_lookup", r->max_reads_per_lookup,
                  "bytes_per_lookup", r->bytes_per_lookup, "seconds", r->seconds, "lookups_per_sec",
                  r->lookups_per_sec, "latency_ns", lat, "key_sequence_hash", hash));
    json_object_set_new(root, "shards", json_integer((json_int_t)r->shards));
    json_object_set_new(root, "reads_per_miss", json_real(r->reads_per_miss));
    json_object_set_new(root, "filter_bytes", json_integer((json_int_t)r->filter_bytes));
    json_object_set_new(root, "filter_bits_per_key", json_real(r->filter_bits_per_key));
    json_object_set_new(root, "latency_chart", chart_json(r));
    return root;
}

int profile_write_json(const profile_result *r, const char *json_path, sp_error *err) {
    return sp_report_write_json(profile_result_to_json(r), json_path, err);
}
