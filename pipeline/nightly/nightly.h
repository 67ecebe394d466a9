/*
 * nightly.h: `sstpipe nightly`, one unattended build from the newest dump to
 * a verified, published SSTable (see nightly.c for the steps and
 * MANIFEST.md in config/ for the manifest it leaves).
 *
 * nightly_run says how the run ended (an outcome, with the error); the
 * command line (pipeline/command/nightly_cmd.c) prints it and exits with
 * nightly_exit_code's code, the one the manifest records too.
 */
#ifndef SSTPIPE_PIPELINE_NIGHTLY_H
#define SSTPIPE_PIPELINE_NIGHTLY_H

#include "pipeline/nightly/nightly_options.h"
#include "stages/common/cli.h"
#include "stages/common/error.h"

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>

typedef enum nightly_outcome {
    NIGHTLY_PUBLISHED,     /* a build published (a failed profile is logged, not fatal) */
    NIGHTLY_UP_TO_DATE,    /* incremental: current holds these inputs; nothing built */
    NIGHTLY_BAD_CONFIG,    /* the configuration cannot be run; nothing was done */
    NIGHTLY_NOT_STARTED,   /* [output] dir could not be prepared or locked; nothing recorded */
    NIGHTLY_LOCKED,        /* another nightly run holds the lock (its pid is in the error) */
    NIGHTLY_FAILED,        /* bad or missing input, I/O or publish error; under failed/ */
    NIGHTLY_VERIFY_FAILED, /* verify found problems: not published, under failed/ */
    NIGHTLY_NO_SPACE,      /* not enough free disk space (the error says how much) */
} nightly_outcome;

typedef struct nightly_result {
    nightly_outcome outcome;
    /* Published, but lines after the publish could not be written to the
     * build's nightly.log: their errno, and the log's path; else 0. */
    int log_errno;
    char log_path[2 * PATH_MAX + 32];
} nightly_result;

/* Runs one nightly build. 0 when published or up to date (res->outcome
 * says which); -1 with err set and res->outcome saying how it failed. */
int nightly_run(const nightly_options *o, nightly_result *res, sp_error *err);

/*
 * The exit code of an outcome (for cron and systemd; the manifest's
 * exit_code): 0 published or up to date; 1 failed (recorded under failed/,
 * current untouched) or [output] dir unusable; 2 usage or configuration
 * error; 3 verify found problems; 4 another run holds the lock; 5 not enough
 * free disk space.
 */
int nightly_exit_code(nightly_outcome o);
/* Verify's "problems found" (stages/common/cli.h), and the codes beyond
 * that table that only a nightly ends with (the man page's EXIT STATUS
 * lists each). */
#define NIGHTLY_EXIT_VERIFY SP_EXIT_NO
#define NIGHTLY_EXIT_LOCKED 4
#define NIGHTLY_EXIT_NO_SPACE 5

#endif
