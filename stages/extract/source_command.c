/*
 * source_command.c: the external decompressor; see source_command.h.
 *
 * The command runs under sh as a child of stages/common/child.h, in a
 * process group of its own, so that an early stop kills all of it ("sh -c
 * 'a | b'" is three processes); its stderr goes to a scratch file, quoted
 * when it fails.
 */
#include "stages/extract/source_command.h"

#include "stages/common/child.h"
#include "stages/common/fileio.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* A decompressor's output pipe this large lets it run a whole buffer
 * ahead of our reads; the kernel's default maximum for unprivileged users. */
#define PIPE_BYTES (1 << 20)
/* A command that has closed its stdout has nothing more to give us; one
 * that has not exited this long after is hung (or left a child holding on)
 * and is killed rather than waited for forever. */
#define EXIT_GRACE_MS 10000
/* Enough of its stderr to quote one line. */
#define STDERR_QUOTE 400

struct source_command {
    char *cmd; /* as run, {threads} replaced */
    const char *name;
    sp_child child;
    int out_fd; /* read end of its stdout */
    int err_fd; /* scratch file holding its stderr */
};

/* cmd with every "{threads}" replaced by threads; NULL without memory. */
static char *expand(const char *cmd, unsigned threads) {
    static const char token[] = "{threads}";
    char num[16];
    int num_len = snprintf(num, sizeof num, "%u", threads);
    size_t count = 0;
    for (const char *p = cmd; (p = strstr(p, token)); p += sizeof token - 1)
        count++;
    char *out = malloc(strlen(cmd) + count * (size_t)num_len + 1);
    if (!out)
        return NULL;
    char *o = out;
    for (const char *p = cmd;;) {
        const char *t = strstr(p, token);
        size_t keep = t ? (size_t)(t - p) : strlen(p);
        memcpy(o, p, keep);
        o += keep;
        if (!t)
            break;
        memcpy(o, num, (size_t)num_len);
        o += num_len;
        p = t + sizeof token - 1;
    }
    *o = '\0';
    return out;
}

source_command *source_command_start(const char *cmd, unsigned threads, int input_fd,
                                     const char *name, const char *tmp_dir, sp_error *err) {
    source_command *c = calloc(1, sizeof *c);
    if (!c || !(c->cmd = expand(cmd, threads))) {
        free(c);
        sp_errorf(err, "%s: out of memory", name);
        return NULL;
    }
    c->name = name;
    c->child.reaped = true; /* until there is a child */
    c->out_fd = c->err_fd = -1;
    int out[2] = {-1, -1};
    if ((c->err_fd = sp_tmpfile_open(tmp_dir, err)) < 0)
        goto fail;
    if (pipe2(out, O_CLOEXEC)) {
        sp_errorf_errno(err, "%s: cannot create a pipe for decompressor '%s'", name, c->cmd);
        goto fail;
    }
    c->out_fd = out[0];
    /* Best effort: a smaller pipe only costs more context switches. */
    fcntl(out[0], F_SETPIPE_SZ, PIPE_BYTES);
    char *argv[] = {"sh", "-c", c->cmd, NULL};
    sp_child_io io = {.in = input_fd, .out = out[1], .err = c->err_fd, .close_others = true};
    int rc = sp_child_spawn(&c->child, "/bin/sh", argv, &io);
    close(out[1]);
    if (rc) {
        sp_errorf_errno(err, "%s: cannot start decompressor '%s'", name, c->cmd);
        goto fail;
    }
    return c;
fail:
    source_command_close(c);
    return NULL;
}

int source_command_fd(const source_command *c) {
    return c->out_fd;
}

int source_command_finish(source_command *c, sp_error *err) {
    if (!sp_child_wait(&c->child, EXIT_GRACE_MS)) {
        sp_child_stop(&c->child, SIGKILL, 0);
        return sp_errorf(
            err, "%s: decompressor '%s' closed its output but had not exited %d s later; killed it",
            c->name, c->cmd, EXIT_GRACE_MS / 1000);
    }
    int status = c->child.status;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return 0;
    char why[64], line[STDERR_QUOTE];
    sp_child_describe(status, true, why, sizeof why);
    if (sp_child_line(c->err_fd, false, line, sizeof line) <= 0)
        snprintf(line, sizeof line, "(nothing on its stderr)");
    return sp_errorf(err, "%s: decompressor '%s' failed (%s): %s", c->name, c->cmd, why, line);
}

void source_command_close(source_command *c) {
    if (!c)
        return;
    sp_child_stop(&c->child, SIGKILL, 0);
    if (c->out_fd >= 0)
        close(c->out_fd);
    if (c->err_fd >= 0)
        close(c->err_fd);
    free(c->cmd);
    free(c);
}
