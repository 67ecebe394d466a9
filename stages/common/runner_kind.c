/* runner_kind.c: the runners' names; see runner_kind.h. */
#include "stages/common/runner_kind.h"

#include <stddef.h>
#include <strings.h>

static const char *const names[] = {
    [SP_RUNNER_LOCAL] = "local",
    [SP_RUNNER_PARALLEL] = "parallel",
    [SP_RUNNER_SLURM] = "slurm",
};
#define N_KINDS (sizeof names / sizeof names[0])

int sp_runner_kind_parse(const char *name, sp_runner_kind *kind) {
    for (size_t k = 0; k < N_KINDS; k++)
        if (!strcasecmp(name, names[k])) {
            *kind = (sp_runner_kind)k;
            return 0;
        }
    return -1;
}

const char *sp_runner_kind_name(sp_runner_kind kind) {
    return (size_t)kind < N_KINDS ? names[kind] : "?";
}
