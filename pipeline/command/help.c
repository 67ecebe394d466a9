/*
 * help.c: `sstpipe CMD --help` and `sstpipe --help`, printed from the
 * command table (table.h), so the option list is the parser's own.
 *
 * A flag that sets a config key is described by the key's help line
 * (config/keys.def) followed by the key's name and default, e.g.
 * "--memory SIZE  memory budget of the external sort (at least 1M) ([sort]
 * memory, default 256M)": the default is the one the config really has.
 * -c's help names the example configurations where they are installed.
 */
#include "pipeline/command/help.h"

#include "config/config.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HELP_WIDTH 79
#define HELP_COLUMN 27

/* Prints text from column col, wrapped at HELP_WIDTH, continuation lines
 * indented to indent; ends the line. */
static void wrap(FILE *out, size_t col, size_t indent, const char *text) {
    const char *p = text;
    while (*p) {
        size_t word = strcspn(p, " ");
        if (col > indent && col + 1 + word > HELP_WIDTH) {
            fprintf(out, "\n%*s", (int)indent, "");
            col = indent;
        } else if (col > indent) {
            fputc(' ', out);
            col++;
        }
        fwrite(p, 1, word, out);
        col += word;
        p += word;
        while (*p == ' ')
            p++;
    }
    fputc('\n', out);
}

/* The help of a flag with a key: the key's help, name and default. */
static void key_help(const sp_flag *f, int key, char *buf, size_t cap) {
    sp_config defaults;
    config_init(&defaults);
    char def[256];
    config_value_text(&defaults, (config_key)key, def, sizeof def);
    config_destroy(&defaults);
    const char *sec = config_key_section((config_key)key), *name = config_key_name((config_key)key);
    if (!f->arg)
        snprintf(buf, cap, "%s ([%s] %s = %s)", f->help, sec, name, f->value);
    else if (*def)
        snprintf(buf, cap, "%s ([%s] %s, default %s)", config_key_help((config_key)key), sec, name,
                 def);
    else
        snprintf(buf, cap, "%s ([%s] %s)", config_key_help((config_key)key), sec, name);
}

static void print_flag(FILE *out, const sp_flag *f, const char *help) {
    char left[128];
    int n = snprintf(left, sizeof left, "  %c%c%s --%s%s%s", f->short_name ? '-' : ' ',
                     f->short_name ? f->short_name : ' ', f->short_name ? "," : " ", f->name,
                     f->arg ? " " : "", f->arg ? f->arg : "");
    fputs(left, out);
    size_t col = (size_t)n;
    if (col + 2 > HELP_COLUMN) {
        fputc('\n', out);
        col = 0;
    }
    fprintf(out, "%*s", (int)(HELP_COLUMN - col), "");
    wrap(out, HELP_COLUMN, HELP_COLUMN, help);
}

/* The directory of the example configurations (default.ini, nightly.ini):
 * where this program's own install put them, found from the program
 * (SSTPIPE_EXAMPLES_FROM_BIN, relative to its directory), so the path is
 * right for any prefix `cmake --install --prefix` or the package chose;
 * from a build tree, where nothing is installed beside it, where the
 * configured prefix will put them (SSTPIPE_EXAMPLES_DIR). Both are set by
 * pipeline/cmake/install.cmake, which installs them. */
static void examples_dir(char *buf, size_t cap) {
    char exe[PATH_MAX], beside[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    char *slash = n > 0 ? memrchr(exe, '/', (size_t)n) : NULL;
    if (slash) {
        *slash = '\0';
        int len = snprintf(beside, sizeof beside, "%s/%s", exe, SSTPIPE_EXAMPLES_FROM_BIN);
        char *found = len > 0 && (size_t)len < sizeof beside ? realpath(beside, NULL) : NULL;
        if (found) {
            snprintf(buf, cap, "%s", found);
            free(found);
            return;
        }
    }
    snprintf(buf, cap, "%s", SSTPIPE_EXAMPLES_DIR);
}

const char *sp_flag_help(const sp_command *cmd, const sp_flag *f, char *buf, size_t cap) {
    int key = sp_flag_key(f);
    if (key >= 0) {
        key_help(f, key, buf, cap);
        return buf;
    }
    if (f == &sp_common_flags[0]) {
        char dir[PATH_MAX];
        examples_dir(dir, sizeof dir);
        if (cmd->config_help && cmd->config_example)
            snprintf(buf, cap, "INI file (%s/default.ini lists every key); %s (an example: %s/%s)",
                     dir, cmd->config_help, dir, cmd->config_example);
        else if (cmd->config_help)
            snprintf(buf, cap, "INI file (%s/default.ini lists every key); %s", dir,
                     cmd->config_help);
        else
            snprintf(buf, cap,
                     "INI file, accepted as by every command; no key applies to %s (a bad file or "
                     "key is still an error)",
                     cmd->name);
        return buf;
    }
    return f->help;
}

void sp_command_help(const sp_command *cmd, FILE *out) {
    const char *syn = cmd->synopsis;
    for (int first = 1; syn; first = 0) {
        const char *nl = strchr(syn, '\n');
        fprintf(out, "%s sstpipe %s %.*s\n", first ? "usage:" : "      ", cmd->name,
                (int)(nl ? nl - syn : (long)strlen(syn)), syn);
        syn = nl ? nl + 1 : NULL;
    }
    fprintf(out, "\n%s\n\n", cmd->description);
    char help[1024];
    for (size_t i = 0; i < cmd->n_flags; i++)
        print_flag(out, &cmd->flags[i], sp_flag_help(cmd, &cmd->flags[i], help, sizeof help));
    for (size_t i = 0; i < sp_n_common_flags; i++)
        print_flag(out, &sp_common_flags[i],
                   sp_flag_help(cmd, &sp_common_flags[i], help, sizeof help));
    if (cmd->notes)
        fprintf(out, "\n%s\n", cmd->notes);
}

void sp_commands_usage(const sp_command *const *commands, FILE *out) {
    fprintf(out, "usage: sstpipe COMMAND [ARGS...]   (sstpipe COMMAND --help for more)\n"
                 "       sstpipe --version\n\n"
                 "commands:\n");
    for (size_t i = 0; commands[i]; i++)
        if (!commands[i]->hidden)
            fprintf(out, "  %-10s %s\n", commands[i]->name, commands[i]->summary);
}
