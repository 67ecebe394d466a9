/*
 * child.c: the process supervisor; see child.h.
 *
 * posix_spawn rather than fork: the callers have threads (the bz2 and
 * prefetch threads, a build's workers), and spawn does no work between fork
 * and exec.
 */
#include "stages/common/child.h"

#include "stages/common/fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* Without a pidfd, how often a wait looks at the process again. */
#define POLL_STEP_MS 10
/* Enough of a file's end to find its last line in. */
#define TAIL_BYTES 4096

int sp_child_spawn(sp_child *c, const char *file, char *const *argv, const sp_child_io *io) {
    int null_fd = -1;
    if ((io->in < 0 || io->out < 0 || io->err < 0) &&
        (null_fd = open("/dev/null", O_RDWR | O_CLOEXEC)) < 0)
        return -1;
    const int from[3] = {io->in < 0 ? null_fd : io->in, io->out < 0 ? null_fd : io->out,
                         io->err < 0 ? null_fd : io->err};
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    int rc = posix_spawn_file_actions_init(&fa);
    if (!rc && (rc = posix_spawnattr_init(&attr)))
        posix_spawn_file_actions_destroy(&fa);
    if (!rc) {
        for (int i = 0; i < 3 && !rc; i++)
            rc = posix_spawn_file_actions_adddup2(&fa, from[i], i);
        if (!rc && io->close_others)
            rc = posix_spawn_file_actions_addclosefrom_np(&fa, STDERR_FILENO + 1);
        if (!rc &&
            !(rc = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                                       POSIX_SPAWN_SETSIGDEF)) &&
            !(rc = posix_spawnattr_setpgroup(&attr, 0)) &&
            !(rc = posix_spawnattr_setsigmask(&attr, &none)) &&
            !(rc = posix_spawnattr_setsigdefault(&attr, &all)))
            rc = posix_spawnp(&c->pid, file, &fa, &attr, argv, environ);
        posix_spawnattr_destroy(&attr);
        posix_spawn_file_actions_destroy(&fa);
    }
    if (null_fd >= 0)
        close(null_fd);
    if (rc) {
        errno = rc;
        return -1;
    }
    c->reaped = false;
    c->status = 0;
    /* The leader is not reaped yet, so its pid cannot have been reused. */
    c->pidfd = (int)pidfd_open(c->pid, 0);
    return 0;
}

static long long now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Whether the leader exits within ms (-1: waits for ever), leaving it
 * unreaped, so that its group's id stays ours. */
static bool exits_within(const sp_child *c, int ms) {
    if (c->pidfd >= 0) {
        struct pollfd p = {.fd = c->pidfd, .events = POLLIN};
        int n;
        while ((n = poll(&p, 1, ms)) < 0 && errno == EINTR)
            ;
        return n != 0;
    }
    long long end = now_ms() + ms;
    for (;;) {
        siginfo_t si = {0};
        int flags = WEXITED | WNOWAIT | (ms < 0 ? 0 : WNOHANG);
        if (waitid(P_PID, (id_t)c->pid, &si, flags) < 0)
            return errno != EINTR; /* ECHILD: nothing left to wait for */
        if (si.si_pid)
            return true;
        long long left = end - now_ms();
        if (ms >= 0 && left <= 0)
            return false;
        struct timespec step = {0, (left < POLL_STEP_MS ? left : POLL_STEP_MS) * 1000000L};
        nanosleep(&step, NULL);
    }
}

static void reap(sp_child *c) {
    while (waitpid(c->pid, &c->status, 0) < 0 && errno == EINTR)
        ;
    c->reaped = true;
    if (c->pidfd >= 0)
        close(c->pidfd);
    c->pidfd = -1;
}

int sp_child_wait(sp_child *c, int ms) {
    if (c->reaped)
        return 1;
    if (!exits_within(c, ms))
        return 0;
    reap(c);
    return 1;
}

int sp_child_poll_ms(const sp_child *c) {
    return c->pidfd >= 0 || c->reaped ? -1 : POLL_STEP_MS;
}

void sp_child_signal(const sp_child *c, int sig) {
    if (!c->reaped)
        kill(-c->pid, sig);
}

