/*
 * cluster_plan.c: cutting a cluster build into tasks, and plan.json; see
 * cluster_plan.h.
 *
 * A cut is only made where the decompressed XML of the stream that starts
 * there begins with a <page> start tag: so a task never starts inside a
 * page, whatever produced the dump (Wikimedia's streams hold 100 whole
 * pages; a parallel compressor's may cut anywhere, and then the file is
 * one task). Checking a cut decodes the first block of one stream, a few
 * milliseconds, and finding it reads about one stream's bytes: planning a
 * 22 GB dump reads a few MB of it, plus its index when there is one.
 */
#include "pipeline/cluster/cluster_plan.h"

#include "stages/common/cli.h"
#include "stages/common/compression.h"
#include "stages/common/hex.h"
#include "stages/common/path.h"
#include "stages/common/record.h"
#include "stages/common/report.h"
#include "stages/extract/bz2_streams.h"
#include "stages/extract/source.h"

#include <bzlib.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

/* XML read at a sample point: the stream's first pages (libbz2 decodes no
 * further than asked: 256 KiB cost a quarter of what 1 MiB did). */
#define PROBE_XML ((size_t)256 << 10)
/* XML read at a cut point: enough to see whether it starts with a <page>. */
#define CUT_PROBE_XML ((size_t)4 << 10)
/* Compressed bytes a probe reads at a time. */
#define PROBE_READ ((size_t)64 << 10)
/* Where a dump's second stream must start for the dump to count as multistream. */
#define HEAD_STREAM_MAX (64ull << 20)
/* Streams tried after a cut point before giving the cut up. */
#define CUT_TRIES 64
/* Evenly spaced points of a splittable dump whose titles are sampled: so
 * many per shard (each gives the titles in PROBE_XML of XML, dozens to
 * hundreds), at most SAMPLE_POINTS_MAX. Each costs a block's decoding, on
 * the plan's critical path. */
#define SAMPLE_POINTS_PER_SHARD 8
#define SAMPLE_POINTS_MAX 64
/* Titles kept from an index file (reservoir sample). */
#define INDEX_SAMPLE 16384
/* XML of a file read whole whose titles are sampled (its one sample point). */
#define WHOLE_FILE_SAMPLE ((size_t)1 << 20)

typedef struct key_list {
    cluster_key *v;
    size_t n, cap;
} key_list;

/* The array v of n elements of size elem (capacity *cap) with room for
 * one more: the capacity doubles, from first. NULL when out of memory (v
 * is left as it is). */
static void *grow(void *v, size_t n, size_t *cap, size_t elem, size_t first) {
    if (n < *cap)
        return v;
    size_t want = *cap ? 2 * *cap : first;
    void *p = realloc(v, want * elem);
    if (p)
        *cap = want;
    return p;
}

static int key_push(key_list *l, const uint8_t *p, size_t len) {
    cluster_key *v = len <= UINT32_MAX ? grow(l->v, l->n, &l->cap, sizeof *v, 256) : NULL;
    if (!v)
        return -1;
    l->v = v;
    uint8_t *copy = malloc(len ? len : 1);
    if (!copy)
        return -1;
    memcpy(copy, p, len);
    l->v[l->n++] = (cluster_key){copy, (uint32_t)len};
    return 0;
}

static void key_list_free(key_list *l) {
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i].bytes);
    free(l->v);
}

static int key_cmp(const cluster_key *a, const cluster_key *b) {
    uint32_t n = a->len < b->len ? a->len : b->len;
    int c = n ? memcmp(a->bytes, b->bytes, n) : 0;
    return c ? c : (a->len > b->len) - (a->len < b->len);
}

static int key_qsort_cmp(const void *a, const void *b) {
    return key_cmp(a, b);
}

/* Lowercase hex into bytes; -1 when it is not that. */
static int hex_decode(const char *s, cluster_key *out) {
    size_t n = strlen(s);
    if (n % 2 || n / 2 > UINT32_MAX)
        return -1;
    out->bytes = malloc(n / 2 ? n / 2 : 1);
    if (!out->bytes)
        return -1;
    if (sp_hex_decode(s, n, out->bytes) != n) {
        free(out->bytes);
        out->bytes = NULL;
        return -1;
    }
    out->len = (uint32_t)(n / 2);
    return 0;
}

/* ------------------------------------------------------------ probes */

/* Up to cap bytes of the XML that the compressed bytes [start, end) of path
 * decompress to; -1 when they cannot be decoded (not a stream start, or
 * damage, which the map task reading them will report). For a whole file
 * of any format, through source.h. */
