/*
 * verify_report.c: the verify report's life cycle and its two renderings,
 * the text lines a person reads and the JSON a script (or `nightly`) reads.
 * Both carry the same facts; stages/verify/README.md documents the JSON fields.
 */
#include "stages/verify/verify.h"

#include "stages/common/cli.h"
#include "stages/common/fileio.h"
#include "stages/common/report.h"
#include "stages/verify/verify_utf8.h"

#include <stdlib.h>
#include <string.h>

void verify_options_init(verify_options *opts) {
    opts->read_size = 8u << 20;
    opts->max_problems = 1000;
    opts->threads = 0;
    opts->progress = NULL;
    opts->tableset = NULL;
    opts->shard = NULL;
    opts->set_options = NULL;
}

void verify_options_shard(verify_options *opts, const table_set *s, size_t i) {
    opts->tableset = s ? table_set_manifest_path(s) : NULL;
    opts->shard = s ? table_set_shard_at(s, i) : NULL;
    opts->set_options = s ? table_set_get_options(s) : NULL;
}

void verify_report_init(verify_report *rep, const verify_options *opts) {
    memset(rep, 0, sizeof *rep);
    if (opts)
        rep->opts = *opts;
    else
        verify_options_init(&rep->opts);
}

void verify_report_destroy(verify_report *rep) {
    free(rep->path);
    free(rep->problems);
    free(rep->error);
    memset(rep, 0, sizeof *rep);
}

static void print_problem(const verify_report *rep, const verify_problem *p, FILE *out) {
    if (p->block >= 0)
        fprintf(out, "%s: block %lld at byte %llu: %s\n", rep->path, (long long)p->block,
                (unsigned long long)p->offset, p->what);
    else
        fprintf(out, "%s: byte %llu: %s\n", rep->path, (unsigned long long)p->offset, p->what);
}

void verify_report_print(const verify_report *rep, FILE *out) {
    for (size_t i = 0; i < rep->n_problems; i++)
        print_problem(rep, &rep->problems[i], out);
    if (rep->problem_count > rep->n_problems)
        fprintf(out, "%s: ... and %llu more problems\n", rep->path,
                (unsigned long long)(rep->problem_count - rep->n_problems));
    fprintf(out, "%s: records=%llu blocks=%llu bytes=%llu seconds=%.3f MB/s=%.1f ", rep->path,
            (unsigned long long)rep->records, (unsigned long long)rep->blocks,
            (unsigned long long)rep->bytes, rep->seconds, rep->mb_per_s);
    if (rep->problem_count == 0)
        fprintf(out, "OK\n");
    else
        fprintf(out, "%llu problem%s\n", (unsigned long long)rep->problem_count,
                rep->problem_count == 1 ? "" : "s");
}

json_t *verify_report_to_json(const verify_report *rep) {
    json_t *problems = json_array();
    for (size_t i = 0; i < rep->n_problems; i++) {
        const verify_problem *p = &rep->problems[i];
        json_array_append_new(problems,
                              json_pack("{s:s, s:I, s:I}", "what", p->what, "block",
                                        (json_int_t)p->block, "offset", (json_int_t)p->offset));
    }
    return json_pack("{s:s, s:s?, s:b, s:s?, s:I, s:I, s:I, s:f, s:f, s:I, s:o}", "file",
                     rep->path ? rep->path : "", "tableset", rep->opts.tableset, "ok",
                     !rep->error && rep->problem_count == 0, "error", rep->error, "records",
                     (json_int_t)rep->records, "blocks", (json_int_t)rep->blocks, "bytes",
                     (json_int_t)rep->bytes, "seconds", rep->seconds, "mb_per_s", rep->mb_per_s,
                     "problem_count", (json_int_t)rep->problem_count, "problems", problems);
}

int verify_write_json(const verify_report *reps, size_t n, const char *json_path, sp_error *err) {
    json_t *files = json_array();
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++) {
        json_array_append_new(files, verify_report_to_json(&reps[i]));
        total += reps[i].problem_count;
    }
    /* Which code checked the keys' and values' UTF-8: this process's, so
     * one for every file. */
    const char *utf8 = verify_utf8_fast_path();
    return sp_report_write_json(json_pack("{s:o, s:I, s:s}", "files", files, "problems",
                                          (json_int_t)total, "utf8_check", utf8 ? utf8 : "scalar"),
                                json_path, err);
}
