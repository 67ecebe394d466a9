/* cli.c: shared command-line plumbing; see cli.h. */
#include "stages/common/cli.h"

#include "stages/common/progress.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int sp_cli_report(const sp_error *err, int code) {
    sp_meter_hold();
    fprintf(stderr, "sstpipe: %s\n", err->set ? err->msg : "unknown error");
    return code;
}

int sp_cli_report_msg(const char *msg, int code) {
    fprintf(stderr, "sstpipe: %s\n", msg ? msg : "out of memory for an error message");
    return code;
}

int sp_cli_usage_error(const char *cmd, const char *fmt, ...) {
    sp_meter_hold();
    va_list ap;
    va_start(ap, fmt);
    fputs("sstpipe: ", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, " (see sstpipe %s --help)\n", cmd);
    return SP_EXIT_USAGE;
}

int sp_open_input(const char *path, int *fd, sp_error *err) {
    if (!strcmp(path, "-")) {
        *fd = STDIN_FILENO;
        return 0;
    }
    *fd = open(path, O_RDONLY | O_CLOEXEC);
    if (*fd < 0)
        return sp_errorf_errno(err, "%s: cannot open", path);
    return 0;
}

int sp_output_open(sp_output *o, const char *path, sp_error *err) {
    memset(o, 0, sizeof *o);
    if (!path || !strcmp(path, "-")) {
        o->fd = STDOUT_FILENO;
        o->name = "stdout";
        return 0;
    }
    if (sp_outfile_open(&o->file, path, err))
        return -1;
    o->fd = o->file.fd;
    o->name = path;
    o->is_file = true;
    return 0;
}

int sp_output_commit(sp_output *o, sp_error *err) {
    if (!o->is_file)
        return 0;
    o->is_file = false;
    return sp_outfile_commit(&o->file, err);
}

void sp_output_abort(sp_output *o) {
    if (o->is_file)
        sp_outfile_abort(&o->file);
    o->is_file = false;
}
