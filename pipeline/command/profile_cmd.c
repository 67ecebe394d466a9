/*
 * profile_cmd.c: `sstpipe profile FILE [N] [--cold] [--threads T]
 * [--queue-depth Q] [--misses PCT] [--seed S] [--json PATH] [--svg PATH]`.
 *
 * Every option is a key of [profile] in the config (-c FILE, --set), which
 * the flags override; N is [profile] lookups (default 10000, as
 * `sstpipe config show` says), and the seed [profile] seed (default 1: the
 * same lookups every run until --seed asks for others). Exit 0 ok, 1 the
 * profile failed (missing or damaged file, an io_uring depth the machine
 * cannot do), 2 bad usage.
 */
#include "stages/profile/profile.h"

#include "pipeline/command/config_apply.h"
#include "pipeline/command/commands.h"
#include "pipeline/command/flags.h"
#include "pipeline/command/front.h"
#include "stages/common/cli.h"

enum { F_JSON, F_SVG };

static const sp_flag flags[] = {
    [F_JSON] = SP_FLAG_JSON_FIGURES("stages/profile/README.md"),
    [F_SVG] = SP_ARG("svg", "PATH", "draw the latency histogram and CDF (log time axis)",
                     SP_COMPLETE_FILE),
    {"cold", 0, NULL, SP_KEY(CONFIG_PROFILE_COLD), "true",
     "drop FILE from the page cache and read with O_DIRECT", SP_COMPLETE_NONE, NULL},
    {"threads", 0, "T", SP_KEY(CONFIG_PROFILE_THREADS), NULL, NULL, SP_COMPLETE_NONE, NULL},
    {"queue-depth", 0, "Q", SP_KEY(CONFIG_PROFILE_QUEUE_DEPTH), NULL, NULL, SP_COMPLETE_NONE, NULL},
    {"misses", 0, "PCT", SP_KEY(CONFIG_PROFILE_MISSES), NULL, NULL, SP_COMPLETE_NONE, NULL},
    {"seed", 0, "S", SP_KEY(CONFIG_PROFILE_SEED), NULL, NULL, SP_COMPLETE_NONE, NULL},
};

static const sp_operand operands[] = {{"FILE", SP_COMPLETE_FILE, NULL},
                                      {"N", SP_COMPLETE_NONE, NULL}};

static int run(sp_cmdline *cl) {
    sp_config *cfg = &cl->cfg;
    const char *json_path = cl->value[F_JSON], *svg_path = cl->value[F_SVG];
    sp_error err = {0};
    int positional = cl->n_operands;
    const char *path = cl->operands[0];
    if (positional == 2 && config_set_flag(cfg, CONFIG_PROFILE_LOOKUPS, "N", cl->operands[1], &err))
        return sp_cli_report(&err, SP_EXIT_USAGE);
    profile_options o;
    profile_options_init(&o);
    config_apply_profile(cfg, &o);
    /* 0 tells nightly to skip profiling; asked for directly it is a mistake. */
    if (o.n == 0 && positional == 2)
        return sp_cli_usage_error("profile", "N (lookups) must be at least 1, not '%s'",
                                  cl->operands[1]);
    if (o.n == 0)
        return sp_cli_usage_error("profile",
                                  "[profile] lookups is 0 (%s): give N, the number "
                                  "of lookups",
                                  config_origin_text(cfg, CONFIG_PROFILE_LOOKUPS));
    profile_result res;
    profile_result_init(&res);
    int rc = profile_run(path, &o, &res, &err) ||
             (json_path && profile_write_json(&res, json_path, &err)) ||
             (svg_path && profile_write_svg(&res, svg_path, &err));
    if (!rc)
        profile_print(&res, stdout);
    profile_result_destroy(&res);
    return sp_front_exit(rc, &err);
}

const sp_command profile_command =
    SP_COMMAND(profile, run, SP_FLAGS(flags),
               SP_OPERANDS(operands, 1, 2,
                           "expected FILE and at most one N (the number of lookups; default "
                           "[profile] lookups)"));
