/*
 * stream_stage.h: the plumbing of a stage that reads one record stream and
 * writes another (truncate, sort): input file or stdin, the reader, the
 * output (stdout, or a file committed only on success) and the writer.
 *
 * Open the input, derive the output header from the input's, open the
 * output, move the records, finish; close undoes whatever is still open, so
 * a failing stage leaves no output file behind.
 */
#ifndef SSTPIPE_COMMON_STREAM_STAGE_H
#define SSTPIPE_COMMON_STREAM_STAGE_H

#include "stages/common/cli.h"
#include "stages/common/error.h"
#include "stages/common/recstream.h"

typedef struct stream_stage {
    int in_fd;
    const char *in_name; /* "stdin" or the path, for messages */
    rs_reader *reader;
    sp_output out;
    bool out_open;
    rs_writer *writer;
} stream_stage;

/* Opens input ("-" is stdin) and reads its header. */
int stream_stage_open_input(stream_stage *s, const char *input, sp_error *err);
/* Opens output (NULL or "-" is stdout) and writes header h. */
int stream_stage_open_output(stream_stage *s, const char *output, const rs_header *h,
                             sp_error *err);
/* Writes the end marker and commits the output. */
int stream_stage_finish(stream_stage *s, sp_error *err);
/* Releases everything; an output not committed is removed. */
void stream_stage_close(stream_stage *s);

#endif
