/*
 * runner_kind.h: what starts a cluster build's tasks, named in one table:
 * the [cluster] runner key and --runner flag parse these names, the
 * cluster runner dispatches on these kinds, and the help and messages list
 * them. It lives here, below the config and the cluster layers, because
 * both use it.
 */
#ifndef SSTPIPE_COMMON_RUNNER_KIND_H
#define SSTPIPE_COMMON_RUNNER_KIND_H

typedef enum sp_runner_kind {
    SP_RUNNER_LOCAL,    /* processes on this machine */
    SP_RUNNER_PARALLEL, /* GNU parallel, on this machine or its --sshlogin hosts */
    SP_RUNNER_SLURM,    /* sbatch job arrays */
} sp_runner_kind;

/* The names as lists, for a message and for a flag's completion words
 * (string constants, so they can sit in a format or an initializer; the
 * unit test holds them to the table). */
#define SP_RUNNER_CHOICES "local, parallel or slurm"
#define SP_RUNNER_WORDS "local parallel slurm"

/* name (in any case) to its kind: 0, or -1 when it names none. */
int sp_runner_kind_parse(const char *name, sp_runner_kind *kind);
/* The kind's name; "?" for a value that is no kind. */
const char *sp_runner_kind_name(sp_runner_kind kind);

#endif
