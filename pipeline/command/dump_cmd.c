/*
 * dump_cmd.c: `sstpipe dump FILE [--jsonl]`, every record in key order as
 * one JSON object a line: {"key": "...", "value": "..."}.
 *
 * A walk of libsstpipe's iterator (sstpipe.h), which reads the blocks in
 * file order with growing reads and checks each one whole, and the keys'
 * order across blocks, before returning its records; dump checks the
 * footer's counts against what it printed, so a dump that completes is a
 * whole, sound table. jansson escapes the strings; UTF-8 is written as is,
 * not \u-escaped.
 */
#include "pipeline/command/commands.h"
#include "pipeline/command/front.h"
#include "stages/common/cli.h"
#include "stages/common/utf8.h"
#include "stages/sst/sstpipe.h"

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
                         uint64_t record, sp_error *err) {
    size_t bad;
    if (!sp_utf8_valid(s, n, &bad))
        return sp_errorf(err,
                         "%s: record %llu: %s is not valid UTF-8 (byte %zu); JSON cannot hold it",
                         what, (unsigned long long)record, field, bad);
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
        return sp_errorf(err, "%s: record %llu: cannot encode the %s as JSON", what,
                         (unsigned long long)record, field);
    return append(d, d->tmp, len, err);
}

static int dump_table(sstpipe_table *t, dumper *d, sp_error *err) {
    const char *path = sstpipe_path(t);
    sstpipe_iter *it = sstpipe_iter_new(t, NULL, 0, NULL, 0);
    if (!it)
        return sp_errorf(err, "%s: out of memory", path);
    uint64_t records = 0, key_bytes = 0, value_bytes = 0;
    const void *key, *value;
    size_t klen, vlen;
    char *msg = NULL;
    int rc;
    while ((rc = sstpipe_iter_next(it, &key, &klen, &value, &vlen, &msg)) == 1) {
        if (append(d, "{\"key\": ", 8, err) ||
            append_string(d, key, klen, path, "key", records, err) ||
            append(d, ", \"value\": ", 11, err) ||
            append_string(d, value, vlen, path, "value", records, err) ||
            append(d, "}\n", 2, err)) {
            sstpipe_iter_free(it);
            return -1;
        }
        records++;
        key_bytes += klen;
        value_bytes += vlen;
    }
    sstpipe_iter_free(it);
    if (rc < 0) {
        sp_errorf(err, "%s", msg ? msg : "out of memory for an error message");
        sstpipe_free(msg);
        return -1;
    }
    sstpipe_info f;
    sstpipe_info_get(t, &f);
    if (records != f.records || key_bytes != f.key_bytes || value_bytes != f.value_bytes)
        return sp_errorf(err,
                         "%s: blocks hold %llu records (%llu key, %llu value bytes), the footer "
                         "says %llu (%llu, %llu)",
                         path, (unsigned long long)records, (unsigned long long)key_bytes,
                         (unsigned long long)value_bytes, (unsigned long long)f.records,
                         (unsigned long long)f.key_bytes, (unsigned long long)f.value_bytes);
    return flush(d, err);
}

static const sp_flag flags[] = {
    {"jsonl", 0, NULL, 0, NULL, "JSON lines (the default and only format)", SP_COMPLETE_NONE, NULL},
};

static int run(sp_cmdline *cl) {
    const char *path = cl->operands[0];
    int code;
    sstpipe_table *t = sp_front_open_table(path, &code);
    if (!t)
        return code;
    sp_error err = {0};
    dumper d = {.cap = OUT_BYTES};
    int rc;
    if (!(d.out = malloc(OUT_BYTES)))
        rc = sp_errorf(&err, "%s: out of memory", path);
    else
        rc = dump_table(t, &d, &err);
    free(d.out);
    free(d.tmp);
    sstpipe_close(t);
    return sp_front_exit(rc, &err);
}

const sp_command dump_command =
    SP_COMMAND(dump, run, SP_FLAGS(flags), SP_OPERANDS(sp_file_operand, 1, 1, "expected one FILE"));
