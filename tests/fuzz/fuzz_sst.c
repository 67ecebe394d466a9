/*
 * fuzz_sst.c: libFuzzer target for the SSTable readers on arbitrary bytes.
 *
 * Everything `get`, `dump` and `verify` do to a file: sst_reader_open
 * (footer and index checks), a scan of every data block as dump walks
 * them, point lookups, and the every-byte check verify_file. The oracle:
 * when verify finds nothing wrong, a lookup of every scanned key must find
 * it with the scanned value, and keys between and around them must not be
 * found. Checksums make random bytes fail early, so the seeds are real
 * small tables (see make-seeds); the deeper code is reached from mutations
 * that keep the checksums (and from the regression seeds). Errors are
 * expected; crashes, sanitizer reports, leaks and broken promises are
 * findings.
 */
#include "fuzz_file.h"
#include "stages/sst/table_reader.h"
#include "stages/verify/verify.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

typedef struct scanned {
    uint8_t key[SP_MAX_KEY_BYTES];
    uint32_t key_len;
    uint8_t *value;
    uint32_t value_len;
} scanned;

typedef struct scan {
    scanned *recs;
    size_t n, cap;
    bool clean; /* every block read and walked without an error */
} scan;

static void scan_add(scan *s, const block_iter *it) {
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 64;
        s->recs = realloc(s->recs, s->cap * sizeof *s->recs);
        if (!s->recs)
            fuzz_fail("out of memory for the scan");
    }
    scanned *r = &s->recs[s->n++];
    if (it->key_len > SP_MAX_KEY_BYTES)
        fuzz_fail("block walk returned a key of %u bytes", it->key_len);
    memcpy(r->key, it->key, it->key_len);
    r->key_len = it->key_len;
    r->value_len = it->value_len;
    r->value = malloc(it->value_len + 1);
    if (!r->value)
        fuzz_fail("out of memory for a value");
    memcpy(r->value, it->value, it->value_len);
}

/* Reads and walks every data block, as dump does. */
static void scan_table(sst_reader *r, const char *path, scan *s) {
    const sst_footer *f = sst_reader_footer(r);
    uint8_t *buf = aligned_alloc(4096, ((size_t)f->block_size + 4095) & ~(size_t)4095);
    if (!buf)
        fuzz_fail("out of memory for a block of %u bytes", f->block_size);
    s->clean = true;
    for (uint64_t i = 0; i < f->data_blocks; i++) {
        block_view v;
        sp_error err = {0};
        if (sst_reader_read_block(r, i, buf, &v, &err)) {
            fuzz_check_error(&err, path);
            s->clean = false;
            continue;
        }
        block_iter it;
        block_iter_init(&it, &v);
        int rc;
        while ((rc = block_iter_next(&it, path, &err)) == 1) {
            if (it.value_len > v.block_size)
                fuzz_fail("block %llu: value of %u bytes in a %u-byte block", (unsigned long long)i,
                          it.value_len, v.block_size);
            scan_add(s, &it);
        }
        if (rc < 0) {
            fuzz_check_error(&err, path);
            s->clean = false;
        }
    }
    free(buf);
}

static int lookup(sst_reader *r, const uint8_t *key, uint32_t klen, const uint8_t **value,
                  uint32_t *vlen, const char *path) {
    sp_error err = {0};
    int rc = sst_reader_get(r, key, klen, value, vlen, &err);
    if (rc < 0)
        fuzz_check_error(&err, path);
    return rc;
}

/* On a table verify passed: every key found with its value; a key just
 * after each (key + "\0") and one before all keys not found. */
static void check_lookups(sst_reader *r, const scan *s, const char *path) {
    const uint8_t *value;
    uint32_t vlen;
    for (size_t i = 0; i < s->n; i++) {
        const scanned *rec = &s->recs[i];
        if (lookup(r, rec->key, rec->key_len, &value, &vlen, path) != 1)
            fuzz_fail("verified table: key %zu of %zu not found", i, s->n);
        if (vlen != rec->value_len || memcmp(value, rec->value, vlen) != 0)
            fuzz_fail("verified table: key %zu: lookup and scan disagree on the value", i);
        if (rec->key_len < SP_MAX_KEY_BYTES) {
            uint8_t next[SP_MAX_KEY_BYTES];
            memcpy(next, rec->key, rec->key_len);
            next[rec->key_len] = 0;
            bool listed = i + 1 < s->n && s->recs[i + 1].key_len == rec->key_len + 1 &&
                          memcmp(s->recs[i + 1].key, next, rec->key_len + 1) == 0;
            if (!listed && lookup(r, next, rec->key_len + 1, &value, &vlen, path) != 0)
                fuzz_fail("verified table: key %zu followed by NUL found", i);
        }
    }
    if (s->n && s->recs[0].key_len > 0 && lookup(r, s->recs[0].key, 0, &value, &vlen, path) != 0)
        fuzz_fail("verified table: the empty key found before the first key");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_file file;
    fuzz_file_init(&file, data, size);

    /* Small reads: inputs span several of them, so the read-boundary
     * handling is fuzzed too, and no 8 MiB buffer is allocated per input. */
    verify_options vopts;
    verify_options_init(&vopts);
    vopts.read_size = 4096;
    verify_report rep;
    verify_report_init(&rep, &vopts);
    sp_error verr = {0};
    bool verified = false;
    if (verify_file(file.path, &rep, &verr) != 0)
        fuzz_check_error(&verr, file.path);
    else if (rep.n_problems > rep.problem_count)
        fuzz_fail("verify kept %zu problems of %llu counted", rep.n_problems,
                  (unsigned long long)rep.problem_count);
    else
        verified = rep.problem_count == 0;

    sp_error err = {0};
    sst_reader *r = sst_reader_open(file.path, &err);
    if (!r) {
        fuzz_check_error(&err, file.path);
        if (verified)
            fuzz_fail("verify passed a table the reader cannot open: %s", err.msg);
    } else {
        scan s = {0};
        scan_table(r, file.path, &s);
        if (verified) {
            if (!s.clean)
                fuzz_fail("verify passed a table whose blocks do not read");
            if (s.n != rep.records)
                fuzz_fail("verify counted %llu records, the scan %zu",
                          (unsigned long long)rep.records, s.n);
            check_lookups(r, &s, file.path);
        } else {
            /* Lookups on a damaged table must fail cleanly, never crash. */
            static const uint8_t probe[] = "Ma";
            const uint8_t *value;
            uint32_t vlen;
            lookup(r, probe, 2, &value, &vlen, file.path);
            for (size_t i = 0; i < s.n; i++)
                lookup(r, s.recs[i].key, s.recs[i].key_len, &value, &vlen, file.path);
        }
        for (size_t i = 0; i < s.n; i++)
            free(s.recs[i].value);
        free(s.recs);
        sst_reader_close(r);
    }
    verify_report_destroy(&rep);
    fuzz_file_destroy(&file);
    return 0;
}
