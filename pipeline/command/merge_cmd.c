/*
 * merge_cmd.c: `sstpipe merge`, the command line of table_merge.c.
 *
 * The output's block and cluster sizes are the first input's unless the
 * flags say otherwise (a config's [sst] sizes describe builds, not the
 * tables being merged, so they do not apply; -c and --set are accepted as
 * by every command). Its format version is the base's unless [sst]
 * compression is set (config_apply_merge): a merge keeps compressed tables
 * compressed, and plain ones plain, unless told.
 */
#include "pipeline/command/commands.h"
#include "pipeline/command/config_apply.h"
#include "pipeline/command/front.h"
#include "stages/common/cli.h"
#include "stages/common/size.h"
#include "stages/common/title_rules.h"
#include "stages/merge/table_merge.h"
#include "stages/sst/format.h"

#include <stdio.h>
#include <string.h>

enum { F_OUTPUT, F_BLOCK, F_CLUSTER, F_CANONICAL, F_VERBOSE };

/* --block-size and --cluster-size set no key here: see above. */
static const sp_flag flags[] = {
    [F_OUTPUT] = {"output", 'o', "FILE", 0, NULL,
                  "the SSTable to write (required; written atomically)", SP_COMPLETE_FILE, NULL},
    [F_BLOCK] = SP_ARG("block-size", "SIZE", "data block size (default: the first input's)",
                       SP_COMPLETE_NONE),
    [F_CLUSTER] = SP_ARG("cluster-size", "SIZE", "region alignment (default: the first input's)",
                         SP_COMPLETE_NONE),
    [F_CANONICAL] = {"canonical", 0, NULL, 0, NULL,
                     "re-encode every record: the same bytes as a build of the inputs' dumps "
                     "concatenated (no block is copied)",
                     SP_COMPLETE_NONE, NULL},
    [F_VERBOSE] = {"verbose", 'v', NULL, 0, NULL, "print a stats line on stderr", SP_COMPLETE_NONE,
                   NULL},
};

static const sp_operand operands[] = {{"IN", SP_COMPLETE_FILE, NULL}};

static int run(sp_cmdline *cl) {
    const char *out_path = cl->value[F_OUTPUT];
    table_merge_options o;
    table_merge_options_init(&o);
    config_apply_merge(&cl->cfg, &o);
    sp_error err = {0};
    uint64_t v;
    if (cl->value[F_BLOCK]) {
        if (sp_parse_pow2_size(cl->value[F_BLOCK], "--block-size", SST_MIN_BLOCK_SIZE,
                               SST_MAX_BLOCK_SIZE, &v, &err))
            return sp_cli_report(&err, SP_EXIT_USAGE);
        o.block_size = (uint32_t)v;
    }
    if (cl->value[F_CLUSTER]) {
        if (sp_parse_pow2_size(cl->value[F_CLUSTER], "--cluster-size", SST_MIN_CLUSTER_SIZE,
                               SST_MAX_CLUSTER_SIZE, &v, &err))
            return sp_cli_report(&err, SP_EXIT_USAGE);
        o.cluster_size = (uint32_t)v;
    }
    o.canonical = sp_cmdline_has(cl, F_CANONICAL);
    if (!out_path)
        return sp_cli_usage_error("merge", "-o FILE is required");
    if (!strcmp(out_path, "-"))
        return sp_cli_usage_error("merge", "-o must name a file, not stdout");
    if (cl->n_operands < 1)
        return sp_cmdline_operand_error(cl);
    table_merge_stats st;
    int rc = table_merge(out_path, (const char *const *)cl->operands, (unsigned)cl->n_operands, &o,
                         &st, &err);
    if (rc == 0 && st.titles_missing >= 0)
        fprintf(stderr,
                "sstpipe merge: note: %s has no title index built for it (%s%s), so %s gets "
                "none: titles are then looked up exactly and not suggested\n",
                cl->operands[st.titles_missing], cl->operands[st.titles_missing], SP_TITLES_SUFFIX,
                out_path);
    if (rc == 0)
        SP_FRONT_STATS(sp_cmdline_has(cl, F_VERBOSE), table_merge_stats_format, &st);
    return sp_front_exit(rc, &err);
}

/* The count is checked after -o, as before the table. */
const sp_command merge_command = SP_COMMAND(
    merge, run, SP_FLAGS(flags), SP_OPERANDS(operands, 0, -1, "expected at least one input table"));
