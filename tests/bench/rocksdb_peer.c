/*
 * rocksdb_peer.c: RocksDB's table written from the same records, as a peer
 * of format version 2's size (tests/bench/format2_bench.py). Not part of
 * sstpipe.
 *
 *   rocksdb_peer MTBL OUT [--block-size SIZE] [--zstd LEVEL] [--dict SIZE]
 *
 * Reads the records of MTBL (an mtbl file that tests/bench/mtbl_peer.c
 * wrote from the dump, so the records are the ones every table of the
 * comparison holds, already sorted and without duplicates) and writes them
 * with RocksDB's SstFileWriter, the way a user makes a table outside a
 * database: blocks of SIZE bytes (default 8K) compressed with zstd at LEVEL
 * (default 3) and a dictionary of SIZE bytes (default 16K; 0: none) that
 * zstd's trainer makes from a sample of the table's blocks a hundred times
 * the dictionary's size (zstd's zdict.h advises about that much). No
 * filter (the block-based table's default). Prints JSON: the records,
 * their bytes and the file's size.
 *
 * Built by tests/bench/CMakeLists.txt against Debian's librocksdb-dev,
 * through its C API (rocksdb/c.h).
 */
#include <errno.h>
#include <getopt.h>
#include <mtbl.h>
#include <rocksdb/c.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* How many times the dictionary's bytes zstd's trainer samples. */
#define TRAIN_FACTOR 100

static void die(const char *what, const char *detail) {
    fprintf(stderr, "rocksdb_peer: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
    exit(1);
}

static uint64_t parse_size(const char *s) {
    char *end;
    errno = 0;
    unsigned long long n = strtoull(s, &end, 10);
    if (errno || end == s)
        die("not a size", s);
    if (*end == 'K')
        n <<= 10, end++;
    else if (*end == 'M')
        n <<= 20, end++;
    if (*end)
        die("not a size", s);
    return n;
}

int main(int argc, char **argv) {
    static const struct option longopts[] = {{"block-size", required_argument, NULL, 'b'},
                                             {"zstd", required_argument, NULL, 'z'},
                                             {"dict", required_argument, NULL, 'd'},
                                             {NULL, 0, NULL, 0}};
    uint64_t block_size = 8192, level = 3, dict = 16384;
    int c;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        if (c == 'b')
            block_size = parse_size(optarg);
        else if (c == 'z')
            level = parse_size(optarg);
        else if (c == 'd')
            dict = parse_size(optarg);
        else
            return 2;
    }
    if (optind != argc - 2 || level < 1 || level > 19 || !block_size)
        die("usage: rocksdb_peer MTBL OUT [--block-size SIZE] [--zstd LEVEL 1..19] [--dict SIZE]",
            NULL);
    const char *in = argv[optind], *out = argv[optind + 1];

    rocksdb_options_t *opt = rocksdb_options_create();
    rocksdb_block_based_table_options_t *bbt = rocksdb_block_based_options_create();
    rocksdb_block_based_options_set_block_size(bbt, (size_t)block_size);
    rocksdb_options_set_block_based_table_factory(opt, bbt);
    rocksdb_options_set_compression(opt, rocksdb_zstd_compression);
    /* window bits and strategy: RocksDB's defaults; zstd ignores both */
    rocksdb_options_set_compression_options(opt, -14, (int)level, 0, (int)dict);
    if (dict)
        rocksdb_options_set_compression_options_zstd_max_train_bytes(opt,
                                                                     (int)(dict * TRAIN_FACTOR));
    rocksdb_envoptions_t *env = rocksdb_envoptions_create();
    rocksdb_sstfilewriter_t *w = rocksdb_sstfilewriter_create(env, opt);
    char *err = NULL;
    unlink(out);
    rocksdb_sstfilewriter_open(w, out, &err);
    if (err)
        die(out, err);

    struct mtbl_reader *rd = mtbl_reader_init(in, NULL);
    if (!rd)
        die("not an mtbl file", in);
    struct mtbl_iter *it = mtbl_source_iter(mtbl_reader_source(rd));
    const uint8_t *key, *val;
    size_t klen, vlen;
    uint64_t records = 0, key_bytes = 0, value_bytes = 0;
    while (mtbl_iter_next(it, &key, &klen, &val, &vlen) == mtbl_res_success) {
        rocksdb_sstfilewriter_put(w, (const char *)key, klen, (const char *)val, vlen, &err);
        if (err)
            die(out, err);
        records++;
        key_bytes += klen;
        value_bytes += vlen;
    }
    mtbl_iter_destroy(&it);
    mtbl_reader_destroy(&rd);
    rocksdb_sstfilewriter_finish(w, &err);
    if (err)
        die(out, err);
    rocksdb_sstfilewriter_destroy(w);
    rocksdb_envoptions_destroy(env);
    rocksdb_options_destroy(opt);
    rocksdb_block_based_options_destroy(bbt);
    struct stat st;
    if (stat(out, &st) != 0)
        die(out, strerror(errno));
    printf("{\"records\": %llu, \"key_bytes\": %llu, \"value_bytes\": %llu, \"file_size\": %lld}\n",
           (unsigned long long)records, (unsigned long long)key_bytes,
           (unsigned long long)value_bytes, (long long)st.st_size);
    return 0;
}
