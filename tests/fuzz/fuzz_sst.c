/*
 * fuzz_sst.c: libFuzzer target for the SSTable readers on arbitrary bytes.
 *
 * Everything `get`, `dump`, the server and users' programs do to a file,
 * through the public API (libsstpipe, sstpipe.h): sstpipe_open (footer and
 * index checks, the data region mapped), a scan of every record with
 * sstpipe_iter as dump does, scans from scanned keys and with their
 * prefixes, point lookups mapped and with direct I/O (a version 2 table's
 * asking its filter for absent keys first); and the every-byte check
 * verify_file, which asks the filter about every key. The oracles: a table the library refuses for
 * its structure has that problem in verify's report (one check, two modes:
 * stages/sst/table_check.h); when verify finds nothing wrong, the scan
 * returns verify's record count, every scanned key is found with the
 * scanned value in both modes, keys between and around them are not, and
 * a scan from any key returns the rest of the full scan. Checksums make
 * random bytes fail early, so the seeds are real small tables (see
 * make-seeds); the deeper code is reached from mutations that keep the
 * checksums (and from the regression seeds: among them version 2 tables
 * of the first layout, every region padded, and one of the packed layout,
 * v2-packed.sst; a version 2 table with its filter, and its filter's length
 * resealed past the meta region and into its padding). Errors are expected (a
 * message naming the file); crashes, sanitizer reports, leaks and broken
 * promises are findings.
 */
#include "fuzz_file.h"
#include "stages/common/record.h"
#include "stages/sst/sstpipe.h"
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

static int sst_cmp(const scanned *a, const void *key, size_t klen) {
    size_t n = a->key_len < klen ? a->key_len : klen;
    int c = memcmp(a->key, key, n);
    return c ? c : (a->key_len < klen ? -1 : a->key_len > klen);
}

static void scan_add(scan *s, const void *key, size_t klen, const void *value, size_t vlen) {
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 64;
        s->recs = realloc(s->recs, s->cap * sizeof *s->recs);
        if (!s->recs)
            fuzz_fail("out of memory for the scan");
    }
    scanned *r = &s->recs[s->n++];
    if (klen == 0 || klen > SP_MAX_KEY_BYTES)
        fuzz_fail("scan returned a key of %zu bytes", klen);
    memcpy(r->key, key, klen);
    r->key_len = (uint32_t)klen;
    r->value_len = (uint32_t)vlen;
    r->value = malloc(vlen + 1);
    if (!r->value)
        fuzz_fail("out of memory for a value");
    memcpy(r->value, value, vlen);
}

/* A failing call's promise: a one-line message naming the file. */
static void check_msg(char *msg, const char *path) {
    sp_error e = {0};
    if (!msg)
        fuzz_fail("a failing call set no message");
    sp_errorf(&e, "%s", msg);
    if (strlen(msg) >= sizeof e.msg)
        fuzz_fail("message of %zu bytes", strlen(msg));
    fuzz_check_error(&e, path);
    sstpipe_free(msg);
}

/* Every record, as dump reads them; an error ends the scan. */
static void scan_table(sstpipe_table *t, const char *path, uint32_t block_size, scan *s) {
    sstpipe_iter *it = sstpipe_iter_new(t, NULL, 0, NULL, 0);
    if (!it)
        fuzz_fail("out of memory for an iterator");
    const void *k, *v;
    size_t kl, vl;
    char *msg = NULL;
    int rc;
    s->clean = true;
    while ((rc = sstpipe_iter_next(it, &k, &kl, &v, &vl, &msg)) == 1) {
        if (vl > block_size)
            fuzz_fail("value of %zu bytes in a %u-byte block", vl, block_size);
        if (s->n && sst_cmp(&s->recs[s->n - 1], k, kl) >= 0)
            fuzz_fail("scan: record %zu does not sort after the one before", s->n);
        scan_add(s, k, kl, v, vl);
    }
    if (rc < 0) {
        check_msg(msg, path);
        s->clean = false;
        msg = NULL;
        if (sstpipe_iter_next(it, &k, &kl, &v, &vl, &msg) != -1)
            fuzz_fail("iterator did not stay at its error");
        check_msg(msg, path);
    }
    sstpipe_iter_free(it);
}

static int lookup(sstpipe_table *t, const uint8_t *key, uint32_t klen, const void **value,
                  size_t *vlen, const char *path) {
    char *msg = NULL;
    int rc = sstpipe_get(t, key, klen, value, vlen, &msg);
    if (rc < 0)
        check_msg(msg, path);
    return rc;
}

/* On a table verify passed: every key found with its value; a key just
 * after each (key + "\0") and one before all keys not found. */
static void check_lookups(sstpipe_table *t, const scan *s, const char *path) {
    const void *value;
    size_t vlen;
    for (size_t i = 0; i < s->n; i++) {
        const scanned *rec = &s->recs[i];
        if (lookup(t, rec->key, rec->key_len, &value, &vlen, path) != 1)
            fuzz_fail("verified table: key %zu of %zu not found", i, s->n);
        if (vlen != rec->value_len || memcmp(value, rec->value, vlen) != 0)
            fuzz_fail("verified table: key %zu: lookup and scan disagree on the value", i);
        if (rec->key_len < SP_MAX_KEY_BYTES) {
            uint8_t next[SP_MAX_KEY_BYTES];
            memcpy(next, rec->key, rec->key_len);
            next[rec->key_len] = 0;
            bool listed = i + 1 < s->n && s->recs[i + 1].key_len == rec->key_len + 1 &&
                          memcmp(s->recs[i + 1].key, next, rec->key_len + 1) == 0;
            if (!listed && lookup(t, next, rec->key_len + 1, &value, &vlen, path) != 0)
                fuzz_fail("verified table: key %zu followed by NUL found", i);
        }
    }
    if (s->n && lookup(t, s->recs[0].key, 0, &value, &vlen, path) != 0)
        fuzz_fail("verified table: the empty key found");
}

