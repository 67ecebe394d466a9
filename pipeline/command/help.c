/*
 * help.c: `sstpipe CMD --help` and `sstpipe --help`, printed from the
 * command table (table.h), so the option list is the parser's own.
 *
 * A flag that sets a config key is described by the key's help line
 * (config/keys.def) followed by the key's name and default, e.g.
 * "--memory SIZE  memory budget of the external sort (at least 1M) ([sort]
 * memory, default 256M)": the default is the one the config really has.
 */
#include "pipeline/command/help.h"

#include "config/config.h"

#include <string.h>

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

const char *sp_flag_help(const sp_command *cmd, const sp_flag *f, char *buf, size_t cap) {
    int key = sp_flag_key(f);
    if (key >= 0) {
        key_help(f, key, buf, cap);
        return buf;
    }
    if (f == &sp_common_flags[0]) {
        if (cmd->config_help)
            snprintf(buf, cap, "INI file (config/default.ini lists every key); %s",
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