static ssize_t probe_xml(const char *path, uint64_t start, uint64_t end, uint8_t *buf, size_t cap) {
    sp_error err = {0};
    source_slice slice = {.start = start, .length = end - start};
    source *src = source_open_with(path, &(source_options){.threads = 1, .slice = &slice}, &err);
    if (!src)
        return -1;
    size_t got = 0;
    while (got < cap) {
        ssize_t r = source_read(src, buf + got, cap - got, &err);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    source_close(src);
    return err.set && got == 0 ? -1 : (ssize_t)got;
}

/*
 * probe_xml for the bz2 streams from start (a stream start) on: decoded by
 * libbz2 in this thread, which decodes no block further than the output
 * asked for, so a probe costs about one block. (The parallel reader behind
 * source.h decodes blocks ahead on its threads and scans its whole slice
 * for block magics: 64 probes through it took longer than the build.)
 */
static ssize_t probe_bz2(int fd, uint64_t start, uint64_t end, uint8_t *buf, size_t cap) {
    uint8_t *in = malloc(PROBE_READ);
    bz_stream z;
    memset(&z, 0, sizeof z);
    if (!in || BZ2_bzDecompressInit(&z, 0, 0) != BZ_OK) {
        free(in);
        return -1;
    }
    size_t got = 0;
    uint64_t pos = start;
    bool bad = false;
    while (got < cap && !bad) {
        if (z.avail_in == 0) {
            size_t want = end - pos < PROBE_READ ? (size_t)(end - pos) : PROBE_READ;
            ssize_t n = want ? pread(fd, in, want, (off_t)pos) : 0;
            if (n <= 0)
                break;
            pos += (uint64_t)n;
            z.next_in = (char *)in;
            z.avail_in = (unsigned)n;
        }
        z.next_out = (char *)buf + got;
        z.avail_out = (unsigned)(cap - got);
        int rc = BZ2_bzDecompress(&z);
        got = cap - z.avail_out;
        if (rc == BZ_STREAM_END) {
            /* The next stream's pages, from the bytes left over. */
            char *next = z.next_in;
            unsigned left = z.avail_in;
            BZ2_bzDecompressEnd(&z);
            memset(&z, 0, sizeof z);
            if (BZ2_bzDecompressInit(&z, 0, 0) != BZ_OK)
                break;
            z.next_in = next;
            z.avail_in = left;
        } else if (rc != BZ_OK) {
            bad = true;
        }
    }
    BZ2_bzDecompressEnd(&z);
    free(in);
    return bad && got == 0 ? -1 : (ssize_t)got;
}

/* Whether xml begins, after white space, with a <page> start tag. */
static bool starts_with_page(const uint8_t *xml, size_t n) {
    size_t i = 0;
    while (i < n && (xml[i] == ' ' || xml[i] == '\t' || xml[i] == '\n' || xml[i] == '\r'))
        i++;
    return n - i > 5 && !memcmp(xml + i, "<page", 5) &&
           (xml[i + 5] == '>' || xml[i + 5] == ' ' || xml[i + 5] == '\t' || xml[i + 5] == '\n' ||
            xml[i + 5] == '\r');
}

/* A title's text with the five XML entities resolved (the split points
 * need only be close to real keys; numeric references are rare in titles). */
static int push_title(key_list *l, const uint8_t *p, size_t n) {
    static const struct {
        const char *ent;
        char c;
    } ents[] = {{"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&apos;", '\''}};
    uint8_t buf[1024];
    size_t o = 0;
    for (size_t i = 0; i < n && o < sizeof buf; i++) {
        bool matched = false;
        for (size_t e = 0; p[i] == '&' && !matched && e < sizeof ents / sizeof ents[0]; e++) {
            size_t len = strlen(ents[e].ent);
            if (n - i >= len && !memcmp(p + i, ents[e].ent, len)) {
                buf[o++] = (uint8_t)ents[e].c;
                i += len - 1;
                matched = true;
            }
        }
        if (!matched)
            buf[o++] = p[i];
    }
    return key_push(l, buf, o);
}

/* Every <title> wholly inside xml. */
static int sample_titles(key_list *l, const uint8_t *xml, size_t n) {
    const uint8_t *p = xml, *end = xml + n;
    for (;;) {
        const uint8_t *t = memmem(p, (size_t)(end - p), "<title>", 7);
        if (!t)
            return 0;
        t += 7;
        const uint8_t *e = memmem(t, (size_t)(end - t), "</title>", 8);
        if (!e)
            return 0;
        if (e > t && (size_t)(e - t) <= SP_MAX_KEY_BYTES && push_title(l, t, (size_t)(e - t)))
            return -1;
        p = e + 8;
    }
}

/* ------------------------------------------------------------ cutting */

typedef struct cut_list {
    uint64_t *v;
    size_t n, cap;
} cut_list;

static int cut_push(cut_list *c, uint64_t at) {
    uint64_t *v = grow(c->v, c->n, &c->cap, sizeof *v, 64);
    if (!v)
        return -1;
    c->v = v;
    c->v[c->n++] = at;
    return 0;
}

/* The stream starts of a dump, and where its first stream ends. */
typedef struct dump_streams {
    const char *path;
    int fd;
    uint64_t size;
    cut_list index; /* from the index file, ascending; empty without one */
    size_t probes;  /* points decoded */
} dump_streams;

/* The first stream start at or after from, before end: from the index when
 * there is one, else found in the bytes. 1 found, 0 none, -1 error. */
static int next_stream(dump_streams *d, uint64_t from, uint64_t end, uint64_t *at, sp_error *err) {
    if (d->index.n) {
        size_t lo = 0, hi = d->index.n;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (d->index.v[mid] < from)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo == d->index.n || d->index.v[lo] >= end)
            return 0;
        *at = d->index.v[lo];
        return 1;
    }
    return bz2_stream_find(d->fd, d->path, from, end, at, err);
}

