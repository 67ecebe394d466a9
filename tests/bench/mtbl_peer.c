/*
 * mtbl_peer.c: the pipeline a competent user would write without sstpipe,
 * as the benchmark's peer (tests/bench/run). Not part of sstpipe.
 *
 *   mtbl_peer build INPUT -o OUT [--memory SIZE] [--block-size SIZE] [--max-bytes N] [--tmp DIR]
 *                   [--zstd LEVEL]
 *   mtbl_peer lookup FILE KEYS
 *
 * build: libxml2's xmlTextReader over the dump (zstd-compressed, decoded
 * with libzstd's streaming API, or plain XML), one record per <page>: key =
 * <title>, value = the <text> of the last <revision>, cut to max-bytes on a
 * UTF-8 boundary (the same records as `sstpipe build`). Records go to an
 * mtbl_sorter with the same memory budget, whose sorted output feeds an
 * mtbl_writer with the same block size and NO compression (sstpipe's format
 * version 1 does not compress either; mtbl's default, zlib, would only make
 * the peer slower), or, with --zstd, every block compressed with zstd at
 * LEVEL: the compressed peer that format version 2's size and lookups are
 * held against (tests/bench/format2_bench.py).
 * Text nodes are read in place (xmlTextReaderConstValue) and only the first
 * max-bytes + 1 bytes are copied, as sstpipe does.
 *
 * Last duplicate wins: mtbl's sorter gives no order among equal keys (qsort
 * in a chunk, a heap across chunks), so each value carries its page number
 * (8 bytes, big-endian) in front, the merge function keeps the larger one,
 * and the prefix is stripped when the sorted records are written.
 *
 * lookup: opens FILE with mtbl_reader (mmap, mtbl's only way), looks every
 * key of KEYS up once untimed (so the pages are mapped and cached, as
 * `sstpipe profile` has read each block while drawing its keys), then once
 * more timed one by one with CLOCK_MONOTONIC, and prints JSON with the
 * nearest-rank p50/p99 in nanoseconds. KEYS: u32 little-endian length +
 * bytes per key (tests/bench/bench_keys.c writes it).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libxml/xmlreader.h>
#include <mtbl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#define SEQ_BYTES 8

static void die(const char *fmt, const char *arg) {
    fprintf(stderr, "mtbl_peer: ");
    fprintf(stderr, fmt, arg);
    fputc('\n', stderr);
    exit(1);
}

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p)
        die("out of memory%s", "");
    return p;
}

static uint64_t parse_size(const char *s) {
    char *end;
    errno = 0;
    unsigned long long n = strtoull(s, &end, 10);
    if (errno || end == s)
        die("'%s' is not a size", s);
    switch (*end) {
    case 'K':
        n <<= 10;
        end++;
        break;
    case 'M':
        n <<= 20;
        end++;
        break;
    case 'G':
        n <<= 30;
        end++;
        break;
    }
    if (*end)
        die("'%s' is not a size", s);
    return n;
}

/* ------------------------------------------------------------ input */

/* The dump as libxml2 reads it: raw bytes, or zstd frames decoded on the fly. */
typedef struct input {
    int fd;
    bool zstd;
    ZSTD_DCtx *dctx;
    uint8_t *in;
    size_t in_cap;
    ZSTD_inBuffer zin;
    bool eof;
} input;

static int input_read(void *ctx, char *buf, int len) {
    input *s = ctx;
    if (!s->zstd) {
        ssize_t n = read(s->fd, buf, (size_t)len);
        return n < 0 ? -1 : (int)n;
    }
    ZSTD_outBuffer out = {buf, (size_t)len, 0};
    while (out.pos == 0) {
        if (s->zin.pos == s->zin.size) {
            if (s->eof)
                return 0;
            ssize_t n = read(s->fd, s->in, s->in_cap);
            if (n < 0)
                return -1;
            if (n == 0) {
                s->eof = true;
                continue;
            }
            s->zin = (ZSTD_inBuffer){s->in, (size_t)n, 0};
        }
        size_t rc = ZSTD_decompressStream(s->dctx, &out, &s->zin);
        if (ZSTD_isError(rc)) {
            fprintf(stderr, "mtbl_peer: zstd: %s\n", ZSTD_getErrorName(rc));
            return -1;
        }
    }
    return (int)out.pos;
}

