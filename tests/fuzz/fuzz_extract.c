/*
 * fuzz_extract.c: libFuzzer target for the extract stage (decompress + parse).
 *
 * The first byte of an input picks how the rest reaches extract_file:
 *   low 3 bits 0 (or 5-7): as-is, so the decoder is whichever the content
 *     names; seeds in each compression keep every decoder's checks busy
 *     (bz2 block CRCs, gzip trailers, xz and zstd frames) and plain XML
 *     seeds the parser;
 *   1-4: compressed here first with bzip2, gzip, xz or zstd, so that
 *     mutations of the XML also travel every decoder's successful path and
 *     the parser sees them whole;
 *   bit 7: no value cap (page text spills to a scratch file beyond the
 *     memory buffer) instead of extract's usual 1 KiB cap.
 * Errors are expected and fine; a crash, a sanitizer report, a leak, or a
 * record breaking extract's promises (key length, value cap, readable
 * spilled value) is a finding.
 */
#include "fuzz_file.h"
#include "stages/extract/extract.h"

#include <archive.h>
#include <archive_entry.h>
#include <stdlib.h>
#include <unistd.h>

typedef struct check_ctx {
    uint64_t value_cap;
} check_ctx;

static int check_record(void *ctx, const sp_record *rec, sp_error *err) {
    (void)err;
    const check_ctx *c = ctx;
    if (rec->key_len > SP_MAX_KEY_BYTES)
        fuzz_fail("extract emitted a key of %u bytes", rec->key_len);
    if (c->value_cap && rec->value_len > c->value_cap)
        fuzz_fail("extract emitted a value of %llu bytes over a cap of %llu",
                  (unsigned long long)rec->value_len, (unsigned long long)c->value_cap);
    if (rec->value_fd >= 0) {
        /* A spilled value must be there in full: the stream writer copies it. */
        uint8_t buf[65536];
        for (uint64_t at = 0; at < rec->value_len;) {
            size_t want = rec->value_len - at < sizeof buf ? rec->value_len - at : sizeof buf;
            ssize_t n = pread(rec->value_fd, buf, want, (off_t)at);
            if (n <= 0)
                fuzz_fail("spilled value shorter than its length %llu",
                          (unsigned long long)rec->value_len);
            at += (uint64_t)n;
        }
    } else if (rec->value_len && !rec->value) {
        fuzz_fail("record with value_len %llu and no value", (unsigned long long)rec->value_len);
    }
    return 0;
}

/* data compressed with filter (an archive_write_add_filter_* function) into
 * a new buffer; NULL only when libarchive refuses, which is not a finding. */
static uint8_t *compress_with(int (*filter)(struct archive *), const uint8_t *data, size_t size,
                              size_t *out_len) {
    size_t cap = size + size / 2 + 65536;
    uint8_t *out = malloc(cap);
    struct archive *a = archive_write_new();
    struct archive_entry *e = archive_entry_new();
    int ok = out && a && e && filter(a) == ARCHIVE_OK &&
             archive_write_set_format_raw(a) == ARCHIVE_OK &&
             archive_write_set_bytes_in_last_block(a, 1) == ARCHIVE_OK &&
             archive_write_open_memory(a, out, cap, out_len) == ARCHIVE_OK;
    if (ok) {
        archive_entry_set_pathname(e, "dump.xml");
        archive_entry_set_filetype(e, AE_IFREG);
        archive_entry_set_size(e, (la_int64_t)size);
        ok = archive_write_header(a, e) == ARCHIVE_OK &&
             (size == 0 || archive_write_data(a, data, size) == (la_ssize_t)size) &&
             archive_write_close(a) == ARCHIVE_OK;
    }
    archive_entry_free(e);
    archive_write_free(a);
    if (!ok) {
        free(out);
        return NULL;
    }
    return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0)
        return 0;
    static int (*const filters[])(struct archive *) = {
        NULL,
        archive_write_add_filter_bzip2,
        archive_write_add_filter_gzip,
        archive_write_add_filter_xz,
        archive_write_add_filter_zstd,
    };
    unsigned mode = data[0] & 7u;
    check_ctx ctx = {.value_cap = (data[0] & 0x80u) ? 0 : 1024};
    data++, size--;

    uint8_t *packed = NULL;
    if (mode >= 1 && mode <= 4) {
        size_t packed_len = 0;
        packed = compress_with(filters[mode], data, size, &packed_len);
        if (!packed)
            return 0;
        data = packed, size = packed_len;
    }

    fuzz_file file;
    fuzz_file_init(&file, data, size);
    extract_options opts;
    extract_options_init(&opts);
    opts.value_cap = ctx.value_cap;
    sp_sink sink = {.put = check_record, .ctx = &ctx};
    extract_stats stats;
    sp_error err = {0};
    if (extract_file(file.path, &opts, &sink, &stats, &err) != 0)
        fuzz_check_error(&err, file.path);
    if (stats.records > stats.pages)
        fuzz_fail("%llu records from %llu pages", (unsigned long long)stats.records,
                  (unsigned long long)stats.pages);
    fuzz_file_destroy(&file);
    free(packed);
    return 0;
}
