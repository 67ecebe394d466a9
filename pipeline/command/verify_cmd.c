/*
 * verify_cmd.c: `sstpipe verify FILE... [--json PATH]`.
 *
 * Every file is checked even after one fails, so one run answers for a whole
 * nightly batch. Exit (stages/common/cli.h's table) 0: all clean; 3: problems
 * found; 1: some file could not be checked; 2: a usage error. Read size and the problems listed
 * come from [verify] of the config (-c FILE, --set). On a terminal (or with
 * --progress) each file's check shows the live progress line.
 *
 * A FILE that is a table set (a directory or its tableset.json) stands
 * for its shards: the manifest is read and checked (a manifest that fails
 * is a file that could not be checked, exit 1, its report naming it), then
 * each shard is verified as a file of its own with the manifest's entry
 * for it (verify.h), so each problem line names the shard file.
 */
#include "stages/verify/verify.h"

#include "pipeline/command/commands.h"
#include "pipeline/command/config_apply.h"
#include "pipeline/command/flags.h"
#include "pipeline/command/front.h"
#include "stages/common/cli.h"

#include <stdlib.h>
#include <string.h>

enum { F_JSON, F_THREADS, F_PROGRESS, F_NO_PROGRESS };

static const sp_flag flags[] = {
    [F_JSON] =
        SP_ARG("json", "PATH", "also write the report as JSON (fields in stages/verify/README.md)",
               SP_COMPLETE_FILE),
    [F_THREADS] = {"threads", 0, "N", SP_KEY(CONFIG_VERIFY_THREADS), NULL, NULL, SP_COMPLETE_NONE,
                   NULL},
    [F_PROGRESS] = SP_FLAG_PROGRESS,
    [F_NO_PROGRESS] = SP_FLAG_NO_PROGRESS,
};

/* One file to check: an operand, or a shard of a set operand. */
typedef struct job {
    const char *path;
    const table_set *set; /* the shard's set, or NULL */
    size_t shard;
    char *error; /* the set's manifest could not be read: why */
} job;

/* The operands with each table set replaced by its shards; *sets gets the
 * manifests read (freed by the caller). */
static job *expand(sp_cmdline *cl, int *n_jobs, table_set ***sets, int *n_sets) {
    int cap = cl->n_operands, n = 0;
    job *jobs = calloc((size_t)cap, sizeof *jobs);
    *sets = calloc((size_t)cl->n_operands, sizeof **sets);
    *n_sets = 0;
    if (!jobs || !*sets)
        return NULL;
    for (int i = 0; i < cl->n_operands; i++) {
        const char *op = cl->operands[i];
        table_set *s = NULL;
        sp_error err = {0};
        if (table_set_is_set_path(op) && !(s = table_set_read_manifest(op, &err))) {
            jobs[n++] = (job){.path = op, .error = strdup(err.msg)};
            continue;
        }
        if (!s) {
            jobs[n++] = (job){.path = op};
            continue;
        }
        (*sets)[(*n_sets)++] = s;
        size_t k = table_set_count(s);
        job *grown = realloc(jobs, (size_t)(cap + (int)k) * sizeof *jobs);
        if (!grown) {
            for (int j = 0; j < n; j++)
                free(jobs[j].error);
            free(jobs);
            return NULL;
        }
        jobs = grown;
        cap += (int)k;
        for (size_t j = 0; j < k; j++)
            jobs[n++] = (job){.path = table_set_shard_path(s, j), .set = s, .shard = j};
    }
    *n_jobs = n;
    return jobs;
}

static int run(sp_cmdline *cl) {
    const char *json_path = cl->value[F_JSON];
    verify_options opts;
    verify_options_init(&opts);
    config_apply_verify(&cl->cfg, &opts);
    table_set **sets = NULL;
    int n = 0, n_sets = 0;
    job *jobs = expand(cl, &n, &sets, &n_sets);
    verify_report *reps = jobs && n ? calloc((size_t)n, sizeof *reps) : NULL;
    if (!reps) {
        sp_error err = {0};
        sp_errorf(&err, "verify: out of memory");
        for (int i = 0; jobs && i < n; i++)
            free(jobs[i].error);
        for (int i = 0; sets && i < n_sets; i++)
            table_set_free(sets[i]);
        free(jobs);
        free(sets);
        return sp_cli_report(&err, SP_EXIT_FAIL);
    }
    /* One live line per file, ended before its report goes to stdout, so the
     * two never share a line on a terminal. */
    sp_front_meter m;
    int code = SP_EXIT_OK;
    for (int i = 0; i < n; i++) {
        sp_error err = {0};
        const job *jb = &jobs[i];
        verify_options_shard(&opts, jb->set, jb->shard);
        if (jb->error) {
            verify_report_init(&reps[i], &opts);
            reps[i].path = strdup(jb->path);
            reps[i].error = strdup(jb->error);
            sp_errorf(&err, "%s", jb->error);
            fflush(stdout);
            sp_cli_report(&err, SP_EXIT_FAIL);
            code = SP_EXIT_FAIL;
            continue;
        }
        sp_progress *prog = sp_front_progress(&m, cl, jb->path);
        if (prog) {
            sp_progress_phase(prog, SP_PHASE_CHECKING);
            if (n > 1) {
                sp_progress_steps(prog, "file", (uint64_t)n);
                sp_progress_store(&prog->step, (uint64_t)i + 1);
            }
            opts.progress = prog;
        }
        sp_front_meter_start(&m, "verify");
        verify_report_init(&reps[i], &opts);
        int rc = sp_front_meter_stop(&m, verify_file(jb->path, &reps[i], &err));
        if (rc) {
            fflush(stdout);
            sp_cli_report(&err, SP_EXIT_FAIL);
            code = SP_EXIT_FAIL;
            continue;
        }
        verify_report_print(&reps[i], stdout);
        if (reps[i].problem_count && code == SP_EXIT_OK)
            code = SP_EXIT_NO;
    }
    fflush(stdout);
    if (json_path) {
        sp_error err = {0};
        if (verify_write_json(reps, (size_t)n, json_path, &err)) {
            sp_cli_report(&err, SP_EXIT_FAIL);
            code = SP_EXIT_FAIL;
        }
    }
    for (int i = 0; i < n; i++) {
        verify_report_destroy(&reps[i]);
        free(jobs[i].error);
    }
    for (int i = 0; i < n_sets; i++)
        table_set_free(sets[i]);
    free(sets);
    free(jobs);
    free(reps);
    return code;
}

const sp_command verify_command =
    SP_COMMAND(verify, run, SP_FLAGS(flags), SP_OPERANDS(sp_file_operand, 1, -1, "no FILE given"),
               .reports_missing_files = true);