void sp_child_stop(sp_child *c, int sig, int grace_ms) {
    if (c->reaped)
        return;
    kill(-c->pid, sig);
    if (sig != SIGKILL && !exits_within(c, grace_ms))
        kill(-c->pid, SIGKILL);
    exits_within(c, -1);
    /* What the leader left behind in its group (a task's own children),
     * while the unreaped leader still holds the group's id. */
    kill(-c->pid, SIGKILL);
    reap(c);
}

void sp_child_describe(int wstatus, bool named, char *buf, size_t size) {
    const char *abbrev = WIFSIGNALED(wstatus) ? sigabbrev_np(WTERMSIG(wstatus)) : NULL;
    if (WIFSIGNALED(wstatus) && named)
        snprintf(buf, size, "killed by signal %d, SIG%s", WTERMSIG(wstatus), abbrev ? abbrev : "?");
    else if (WIFSIGNALED(wstatus))
        snprintf(buf, size, "killed by signal %d", WTERMSIG(wstatus));
    else if (!WIFEXITED(wstatus))
        snprintf(buf, size, "wait status %#x", (unsigned)wstatus);
    else if (named && WEXITSTATUS(wstatus) == 127)
        snprintf(buf, size, "exit 127, command not found");
    else if (named && WEXITSTATUS(wstatus) == 126)
        snprintf(buf, size, "exit 126, command not executable");
    else
        snprintf(buf, size, "exit %d", WEXITSTATUS(wstatus));
}

int sp_child_line(int fd, bool last, char *buf, size_t size) {
    char text[TAIL_BYTES + 1];
    size_t want = last ? TAIL_BYTES : (size - 1 < TAIL_BYTES ? size - 1 : TAIL_BYTES);
    off_t end = last ? lseek(fd, 0, SEEK_END) : 0;
    off_t from = end > (off_t)want ? end - (off_t)want : 0;
    ssize_t n = end < 0 ? -1 : pread(fd, text, last ? (size_t)(end - from) : want, from);
    buf[0] = '\0';
    if (n < 0)
        return -1;
    char *line = text;
    if (last) {
        while (n > 0 && strchr(" \t\r\n", text[n - 1]))
            n--;
        line = text + n;
        while (line > text && line[-1] != '\n')
            line--;
    }
    text[n] = '\0';
    line[strcspn(line, "\r\n")] = '\0';
    for (char *p = line; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = ' ';
    snprintf(buf, size, "%s", line);
    return (int)strlen(buf);
}

int sp_child_output(char *const *argv, char **out, int *wstatus, char *errline, size_t errline_size,
                    sp_error *err) {
    int op[2] = {-1, -1}, err_fd = sp_tmpfile_open(NULL, err);
    if (err_fd < 0)
        return -1;
    if (pipe2(op, O_CLOEXEC)) {
        close(err_fd);
        return sp_errorf_errno(err, "cannot create a pipe for %s", argv[0]);
    }
    sp_child c;
    sp_child_io io = {.in = SP_CHILD_NULL, .out = op[1], .err = err_fd};
    int rc = sp_child_spawn(&c, argv[0], argv, &io);
    close(op[1]);
    if (rc) {
        sp_errorf_errno(err, "cannot run %s", argv[0]);
        close(op[0]);
        close(err_fd);
        return -1;
    }
    char *b = NULL;
    size_t len = 0, cap = 0;
    ssize_t r = 0;
    do {
        if (cap - len < 4096) {
            char *nb = realloc(b, cap = cap ? cap * 2 : 8192);
            if (!nb) {
                r = -1;
                errno = ENOMEM;
                break;
            }
            b = nb;
        }
        r = read(op[0], b + len, cap - len - 1);
        if (r > 0)
            len += (size_t)r;
    } while (r > 0 || (r < 0 && errno == EINTR));
    close(op[0]);
    sp_child_wait(&c, -1);
    *wstatus = c.status;
    sp_child_line(err_fd, true, errline, errline_size);
    close(err_fd);
    if (r < 0) {
        free(b);
        return sp_errorf_errno(err, "cannot read the output of %s", argv[0]);
    }
    b[len] = '\0';
    *out = b;
    return 0;
}
