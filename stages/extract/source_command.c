/*
 * source_command.c: the external decompressor; see source_command.h.
 *
 * posix_spawn rather than fork: the process has threads (the bz2 and
 * prefetch threads), and spawn does no work between fork and exec. The
 * command gets its own process group so that an early stop can kill all of
 * it ("sh -c 'a | b'" is three processes), and every signal back at its
 * default: an ignored SIGPIPE would be inherited and leave a command
 * writing into a pipe nobody reads once sstpipe is gone.
 */
#include "stages/extract/source_command.h"

#include "stages/common/fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

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
    pid_t pid;
    bool reaped;
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

static int spawn(source_command *c, int input_fd, int out_w, sp_error *err) {
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    int rc = posix_spawn_file_actions_init(&fa);
    if (rc)
        goto fail;
    rc = posix_spawnattr_init(&attr);
    if (rc) {
        posix_spawn_file_actions_destroy(&fa);
        goto fail;
    }
    char *argv[] = {"sh", "-c", c->cmd, NULL};
    if (!(rc = posix_spawn_file_actions_adddup2(&fa, input_fd, STDIN_FILENO)) &&
        !(rc = posix_spawn_file_actions_adddup2(&fa, out_w, STDOUT_FILENO)) &&
        !(rc = posix_spawn_file_actions_adddup2(&fa, c->err_fd, STDERR_FILENO)) &&
        !(rc = posix_spawn_file_actions_addclosefrom_np(&fa, STDERR_FILENO + 1)) &&
        !(rc = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                                   POSIX_SPAWN_SETSIGDEF)) &&
        !(rc = posix_spawnattr_setpgroup(&attr, 0)) &&
        !(rc = posix_spawnattr_setsigmask(&attr, &none)) &&
        !(rc = posix_spawnattr_setsigdefault(&attr, &all)))
        rc = posix_spawn(&c->pid, "/bin/sh", &fa, &attr, argv, environ);
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&fa);
    if (!rc)
        return 0;
fail:
    errno = rc;
    return sp_errorf_errno(err, "%s: cannot start decompressor '%s'", c->name, c->cmd);
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
    c->reaped = true; /* until there is a child */
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
    int rc = spawn(c, input_fd, out[1], err);
    close(out[1]);
    if (rc)
        goto fail;
    c->reaped = false;
    return c;
fail:
    source_command_close(c);
    return NULL;
}

int source_command_fd(const source_command *c) {
    return c->out_fd;
}

/* The first line of the command's stderr, printable, into buf. */
static void first_stderr_line(const source_command *c, char *buf, size_t size) {
    ssize_t n = pread(c->err_fd, buf, size - 1, 0);
    buf[n > 0 ? n : 0] = '\0';
    buf[strcspn(buf, "\r\n")] = '\0';
    for (char *p = buf; *p; p++)
        if ((unsigned char)*p < 0x20)
            *p = ' ';
    if (!*buf)
        snprintf(buf, size, "(nothing on its stderr)");
}

/* Whether the command's leader exits within ms (true when that cannot be
 * told, to fall back on waiting). */
static bool exits_within(const source_command *c, int ms) {
    int fd = pidfd_open(c->pid, 0);
    if (fd < 0)
        return true;
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int n;
    while ((n = poll(&p, 1, ms)) < 0 && errno == EINTR)
        ;
    close(fd);
    return n != 0;
}

int source_command_finish(source_command *c, sp_error *err) {
    if (!exits_within(c, EXIT_GRACE_MS)) {
        kill(-c->pid, SIGKILL);
        while (waitpid(c->pid, NULL, 0) < 0 && errno == EINTR)
            ;
        c->reaped = true;
        return sp_errorf(
            err, "%s: decompressor '%s' closed its output but had not exited %d s later; killed it",
            c->name, c->cmd, EXIT_GRACE_MS / 1000);
    }
    int status;
    pid_t r;
    while ((r = waitpid(c->pid, &status, 0)) < 0 && errno == EINTR)
        ;
    if (r < 0)
        return sp_errorf_errno(err, "%s: cannot wait for decompressor '%s'", c->name, c->cmd);
    c->reaped = true;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return 0;
    char why[64], line[STDERR_QUOTE];
    if (WIFSIGNALED(status))
        snprintf(why, sizeof why, "killed by signal %d, SIG%s", WTERMSIG(status),
                 sigabbrev_np(WTERMSIG(status)) ? sigabbrev_np(WTERMSIG(status)) : "?");
    else if (WEXITSTATUS(status) == 127)
        snprintf(why, sizeof why, "exit 127, command not found");
    else if (WEXITSTATUS(status) == 126)
        snprintf(why, sizeof why, "exit 126, command not executable");
    else
        snprintf(why, sizeof why, "exit %d", WEXITSTATUS(status));
    first_stderr_line(c, line, sizeof line);
    return sp_errorf(err, "%s: decompressor '%s' failed (%s): %s", c->name, c->cmd, why, line);
}

void source_command_close(source_command *c) {
    if (!c)
        return;
    /* Only an unreaped leader keeps the group id from being reused. */
    if (!c->reaped) {
        kill(-c->pid, SIGKILL);
        while (waitpid(c->pid, NULL, 0) < 0 && errno == EINTR)
            ;
    }
    if (c->out_fd >= 0)
        close(c->out_fd);
    if (c->err_fd >= 0)
        close(c->err_fd);
    free(c->cmd);
    free(c);
}
