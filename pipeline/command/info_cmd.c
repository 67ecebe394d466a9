/*
 * info_cmd.c: `sstpipe info FILE [--json]`, what the footer says about a
 * table, as text for people or as one JSON object for scripts. Opening the
 * table checks the footer and index checksums, so what is printed is what
 * the file really holds (data blocks are not read; `dump` checks those).
 * The JSON object is info_json's, which `serve` answers on /v1/info too.
 * A table set (its directory or tableset.json) is described as the one
 * table it reads as, with one line per shard (path, records, size, range).
 */
#include "pipeline/command/commands.h"
#include "pipeline/command/front.h"
#include "stages/common/cli.h"
#include "stages/common/size.h"
#include "stages/read/info_json.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* "8192 (8K)": the exact count, and the short form when it differs. */
static const char *bytes(uint64_t n, char *buf, size_t cap) {
    char h[32];
    if (n < 1024)
        snprintf(buf, cap, "%llu", (unsigned long long)n);
    else
        snprintf(buf, cap, "%llu (%s)", (unsigned long long)n, sp_format_size(n, h, sizeof h));
    return buf;
}

/* A bound in hex, as the manifest writes it; "null" when unbounded. */
static void print_bound(const void *b, size_t n) {
    if (!b)
        fputs("null", stdout);
    for (size_t i = 0; b && i < n; i++)
        printf("%02x", ((const unsigned char *)b)[i]);
}

/* A table set: the counts above are the sums; one line per shard. */
static void print_shards(const sstpipe_table *t) {
    size_t n = sstpipe_shard_count(t);
    printf("table set:        %zu shards (counts above are their sums)\n", n);
    for (size_t i = 0; i < n; i++) {
        sstpipe_info f;
        sstpipe_info_get(sstpipe_shard(t, i), &f);
        const void *lo, *hi;
        size_t lol, hil;
        sstpipe_shard_range(t, i, &lo, &lol, &hi, &hil);
        printf("shard %zu:          %s: %llu records, %llu bytes, keys [", i,
               sstpipe_path(sstpipe_shard(t, i)), (unsigned long long)f.records,
               (unsigned long long)f.file_size);
        print_bound(lo, lol);
        fputs(", ", stdout);
        print_bound(hi, hil);
        fputs(")\n", stdout);
    }
}

static void print_text(const sstpipe_table *t) {
    sstpipe_info info, *f = &info;
    sstpipe_info_get(t, f);
    char a[64], b[64], c[64], d[64];
    printf("path:             %s\n"
           "format version:   %u\n"
           "records:          %llu\n"
           "data blocks:      %llu\n"
           "file size:        %s\n"
           "key bytes:        %llu\n"
           "value bytes:      %llu\n"
           "block size:       %s\n"
           "cluster size:     %s\n"
           "max value bytes:  %u\n"
           "index size:       %llu bytes (region with padding: %s)\n"
           "compactness:      %.4f\n"
           "bytes per record: %.1f\n"
           "compression ratio: %.4f (value bytes / data blocks' bytes)\n",
           sstpipe_path(t), f->format_version, (unsigned long long)f->records,
           (unsigned long long)f->data_blocks, bytes(f->file_size, a, sizeof a),
           (unsigned long long)f->key_bytes, (unsigned long long)f->value_bytes,
           bytes(f->block_size, b, sizeof b), bytes(f->cluster_size, c, sizeof c),
           f->max_value_bytes, (unsigned long long)f->index_bytes,
           bytes(f->index_region_bytes, d, sizeof d), info_compactness(f),
           info_bytes_per_record(f->file_size, f->records),
           info_compression_ratio(f->value_bytes, f->data_blocks, f->block_size));
    sstpipe_compression z;
    sstpipe_compression_get(t, &z);
    /* A version 1 table has no compression lines. */
    if (strcmp(z.method, "none") != 0)
        printf("compression:      %s, %llu bytes of records in %llu of blocks\n"
               "dictionary:       %llu bytes\n"
               "filter:           %llu bytes, %.2f bits a key\n",
               z.method, (unsigned long long)z.plain_bytes,
               (unsigned long long)(f->data_blocks * f->block_size),
               (unsigned long long)z.dictionary_bytes, (unsigned long long)z.filter_bytes,
               info_filter_bits_per_key(f, &z));
    if (sstpipe_is_set(t))
        print_shards(t);
}

static int print_json(const sstpipe_table *t, sp_error *err) {
    json_t *o = info_json(t);
    if (!o)
        return sp_errorf(err, "%s: cannot build the JSON (path not valid UTF-8?)", sstpipe_path(t));
    int rc = json_dumpf(o, stdout, JSON_PRESERVE_ORDER);
    json_decref(o);
    if (rc != 0 || fputc('\n', stdout) == EOF)
        return sp_errorf(err, "stdout: write failed");
    return 0;
}

enum { F_JSON };

static const sp_flag flags[] = {
    [F_JSON] = {"json", 0, NULL, 0, NULL, "one JSON object instead of text", SP_COMPLETE_NONE,
                NULL},
};

static int run(sp_cmdline *cl) {
    bool json = sp_cmdline_has(cl, F_JSON);
    sp_error err = {0};
    int code;
    sstpipe_table *t = sp_front_open_table(cl->operands[0], &code);
    if (!t)
        return code;
    int rc = 0;
    if (json)
        rc = print_json(t, &err);
    else
        print_text(t);
    if (fflush(stdout) != 0)
        rc = sp_errorf(&err, "stdout: write failed");
    sstpipe_close(t);
    return sp_front_exit(rc, &err);
}

const sp_command info_command =
    SP_COMMAND(info, run, SP_FLAGS(flags), SP_OPERANDS(sp_file_operand, 1, 1, "expected one FILE"));
