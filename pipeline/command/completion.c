/*
 * completion.c: the data half of sstpipe's bash completion, written from
 * the command table and the config key table: the commands, each command's
 * flags, short and long (its own and -c, --set, -h), what each flag's argument and each
 * operand is (a file, a directory, one of some words, a --set key, free
 * text) and the --set keys. It is bash functions, so the completion that
 * pipeline/command/sstpipe.bash.in's logic does at the prompt is always the parser's own
 * list; pipeline/cmake/fill-template.cmake puts the two together at build time.
 */
#include "config/config.h"
#include "pipeline/command/generate.h"

#include <string.h>

/* Writes text inside a single-quoted bash word. */
static void quoted(FILE *out, const char *text) {
    for (const char *p = text; *p; p++) {
        if (*p == '\'')
            fputs("'\\''", out);
        else
            fputc(*p, out);
    }
}

/* The kind of an argument or operand, as the completion logic reads it:
 * "file", "ini" (a config file), "dir", "words:a,b,c", "set" (a config key)
 * or "text". */
static void kind(FILE *out, sp_complete c, const char *words) {
    switch (c) {
    case SP_COMPLETE_FILE:
        fputs("file", out);
        break;
    case SP_COMPLETE_INI:
        fputs("ini", out);
        break;
    case SP_COMPLETE_DIR:
        fputs("dir", out);
        break;
    case SP_COMPLETE_WORDS:
        fputs("words:", out);
        for (const char *p = words ? words : ""; *p; p++) {
            char one[2] = {*p == ' ' ? ',' : *p, 0};
            quoted(out, one);
        }
        break;
    case SP_COMPLETE_KEY:
        fputs("set", out);
        break;
    case SP_COMPLETE_NONE:
        fputs("text", out);
        break;
    }
}

static void spellings(FILE *out, const sp_flag *f, const char *sep) {
    if (f->short_name)
        fprintf(out, "-%c%s", f->short_name, sep);
    fprintf(out, "--%s", f->name);
}

void sp_generate_bash_completion(const sp_command *const *commands, FILE *out) {
    fputs("_sstpipe_commands() {\n    echo '", out);
    for (const sp_command *const *c = commands; *c; c++)
        if (!(*c)->hidden)
            fprintf(out, "%s%s", c == commands ? "" : " ", (*c)->name);
    fputs("'\n}\n\n", out);

    fputs("# _sstpipe_flags COMMAND: every flag it takes\n_sstpipe_flags() {\n    case $1 in\n",
          out);
    for (const sp_command *const *c = commands; *c; c++) {
        const sp_command *cmd = *c;
        if (cmd->hidden)
            continue;
        fprintf(out, "    %s) echo '", cmd->name);
        for (size_t i = 0; i < cmd->n_flags + sp_n_common_flags; i++) {
            if (i)
                fputc(' ', out);
            spellings(out, sp_command_flag(cmd, i), " ");
        }
        fputs("' ;;\n", out);
    }
    fputs("    esac\n}\n\n", out);

    fputs("# _sstpipe_flag_arg COMMAND FLAG: what the flag's argument is (switch: none)\n"
          "_sstpipe_flag_arg() {\n    case \"$1 $2\" in\n",
          out);
    for (const sp_command *const *c = commands; *c; c++) {
        const sp_command *cmd = *c;
        for (size_t i = 0; !cmd->hidden && i < cmd->n_flags + sp_n_common_flags; i++) {
            const sp_flag *f = sp_command_flag(cmd, i);
            if (!f->arg)
                continue;
            fprintf(out, "    '%s ", cmd->name);
            if (f->short_name)
                fprintf(out, "-%c' | '%s ", f->short_name, cmd->name);
            fprintf(out, "--%s') echo '", f->name);
            kind(out, f->complete, f->words);
            fputs("' ;;\n", out);
        }
    }
    fputs("    *) echo switch ;;\n    esac\n}\n\n", out);

    fputs("# _sstpipe_operands COMMAND: what each operand is; a last one ending in ...\n"
          "# repeats\n_sstpipe_operands() {\n    case $1 in\n",
          out);
    for (const sp_command *const *c = commands; *c; c++) {
        const sp_command *cmd = *c;
        if (!cmd->n_operands || cmd->hidden)
            continue;
        fprintf(out, "    %s) echo '", cmd->name);
        for (size_t i = 0; i < cmd->n_operands; i++) {
            if (i)
                fputc(' ', out);
            kind(out, cmd->operands[i].complete, cmd->operands[i].words);
            if (i + 1 == cmd->n_operands && cmd->max_operands < 0)
                fputs("...", out);
        }
        fputs("' ;;\n", out);
    }
    fputs("    esac\n}\n\n", out);

    fputs("# _sstpipe_set_keys: what --set takes, section.key=\n_sstpipe_set_keys() {\n    echo '",
          out);
    for (int k = 0; k < CONFIG_KEY_COUNT; k++) {
        fputs(k ? " " : "", out);
        quoted(out, config_key_section((config_key)k));
        fputc('.', out);
        quoted(out, config_key_name((config_key)k));
        fputc('=', out);
    }
    fputs("'\n}\n", out);
}
