/*
 * info_cmd.c: `sstpipe info FILE [--json]`, what the footer says about a
 * table, as text for people or as one JSON object for scripts. Opening the
 * table checks the footer and index checksums, so what is printed is what
 * the file really holds (data blocks are not read; `dump` checks those).
 */
#include "command/commands.h"
#include "stages/common/cli.h"
#include "stages/common/size.h"
#include "stages/sst/table_reader.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

static double compactness(const sst_footer *f) {
    return (double)(f->key_bytes + f->value_bytes) / (double)f->file_size;
}

/* "8192 (8K)": the exact count, and the short form when it differs. */
static const char *bytes(uint64_t n, char *buf, size_t cap) {
    char h[32];
    if (n < 1024)
        snprintf(buf, cap, "%llu", (unsigned long long)n);
    else
        snprintf(buf, cap, "%llu (%s)", (unsigned long long)n, sp_format_size(n, h, sizeof h));
    return buf;
}

static void print_text(const sst_reader *r) {
    const sst_footer *f = sst_reader_footer(r);
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
           "compactness:      %.4f\n",
           sst_reader_path(r), f->format_version, (unsigned long long)f->records,
           (unsigned long long)f->data_blocks, bytes(f->file_size, a, sizeof a),
           (unsigned long long)f->key_bytes, (unsigned long long)f->value_bytes,
           bytes(f->block_size, b, sizeof b), bytes(f->cluster_size, c, sizeof c),
           f->max_value_bytes, (unsigned long long)f->index_length,
           bytes(f->index_region_length, d, sizeof d), compactness(f));
}

static int print_json(const sst_reader *r, sp_error *err) {
    const sst_footer *f = sst_reader_footer(r);
    json_t *o = json_pack(
        "{s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:s, s:f}", "path",
        sst_reader_path(r), "format_version", (json_int_t)f->format_version, "records",
        (json_int_t)f->records, "data_blocks", (json_int_t)f->data_blocks, "file_size",
        (json_int_t)f->file_size, "key_bytes", (json_int_t)f->key_bytes, "value_bytes",
        (json_int_t)f->value_bytes, "block_size", (json_int_t)f->block_size, "cluster_size",
        (json_int_t)f->cluster_size, "max_value_bytes", (json_int_t)f->max_value_bytes,
        "index_bytes", (json_int_t)f->index_length, "index_region_bytes",
        (json_int_t)f->index_region_length, "restart_interval", (json_int_t)f->restart_interval,
        "checksum", "xxh3-64", "compactness", compactness(f));
    if (!o)
        return sp_errorf(err, "%s: cannot build the JSON (path not valid UTF-8?)",
                         sst_reader_path(r));
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
    sst_reader *r = sst_reader_open(cl->operands[0], &err);
    if (!r)
        return sp_cli_report(&err, SP_EXIT_FAIL);
    int rc = 0;
    if (json)
        rc = print_json(r, &err);
    else
        print_text(r);
    if (fflush(stdout) != 0)
        rc = sp_errorf(&err, "stdout: write failed");
    sst_reader_close(r);
    return rc ? sp_cli_report(&err, SP_EXIT_FAIL) : SP_EXIT_OK;
}

const sp_command info_command = {
    .name = "info",
    .summary = "print what an SSTable's footer says",
    .synopsis = "FILE [--json] [options]",
    .description =
        "Prints what an SSTable's footer says: records, blocks, bytes, block and cluster\n"
        "size, max value bytes, format version. Footer and index checksums are checked.",
    SP_FLAGS(flags),
    SP_OPERANDS(sp_file_operand, 1, 1, "expected one FILE"),
    .run = run,
};