static int input_close(void *ctx) {
    input *s = ctx;
    close(s->fd);
    ZSTD_freeDCtx(s->dctx);
    free(s->in);
    return 0;
}

static void input_open(input *s, const char *path) {
    memset(s, 0, sizeof *s);
    if ((s->fd = open(path, O_RDONLY)) < 0)
        die("cannot open %s", path);
    uint8_t magic[4];
    s->zstd = pread(s->fd, magic, 4, 0) == 4 && magic[0] == 0x28 && magic[1] == 0xB5 &&
              magic[2] == 0x2F && magic[3] == 0xFD;
    if (s->zstd) {
        s->dctx = ZSTD_createDCtx();
        s->in_cap = ZSTD_DStreamInSize();
        s->in = xmalloc(s->in_cap);
    }
}

/* ------------------------------------------------------------ build */

typedef struct buf {
    uint8_t *p;
    size_t len, cap; /* cap: bytes kept; more are dropped */
} buf;

static void buf_append(buf *b, const xmlChar *s) {
    if (!s || b->len >= b->cap)
        return;
    size_t n = strlen((const char *)s);
    if (n > b->cap - b->len)
        n = b->cap - b->len;
    memcpy(b->p + b->len, s, n);
    b->len += n;
}

/* The longest prefix of at most max bytes ending on a UTF-8 boundary; s has max + 1 bytes when
 * len > max. */
static size_t utf8_cut(const uint8_t *s, size_t len, size_t max) {
    if (len <= max)
        return len;
    while (max > 0 && (s[max] & 0xC0) == 0x80)
        max--;
    return max;
}

static void keep_later(void *clos, const uint8_t *key, size_t len_key, const uint8_t *v0,
                       size_t len0, const uint8_t *v1, size_t len1, uint8_t **merged,
                       size_t *len_merged) {
    (void)clos, (void)key, (void)len_key;
    /* Big-endian page numbers compare as bytes. */
    bool first = memcmp(v0, v1, SEQ_BYTES) > 0;
    *len_merged = first ? len0 : len1;
    *merged = xmalloc(*len_merged);
    memcpy(*merged, first ? v0 : v1, *len_merged);
}

enum where { NOWHERE, IN_TITLE, IN_TEXT };

typedef struct build_opts {
    const char *input, *output, *tmp;
    uint64_t memory, block_size, max_bytes;
    int zstd_level; /* 0: no compression */
} build_opts;

