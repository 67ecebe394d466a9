/*
 * write_cmd.c: `sstpipe write`, the fourth stage. Reads a truncated, sorted
 * record stream and writes it as an SSTable through table_writer.
 *
 * The stream header states the value bound and whether the stream is
 * sorted, so a stream that skipped truncate or sort, and a block size no
 * record could be guaranteed to fit, are refused before the output file is
 * created. The value bound of the table is the stream's; it has no title
 * index (title_index.h). Block and cluster size come from [sst] of
 * the config (-c FILE,
 * --set), which the flags override.
 */
#include "pipeline/command/commands.h"
#include "pipeline/command/config_apply.h"
#include "pipeline/command/flags.h"
#include "pipeline/command/front.h"
#include "stages/common/cli.h"
#include "stages/common/progress.h"
#include "stages/common/recstream.h"
#include "stages/sst/format.h"
#include "stages/sst/table_writer.h"
#include "stages/sst/title_index.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Streams the records of in into a table at out_path; returns the exit code.
 * A block size too small for the stream's value bound is a bad option
 * value, so it exits as a usage error. */
static int write_table(rs_reader *in, const char *in_name, const char *out_path,
                       const table_options *base, bool verbose, sp_progress *prog, sp_error *err) {
    const rs_header *h = rs_reader_header(in);
    if (h->max_value_bytes == 0) {
        sp_errorf(err, "%s: not truncated: pipe it through sstpipe truncate", in_name);
        return SP_EXIT_FAIL;
    }
    if (!(h->flags & RS_SORTED)) {
        sp_errorf(err, "%s: not sorted: pipe it through sstpipe sort", in_name);
        return SP_EXIT_FAIL;
    }
    if (sst_check_fit(base->block_size, h->max_value_bytes, err))
        return SP_EXIT_USAGE;
    table_options opts = *base;
    opts.max_value_bytes = h->max_value_bytes;
    table_writer *w = table_writer_init(out_path, &opts, err);
    if (!w)
        return SP_EXIT_FAIL;
    sp_record rec;
    int rc;
    uint64_t n = 0;
    while ((rc = rs_reader_next(in, 0, &rec, err)) == 1) {
        if (table_writer_add(w, &rec, err)) {
            rc = -1;
            break;
        }
        if (prog && ++n % 4096 == 0) {
            sp_progress_store(&prog->records, n);
            sp_progress_store(&prog->in_bytes, rs_reader_offset(in));
        }
    }
    if (prog) {
        sp_progress_store(&prog->records, n);
        sp_progress_store(&prog->in_bytes, rs_reader_offset(in));
    }
    /* A stream carries no dump's title rules: the table goes out without a
     * title index, and one an earlier table left beside it goes. */
    if (rc == 0)
        rc = title_index_publish(NULL, w, out_path, err);
    SP_FRONT_STATS(rc == 0 && verbose, table_stats_format, table_writer_stats(w));
    table_writer_destroy(w);
    return rc ? SP_EXIT_FAIL : SP_EXIT_OK;
}

static const sp_flag flags[] = {
    SP_STAGE_FLAGS(SP_FLAG_OUTPUT_TABLE),
    SP_TABLE_FLAGS,
    SP_PROGRESS_FLAGS,
};

static int run(sp_cmdline *cl) {
    const char *out_path = cl->value[SP_F_OUTPUT];
    if (!out_path)
        return sp_cli_usage_error("write", "-o FILE is required (an SSTable is not written to "
                                           "stdout)");
    if (!strcmp(out_path, "-"))
        return sp_cli_usage_error("write", "-o must name a file, not stdout");
    const char *in_path = sp_cmdline_input(cl);
    const char *in_name = strcmp(in_path, "-") ? in_path : "stdin";
    table_options opts;
    table_options_init(&opts);
    config_apply_table(&cl->cfg, &opts);

    sp_error err = {0};
    int fd;
    if (sp_open_input(in_path, &fd, &err))
        return sp_cli_report(&err, SP_EXIT_FAIL);
    rs_reader *in = rs_reader_init(fd, in_name, &err);
    sp_front_meter m;
    sp_progress *prog = in ? sp_front_progress(&m, cl, in_path) : NULL;
    if (prog) {
        sp_progress_phase(prog, SP_PHASE_WRITING);
        sp_front_meter_start(&m, "write");
    }
    int code =
        in ? sp_front_meter_stop(&m, write_table(in, in_name, out_path, &opts,
                                                 sp_cmdline_has(cl, SP_F_VERBOSE), prog, &err))
           : SP_EXIT_FAIL;
    rs_reader_destroy(in);
    if (fd != STDIN_FILENO)
        close(fd);
    return code == SP_EXIT_OK ? code : sp_cli_report(&err, code);
}

const sp_command write_command =
    SP_COMMAND(write, run, SP_FLAGS(flags),
               SP_OPERANDS(sp_input_operand, 0, 1, "expected at most one INPUT, got %d"));
