/* front.c: the pieces the command front ends share; see front.h. */
#include "pipeline/command/front.h"

#include "pipeline/command/flags.h"
#include "stages/common/cli.h"

#include <stdio.h>

sp_progress *sp_front_progress(sp_front_meter *m, const sp_cmdline *cl, const char *input) {
    m->meter = NULL;
    m->shown = sp_cmdline_progress(cl);
    if (!m->shown)
        return NULL;
    sp_progress_init(&m->prog, input);
    return &m->prog;
}

void sp_front_meter_start(sp_front_meter *m, const char *what) {
    if (m->shown)
        m->meter = sp_meter_start(what, &m->prog, stderr);
}

int sp_front_meter_stop(sp_front_meter *m, int rc) {
    sp_meter_stop(m->meter, rc == 0);
    m->meter = NULL;
    return rc;
}

int sp_front_run_stream(sp_cmdline *cl, const char *what, sp_front_stream_fn fn, const void *opts) {
    sp_front_meter m;
    const char *input = sp_cmdline_input(cl);
    sp_progress *progress = sp_front_progress(&m, cl, input);
    sp_front_meter_start(&m, what);
    return sp_front_meter_stop(
        &m, fn(input, cl->value[SP_F_OUTPUT], opts, sp_cmdline_has(cl, SP_F_VERBOSE), progress));
}

int sp_front_exit(int rc, const sp_error *err) {
    return rc ? sp_cli_report(err, SP_EXIT_FAIL) : SP_EXIT_OK;
}

void sp_front_stats(const char *line) {
    fprintf(stderr, "%s\n", line);
}

sstpipe_table *sp_front_open_table(const char *path, int *code) {
    char *msg = NULL;
    sstpipe_table *t = sstpipe_open(path, &msg);
    if (!t) {
        *code = sp_cli_report_msg(msg, SP_EXIT_FAIL);
        sstpipe_free(msg);
    }
    return t;
}