/* The first stream at or after from (before end) that starts with a page,
 * its XML's titles sampled into titles (NULL: none wanted, a plan of one
 * shard). 1 found, 0 none, -1 error. */
static int page_stream(dump_streams *d, uint64_t from, uint64_t end, uint8_t *xml, key_list *titles,
                       uint64_t *at, sp_error *err) {
    for (int i = 0; i < CUT_TRIES && from < end; i++) {
        int rc = next_stream(d, from, end, at, err);
        if (rc <= 0)
            return rc;
        ssize_t n = probe_bz2(d->fd, *at, d->size, xml, titles ? PROBE_XML : CUT_PROBE_XML);
        d->probes++;
        if (n > 0 && starts_with_page(xml, (size_t)n)) {
            if (titles && sample_titles(titles, xml, (size_t)n))
                return sp_errorf(err, "%s: out of memory", d->path);
            return 1;
        }
        from = *at + 1;
    }
    return 0;
}

/* Index files list "offset:page id:title" a line, offsets being stream starts. */
static char *index_path(const char *path) {
    size_t n = strlen(path);
    const char *suffix = ".xml.bz2";
    if (n < strlen(suffix) || strcmp(path + n - strlen(suffix), suffix))
        return NULL;
    char *p = malloc(n + 32);
    if (!p)
        return NULL;
    snprintf(p, n + 32, "%.*s-index.txt.bz2", (int)(n - strlen(suffix)), path);
    if (access(p, R_OK)) {
        free(p);
        return NULL;
    }
    return p;
}

