/*
 * nightly_state.c: the helpers every step of a nightly run shares (see
 * nightly_state.h): hashing a file, a stage's figures for the manifest,
 * the CPU clock, the compression sniff and the table-size estimate.
 */
#include "pipeline/nightly/nightly_state.h"

#include "stages/common/fileio.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#define HASH_READ_BYTES (4u << 20)

/* XXH3-64 of a whole file in one sequential pass; progress into *done. */
int nightly_hash_file(const char *path, uint64_t *size, uint64_t *hash, _Atomic uint64_t *done,
                      sp_error *err) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return sp_errorf_errno(err, "%s: cannot open", path);
    posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    XXH3_state_t *st = XXH3_createState();
    char *buf = malloc(HASH_READ_BYTES);
    int rc = 0;
    uint64_t total = 0;
    if (!st || !buf) {
        rc = sp_errorf(err, "%s: out of memory", path);
    } else {
        XXH3_64bits_reset(st);
        for (;;) {
            ssize_t n = sp_read_full(fd, buf, HASH_READ_BYTES, path, err);
            if (n < 0) {
                rc = -1;
                break;
            }
            if (n == 0)
                break;
            XXH3_64bits_update(st, buf, (size_t)n);
            total += (uint64_t)n;
            if (done)
                atomic_store(done, total);
        }
    }
    if (rc == 0) {
        *size = total;
        *hash = XXH3_64bits_digest(st);
    }
    free(buf);
    XXH3_freeState(st);
    close(fd);
    return rc;
}

static json_t *count_or_null(int64_t v) {
    return v < 0 ? json_null() : json_integer(v);
}

json_t *nightly_manifest_stage(nightly_run_state *r, const char *name, double wall, double cpu,
                               uint64_t bytes_in, uint64_t bytes_out, int64_t records_in,
                               int64_t records_out) {
    json_t *s = json_object();
    json_object_set_new(s, "name", json_string(name));
    json_object_set_new(s, "wall_seconds", json_real(wall));
    json_object_set_new(s, "cpu_seconds", json_real(cpu));
    json_object_set_new(s, "bytes_in", json_integer((json_int_t)bytes_in));
    json_object_set_new(s, "bytes_out", json_integer((json_int_t)bytes_out));
    json_object_set_new(s, "records_in", count_or_null(records_in));
    json_object_set_new(s, "records_out", count_or_null(records_out));
    json_object_set_new(s, "mb_per_s", json_real(wall > 0 ? (double)bytes_in / 1e6 / wall : 0));
    json_object_set_new(s, "records_per_s",
                        records_in >= 0 && wall > 0 ? json_real((double)records_in / wall)
                                                    : json_null());
    json_array_append_new(r->stages, s);
    return s;
}

json_t *nightly_counts_json(const build_stats *b) {
    return json_pack(
        "{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "input_bytes",
        (json_int_t)b->extract.input_bytes, "xml_bytes", (json_int_t)b->extract.xml_bytes, "pages",
        (json_int_t)b->extract.pages, "skipped_redirects", (json_int_t)b->extract.skipped_redirects,
        "skipped_namespace", (json_int_t)b->extract.skipped_namespace, "records_extracted",
        (json_int_t)b->extract.records, "truncated", (json_int_t)b->truncated,
        "duplicates_replaced", (json_int_t)b->sort.duplicates_replaced, "records_written",
        (json_int_t)b->table.records);
}

/*
 * The disk space a build needs, from the input size S. The SSTable holds
 * one record per page with values cut to max_bytes; for the dumps sstpipe
 * builds it is smaller than the compressed dump (most pages are redirects
 * or short, and with 1 KiB values the records are a fraction of the text),
 * so S is the estimate of the table, scaled up when max_bytes is above 1 KiB
 * (at most 5x, the ratio of XML to bz2). A plain XML input is its own upper
 * bound. When the estimate exceeds the sort's memory the sort spills runs:
 * up to twice the records while a merge pass writes the next generation.
 */
uint64_t nightly_table_estimate(uint64_t max_bytes, uint64_t size, bool compressed) {
    double scale = 1.0;
    if (compressed) {
        scale = (double)max_bytes / 1024.0;
        if (scale < 1)
            scale = 1;
        if (scale > 5)
            scale = 5;
    }
    return (uint64_t)((double)size * scale);
}
