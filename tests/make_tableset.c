/*
 * make_tableset.c: the tests' table set maker (not installed). Splits a
 * table into a table set at given keys, the way a sharded build's output
 * looks, so the readers of sets are tested on sets of real data before and
 * beside the cluster build that writes them:
 *
 *   make_tableset [--titles] SRC OUT_DIR [HEX_SPLIT...]
 *
 * Shard i holds SRC's keys in [split_{i-1}, split_i) (hex, lowercase, in
 * increasing order; none: one shard), written with SRC's block size,
 * cluster size, value bound and format version (a version 2 shard with
 * its own dictionary, at the default level and size) by the ordinary table writer, as
 * OUT_DIR/shard-NNNN.sst; then the manifest, through the same writer the
 * cluster build calls (table_set_write_manifest). SRC may itself be a set.
 * A split with no key of SRC in its range gives an empty shard. With
 * --titles each shard gets its title index beside it, as a sharded build's
 * would have, built from its records under the rules of SRC's index.
 */
#include "stages/common/hex.h"
#include "stages/sst/format.h"
#include "stages/sst/sstpipe.h"
#include "stages/sst/table_set.h"
#include "stages/sst/table_writer.h"
#include "stages/sst/title_index.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static uint8_t *unhex(const char *h, size_t *len) {
    size_t n = strlen(h);
    uint8_t *b = n % 2 ? NULL : malloc(n / 2 + 1);
    if (b && sp_hex_decode(h, n, b) != n) {
        free(b);
        return NULL;
    }
    *len = n / 2;
    return b;
}

static int die(const char *msg) {
    fprintf(stderr, "sstpipe make_tableset: %s\n", msg);
    return 1;
}

/* The title rules of src's index into *r: 0, or -1 when it has none. */
static int read_rules(const char *src, sp_title_rules *r) {
    char path[4096], *msg = NULL;
    snprintf(path, sizeof path, "%s%s", src, SP_TITLES_SUFFIX);
    sstpipe_table *t = sstpipe_open(path, &msg);
    sstpipe_free(msg);
    const void *v;
    size_t vlen;
    int rc = t && sstpipe_get(t, SP_TITLES_RULES_KEY, SP_TITLES_RULES_KEY_LEN, &v, &vlen, NULL) == 1
                 ? sp_title_rules_decode(v, vlen, r)
                 : -1;
    sstpipe_close(t);
    return rc;
}

int main(int argc, char **argv) {
    bool titles = argc > 1 && !strcmp(argv[1], "--titles");
    argc -= titles;
    argv += titles;
    if (argc < 3)
        return die("usage: make_tableset [--titles] SRC OUT_DIR [HEX_SPLIT...]");
    const char *src = argv[1], *out = argv[2];
    size_t n = (size_t)argc - 2;
    char *msg = NULL;
    sstpipe_table *t = sstpipe_open(src, &msg);
    if (!t) {
        die(msg);
        sstpipe_free(msg);
        return 1;
    }
    sstpipe_info info;
    sstpipe_info_get(t, &info);
    if (mkdir(out, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "sstpipe make_tableset: %s: cannot create: %s\n", out, strerror(errno));
        sstpipe_close(t);
        return 1;
    }
    table_set_shard *shards = calloc(n, sizeof *shards);
    char(*sums)[TABLE_SET_CHECKSUM_HEX] = calloc(n, sizeof *sums);
    table_options opt;
    table_options_init(&opt);
    opt.block_size = info.block_size;
    opt.cluster_size = info.cluster_size;
    opt.max_value_bytes = info.max_value_bytes;
    opt.compress = info.format_version == SST_FORMAT_VERSION_PACKED;
    sstpipe_iter *it = sstpipe_iter_new(t, NULL, 0, NULL, 0);
    const void *k = NULL, *v = NULL;
    size_t klen = 0, vlen = 0;
    int rc = sstpipe_iter_next(it, &k, &klen, &v, &vlen, &msg);
    sp_error err = {0};
    int status = 0;
    sp_title_rules rules;
    sort_options so;
    sort_options_init(&so);
    so.memory = SORT_MIN_MEMORY;
    if (titles && read_rules(src, &rules)) {
        status = die("SRC has no title index");
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        table_set_shard *s = &shards[i];
        if (i > 0) {
            s->has_lo = true;
            s->lo = shards[i - 1].hi;
            s->lo_len = shards[i - 1].hi_len;
        }
        if (i + 1 < n) {
            uint8_t *hi = unhex(argv[3 + i], &s->hi_len);
            if (!hi) {
                status = die("a split is not hex");
                goto done;
            }
            s->hi = hi;
            s->has_hi = true;
        }
        char name[32], *path = malloc(strlen(out) + 40);
        snprintf(name, sizeof name, "shard-%04zu.sst", i);
        sprintf(path, "%s/%s", out, name);
        s->file = strdup(name);
        table_writer *w = table_writer_init(path, &opt, &err);
        title_index *x = w && titles ? title_index_init(path, &rules, &so, &opt, &err) : NULL;
        sp_sink to = w ? table_writer_sink(w) : (sp_sink){0};
        sp_sink sink = x ? title_index_tee(x, &to) : to;
        if (!w || (titles && !x)) {
            table_writer_destroy(w);
            free(path);
            status = die(err.msg);
            goto done;
        }
        while (rc == 1 && table_set_shard_holds(s, k, klen)) {
            sp_record r = {.key = k,
                           .key_len = (uint32_t)klen,
                           .value = v,
                           .value_len = (uint32_t)vlen,
                           .value_fd = -1};
            if (sp_sink_put(&sink, &r, &err))
                break;
            rc = sstpipe_iter_next(it, &k, &klen, &v, &vlen, &msg);
        }
        /* Destroyed before exiting, so a failed shard leaves no temporary file. */
        if (err.set || rc < 0 || title_index_publish(x, w, path, &err)) {
            title_index_destroy(x);
            table_writer_destroy(w);
            free(path);
            status = die(rc < 0 ? msg : err.msg);
            goto done;
        }
        s->records = table_writer_stats(w)->records;
        s->bytes = table_writer_stats(w)->file_size;
        title_index_destroy(x);
        table_writer_destroy(w);
        int sum_rc = table_set_file_checksum(path, sums[i], &err);
        free(path);
        if (sum_rc) {
            status = die(err.msg);
            goto done;
        }
        s->checksum = sums[i];
    }
    if (rc != 0) {
        status = die("a key of SRC lies beyond the splits (splits not increasing?)");
        goto done;
    }
    char options[512], inputs[4200];
    snprintf(options, sizeof options,
             "{\"format_version\": %u, \"block_size\": %u, \"cluster_size\": %u, "
             "\"max_value_bytes\": %u, \"restart_interval\": %u, \"checksum\": \"xxh3-64\"}",
             info.format_version, info.block_size, info.cluster_size, info.max_value_bytes,
             info.restart_interval);
    snprintf(inputs, sizeof inputs, "[{\"split_from\": \"%s\"}]", src);
    if (table_set_write_manifest(out, shards, n, options, inputs, &err))
        status = die(err.msg);
done:
    /* Everything freed on failure too, so the sanitizers' leak check holds
     * for the fault sweeps' failing runs. */
    for (size_t i = 0; i < n; i++) {
        free((void *)shards[i].file);
        free((void *)shards[i].hi);
    }
    free(shards);
    free(sums);
    sstpipe_iter_free(it);
    sstpipe_close(t);
    sstpipe_free(msg);
    return status;
}