static int build(const build_opts *o) {
    struct mtbl_sorter_options *so = mtbl_sorter_options_init();
    mtbl_sorter_options_set_max_memory(so, (size_t)o->memory);
    mtbl_sorter_options_set_merge_func(so, keep_later, NULL);
    if (o->tmp)
        mtbl_sorter_options_set_temp_dir(so, o->tmp);
    struct mtbl_sorter *sorter = mtbl_sorter_init(so);
    mtbl_sorter_options_destroy(&so);
    /* mtbl_writer_init will not replace a file. */
    if (unlink(o->output) != 0 && errno != ENOENT)
        die("cannot replace %s", o->output);
    struct mtbl_writer_options *wo = mtbl_writer_options_init();
    if (o->zstd_level) {
        mtbl_writer_options_set_compression(wo, MTBL_COMPRESSION_ZSTD);
        mtbl_writer_options_set_compression_level(wo, o->zstd_level);
    } else {
        mtbl_writer_options_set_compression(wo, MTBL_COMPRESSION_NONE);
    }
    mtbl_writer_options_set_block_size(wo, (size_t)o->block_size);
    struct mtbl_writer *w = mtbl_writer_init(o->output, wo);
    mtbl_writer_options_destroy(&wo);
    if (!w)
        die("cannot create %s", o->output);

    input in;
    input_open(&in, o->input);
    xmlTextReaderPtr r = xmlReaderForIO(input_read, input_close, &in, o->input, NULL,
                                        XML_PARSE_HUGE | XML_PARSE_NONET);
    if (!r)
        die("%s: cannot start the XML reader", o->input);

    buf title = {xmalloc(1024), 0, 1024};
    buf text = {xmalloc(SEQ_BYTES + o->max_bytes + 1), SEQ_BYTES, SEQ_BYTES + o->max_bytes + 1};
    enum where where = NOWHERE;
    uint64_t pages = 0;
    int ret;
    while ((ret = xmlTextReaderRead(r)) == 1) {
        int type = xmlTextReaderNodeType(r);
        if (type == XML_READER_TYPE_TEXT || type == XML_READER_TYPE_CDATA ||
            type == XML_READER_TYPE_SIGNIFICANT_WHITESPACE) {
            if (where != NOWHERE)
                buf_append(where == IN_TITLE ? &title : &text, xmlTextReaderConstValue(r));
            continue;
        }
        int depth = xmlTextReaderDepth(r);
        const char *name = (const char *)xmlTextReaderConstLocalName(r);
        if (type == XML_READER_TYPE_ELEMENT) {
            if (depth == 1 && !strcmp(name, "page")) {
                title.len = 0;
                text.len = SEQ_BYTES;
            } else if (depth == 2 && !strcmp(name, "title")) {
                where = IN_TITLE;
            } else if (depth == 2 && !strcmp(name, "revision")) {
                text.len = SEQ_BYTES; /* only the last revision's text counts */
            } else if (depth == 3 && !strcmp(name, "text") && !xmlTextReaderIsEmptyElement(r)) {
                where = IN_TEXT;
            }
        } else if (type == XML_READER_TYPE_END_ELEMENT) {
            if (depth == 1 && !strcmp(name, "page")) {
                uint64_t seq = pages++;
                for (int i = SEQ_BYTES - 1; i >= 0; i--, seq >>= 8)
                    text.p[i] = (uint8_t)seq;
                size_t vlen = utf8_cut(text.p + SEQ_BYTES, text.len - SEQ_BYTES, o->max_bytes);
                if (mtbl_sorter_add(sorter, title.p, title.len, text.p, SEQ_BYTES + vlen) !=
                    mtbl_res_success)
                    die("%s: mtbl_sorter_add failed", o->input);
            }
            where = NOWHERE;
        }
    }
    if (ret < 0)
        die("%s: XML error", o->input);
    xmlFreeTextReader(r);

    struct mtbl_iter *it = mtbl_sorter_iter(sorter);
    if (!it)
        die("%s: the sort failed", o->input);
    const uint8_t *key, *val;
    size_t klen, vlen;
    uint64_t records = 0, key_bytes = 0, value_bytes = 0;
    while (mtbl_iter_next(it, &key, &klen, &val, &vlen) == mtbl_res_success) {
        if (mtbl_writer_add(w, key, klen, val + SEQ_BYTES, vlen - SEQ_BYTES) != mtbl_res_success)
            die("%s: mtbl_writer_add failed", o->output);
        records++;
        key_bytes += klen;
        value_bytes += vlen - SEQ_BYTES;
    }
    mtbl_iter_destroy(&it);
    mtbl_writer_destroy(&w);
    mtbl_sorter_destroy(&sorter);
    free(title.p);
    free(text.p);
    printf("{\"pages\": %llu, \"records\": %llu, \"key_bytes\": %llu, \"value_bytes\": %llu}\n",
           (unsigned long long)pages, (unsigned long long)records, (unsigned long long)key_bytes,
           (unsigned long long)value_bytes);
    return 0;
}

static int build_cmd(int argc, char **argv) {
    static const struct option longopts[] = {{"output", required_argument, NULL, 'o'},
                                             {"memory", required_argument, NULL, 'm'},
                                             {"block-size", required_argument, NULL, 'b'},
                                             {"max-bytes", required_argument, NULL, 'x'},
                                             {"tmp", required_argument, NULL, 't'},
                                             {"zstd", required_argument, NULL, 'z'},
                                             {NULL, 0, NULL, 0}};
    build_opts o = {.memory = 256ull << 20, .block_size = 8192, .max_bytes = 1024};
    int c;
    while ((c = getopt_long(argc, argv, "o:", longopts, NULL)) != -1) {
        switch (c) {
        case 'o':
            o.output = optarg;
            break;
        case 'm':
            o.memory = parse_size(optarg);
            break;
        case 'b':
            o.block_size = parse_size(optarg);
            break;
        case 'x':
            o.max_bytes = parse_size(optarg);
            break;
        case 't':
            o.tmp = optarg;
            break;
        case 'z':
            o.zstd_level = (int)parse_size(optarg);
            if (o.zstd_level < 1 || o.zstd_level > 19)
                die("--zstd %s: a level from 1 to 19", optarg);
            break;
        default:
            return 2;
        }
    }
    if (optind != argc - 1 || !o.output || !o.max_bytes)
        die("usage: mtbl_peer build INPUT -o OUT [--memory SIZE] [--block-size SIZE] "
            "[--max-bytes N] [--tmp DIR] [--zstd LEVEL]%s",
            "");
    o.input = argv[optind];
    return build(&o);
}

