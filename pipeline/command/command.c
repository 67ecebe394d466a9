/*
 * command.c: the parser every command's table entry yields (see command.h).
 *
 * -c FILE and --set go first (config_parse_args takes them out of argv
 * wherever they are), then getopt_long runs over the rest with an option
 * list built from the command's flags, in any order with the operands until
 * a "--". getopt's own messages are off: a bad flag is one line of ours,
 * naming it wherever it stands and the flag meant when one is near
 * (bad_option). A long flag is taken by its full name only: getopt's
 * abbreviations would let "--max-byte" pass as --max-bytes unseen, and a
 * new flag could change what an abbreviation in a script means.
 */
#include "pipeline/command/command.h"
#include "pipeline/command/help.h"

#include "config/keys.h"
#include "pipeline/command/config_apply.h"
#include "stages/common/cli.h"
#include "stages/sst/table_set.h"

#include <ctype.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* getopt_long's value of flags[i] without a short name. */
#define LONG_ONLY 256

bool sp_cmdline_progress(const sp_cmdline *cl) {
    return config_apply_progress(&cl->cfg, isatty(STDERR_FILENO));
}

int sp_cmdline_operand_error(const sp_cmdline *cl) {
    return sp_cli_usage_error(cl->cmd->name, cl->cmd->operand_error, cl->n_operands);
}

/* One flag as getopt returned it. 0 to go on, else the exit code. */
static int take(sp_cmdline *cl, size_t i, const char *arg) {
    const sp_flag *f = &cl->cmd->flags[i];
    cl->count[i]++;
    cl->value[i] = arg;
    int key = sp_flag_key(f);
    if (key < 0) {
        cl->given[cl->n_given++] = (sp_given){i, arg};
        return 0;
    }
    char name[64];
    snprintf(name, sizeof name, "--%s", f->name);
    sp_error err = {0};
    if (config_set_flag(&cl->cfg, (config_key)key, name, f->arg ? arg : f->value, &err))
        return sp_cli_report(&err, SP_EXIT_USAGE);
    return 0;
}

/*
 * An output that cannot be written, refused before any input is read rather
 * than at the rename after every stage: an existing directory (but a table
 * set's, or any when dir_ok: a cluster build replaces it whole), or a
 * directory to write into that is missing or not writable. A FIFO or
 * device is written in place. 0 or -1 with err set.
 */
static int check_output(const char *path, bool dir_ok, sp_error *err) {
    if (!strcmp(path, "-"))
        return 0;
    struct stat st;
    if (stat(path, &st) == 0) {
        if (!S_ISDIR(st.st_mode) || dir_ok)
            return 0;
        char manifest[PATH_MAX];
        snprintf(manifest, sizeof manifest, "%s/" TABLE_SET_MANIFEST, path);
        if (access(manifest, F_OK) == 0)
            return 0;
        return sp_errorf(err,
                         "%s: is a directory (-o names the file to write, or a table set "
                         "to replace)",
                         path);
    }
    char *copy = strdup(path);
    if (!copy)
        return sp_errorf(err, "%s: out of memory", path);
    const char *dir = dirname(copy);
    int rc = 0;
    if (stat(dir, &st) != 0)
        rc = sp_errorf_errno(err, "%s: cannot write into %s", path, dir);
    else if (!S_ISDIR(st.st_mode))
        rc = sp_errorf(err, "%s: cannot write into %s: not a directory", path, dir);
    else if (access(dir, W_OK | X_OK) != 0)
        rc = sp_errorf_errno(err, "%s: cannot write into %s", path, dir);
    free(copy);
    return rc;
}

/* The long flag of cmd nearest to name (a prefix of it, or a typo within
 * config_typo_limit), or NULL. */
static const char *nearest_flag(const sp_command *cmd, const char *name, size_t len) {
    char word[64];
    snprintf(word, sizeof word, "%.*s", (int)len, name);
    const char *best = NULL;
    size_t best_d = config_typo_limit(word) + 1;
    for (size_t k = 0; k < cmd->n_flags + sp_n_common_flags; k++) {
        const char *f = sp_command_flag(cmd, k)->name;
        size_t d = strncmp(f, word, strlen(word)) ? config_edit_distance(word, f) : 0;
        if (d < best_d) {
            best = f;
            best_d = d;
        }
    }
    return best;
}

/* The flag of cmd named exactly name[0..len), or NULL. */
static const sp_flag *flag_named(const sp_command *cmd, const char *name, size_t len) {
    for (size_t k = 0; k < cmd->n_flags + sp_n_common_flags; k++) {
        const sp_flag *f = sp_command_flag(cmd, k);
        if (strlen(f->name) == len && !strncmp(f->name, name, len))
            return f;
    }
    return NULL;
}

/* The usage error for the flag elem (as written: "--max-byte=10", "-vx"
 * with optopt 'x'), unknown or, with missing, without its argument. */
static int bad_option(const sp_command *cmd, const char *elem, bool missing) {
    if (strncmp(elem, "--", 2)) {
        int c = optopt > 0 && optopt < 128 && isprint(optopt) ? optopt : '?';
        return sp_cli_usage_error(
            cmd->name, missing ? "option '-%c' needs an argument" : "unknown option '-%c'", c);
    }
    const char *name = elem + 2;
    size_t len = strcspn(name, "=");
    if (missing)
        return sp_cli_usage_error(cmd->name, "option '--%.*s' needs an argument", (int)len, name);
    const sp_flag *f = flag_named(cmd, name, len);
    if (f && !f->arg && name[len] == '=')
        return sp_cli_usage_error(cmd->name, "option '--%.*s' takes no argument", (int)len, name);
    const char *meant = nearest_flag(cmd, name, len);
    if (meant)
        return sp_cli_usage_error(cmd->name, "unknown option '--%.*s', did you mean --%s?",
                                  (int)len, name, meant);
    return sp_cli_usage_error(cmd->name, "unknown option '--%.*s'", (int)len, name);
}

