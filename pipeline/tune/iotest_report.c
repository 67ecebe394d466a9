/*
 * iotest_report.c: iotest's results as text (one line per pattern, the
 * figures diskspd users compare) and as JSON (every figure; fields in
 * pipeline/tune/README.md).
 */
#include "pipeline/tune/iotest.h"

#include "stages/common/report.h"
#include "stages/common/size.h"

void iotest_print(const iotest_result *r, FILE *out) {
    char size[32];
    fprintf(out,
            "iotest: %s, test file %s, %u threads x %u IOs in flight, %g s per pattern, %s, "
            "io_uring\n",
            r->dir, sp_format_size(r->opts.file_size, size, sizeof size), r->opts.threads,
            r->opts.queue_depth, r->opts.duration, r->direct ? "O_DIRECT" : "buffered");
    if (r->note[0])
        fprintf(out, "note: %s\n", r->note);
    fprintf(out, "%-9s %-17s %11s %10s %11s %11s %11s %11s\n", "pattern", "kind", "IOPS", "MB/s",
            "avg us", "p50 us", "p99 us", "max us");
    for (size_t i = 0; i < r->n_results; i++) {
        const iotest_pattern_result *p = &r->results[i];
        char name[32];
        fprintf(out, "%-9s %-17s %11.0f %10.1f %11.1f %11.1f %11.1f %11.1f\n",
                iotest_pattern_name(&p->pattern, name, sizeof name),
                iotest_pattern_kind(&p->pattern), p->iops, p->mb_per_s, p->avg_ns / 1e3,
                (double)p->p50_ns / 1e3, (double)p->p99_ns / 1e3, (double)p->max_ns / 1e3);
    }
}

json_t *iotest_result_to_json(const iotest_result *r) {
    json_t *patterns = json_array();
    for (size_t i = 0; i < r->n_results; i++) {
        const iotest_pattern_result *p = &r->results[i];
        char name[32];
        json_array_append_new(
            patterns,
            json_pack("{s:s, s:s, s:b, s:b, s:I, s:I, s:I, s:f, s:f, s:f, s:{s:I, s:f, s:I, s:I, "
                      "s:I}}",
                      "pattern", iotest_pattern_name(&p->pattern, name, sizeof name), "kind",
                      iotest_pattern_kind(&p->pattern), "random", p->pattern.random, "write",
                      p->pattern.write, "io_size", (json_int_t)p->pattern.io_size, "ios",
                      (json_int_t)p->ios, "bytes", (json_int_t)p->bytes, "seconds", p->seconds,
                      "iops", p->iops, "mb_per_s", p->mb_per_s, "latency_ns", "min",
                      (json_int_t)p->min_ns, "avg", p->avg_ns, "p50", (json_int_t)p->p50_ns, "p99",
                      (json_int_t)p->p99_ns, "max", (json_int_t)p->max_ns));
    }
    return json_pack("{s:s, s:s, s:I, s:f, s:i, s:i, s:b, s:s?, s:f, s:o}", "dir",
                     r->dir ? r->dir : "", "file", r->file ? r->file : "", "file_size",
                     (json_int_t)r->opts.file_size, "duration", r->opts.duration, "threads",
                     (int)r->opts.threads, "queue_depth", (int)r->opts.queue_depth, "direct",
                     r->direct, "note", r->note[0] ? r->note : NULL, "fill_seconds",
                     r->fill_seconds, "patterns", patterns);
}

int iotest_write_json(const iotest_result *r, const char *json_path, sp_error *err) {
    return sp_report_write_json(iotest_result_to_json(r), json_path, err);
}
