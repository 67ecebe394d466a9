/*
 * dump_cmd.c: `sstpipe dump FILE [--jsonl]`, every record in key order as
 * one JSON object a line: {"key": "...", "value": "..."}; or some of them:
 * the keys with a prefix (--prefix), in a range [--from, --to), the first N
 * (--limit), the keys alone (--keys-only), so that titles can be listed
 * without `dump | grep`.
 *
 * A walk of libsstpipe's iterator (sstpipe.h), which reads the blocks in
 * file order with growing reads and checks each one whole, and the keys'
 * order across blocks, before returning its records; the iterator's from
 * and prefix seek to the first key wanted, as serve's /v1/prefix does, and
 * the walk stops at --to or --limit. A dump of the whole table checks the
 * footer's counts against what it printed, so a dump that completes is a
 * whole, sound table. jansson escapes the strings; UTF-8 is written as is,
 * not \u-escaped.
 */
#include "pipeline/command/commands.h"
#include "pipeline/command/front.h"
#include "stages/common/cli.h"
#include "stages/common/key.h"
#include "stages/common/record.h"
#include "stages/common/size.h"
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

/* Which records to print, from the flags. */
typedef struct selection {
    const char *prefix, *from, *to; /* NULL: not given */
    uint64_t limit;                 /* UINT64_MAX: not given */
    bool keys_only;
} selection;

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

static size_t length(const char *s) {
    return s ? strlen(s) : 0;
}

static int dump_table(sstpipe_table *t, const selection *sel, dumper *d, sp_error *err) {
    const char *path = sstpipe_path(t);
    sstpipe_iter *it =
        sstpipe_iter_new(t, sel->from, length(sel->from), sel->prefix, length(sel->prefix));
    if (!it)
        return sp_errorf(err, "%s: out of memory", path);
    uint64_t records = 0, key_bytes = 0, value_bytes = 0;
    const void *key, *value;
    size_t klen, vlen;
    char *msg = NULL;
    int rc = 0;
    while (records < sel->limit &&
           (rc = sstpipe_iter_next(it, &key, &klen, &value, &vlen, &msg)) == 1) {
        if (sel->to && sp_key_cmp(key, klen, (const uint8_t *)sel->to, strlen(sel->to)) >= 0) {
            rc = 0;
            break;
        }
        if (append(d, "{\"key\": ", 8, err) ||
            append_string(d, key, klen, path, "key", records, err) ||
            (!sel->keys_only && (append(d, ", \"value\": ", 11, err) ||
                                 append_string(d, value, vlen, path, "value", records, err))) ||
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
    /* Only a walk of every record can be held against the footer. */
    if (sel->prefix || sel->from || sel->to || records == sel->limit)
        return flush(d, err);
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

enum { F_JSONL, F_PREFIX, F_FROM, F_TO, F_LIMIT, F_KEYS_ONLY };

static const sp_flag flags[] = {
    [F_JSONL] = {"jsonl", 0, NULL, 0, NULL, "JSON lines (the default and only format)",
                 SP_COMPLETE_NONE, NULL},
    [F_PREFIX] = SP_ARG("prefix", "P", "only the keys that start with P", SP_COMPLETE_NONE),
    [F_FROM] = SP_ARG("from", "K", "start at K, inclusive: the keys >= K", SP_COMPLETE_NONE),
    [F_TO] = SP_ARG("to", "K", "stop before K, exclusive: the keys < K", SP_COMPLETE_NONE),
    [F_LIMIT] = SP_ARG("limit", "N", "print at most N records", SP_COMPLETE_NONE),
    [F_KEYS_ONLY] = {"keys-only", 0, NULL, 0, NULL, "print the keys alone: {\"key\": \"...\"}",
                     SP_COMPLETE_NONE, NULL},
};

/* A --prefix, --from or --to as a key: given once, 1 to SP_MAX_KEY_BYTES
 * bytes. 0 or the usage error's exit code. */
static int key_flag(const sp_cmdline *cl, size_t i, const char **out) {
    const char *name = flags[i].name, *v = cl->value[i];
    *out = v;
    if (!v)
        return 0;
    if (cl->count[i] > 1)
        return sp_cli_usage_error("dump", "--%s is given more than once", name);
    size_t n = strlen(v);
    if (n == 0 || n > SP_MAX_KEY_BYTES)
        return sp_cli_usage_error("dump", "--%s: '%.40s%s' is %zu bytes; a key is 1 to %d bytes",
                                  name, v, n > 40 ? "..." : "", n, SP_MAX_KEY_BYTES);
    return 0;
}

/* The selection the flags ask for; 0 or the usage error's exit code. */
static int select_records(const sp_cmdline *cl, selection *sel) {
    *sel = (selection){.limit = UINT64_MAX, .keys_only = sp_cmdline_has(cl, F_KEYS_ONLY)};
    int code;
    if ((code = key_flag(cl, F_PREFIX, &sel->prefix)) ||
        (code = key_flag(cl, F_FROM, &sel->from)) || (code = key_flag(cl, F_TO, &sel->to)))
        return code;
    if (sel->from && sel->to &&
        sp_key_cmp((const uint8_t *)sel->from, strlen(sel->from), (const uint8_t *)sel->to,
                   strlen(sel->to)) >= 0)
        return sp_cli_usage_error("dump", "--from '%s' does not sort before --to '%s'", sel->from,
                                  sel->to);
    if (cl->value[F_LIMIT]) {
        if (cl->count[F_LIMIT] > 1)
            return sp_cli_usage_error("dump", "--limit is given more than once");
        sp_error err = {0};
        if (sp_parse_count(cl->value[F_LIMIT], "--limit", 1, UINT32_MAX, &sel->limit, &err))
            return sp_cli_report(&err, SP_EXIT_USAGE);
    }
    return 0;
}

static int run(sp_cmdline *cl) {
    const char *path = cl->operands[0];
    selection sel;
    int code = select_records(cl, &sel);
    if (code)
        return code;
    sstpipe_table *t = sp_front_open_table(path, &code);
    if (!t)
        return code;
    sp_error err = {0};
    dumper d = {.cap = OUT_BYTES};
    int rc;
    if (!(d.out = malloc(OUT_BYTES)))
        rc = sp_errorf(&err, "%s: out of memory", path);
    else
        rc = dump_table(t, &sel, &d, &err);
    free(d.out);
    free(d.tmp);
    sstpipe_close(t);
    return sp_front_exit(rc, &err);
}

const sp_command dump_command =
    SP_COMMAND(dump, run, SP_FLAGS(flags), SP_OPERANDS(sp_file_operand, 1, 1, "expected one FILE"));