/* Whether the long flag getopt matched, longopts[li], is written in full
 * in argv (not abbreviated). */
static bool full_name(char **argv, const struct option *o, const char **elem) {
    *elem = argv[optind - 1];
    if (o->has_arg && optarg == *elem)
        *elem = argv[optind - 2];
    size_t len = strcspn(*elem + 2, "=");
    return strlen(o->name) == len && !strncmp(*elem + 2, o->name, len);
}

/* An operand naming a file that does not exist (or cannot be read),
 * refused before any work like a bad flag; "-" is stdin. */
static int check_operands(const sp_cmdline *cl) {
    const sp_command *cmd = cl->cmd;
    for (int k = 0; k < cl->n_operands && cmd->n_operands && !cmd->reports_missing_files; k++) {
        size_t at = (size_t)k < cmd->n_operands ? (size_t)k : cmd->n_operands - 1;
        const char *path = cl->operands[k];
        if (cmd->operands[at].complete != SP_COMPLETE_FILE || !strcmp(path, "-"))
            continue;
        sp_error err = {0};
        if (access(path, R_OK) != 0) {
            sp_errorf_errno(&err, "%s: cannot open", path);
            return sp_cli_report(&err, SP_EXIT_USAGE);
        }
    }
    return 0;
}

/* The flags; -1 when run() is next, else the exit code (--help, a bad flag). */
static int parse_flags(sp_cmdline *cl, int argc, char **argv) {
    const sp_command *cmd = cl->cmd;
    struct option longopts[SP_MAX_FLAGS + 2];
    char shortopts[3 * SP_MAX_FLAGS + 8];
    size_t s = 0;
    shortopts[s++] = ':';
    for (size_t i = 0; i < cmd->n_flags; i++) {
        const sp_flag *f = &cmd->flags[i];
        longopts[i] = (struct option){f->name, f->arg ? required_argument : no_argument, NULL,
                                      f->short_name ? f->short_name : (int)(LONG_ONLY + i)};
        if (f->short_name) {
            shortopts[s++] = f->short_name;
            if (f->arg)
                shortopts[s++] = ':';
        }
    }
    longopts[cmd->n_flags] = (struct option){"help", no_argument, NULL, 'h'};
    longopts[cmd->n_flags + 1] = (struct option){NULL, 0, NULL, 0};
    shortopts[s++] = 'h';
    shortopts[s] = '\0';
    if (!(cl->given = calloc((size_t)argc, sizeof *cl->given))) {
        sp_error err = {0};
        sp_errorf(&err, "%s: out of memory", cmd->name);
        return sp_cli_report(&err, SP_EXIT_USAGE);
    }
    optind = 0;
    opterr = 0; /* one error line, ours */
    int c, li = -1;
    while ((c = getopt_long(argc, argv, shortopts, longopts, &li)) != -1) {
        const char *elem = argv[optind - 1];
        if (c == '?' || c == ':')
            return bad_option(cmd, elem, c == ':');
        if (li >= 0 && !full_name(argv, &longopts[li], &elem))
            return bad_option(cmd, elem, false);
        li = -1;
        if (c == 'h') {
            sp_command_help(cmd, stdout);
            return SP_EXIT_OK;
        }
        size_t i = cmd->n_flags;
        if (c >= LONG_ONLY && c < LONG_ONLY + (int)cmd->n_flags)
            i = (size_t)(c - LONG_ONLY);
        for (size_t k = 0; k < cmd->n_flags && i == cmd->n_flags; k++)
            if (cmd->flags[k].short_name && cmd->flags[k].short_name == c)
                i = k;
        if (i == cmd->n_flags)
            return bad_option(cmd, elem, false);
        int rc = take(cl, i, optarg);
        if (rc)
            return rc;
    }
    cl->operands = argv + optind;
    cl->n_operands = argc - optind;
    if (cl->n_operands < cmd->min_operands ||
        (cmd->max_operands >= 0 && cl->n_operands > cmd->max_operands))
        return sp_cmdline_operand_error(cl);
    for (size_t i = 0; i < cmd->n_flags; i++) {
        sp_error err = {0};
        if (!strcmp(cmd->flags[i].name, "output") && cl->value[i] &&
            check_output(cl->value[i], cmd->output_dir_ok && cmd->output_dir_ok(&cl->cfg), &err))
            return sp_cli_report(&err, SP_EXIT_USAGE);
    }
    int rc = check_operands(cl);
    return rc ? rc : -1;
}

int sp_command_main(const sp_command *cmd, int argc, char **argv) {
    sp_cmdline *cl = calloc(1, sizeof *cl);
    if (!cl) {
        fprintf(stderr, "sstpipe: %s: out of memory\n", cmd->name);
        return SP_EXIT_USAGE;
    }
    cl->cmd = cmd;
    config_init(&cl->cfg);
    sp_error err = {0};
    int rc = config_parse_args(&cl->cfg, &argc, argv, &err) ? sp_cli_report(&err, SP_EXIT_USAGE)
                                                            : parse_flags(cl, argc, argv);
    if (rc < 0)
        rc = cmd->run(cl);
    free(cl->given);
    config_destroy(&cl->cfg);
    free(cl);
    return rc;
}
