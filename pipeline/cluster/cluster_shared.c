/* cluster_shared.c: the shared directory's mark; see cluster_shared.h. */
#include "pipeline/cluster/cluster_shared.h"

#include "stages/common/fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

/* The host's name ("?" when it has none). */
static void this_host(char *buf, size_t cap) {
    if (gethostname(buf, cap - 1) || !buf[0])
        snprintf(buf, cap, "?");
    buf[cap - 1] = '\0';
}

int cluster_shared_mark(const char *plan_dir, char token[CLUSTER_SHARED_TOKEN_MAX], sp_error *err) {
    char host[128], path[PATH_MAX];
    unsigned long long bits = 0;
    struct timespec ts;
    this_host(host, sizeof host);
    clock_gettime(CLOCK_REALTIME, &ts);
    /* Random bits tell this run from an earlier one of the same pid. */
    if (getrandom(&bits, sizeof bits, GRND_NONBLOCK) != (ssize_t)sizeof bits)
        bits = (unsigned long long)ts.tv_nsec * 0x9E3779B97F4A7C15ull;
    /* The planner's host first: a failing task names it. */
    snprintf(token, CLUSTER_SHARED_TOKEN_MAX, "%.100s:%ld-%lld-%016llx", host, (long)getpid(),
             (long long)ts.tv_sec, bits);
    snprintf(path, sizeof path, "%s/" CLUSTER_SHARED_MARK, plan_dir);
    /* Written in place, not renamed: no task of this run starts before it
     * is complete, and one of an earlier run finds a token not its own
     * either way (a network file system shows it on close). */
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return sp_errorf_errno(err, "%s: cannot create", path);
    int rc = sp_write_all(fd, token, strlen(token), path, err);
    if (close(fd) && rc == 0)
        rc = sp_errorf_errno(err, "%s: close failed", path);
    return rc;
}

int cluster_shared_check(const char *plan_path, const char *token, const char *stage,
                         unsigned long index, sp_error *err) {
    char dir[PATH_MAX], shared[PATH_MAX], path[PATH_MAX + 32], host[128];
    char got[CLUSTER_SHARED_TOKEN_MAX] = "";
    snprintf(dir, sizeof dir, "%s", plan_path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    else
        snprintf(dir, sizeof dir, ".");
    snprintf(shared, sizeof shared, "%s", dir);
    slash = strrchr(shared, '/');
    if (slash && slash != shared)
        *slash = '\0';
    snprintf(path, sizeof path, "%s/" CLUSTER_SHARED_MARK, dir);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    int e = errno;
    ssize_t n = fd < 0 ? -1 : read(fd, got, sizeof got - 1);
    if (n < 0)
        e = errno;
    if (fd >= 0)
        close(fd);
    if (n >= 0) {
        got[n] = '\0';
        if (!strcmp(got, token))
            return 0;
    }
    this_host(host, sizeof host);
    const char *colon = strchr(token, ':');
    int planner_len = colon ? (int)(colon - token) : (int)strlen(token);
    char why[PATH_MAX + 96];
    if (n < 0)
        snprintf(why, sizeof why, "%s: %s", path, strerror(e));
    else
        snprintf(why, sizeof why, "%s is another build run's", path);
    return sp_errorf(err,
                     "%s task %lu on %s: does not see the shared_dir %s that the planner on %.*s "
                     "wrote (%s): every host must see [cluster] shared_dir at the same path; "
                     "mount it at %s on %s, or set shared_dir to a directory all hosts share",
                     stage, index, host, shared, planner_len, token, why, shared, host);
}
