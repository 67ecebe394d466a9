/*
 * extract_cmd.c: `sstpipe extract`, the front end of the extract stage:
 * its table entry, then extract_file into a record stream on stdout or -o FILE.
 * Namespaces, redirects ([extract]), the scratch directory ([sort] tmp_dir),
 * the decompressing and parsing threads ([build] threads and chunk_size) and
 * an external decompressor
 * ([input] decompressor) come from the config (-c FILE, --set), which the
 * flags override.
 */
#include "stages/extract/extract.h"

#include "pipeline/command/config_apply.h"
#include "pipeline/command/commands.h"
#include "pipeline/command/flags.h"
#include "pipeline/command/front.h"
#include "stages/common/cli.h"
#include "stages/common/progress.h"
#include "stages/common/recstream.h"

#include <stdio.h>

static int run(const char *input, const char *output, const void *options, bool verbose,
               sp_progress *progress) {
    extract_options o = *(const extract_options *)options, *opts = &o;
    o.progress = progress;
    sp_error err = {0};
    sp_output out;
    if (sp_output_open(&out, output, &err))
        return sp_cli_report(&err, SP_EXIT_FAIL);
    rs_header h = {.flags = 0, .max_value_bytes = 0};
    rs_writer *w = rs_writer_init(out.fd, out.name, &h, &err);
    extract_stats stats;
    int rc = -1;
    if (w) {
        sp_sink sink = rs_writer_sink(w);
        rc = extract_file(input, opts, &sink, &stats, &err);
        if (rc == 0)
            rc = rs_writer_finish(w, &err);
        if (rc == 0)
            rc = sp_output_commit(&out, &err);
    }
    rs_writer_destroy(w);
    if (rc) {
        sp_output_abort(&out);
        return sp_cli_report(&err, SP_EXIT_FAIL);
    }
    SP_FRONT_STATS(verbose, extract_stats_format, &stats);
    return SP_EXIT_OK;
}

static const sp_flag flags[] = {SP_STREAM_FLAGS(SP_FLAG_TMP, SP_EXTRACT_FLAGS)};

SP_FRONT_STREAM_RUN(extract, run)

const sp_command extract_command =
    SP_COMMAND(extract, run_cmd, SP_FLAGS(flags),
               SP_OPERANDS(sp_input_operand, 0, 1, "one INPUT expected, got %d"));
