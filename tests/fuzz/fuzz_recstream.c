/*
 * fuzz_recstream.c: libFuzzer target for the record-stream reader, the
 * format every stage reads from the one before it on a pipe.
 *
 * Each input is read twice from the same descriptor, rewound in between:
 * once keeping whole values (what sort and write do) and once with a small
 * value cap (what truncate does). Both passes must agree on the number of
 * records and on whether the stream is good; the capped pass must respect
 * the cap; every record must respect the header's value bound. Errors are
 * expected; crashes, sanitizer reports, leaks and broken promises are
 * findings.
 */
#include "fuzz_file.h"
#include "stages/common/recstream.h"

#include <stdbool.h>
#include <unistd.h>

typedef struct pass {
    uint64_t records;
    bool ok;
} pass;

static pass read_stream(const fuzz_file *file, uint64_t value_cap) {
    pass p = {0};
    if (lseek(file->fd, 0, SEEK_SET) != 0)
        fuzz_fail("lseek on memfd failed");
    sp_error err = {0};
    rs_reader *r = rs_reader_init(file->fd, file->path, &err);
    if (!r) {
        fuzz_check_error(&err, file->path);
        return p;
    }
    uint32_t bound = rs_reader_header(r)->max_value_bytes;
    sp_record rec;
    int rc;
    while ((rc = rs_reader_next(r, value_cap, &rec, &err)) == 1) {
        if (rec.key_len == 0 || rec.key_len > SP_MAX_KEY_BYTES)
            fuzz_fail("record %llu: key of %u bytes", (unsigned long long)p.records, rec.key_len);
        if (bound && rec.value_len > bound)
            fuzz_fail("record %llu: value of %llu bytes over the header's bound %u",
                      (unsigned long long)p.records, (unsigned long long)rec.value_len, bound);
        if (value_cap && rec.value_len > value_cap)
            fuzz_fail("record %llu: value of %llu bytes over the cap %llu",
                      (unsigned long long)p.records, (unsigned long long)rec.value_len,
                      (unsigned long long)value_cap);
        p.records++;
    }
    if (rc < 0)
        fuzz_check_error(&err, file->path);
    else if (rs_reader_next(r, value_cap, &rec, &err) != 0)
        fuzz_fail("a read after the end marker did not return the end again");
    p.ok = rc == 0;
    rs_reader_destroy(r);
    return p;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_file file;
    fuzz_file_init(&file, data, size);
    pass whole = read_stream(&file, 0);
    pass capped = read_stream(&file, 16);
    if (whole.ok != capped.ok || (whole.ok && whole.records != capped.records))
        fuzz_fail("whole values: ok=%d records=%llu; capped: ok=%d records=%llu", whole.ok,
                  (unsigned long long)whole.records, capped.ok, (unsigned long long)capped.records);
    fuzz_file_destroy(&file);
    return 0;
}
