/*
 * cli.h: what every command's front end shares: exit codes, printing the one
 * error line, and opening "-" as stdin or stdout.
 *
 * Exit codes, one table for every command (sstpipe(1), EXIT STATUS; the
 * command layer picks them, pipeline/command/front.h):
 *   0 done;
 *   1 the work failed: bad input, an I/O error, a file that is not a table;
 *   2 refused before any work: a bad flag, option value or configuration,
 *     an operand that does not exist, an output that cannot be written;
 *   3 the answer is no: get's key is absent, verify or nightly found
 *     problems in a table;
 * nightly's own 4 and 5 (pipeline/nightly/nightly.h); 128+N on signal N.
 */
#ifndef SSTPIPE_COMMON_CLI_H
#define SSTPIPE_COMMON_CLI_H

#include "stages/common/error.h"
#include "stages/common/fileio.h"

#include <stdbool.h>

#define SP_EXIT_OK 0
#define SP_EXIT_FAIL 1
#define SP_EXIT_USAGE 2
#define SP_EXIT_NO 3

/* Prints "sstpipe: <message>" on stderr and returns code. */
int sp_cli_report(const sp_error *err, int code);
/* The same for a message of libsstpipe's (sstpipe.h; NULL: its allocation
 * failed); the caller still frees it. */
int sp_cli_report_msg(const char *msg, int code);

/* Prints "sstpipe: <message> (see sstpipe CMD --help)"; returns SP_EXIT_USAGE. */
int sp_cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Opens path for reading ("-" is stdin). */
int sp_open_input(const char *path, int *fd, sp_error *err);

/*
 * Where a stage writes: stdout when path is NULL or "-", otherwise an
 * sp_outfile renamed into place by sp_output_commit.
 */
typedef struct sp_output {
    int fd;
    const char *name;
    bool is_file;
    sp_outfile file;
} sp_output;

int sp_output_open(sp_output *o, const char *path, sp_error *err);
int sp_output_commit(sp_output *o, sp_error *err);
void sp_output_abort(sp_output *o);

#endif