/* ------------------------------------------------------------ lookup */

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Nearest rank, as `sstpipe profile` computes it. */
static uint64_t percentile(const uint64_t *v, size_t n, double p) {
    size_t rank = (size_t)(p / 100.0 * (double)n + 0.999999999);
    rank = rank < 1 ? 1 : rank > n ? n : rank;
    return v[rank - 1];
}

/* Looks every key up once; returns the hits and, with lat, each lookup's time. */
static uint64_t lookup_all(const struct mtbl_source *src, uint8_t **keys, const uint32_t *lens,
                           size_t n, uint64_t *lat, uint64_t *value_bytes) {
    uint64_t hits = 0;
    for (size_t i = 0; i < n; i++) {
        double t0 = now_ns();
        struct mtbl_iter *it = mtbl_source_get(src, keys[i], lens[i]);
        const uint8_t *k, *v;
        size_t kl, vl;
        if (it && mtbl_iter_next(it, &k, &kl, &v, &vl) == mtbl_res_success) {
            hits++;
            *value_bytes += vl;
        }
        mtbl_iter_destroy(&it);
        if (lat)
            lat[i] = (uint64_t)(now_ns() - t0);
    }
    return hits;
}

static int lookup_cmd(int argc, char **argv) {
    if (argc != 3)
        die("usage: mtbl_peer lookup FILE KEYS%s", "");
    FILE *kf = fopen(argv[2], "rb");
    if (!kf)
        die("cannot open %s", argv[2]);
    size_t n = 0, cap = 1024;
    uint8_t **keys = xmalloc(cap * sizeof *keys);
    uint32_t *lens = xmalloc(cap * sizeof *lens);
    uint8_t le[4];
    while (fread(le, 1, 4, kf) == 4) {
        uint32_t len =
            (uint32_t)le[0] | (uint32_t)le[1] << 8 | (uint32_t)le[2] << 16 | (uint32_t)le[3] << 24;
        if (n == cap) {
            cap *= 2;
            if (!(keys = realloc(keys, cap * sizeof *keys)) ||
                !(lens = realloc(lens, cap * sizeof *lens)))
                die("out of memory%s", "");
        }
        keys[n] = xmalloc(len);
        if (fread(keys[n], 1, len, kf) != len)
            die("%s: truncated key file", argv[2]);
        lens[n++] = len;
    }
    fclose(kf);
    if (!n)
        die("%s: no keys", argv[2]);

    struct mtbl_reader *rd = mtbl_reader_init(argv[1], NULL);
    if (!rd)
        die("cannot open %s as an mtbl file", argv[1]);
    const struct mtbl_source *src = mtbl_reader_source(rd);
    uint64_t *lat = xmalloc(n * sizeof *lat), value_bytes = 0;
    lookup_all(src, keys, lens, n, NULL, &value_bytes);
    value_bytes = 0;
    double t0 = now_ns();
    uint64_t hits = lookup_all(src, keys, lens, n, lat, &value_bytes);
    double seconds = (now_ns() - t0) / 1e9;
    qsort(lat, n, sizeof *lat, cmp_u64);
    printf("{\"lookups\": %zu, \"hits\": %llu, \"value_bytes\": %llu, \"seconds\": %.6f, "
           "\"p50_ns\": %llu, \"p99_ns\": %llu, \"max_ns\": %llu}\n",
           n, (unsigned long long)hits, (unsigned long long)value_bytes, seconds,
           (unsigned long long)percentile(lat, n, 50), (unsigned long long)percentile(lat, n, 99),
           (unsigned long long)lat[n - 1]);
    mtbl_reader_destroy(&rd);
    for (size_t i = 0; i < n; i++)
        free(keys[i]);
    free(keys);
    free(lens);
    free(lat);
    return 0;
}

int main(int argc, char **argv) {
    if (argc >= 2 && !strcmp(argv[1], "build"))
        return build_cmd(argc - 1, argv + 1);
    if (argc >= 2 && !strcmp(argv[1], "lookup"))
        return lookup_cmd(argc - 1, argv + 1);
    fprintf(stderr, "usage: mtbl_peer build INPUT -o OUT [options] | mtbl_peer lookup FILE KEYS\n");
    return 2;
}
