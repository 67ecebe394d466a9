/*
 * man_page.c: the generated sections of the man page sstpipe(1), written
 * from the command table and the config key table, so the page lists every
 * command, option and key there is, each described in --help's own words
 * (sp_flag_help), and cannot fall behind a new flag. The prose around them
 * (description, exit status, files, examples) is pipeline/command/sstpipe.1.in, into which
 * pipeline/cmake/fill-template.cmake puts these sections at build time.
 */
#include "config/config.h"
#include "pipeline/command/generate.h"
#include "pipeline/command/help.h"

#include <string.h>

/* Writes n bytes of text as roff: backslash and "-" escaped (a hyphen in an
 * option is then the minus sign a reader can copy and paste), a line that
 * would start with a control character guarded. Newlines are kept; roff
 * fills the lines. */
static void roffn(FILE *out, const char *text, size_t n) {
    for (size_t i = 0; i < n; i++) {
        char c = text[i];
        if ((i == 0 || text[i - 1] == '\n') && (c == '.' || c == '\''))
            fputs("\\&", out);
        if (c == '\\')
            fputs("\\e", out);
        else if (c == '-')
            fputs("\\-", out);
        else
            fputc(c, out);
    }
}

static void roff(FILE *out, const char *text) {
    roffn(out, text, strlen(text));
}

/* Paragraphs of text (separated by a blank line), each a .PP. */
static void paragraphs(FILE *out, const char *text) {
    while (*text) {
        const char *end = strstr(text, "\n\n");
        size_t n = end ? (size_t)(end - text) : strlen(text);
        fputs(".PP\n", out);
        roffn(out, text, n);
        fputc('\n', out);
        text += n;
        while (*text == '\n')
            text++;
    }
}

/* ".TP" and the flag as --help spells it: "-o, --output FILE". */
static void flag_entry(FILE *out, const sp_command *cmd, const sp_flag *f) {
    fputs(".TP\n", out);
    if (f->short_name)
        fprintf(out, "\\fB\\-%c\\fR, ", f->short_name);
    fputs("\\fB\\-\\-", out);
    roff(out, f->name);
    fputs("\\fR", out);
    if (f->arg) {
        fputs(" \\fI", out);
        roff(out, f->arg);
        fputs("\\fR", out);
    }
    fputc('\n', out);
    char help[1024];
    roff(out, sp_flag_help(cmd, f, help, sizeof help));
    fputc('\n', out);
}

static void command_section(FILE *out, const sp_command *cmd) {
    fputs(".SS ", out);
    roff(out, cmd->name);
    fputs("\n.PP\n", out);
    /* One line per alternative of the synopsis, as --help's usage lines. */
    const char *syn = cmd->synopsis;
    for (int first = 1; syn; first = 0) {
        const char *nl = strchr(syn, '\n');
        if (!first)
            fputs(".br\n", out);
        fputs("\\fBsstpipe ", out);
        roff(out, cmd->name);
        fputs("\\fR ", out);
        roffn(out, syn, nl ? (size_t)(nl - syn) : strlen(syn));
        fputc('\n', out);
        syn = nl ? nl + 1 : NULL;
    }
    paragraphs(out, cmd->description);
    fputs(".PP\nOptions:\n.RS\n", out);
    for (size_t i = 0; i < cmd->n_flags; i++)
        flag_entry(out, cmd, &cmd->flags[i]);
    for (size_t i = 0; i < sp_n_common_flags; i++)
        flag_entry(out, cmd, &sp_common_flags[i]);
    fputs(".RE\n", out);
    if (cmd->notes)
        paragraphs(out, cmd->notes);
}

void sp_generate_man_commands(const sp_command *const *commands, FILE *out) {
    for (const sp_command *const *c = commands; *c; c++)
        if (!(*c)->hidden)
            command_section(out, *c);
}

void sp_generate_man_config(const sp_command *const *commands, FILE *out) {
    (void)commands; /* the keys, not the commands: one signature for every generator */
    sp_config defaults;
    config_init(&defaults);
    for (int k = 0; k < CONFIG_KEY_COUNT; k++) {
        char def[256];
        config_value_text(&defaults, (config_key)k, def, sizeof def);
        fputs(".TP\n\\fB[", out);
        roff(out, config_key_section((config_key)k));
        fputs("] ", out);
        roff(out, config_key_name((config_key)k));
        fputs("\\fR", out);
        if (*def) {
            fputs(" (default ", out);
            roff(out, def);
            fputc(')', out);
        }
        fputc('\n', out);
        roff(out, config_key_help((config_key)k));
        fputc('\n', out);
    }
    config_destroy(&defaults);
}
