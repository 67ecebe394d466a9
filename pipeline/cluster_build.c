/*
 * cluster_build.c: the driver of a cluster build; see cluster_build.h.
 *
 * Every task runs as its own `sstpipe task ...` process, whatever runs
 * it, so a task on this machine fails, is killed and is retried exactly as
 * one on a cluster node would be.
 */
#include "pipeline/cluster_build.h"

#include "pipeline/cluster_plan.h"
#include "pipeline/cluster_task.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* The stages as the runner takes them (pipeline/cluster_runner.h). */
typedef struct stage {
    const char *name;
    char *const *argv;
    int ntasks;
} stage;

/* "map task 3 (enwiki.xml.bz2 bytes A-B)": for a task that died without
 * saying why. */
typedef void (*describe_fn)(const cluster_plan *p, size_t i, char *buf, size_t cap);

static void describe_reduce(const cluster_plan *p, size_t i, char *buf, size_t cap) {
    cluster_plan_describe_reduce(p, (unsigned)i, buf, cap);
}

/* The last line of a log, the task's own one-line error. */
static void last_line(const char *path, char *buf, size_t cap) {
    buf[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    char line[1024];
    while (fgets(line, sizeof line, f))
        if (line[0] && line[0] != '\n')
            snprintf(buf, cap, "%.1000s", line);
    fclose(f);
    buf[strcspn(buf, "\n")] = '\0';
}

/* Runs one attempt of argv + "--task I" with its output in log; its exit
 * status (128 + signal when killed), or -1 when it could not start. */
static int run_task(char *const *argv, int index, const char *log) {
    size_t argc = 0;
    while (argv[argc])
        argc++;
    char num[32];
    snprintf(num, sizeof num, "%d", index);
    char **args = calloc(argc + 3, sizeof *args);
    if (!args)
        return -1;
    memcpy(args, argv, argc * sizeof *args);
    args[argc] = "--task";
    args[argc + 1] = num;
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
        if (fd < 0 || dup2(fd, STDOUT_FILENO) < 0 || dup2(fd, STDERR_FILENO) < 0)
            _exit(127);
        execv(args[0], args);
        _exit(127);
    }
    free(args);
    if (pid < 0)
        return -1;
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* One task after another, each retried: what the runners do with many at
 * once; this stays until pipeline/cluster_runner.h lands. */
static int run_stages(const cluster_plan *p, const stage *stages, const describe_fn *describe,
                      size_t n, int retries, const char *log_dir, sp_error *err) {
    for (size_t s = 0; s < n; s++)
        for (int i = 0; i < stages[s].ntasks; i++) {
            char log[PATH_MAX + 64];
            int rc = -1;
            for (int attempt = 0; attempt <= retries && rc != 0; attempt++) {
                snprintf(log, sizeof log, "%s/%s-%d.%d.log", log_dir, stages[s].name, i, attempt);
                rc = run_task(stages[s].argv, i, log);
            }
            if (rc) {
                char line[1024];
                last_line(log, line, sizeof line);
                const char *msg = !strncmp(line, "sstpipe: ", 9) ? line + 9 : line;
                if (rc < 128 && !strncmp(msg, stages[s].name, strlen(stages[s].name)))
                    return sp_errorf(err, "%s (log: %s)", msg, log);
                char what[1024];
                describe[s](p, (size_t)i, what, sizeof what);
                if (rc > 128)
                    return sp_errorf(err, "%s: killed by signal %d (log: %s)", what, rc - 128, log);
                return sp_errorf(err, "%s: exit status %d%s%s (log: %s)", what, rc,
                                 *msg ? ": " : "", msg, log);
            }
        }
    return 0;
}

int cluster_build(const char *const *inputs, size_t n, const char *output, const sp_config *cfg,
                  cluster_build_stats *st, sp_error *err) {
    cluster_build_stats local;
    if (!st)
        st = &local;
    memset(st, 0, sizeof *st);
    cluster_plan_options po = {.shared_dir = cfg->cluster.shared_dir,
                               .tasks = cfg->cluster.tasks,
                               .shards = (unsigned)cfg->cluster.shards};
    cluster_plan *p;
    if (cluster_plan_make(&p, inputs, n, output, cfg, &po, &st->resumed, err))
        return -1;
    snprintf(st->plan, sizeof st->plan, "%s", p->path);
    st->maps = p->n_maps;
    st->shards = p->shards;
    for (size_t i = 0; i < p->n_maps; i++)
        st->maps_done += cluster_map_done(p, i);

    char exe[PATH_MAX], log_dir[PATH_MAX - 64];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    int rc = -1;
    if (len < 0) {
        sp_errorf_errno(err, "cannot find the sstpipe executable (/proc/self/exe)");
        goto out;
    }
    exe[len] = '\0';
    snprintf(log_dir, sizeof log_dir, "%s/logs", p->dir);
    if (mkdir(log_dir, 0777) && errno != EEXIST) {
        sp_errorf_errno(err, "%s: cannot create the directory", log_dir);
        goto out;
    }
    char *map_argv[] = {exe, "task", "map", "--plan", p->path, NULL};
    char *reduce_argv[] = {exe, "task", "reduce", "--plan", p->path, NULL};
    stage stages[] = {{"map", map_argv, (int)p->n_maps}, {"reduce", reduce_argv, (int)p->shards}};
    describe_fn describe[] = {cluster_plan_describe_map, describe_reduce};
    if (run_stages(p, stages, describe, 2, (int)cfg->cluster.retries, log_dir, err))
        goto out;
    rc = cluster_finish(p, err);
out:
    cluster_plan_destroy(p);
    return rc;
}

void cluster_build_stats_print(FILE *out, const cluster_build_stats *st) {
    fprintf(out, "cluster: plan=%s maps=%zu shards=%u resumed=%d maps_done=%zu\n", st->plan,
            st->maps, st->shards, st->resumed ? 1 : 0, st->maps_done);
}
