/* config_cmd.c: `sstpipe config show`, the effective configuration and where each value came from.
 */
#include "config/config.h"

#include "pipeline/command/commands.h"
#include "stages/common/cli.h"

#include <stdio.h>
#include <string.h>

enum { F_JSON };

static const sp_flag flags[] = {
    [F_JSON] = {"json", 0, NULL, 0, NULL, "print the configuration as JSON", SP_COMPLETE_NONE,
                NULL},
};

static const sp_operand operands[] = {{"show", SP_COMPLETE_WORDS, "show"}};

static int run(sp_cmdline *cl) {
    if (strcmp(cl->operands[0], "show"))
        return sp_cmdline_operand_error(cl);
    if (sp_cmdline_has(cl, F_JSON)) {
        json_t *j = config_to_json(&cl->cfg);
        json_dumpf(j, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        fputc('\n', stdout);
        json_decref(j);
    } else {
        config_print(&cl->cfg, stdout);
    }
    return SP_EXIT_OK;
}

const sp_command config_command = SP_COMMAND(
    config, run, SP_FLAGS(flags), SP_OPERANDS(operands, 1, 1, "expected the subcommand 'show'"));
