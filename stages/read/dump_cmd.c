/*
 * dump_cmd.c: `sstpipe dump FILE [--jsonl]`, every record in key order as
 * one JSON object a line: {"key": "...", "value": "..."}.
 *
 * Blocks are read in file order (the kernel's sequential read-ahead turns
 * that into large reads) and each one's checksum is checked before its
 * records are printed; the keys' order across blocks and the footer's
 * counts are checked too, so a dump that completes is a whole, sound table.
 * jansson escapes the strings; UTF-8 is written as is, not \u-escaped.
 */
#include "stages/read/read.h"

#include "config/config.h"
#include "stages/common/cli.h"
#include "stages/common/key.h"
#include "stages/common/utf8.h"
#include "stages/sst/coding.h"
#include "stages/sst/table_reader.h"

#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define OUT_BYTES (1u << 20)

typedef struct dumper {
    uint8_t *out; /* pending output */
    size_t used, cap;
    char *tmp; /* one encoded string */
    size_t tmp_cap;
} dumper;

static int flush(dumper *d, sp_error *err) {
    if (d->used && sp_write_all(STDOUT_FILENO, d->out, d->used, "stdout", err))
        return -1;
    d->used = 0;
    return 0;
}

static int append(dumper *d, const void *p, size_t n, sp_error *err) {
    if (d->used + n > d->cap && flush(d, err))
        return -1;
    if (n > d->cap)
        return sp_write_all(STDOUT_FILENO, p, n, "stdout", err);
    memcpy(d->out + d->used, p, n);
    d->used += n;
    return 0;
}

/* Appends s as a JSON string. what/field/record name it in errors. */
static int append_string(dumper *d, const uint8_t *s, size_t n, const char *what, const char *field,
                         uint32_t record, sp_error *err) {
    size_t bad;
    if (!sp_utf8_valid(s, n, &bad))
        return sp_errorf(err,
                         "%s: record %u: %s is not valid UTF-8 (byte %zu); JSON cannot hold it",
                         what, record, field, bad);
    json_t *j = json_stringn_nocheck((const char *)s, n);
    if (!j)
        return sp_errorf(err, "%s: out of memory", what);
    size_t len = json_dumpb(j, d->tmp, d->tmp_cap, JSON_ENCODE_ANY);
    if (len > d->tmp_cap) {
        char *p = realloc(d->tmp, len);
        if (!p) {
            json_decref(j);
            return sp_errorf(err, "%s: out of memory", what);
        }
        d->tmp = p;
        d->tmp_cap = len;
        len = json_dumpb(j, d->tmp, d->tmp_cap, JSON_ENCODE_ANY);
    }
    json_decref(j);
    if (len == 0)
        return sp_errorf(err, "%s: record %u: cannot encode the %s as JSON", what, record, field);
    return append(d, d->tmp, len, err);
}

static int dump_table(sst_reader *r, dumper *d, uint8_t *block, sp_error *err) {
    const sst_footer *f = sst_reader_footer(r);
    uint64_t records = 0, key_bytes = 0, value_bytes = 0;
    uint8_t prev[SP_MAX_KEY_BYTES];
    uint32_t prev_len = 0;
    char what[1100];
    for (uint64_t i = 0; i < f->data_blocks; i++) {
        block_view v;
        if (sst_reader_read_block(r, i, block, &v, err))
            return -1;
        snprintf(what, sizeof what, "%s: block %llu at byte %llu", sst_reader_path(r),
                 (unsigned long long)i, (unsigned long long)(i * f->block_size));
        block_iter it;
        block_iter_init(&it, &v);
        int rc;
        while ((rc = block_iter_next(&it, what, err)) == 1) {
            if (it.index == 1 && i > 0 && sp_key_cmp(prev, prev_len, it.key, it.key_len) >= 0)
                return sp_errorf(err, "%s: first key does not sort after the previous block's last",
                                 what);
            if (append(d, "{\"key\": ", 8, err) ||
                append_string(d, it.key, it.key_len, what, "key", it.index - 1, err) ||
                append(d, ", \"value\": ", 11, err) ||
                append_string(d, it.value, it.value_len, what, "value", it.index - 1, err) ||
                append(d, "}\n", 2, err))
                return -1;
            records++;
            key_bytes += it.key_len;
            value_bytes += it.value_len;
        }
        if (rc < 0)
            return -1;
        memcpy(prev, it.key, it.key_len);
        prev_len = it.key_len;
    }
    if (records != f->records || key_bytes != f->key_bytes || value_bytes != f->value_bytes)
        return sp_errorf(err,
                         "%s: blocks hold %llu records (%llu key, %llu value bytes), the footer "
                         "says %llu (%llu, %llu)",
                         sst_reader_path(r), (unsigned long long)records,
                         (unsigned long long)key_bytes, (unsigned long long)value_bytes,
                         (unsigned long long)f->records, (unsigned long long)f->key_bytes,
                         (unsigned long long)f->value_bytes);
    return flush(d, err);
}

static void usage(FILE *out) {
    fprintf(out, "usage: sstpipe dump FILE [-c FILE] [--set section.key=value]... [--jsonl]\n\n"
                 "Prints every record in key order, one JSON object a line:\n"
                 "{\"key\": \"...\", \"value\": \"...\"}. Every block's checksum is checked.\n\n"
                 "  -c, --config FILE  accepted as by every command; no key applies to dump\n"
                 "      --set S.K=V    likewise (a bad file or key is still an error)\n"
                 "  --jsonl            JSON lines (the default and only format)\n"
                 "  -h, --help         show this help\n");
}

int dump_cmd(int argc, char **argv) {
    static const struct option longopts[] = {
        {"jsonl", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    sp_error cfg_err = {0};
    if (config_check_args(&argc, argv, &cfg_err))
        return sp_cli_report(&cfg_err, SP_EXIT_USAGE);
    optind = 0;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (c) {
        case 'j':
            break;
        case 'h':
            usage(stdout);
            return SP_EXIT_OK;
        default:
            return sp_cli_bad_option("dump", argv);
        }
    }
    if (argc - optind != 1)
        return sp_cli_usage_error("dump", "expected one FILE");

    sp_error err = {0};
    sst_reader *r = sst_reader_open(argv[optind], &err);
    if (!r)
        return sp_cli_report(&err, SP_EXIT_FAIL);
    posix_fadvise(sst_reader_fd(r), 0, 0, POSIX_FADV_SEQUENTIAL);
    dumper d = {.cap = OUT_BYTES};
    uint8_t *block = NULL;
    int rc;
    if (!(d.out = malloc(OUT_BYTES)) ||
        posix_memalign((void **)&block, 4096, sst_reader_footer(r)->block_size) != 0) {
        block = NULL;
        rc = sp_errorf(&err, "%s: out of memory", argv[optind]);
    } else {
        rc = dump_table(r, &d, block, &err);
    }
    free(block);
    free(d.out);
    free(d.tmp);
    sst_reader_close(r);
    return rc ? sp_cli_report(&err, SP_EXIT_FAIL) : SP_EXIT_OK;
}
