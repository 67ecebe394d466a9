/*
 * sort_cmd.c: `sstpipe sort`, the sort stage on its own: a record stream in,
 * the same records sorted by key with duplicates resolved, out. Memory,
 * scratch directory and fan-in come from [sort] of the config (-c FILE,
 * --set), which the flags override.
 */
#include "pipeline/command/config_apply.h"
#include "pipeline/command/commands.h"
#include "pipeline/command/flags.h"
#include "pipeline/command/front.h"
#include "stages/common/cli.h"
#include "stages/common/progress.h"
#include "stages/common/stream_stage.h"
#include "stages/sort/sorter.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* Prefixes a sorter error with where in the input the record came from. */
static void locate(sp_error *err, const char *name, uint64_t offset) {
    char msg[sizeof err->msg];
    memcpy(msg, err->msg, sizeof msg);
    sp_error_clear(err);
    sp_errorf(err, "%s: record ending at byte %llu: %s", name, (unsigned long long)offset, msg);
}

static int run(const char *input, const char *output, const void *options, bool verbose,
               sp_progress *prog) {
    const sort_options *opts = options;
    sp_error err = {0};
    stream_stage st;
    sorter *s = NULL;
    int rc = -1;
    if (stream_stage_open_input(&st, input, &err) || !(s = sorter_init(opts, &err)))
        goto done;
    rs_header h = {.flags = RS_SORTED,
                   .max_value_bytes = rs_reader_header(st.reader)->max_value_bytes};
    if (stream_stage_open_output(&st, output, &h, &err))
        goto done;
    /* Capping what the reader keeps means a value too large to sort is
     * refused without first being read into memory whole. */
    uint64_t cap = opts->memory / 4 + 1;
    sp_record rec;
    int got;
    uint64_t n = 0;
    while ((got = rs_reader_next(st.reader, cap, &rec, &err)) == 1) {
        if (sorter_add(s, &rec, &err)) {
            locate(&err, st.in_name, rs_reader_offset(st.reader));
            goto done;
        }
        if (prog && ++n % 4096 == 0) {
            sp_progress_store(&prog->records, n);
            sp_progress_store(&prog->in_bytes, rs_reader_offset(st.reader));
        }
    }
    if (prog) {
        sp_progress_store(&prog->records, n);
        sp_progress_store(&prog->in_bytes, rs_reader_offset(st.reader));
        sp_progress_phase(prog, SP_PHASE_MERGING);
    }
    sp_sink sink = rs_writer_sink(st.writer);
    if (got < 0 || sorter_finish(s, &sink, &err) || stream_stage_finish(&st, &err))
        goto done;
    SP_FRONT_STATS(verbose, sort_stats_format, sorter_stats(s));
    rc = 0;
done:
    sorter_destroy(s);
    stream_stage_close(&st);
    return sp_front_exit(rc, &err);
}

static const sp_flag flags[] = {SP_STREAM_FLAGS(SP_SORT_FLAGS)};

SP_FRONT_STREAM_RUN(sort, run)

const sp_command sort_command =
    SP_COMMAND(sort, run_cmd, SP_FLAGS(flags),
               SP_OPERANDS(sp_input_operand, 0, 1, "expected at most one INPUT, got %d"));
