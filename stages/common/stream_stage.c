/* stream_stage.c: the record-stream plumbing of truncate and sort; see stream_stage.h. */
#include "stages/common/stream_stage.h"

#include <string.h>
#include <unistd.h>

int stream_stage_open_input(stream_stage *s, const char *input, sp_error *err) {
    memset(s, 0, sizeof *s);
    s->in_fd = -1;
    if (sp_open_input(input, &s->in_fd, err))
        return -1;
    s->in_name = s->in_fd == STDIN_FILENO ? "stdin" : input;
    s->reader = rs_reader_init(s->in_fd, s->in_name, err);
    return s->reader ? 0 : -1;
}

int stream_stage_open_output(stream_stage *s, const char *output, const rs_header *h,
                             sp_error *err) {
    if (sp_output_open(&s->out, output, err))
        return -1;
    s->out_open = true;
    s->writer = rs_writer_init(s->out.fd, s->out.name, h, err);
    return s->writer ? 0 : -1;
}

int stream_stage_finish(stream_stage *s, sp_error *err) {
    if (rs_writer_finish(s->writer, err) || sp_output_commit(&s->out, err))
        return -1;
    s->out_open = false;
    return 0;
}

void stream_stage_close(stream_stage *s) {
    if (s->out_open)
        sp_output_abort(&s->out);
    s->out_open = false;
    rs_writer_destroy(s->writer);
    rs_reader_destroy(s->reader);
    s->writer = NULL;
    s->reader = NULL;
    if (s->in_fd > STDIN_FILENO)
        close(s->in_fd);
    s->in_fd = -1;
}