/* On a table verify passed: a scan from record i's key (with its first
 * byte as prefix, or none) returns records i, i+1, ... of the full scan. */
static void check_scan_from(sstpipe_table *t, const scan *s, size_t i, bool prefixed,
                            const char *path) {
    const scanned *from = &s->recs[i];
    sstpipe_iter *it =
        sstpipe_iter_new(t, from->key, from->key_len, prefixed ? from->key : NULL, prefixed);
    if (!it)
        fuzz_fail("out of memory for an iterator");
    const void *k, *v;
    size_t kl, vl, j = i;
    char *msg = NULL;
    int rc;
    while ((rc = sstpipe_iter_next(it, &k, &kl, &v, &vl, &msg)) == 1) {
        if (j >= s->n || sst_cmp(&s->recs[j], k, kl) != 0 || vl != s->recs[j].value_len ||
            memcmp(v, s->recs[j].value, vl) != 0)
            fuzz_fail("verified table: scan from record %zu disagrees at record %zu", i, j);
        j++;
    }
    if (rc < 0)
        fuzz_fail("verified table: %s: scan from record %zu failed: %s", path, i, msg);
    if (j < s->n && (!prefixed || s->recs[j].key[0] == from->key[0]))
        fuzz_fail("verified table: scan from record %zu ended early at %zu", i, j);
    sstpipe_iter_free(it);
}

/*
 * The library refused the file for its structure ("PATH: byte N: what",
 * the table check's stop mode): verify, which runs the same check in its
 * collecting mode, must have reported that very problem at that byte,
 * unless it did not check the file by the footer at its end (none there,
 * or bytes after one) or kept fewer problems than it counted.
 */
static void check_same_problem(const char *msg, const char *path, const verify_report *rep) {
    size_t plen = strlen(path);
    if (strncmp(msg, path, plen) != 0 || strncmp(msg + plen, ": byte ", 7) != 0)
        return;
    char *end;
    unsigned long long at = strtoull(msg + plen + 7, &end, 10);
    if (strncmp(end, ": ", 2) != 0 || rep->error || rep->n_problems < rep->problem_count)
        return;
    const char *what = end + 2;
    for (size_t i = 0; i < rep->n_problems; i++)
        if (strstr(rep->problems[i].what, "no footer at the end") ||
            strstr(rep->problems[i].what, "follow the footer") ||
            (rep->problems[i].offset == at && strcmp(rep->problems[i].what, what) == 0))
            return;
    fuzz_fail("the library refused the table with \"%s\", which verify did not report", msg);
}

/* Opens path with or without direct I/O; a refusal is checked against
 * verify's report rep. */
static sstpipe_table *open_mode(const char *path, bool direct, const verify_report *rep) {
    sstpipe_options *o = sstpipe_options_new();
    if (!o)
        fuzz_fail("out of memory for options");
    sstpipe_options_set_direct_io(o, direct);
    char *msg = NULL;
    sstpipe_table *t = sstpipe_open_with(path, o, &msg);
    sstpipe_options_free(o);
    if (!t) {
        if (msg)
            check_same_problem(msg, path, rep);
        check_msg(msg, path);
    }
    return t;
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

    sstpipe_table *t = open_mode(file.path, false, &rep);
    if (!t) {
        if (verified)
            fuzz_fail("verify passed a table the library cannot open");
    } else {
        sstpipe_info info;
        sstpipe_info_get(t, &info);
        scan s = {0};
        scan_table(t, file.path, info.block_size, &s);
        /* Direct I/O where the memory file takes it (Linux 6.6 on). */
        sstpipe_table *direct = open_mode(file.path, true, &rep);
        if (verified) {
            if (!s.clean)
                fuzz_fail("verify passed a table whose blocks do not read");
            if (s.n != rep.records || s.n != info.records)
                fuzz_fail("verify counted %llu records, the footer %llu, the scan %zu",
                          (unsigned long long)rep.records, (unsigned long long)info.records, s.n);
            check_lookups(t, &s, file.path);
            if (direct)
                check_lookups(direct, &s, file.path);
            for (size_t i = 0; i < s.n; i += 1 + s.n / 8) {
                check_scan_from(t, &s, i, false, file.path);
                check_scan_from(t, &s, i, true, file.path);
            }
        } else {
            /* Lookups on a damaged table must fail cleanly, never crash. */
            static const uint8_t probe[] = "Ma";
            const void *value;
            size_t vlen;
            lookup(t, probe, 2, &value, &vlen, file.path);
            for (size_t i = 0; i < s.n; i++) {
                lookup(t, s.recs[i].key, s.recs[i].key_len, &value, &vlen, file.path);
                if (direct)
                    lookup(direct, s.recs[i].key, s.recs[i].key_len, &value, &vlen, file.path);
            }
        }
        for (size_t i = 0; i < s.n; i++)
            free(s.recs[i].value);
        free(s.recs);
        sstpipe_close(direct);
        sstpipe_close(t);
    }
    verify_report_destroy(&rep);
    fuzz_file_destroy(&file);
    return 0;
}
