/*
 * fuzz_merge.c: libFuzzer target for `sstpipe merge` (table_merge.h) with
 * one input of arbitrary bytes.
 *
 * The fuzzed table is merged with a small valid table built once, first
 * as the earlier input and then as the later one (so it is the base whose
 * blocks are copied in one merge and re-encoded in the other), and alone
 * with --canonical. The oracle: a merge either fails with one error line
 * naming a file, leaving no output, or writes a table verify finds clean;
 * a fuzzed table verify finds clean always merges, unless the output's
 * options (the first input's block size, the largest value bound) could
 * not hold every record a footer allows: verify checks the records a
 * table holds, merge refuses such options before any work, as write does. Output goes to a
 * directory of its own under $TMPDIR (a table writer needs a real
 * directory for its atomic rename); the seeds are those of fuzz_sst.
 */
#include "fuzz_file.h"
#include "stages/merge/table_merge.h"
#include "stages/sst/table_reader.h"
#include "stages/sst/table_writer.h"
#include "stages/verify/verify.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[256], fixed[300], out[300];

static void setup(void) {
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/sstpipe-fuzz-merge-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir))
        fuzz_fail("cannot create a scratch directory %s", dir);
    snprintf(fixed, sizeof fixed, "%s/fixed.sst", dir);
    snprintf(out, sizeof out, "%s/out.sst", dir);
    table_options o;
    table_options_init(&o);
    o.block_size = 512;
    o.cluster_size = 512;
    o.max_value_bytes = 100;
    sp_error err = {0};
    table_writer *w = table_writer_init(fixed, &o, &err);
    static const char *const keys[] = {"A", "Ma", "Mb", "zz"};
    for (size_t i = 0; w && i < 4; i++) {
        sp_record rec = {.key = (const uint8_t *)keys[i],
                         .key_len = (uint32_t)strlen(keys[i]),
                         .value = (const uint8_t *)"fixed",
                         .value_len = 5,
                         .value_fd = -1};
        if (table_writer_add(w, &rec, &err))
            break;
    }
    if (!w || err.msg[0] || table_writer_finish(w, &err))
        fuzz_fail("cannot build the fixed table: %s", err.msg);
    table_writer_destroy(w);
}

static bool verifies(const char *path) {
    verify_options vopts;
    verify_options_init(&vopts);
    vopts.read_size = 4096;
    verify_report rep;
    verify_report_init(&rep, &vopts);
    sp_error err = {0};
    bool ok = verify_file(path, &rep, &err) == 0 && rep.problem_count == 0;
    if (!ok && !err.msg[0] && rep.problem_count == 0)
        fuzz_fail("verify failed without saying why");
    verify_report_destroy(&rep);
    return ok;
}

/* Whether merging inputs may write its output options (see the top). */
static bool output_fits(const char *const *inputs, unsigned n) {
    uint32_t block_size = 0, max_value = 0;
    for (unsigned i = 0; i < n; i++) {
        sp_error err = {0};
        sst_reader *r = sst_reader_open(inputs[i], &err);
        if (!r)
            return false;
        const sst_footer *f = sst_reader_footer(r);
        if (i == 0)
            block_size = f->block_size;
        if (f->max_value_bytes > max_value)
            max_value = f->max_value_bytes;
        sst_reader_close(r);
    }
    sp_error err = {0};
    return sst_check_fit(block_size, max_value, &err) == 0;
}

static void merge_case(const char *const *inputs, unsigned n, bool canonical, bool must_work,
                       const char *fuzzed) {
    table_merge_options o;
    table_merge_options_init(&o);
    o.canonical = canonical;
    o.read_bytes = 4096; /* inputs span several reads */
    table_merge_stats st;
    sp_error err = {0};
    if (table_merge(out, inputs, n, &o, &st, &err)) {
        if (must_work && output_fits(inputs, n))
            fuzz_fail("a table verify passes did not merge: %s", err.msg);
        if (!strchr(err.msg, '/') || strchr(err.msg, '\n'))
            fuzz_fail("merge error without a file name, or on several lines: %s", err.msg);
        (void)fuzzed;
        if (access(out, F_OK) == 0)
            fuzz_fail("a failed merge left %s", out);
        return;
    }
    if (!verifies(out))
        fuzz_fail("merge wrote a table verify does not pass");
    unlink(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!dir[0])
        setup();
    fuzz_file file;
    fuzz_file_init(&file, data, size);
    bool clean = verifies(file.path);
    const char *before[] = {file.path, fixed}, *after[] = {fixed, file.path};
    merge_case(before, 2, false, clean, file.path);
    merge_case(after, 2, false, clean, file.path);
    merge_case(before, 1, true, clean, file.path);
    fuzz_file_destroy(&file);
    return 0;
}
