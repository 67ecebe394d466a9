/*
 * truncate_cmd.c: `sstpipe truncate`, the truncate stage on its own: a record
 * stream in, the same records with values cut, out. The bound is [truncate]
 * max_bytes of the config (-c FILE, --set), which --max-bytes overrides.
 */
#include "pipeline/command/config_apply.h"
#include "pipeline/command/commands.h"
#include "pipeline/command/flags.h"
#include "pipeline/command/front.h"
#include "stages/common/cli.h"
#include "stages/common/stream_stage.h"
#include "stages/truncate/truncate.h"

#include <stdbool.h>
#include <stdio.h>

static int run(const char *input, const char *output, uint64_t max_bytes, bool verbose) {
    sp_error err = {0};
    stream_stage st;
    truncator t;
    int rc = -1;
    if (stream_stage_open_input(&st, input, &err))
        goto done;
    rs_header h = {.flags = rs_reader_header(st.reader)->flags,
                   .max_value_bytes = (uint32_t)max_bytes};
    if (stream_stage_open_output(&st, output, &h, &err))
        goto done;
    truncator_init(&t, max_bytes, rs_writer_sink(st.writer));
    sp_sink sink = truncator_sink(&t);
    sp_record rec;
    int got;
    /* One byte past the limit is enough to place the cut; the rest of a long
     * value is skipped by the reader without being held. */
    while ((got = rs_reader_next(st.reader, max_bytes + 1, &rec, &err)) == 1)
        if (sp_sink_put(&sink, &rec, &err))
            goto done;
    if (got < 0 || stream_stage_finish(&st, &err))
        goto done;
    SP_FRONT_STATS(verbose, truncate_stats_format, t.records, t.truncated);
    rc = 0;
done:
    stream_stage_close(&st);
    return sp_front_exit(rc, &err);
}

static const sp_flag flags[] = {
    SP_STAGE_FLAGS(SP_FLAG_OUTPUT_STREAM),
    SP_FLAG_MAX_BYTES,
};

static int run_cmd(sp_cmdline *cl) {
    uint64_t max_bytes;
    config_apply_truncate(&cl->cfg, &max_bytes);
    return run(sp_cmdline_input(cl), cl->value[SP_F_OUTPUT], max_bytes,
               sp_cmdline_has(cl, SP_F_VERBOSE));
}

const sp_command truncate_command =
    SP_COMMAND(truncate, run_cmd, SP_FLAGS(flags),
               SP_OPERANDS(sp_input_operand, 0, 1, "expected at most one INPUT, got %d"));