/* Parses one index line; 0 and the offset and title, or -1. */
static int index_line(const char *line, size_t n, uint64_t *off, const char **title,
                      size_t *title_len) {
    const char *c1 = memchr(line, ':', n);
    if (!c1 || c1 == line)
        return -1;
    const char *c2 = memchr(c1 + 1, ':', n - (size_t)(c1 + 1 - line));
    if (!c2)
        return -1;
    uint64_t v = 0;
    for (const char *p = line; p < c1; p++) {
        if (*p < '0' || *p > '9' || v > (UINT64_MAX - 9) / 10)
            return -1;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    *off = v;
    *title = c2 + 1;
    *title_len = n - (size_t)(c2 + 1 - line);
    return 0;
}

/* Reads the index: the stream starts into d->index, a reservoir sample of
 * the titles into titles. */
static int read_index(dump_streams *d, const char *ipath, key_list *titles, sp_error *err) {
    source *src = source_open(ipath, err);
    if (!src)
        return -1;
    size_t cap = 1 << 20, len = 0, line_no = 0;
    char *buf = malloc(cap + 1);
    uint64_t seen = 0, rng = 0x9e3779b97f4a7c15ull;
    int rc = buf ? 0 : sp_errorf(err, "%s: out of memory", ipath);
    for (bool eof = false; rc == 0 && !eof;) {
        ssize_t r = source_read(src, buf + len, cap - len, err);
        if (r < 0) {
            rc = -1;
            break;
        }
        eof = r == 0;
        len += (size_t)r;
        size_t pos = 0;
        for (;;) {
            char *nl = memchr(buf + pos, '\n', len - pos);
            if (!nl && !(eof && pos < len))
                break;
            size_t n = nl ? (size_t)(nl - (buf + pos)) : len - pos;
            line_no++;
            uint64_t off;
            const char *title;
            size_t tlen;
            if (index_line(buf + pos, n, &off, &title, &tlen) || off >= d->size) {
                rc = sp_errorf(err, "%s: line %zu: not an index line (offset:page id:title)", ipath,
                               line_no);
                break;
            }
            if ((!d->index.n || d->index.v[d->index.n - 1] != off) && cut_push(&d->index, off)) {
                rc = sp_errorf(err, "%s: out of memory", ipath);
                break;
            }
            if (d->index.n > 1 && d->index.v[d->index.n - 1] < d->index.v[d->index.n - 2]) {
                rc = sp_errorf(err, "%s: line %zu: offsets go backwards", ipath, line_no);
                break;
            }
            /* Reservoir sampling, deterministic: the same index, the same sample. */
            seen++;
            rng = rng * 6364136223846793005ull + 1442695040888963407ull;
            uint64_t slot = titles->n < INDEX_SAMPLE ? titles->n : (rng >> 11) % seen;
            if (slot < INDEX_SAMPLE && tlen >= 1 && tlen <= SP_MAX_KEY_BYTES) {
                if (slot == titles->n) {
                    if (key_push(titles, (const uint8_t *)title, tlen)) {
                        rc = sp_errorf(err, "%s: out of memory", ipath);
                        break;
                    }
                } else {
                    cluster_key *k = &titles->v[slot];
                    uint8_t *copy = malloc(tlen ? tlen : 1);
                    if (!copy) {
                        rc = sp_errorf(err, "%s: out of memory", ipath);
                        break;
                    }
                    memcpy(copy, title, tlen);
                    free(k->bytes);
                    *k = (cluster_key){copy, (uint32_t)tlen};
                }
            }
            pos += n + (nl ? 1 : 0);
            if (!nl)
                break;
        }
        memmove(buf, buf + pos, len - pos);
        len -= pos;
        if (rc == 0 && len == cap)
            rc = sp_errorf(err, "%s: line %zu: longer than 1 MiB", ipath, line_no + 1);
    }
    free(buf);
    source_close(src);
    return rc;
}

/* Cuts input i (index in the plan) into share tasks at page-aligned stream
 * starts, or leaves it whole; samples its titles either way (titles NULL:
 * a plan of one shard has no split points to choose). */
static int cut_input(cluster_plan *p, size_t i, uint64_t share, key_list *titles, uint8_t *xml,
                     sp_error *err) {
    cluster_input *in = &p->inputs[i];
    dump_streams d = {.path = in->path, .fd = -1, .size = in->size};
    cut_list cuts = {0};
    int rc = -1;
    if (sp_open_input(in->path, &d.fd, err))
        return -1;
    uint8_t head[SP_COMPRESSION_HEAD];
    ssize_t got = pread(d.fd, head, sizeof head, 0);
    bool bz2 = got > 0 && sp_compression_bz2_stream(head, (size_t)got);
    char *ipath = bz2 ? index_path(in->path) : NULL;
    key_list none = {0};
    if (ipath && read_index(&d, ipath, titles ? titles : &none, err))
        goto out;
    uint64_t head_end = 0;
    if (bz2) {
        int found =
            d.index.n ? (head_end = d.index.v[0]) > 0
                      : next_stream(&d, 1, in->size < HEAD_STREAM_MAX ? in->size : HEAD_STREAM_MAX,
                                    &head_end, err);
        if (found < 0)
            goto out;
        if (!found)
            head_end = 0;
    }
    if (head_end) {
        /* Titles from evenly spaced streams (the index gave them already). */
        unsigned points = p->shards < SAMPLE_POINTS_MAX / SAMPLE_POINTS_PER_SHARD
                              ? p->shards * SAMPLE_POINTS_PER_SHARD
                              : SAMPLE_POINTS_MAX;
        for (unsigned k = 0; titles && !ipath && k < points; k++) {
            uint64_t at, from = head_end + (in->size - head_end) / points * k;
            if (page_stream(&d, from, in->size, xml, titles, &at, err) < 0)
                goto out;
        }
        for (uint64_t k = 1; k < share; k++) {
            uint64_t from = in->size / share * k, at;
            if (cuts.n && from <= cuts.v[cuts.n - 1])
                from = cuts.v[cuts.n - 1] + 1;
            if (from < head_end)
                from = head_end;
            int found = page_stream(&d, from, in->size / share * (k + 1), xml, titles, &at, err);
            if (found < 0)
                goto out;
            if (found && cut_push(&cuts, at)) {
                sp_errorf(err, "out of memory");
                goto out;
            }
        }
    }
    if (titles && (!head_end || !d.index.n)) {
        /* A file read whole: titles from its beginning. */
        ssize_t n = head_end ? 0 : probe_xml(in->path, 0, in->size, xml, WHOLE_FILE_SAMPLE);
        d.probes += !head_end;
        if (n > 0 && sample_titles(titles, xml, (size_t)n)) {
            sp_errorf(err, "out of memory");
            goto out;
        }
    }
    in->head_end = cuts.n ? head_end : 0;
    for (size_t k = 0; k <= cuts.n; k++) {
        cluster_map_task *t = &p->maps[p->n_maps++];
        t->input = i;
        t->start = k ? cuts.v[k - 1] : 0;
        t->end = k < cuts.n ? cuts.v[k] : in->size;
    }
    rc = 0;
out:
    key_list_free(&none);
    free(cuts.v);
    p->probes += d.probes;
    free(d.index.v);
    free(ipath);
    close(d.fd);
    return rc;
}

uint64_t cluster_plan_default_tasks(uint64_t total) {
    if (total < 4 * CLUSTER_TASK_MIN_BYTES)
        return CLUSTER_SMALL_INPUT_TASKS;
    uint64_t per = total / 128;
    if (per < CLUSTER_TASK_MIN_BYTES)
        per = CLUSTER_TASK_MIN_BYTES;
    if (per > CLUSTER_TASK_MAX_BYTES)
        per = CLUSTER_TASK_MAX_BYTES;
    return (total + per - 1) / per;
}

/* ------------------------------------------------------------ plan */

void cluster_plan_destroy(cluster_plan *p) {
    if (!p)
        return;
    for (size_t i = 0; i < p->n_inputs; i++)
        free(p->inputs[i].path);
    for (unsigned i = 0; p->splits && i + 1 < p->shards; i++)
        free(p->splits[i].bytes);
    for (size_t i = 0; i < p->n_options; i++) {
        free(p->options[i].key);
        free(p->options[i].value);
    }
    free(p->options);
    free(p->splits);
    free(p->maps);
    free(p->inputs);
    free(p->id);
    free(p->dir);
    free(p->path);
    free(p->output);
    free(p);
}

/* realpath of a file that may not exist yet (OUT): its directory's. */
static char *absolute_output(const char *output, sp_error *err) {
    char *copy = strdup(output);
    if (!copy) {
        sp_errorf(err, "out of memory");
        return NULL;
    }
    char *slash = strrchr(copy, '/');
    const char *dir = slash ? (slash == copy ? "/" : copy) : ".";
    const char *base = slash ? slash + 1 : copy;
    if (slash)
        *slash = '\0';
    char *real = realpath(dir, NULL);
    char *out = NULL;
    if (!real || !*base)
        sp_errorf_errno(err, "%s: cannot resolve the output's directory", output);
    else
        out = sp_path_join(real, base);
    free(real);
    free(copy);
    return out;
}

/* The plan's own copy of o's build options. */
static int copy_options(cluster_plan *p, const cluster_plan_options *o, sp_error *err) {
    p->options = calloc(o->n_options ? o->n_options : 1, sizeof *p->options);
    if (!p->options)
        return sp_errorf(err, "out of memory");
    for (size_t i = 0; i < o->n_options; i++) {
        cluster_option *c = &p->options[p->n_options++];
        c->key = strdup(o->options[i].key);
        c->value = strdup(o->options[i].value);
        if (!c->key || !c->value)
            return sp_errorf(err, "out of memory");
    }
    return 0;
}

static void hash_str(XXH3_state_t *h, const char *s) {
    XXH3_64bits_update(h, s, strlen(s) + 1);
}

static void hash_u64(XXH3_state_t *h, uint64_t v) {
    XXH3_64bits_update(h, &v, sizeof v);
}

/* The id: what decides the tasks' outputs (not OUT: a nightly builds into a
 * new staging directory each run, and still resumes the last one's tasks). */
static int make_id(cluster_plan *p, const cluster_plan_options *o, sp_error *err) {
    XXH3_state_t *h = XXH3_createState();
    if (!h)
        return sp_errorf(err, "out of memory");
    XXH3_64bits_reset(h);
    hash_str(h, "sstpipe-cluster-plan 1");
    for (size_t i = 0; i < p->n_inputs; i++) {
        hash_str(h, p->inputs[i].path);
        hash_u64(h, p->inputs[i].size);
        hash_u64(h, (uint64_t)p->inputs[i].mtime_ns);
    }
    for (size_t i = 0; i < p->n_options; i++) {
        hash_str(h, p->options[i].key);
        hash_str(h, p->options[i].value);
    }
    hash_u64(h, o->tasks);
    hash_u64(h, o->shards);
    uint64_t v = XXH3_64bits_digest(h);
    XXH3_freeState(h);
    p->id = malloc(17);
    if (!p->id)
        return sp_errorf(err, "out of memory");
    snprintf(p->id, 17, "%016llx", (unsigned long long)v);
    return 0;
}

static int choose_splits(cluster_plan *p, key_list *titles, sp_error *err) {
    if (p->shards <= 1)
        return 0;
    qsort(titles->v, titles->n, sizeof *titles->v, key_qsort_cmp);
    size_t m = 0;
    for (size_t i = 0; i < titles->n; i++) {
        if (m && !key_cmp(&titles->v[m - 1], &titles->v[i])) {
            free(titles->v[i].bytes);
            continue;
        }
        titles->v[m++] = titles->v[i];
    }
    titles->n = m;
    if (m < p->shards)
        return sp_errorf(err,
                         "cannot cut the keys into %u shards: only %zu distinct titles were "
                         "sampled from the input (fewer shards, or a larger input)",
                         p->shards, m);
    p->splits = calloc(p->shards - 1, sizeof *p->splits);
    if (!p->splits)
        return sp_errorf(err, "out of memory");
    for (unsigned r = 0; r + 1 < p->shards; r++) {
        cluster_key *k = &titles->v[(size_t)(r + 1) * m / p->shards];
        p->splits[r] = *k;
        k->bytes = NULL; /* moved */
    }
    return 0;
}

static int write_plan(const cluster_plan *p, sp_error *err) {
    json_t *root = json_object(), *inputs = json_array(), *maps = json_array(),
           *splits = json_array(), *opts = json_object();
    for (size_t i = 0; i < p->n_inputs; i++)
        json_array_append_new(inputs, json_pack("{s:s, s:I, s:I, s:I}", "path", p->inputs[i].path,
                                                "size", (json_int_t)p->inputs[i].size, "mtime_ns",
                                                (json_int_t)p->inputs[i].mtime_ns, "head_end",
                                                (json_int_t)p->inputs[i].head_end));
    for (size_t i = 0; i < p->n_maps; i++)
        json_array_append_new(
            maps, json_pack("{s:I, s:I, s:I}", "input", (json_int_t)p->maps[i].input, "start",
                            (json_int_t)p->maps[i].start, "end", (json_int_t)p->maps[i].end));
    for (unsigned r = 0; r + 1 < p->shards; r++) {
        char *hex = sp_hex_encode(p->splits[r].bytes, p->splits[r].len);
        json_array_append_new(splits, hex ? json_string(hex) : NULL);
        free(hex);
    }
    for (size_t i = 0; i < p->n_options; i++)
        json_object_set_new(opts, p->options[i].key, json_string(p->options[i].value));
    json_object_set_new(root, "format", json_string("sstpipe-cluster-plan"));
    json_object_set_new(root, "version", json_integer(1));
    json_object_set_new(root, "id", json_string(p->id));
    json_object_set_new(root, "output", json_string(p->output));
    json_object_set_new(root, "shards", json_integer(p->shards));
    json_object_set_new(root, "inputs", inputs);
    json_object_set_new(root, "maps", maps);
    json_object_set_new(root, "splits", splits);
    json_object_set_new(root, "options", opts);
    return sp_report_write_json(root, p->path, err);
}

static int make_dir(const char *path, sp_error *err) {
    if (mkdir(path, 0777) && errno != EEXIST)
        return sp_errorf_errno(err, "%s: cannot create the directory", path);
    return 0;
}

int cluster_plan_make(cluster_plan **out, const char *const *inputs, size_t n, const char *output,
                      const cluster_plan_options *o, bool *resumed, sp_error *err) {
    *out = NULL;
    *resumed = false;
    if (!o->shared_dir || !*o->shared_dir)
        return sp_errorf(err, "[cluster] shared_dir is not set: the directory every task sees");
    cluster_plan *p = calloc(1, sizeof *p);
    key_list titles = {0};
    uint8_t *xml = malloc(WHOLE_FILE_SAMPLE > PROBE_XML ? WHOLE_FILE_SAMPLE : PROBE_XML);
    int rc = -1;
    if (!p || !xml) {
        sp_errorf(err, "out of memory");
        goto out;
    }
    p->shards = o->shards ? o->shards : 1;
    p->inputs = calloc(n, sizeof *p->inputs);
    if (!p->inputs || !(p->output = absolute_output(output, err))) {
        sp_errorf(err, "out of memory");
        goto out;
    }
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        if (!strcmp(inputs[i], "-")) {
            sp_errorf(err, "a cluster build reads files, not stdin");
            goto out;
        }
        if (stat(inputs[i], &st)) {
            sp_errorf_errno(err, "%s: cannot open", inputs[i]);
            goto out;
        }
        if (!S_ISREG(st.st_mode)) {
            sp_errorf(err, "%s: not a regular file (a cluster build cuts files into tasks)",
                      inputs[i]);
            goto out;
        }
        cluster_input *in = &p->inputs[p->n_inputs++];
        if (!(in->path = realpath(inputs[i], NULL))) {
            sp_errorf_errno(err, "%s: cannot resolve", inputs[i]);
            goto out;
        }
        in->size = (uint64_t)st.st_size;
        in->mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
        total += in->size;
    }
    if (copy_options(p, o, err) || make_id(p, o, err))
        goto out;
    if (!(p->dir = sp_path_join(o->shared_dir, p->id)) ||
        !(p->path = sp_path_join(p->dir, CLUSTER_PLAN_FILE))) {
        sp_errorf(err, "out of memory");
        goto out;
    }
    if (access(p->path, F_OK) == 0) {
        /* An earlier run of the same build: its plan, and its finished tasks. */
        *resumed = true;
        rc = cluster_plan_load(out, p->path, err);
        goto out;
    }
    uint64_t want = o->tasks ? o->tasks : cluster_plan_default_tasks(total);
    p->maps = calloc(want > n ? want + n : n, sizeof *p->maps);
    if (!p->maps) {
        sp_errorf(err, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t share =
            n >= want ? 1 : (want * p->inputs[i].size + total / 2) / (total ? total : 1);
        if (cut_input(p, i, share ? share : 1, p->shards > 1 ? &titles : NULL, xml, err))
            goto out;
    }
    if (choose_splits(p, &titles, err) || make_dir(o->shared_dir, err) || make_dir(p->dir, err) ||
        write_plan(p, err))
        goto out;
    *out = p;
    p = NULL;
    rc = 0;
out:
    key_list_free(&titles);
    free(xml);
    cluster_plan_destroy(p);
    return rc;
}

/* ------------------------------------------------------------ loading */

static int bad_plan(const char *path, const char *what, sp_error *err) {
    return sp_errorf(err, "%s: not a cluster plan (%s)", path, what);
}

static int get_u64(json_t *obj, const char *key, uint64_t *out) {
    json_t *v = json_object_get(obj, key);
    if (!json_is_integer(v) || json_integer_value(v) < 0)
        return -1;
    *out = (uint64_t)json_integer_value(v);
    return 0;
}

static int load_json(cluster_plan *p, json_t *root, sp_error *err) {
    const char *path = p->path;
    json_t *fmt = json_object_get(root, "format"), *id = json_object_get(root, "id"),
           *output = json_object_get(root, "output"), *inputs = json_object_get(root, "inputs"),
           *maps = json_object_get(root, "maps"), *splits = json_object_get(root, "splits"),
           *opts = json_object_get(root, "options");
    uint64_t shards, version;
    if (!json_is_string(fmt) || strcmp(json_string_value(fmt), "sstpipe-cluster-plan") ||
        get_u64(root, "version", &version) || version != 1)
        return bad_plan(path, "format", err);
    if (!json_is_string(id) || !json_is_string(output) || !json_is_array(inputs) ||
        !json_is_array(maps) || !json_is_array(splits) || !json_is_object(opts) ||
        get_u64(root, "shards", &shards) || shards < 1 || shards > 1000000 ||
        json_array_size(splits) != shards - 1 || json_array_size(maps) == 0)
        return bad_plan(path, "fields", err);
    p->shards = (unsigned)shards;
    p->id = strdup(json_string_value(id));
    p->output = strdup(json_string_value(output));
    p->inputs = calloc(json_array_size(inputs) + 1, sizeof *p->inputs);
    p->maps = calloc(json_array_size(maps), sizeof *p->maps);
    p->splits = calloc(shards, sizeof *p->splits);
    p->options = calloc(json_object_size(opts) + 1, sizeof *p->options);
    if (!p->id || !p->output || !p->inputs || !p->maps || !p->splits || !p->options)
        return sp_errorf(err, "out of memory");
    size_t i;
    json_t *v;
    json_array_foreach(inputs, i, v) {
        cluster_input *in = &p->inputs[p->n_inputs];
        json_t *ip = json_object_get(v, "path");
        uint64_t mt;
        if (!json_is_string(ip) || get_u64(v, "size", &in->size) || get_u64(v, "mtime_ns", &mt) ||
            get_u64(v, "head_end", &in->head_end) || !(in->path = strdup(json_string_value(ip))))
            return bad_plan(path, "inputs", err);
        in->mtime_ns = (int64_t)mt;
        p->n_inputs++;
    }
    json_array_foreach(maps, i, v) {
        cluster_map_task *t = &p->maps[i];
        uint64_t input;
        if (get_u64(v, "input", &input) || input >= p->n_inputs || get_u64(v, "start", &t->start) ||
            get_u64(v, "end", &t->end) || t->start >= t->end || t->end > p->inputs[input].size)
            return bad_plan(path, "maps", err);
        t->input = (size_t)input;
    }
    p->n_maps = json_array_size(maps);
    json_array_foreach(splits, i, v) {
        if (!json_is_string(v) || hex_decode(json_string_value(v), &p->splits[i]) ||
            (i && key_cmp(&p->splits[i - 1], &p->splits[i]) >= 0))
            return bad_plan(path, "splits", err);
    }
    const char *key;
    json_object_foreach(opts, key, v) {
        cluster_option *o = &p->options[p->n_options];
        if (!json_is_string(v))
            return bad_plan(path, "options", err);
        o->key = strdup(key);
        o->value = strdup(json_string_value(v));
        p->n_options++;
        if (!o->key || !o->value)
            return sp_errorf(err, "out of memory");
    }
    return 0;
}

int cluster_plan_load(cluster_plan **out, const char *path, sp_error *err) {
    *out = NULL;
    cluster_plan *p = calloc(1, sizeof *p);
    if (!p || !(p->path = strdup(path))) {
        free(p);
        return sp_errorf(err, "out of memory");
    }
    char *slash = strrchr(p->path, '/');
    p->dir = slash ? strndup(p->path, (size_t)(slash - p->path)) : strdup(".");
    json_error_t jerr;
    json_t *root = json_load_file(path, 0, &jerr);
    int rc;
    if (!p->dir)
        rc = sp_errorf(err, "out of memory");
    else if (!root)
        rc = sp_errorf(err, "%s: cannot read the cluster plan (line %d: %s)", path, jerr.line,
                       jerr.text);
    else
        rc = load_json(p, root, err);
    json_decref(root);
    if (rc) {
        cluster_plan_destroy(p);
        return -1;
    }
    *out = p;
    return 0;
}

unsigned cluster_plan_shard_of(const cluster_plan *p, const uint8_t *key, uint32_t len) {
    cluster_key k = {(uint8_t *)key, len};
    unsigned lo = 0, hi = p->shards - 1; /* the first split above key */
    while (lo < hi) {
        unsigned mid = lo + (hi - lo) / 2;
        if (key_cmp(&p->splits[mid], &k) <= 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static const char *base_name(const char *path) {
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

void cluster_plan_describe_map(const cluster_plan *p, size_t i, char *buf, size_t cap) {
    const cluster_map_task *t = &p->maps[i];
    snprintf(buf, cap, "map task %zu (%s bytes %llu-%llu)", i, base_name(p->inputs[t->input].path),
             (unsigned long long)t->start, (unsigned long long)t->end);
}

void cluster_plan_describe_reduce(const cluster_plan *p, unsigned r, char *buf, size_t cap) {
    char *lo = r ? sp_hex_encode(p->splits[r - 1].bytes, p->splits[r - 1].len) : NULL;
    char *hi = r + 1 < p->shards ? sp_hex_encode(p->splits[r].bytes, p->splits[r].len) : NULL;
    snprintf(buf, cap, "reduce task %u (keys %s to %s, hex)", r, lo ? lo : "first",
             hi ? hi : "last");
    free(lo);
    free(hi);
}
