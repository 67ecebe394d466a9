/*
 * table.h: the command table's types, at the bottom of the command layer.
 *
 * A command is a const sp_command: its name, one-line summary, synopsis,
 * description, flags, operands and the function that runs it. Each flag is
 * declared once, as one sp_flag (long and short name, argument, help text,
 * and the config key it sets, if any); the flags several commands share
 * (-o, -v, --tmp, --block-size, ...) are declared once in pipeline/command/flags.h.
 * The parser (command.h), the help printer (help.h), the man page and the
 * completion (generate.h) all read these types and nothing of each other's
 * but what they call downward, so the table is here, below them all:
 * each command's flags[0..n_flags) and operands[0..n_operands); the flags
 * every command takes besides its own (-c, --set, -h) are sp_common_flags.
 * sp_flag_key() says which config key a flag sets, sp_flag_complete
 * and sp_operand.complete what its argument is (a file, a directory,
 * words), so a man page or a shell completion can be generated rather
 * than written by hand, and can never disagree with --help.
 */
#ifndef SSTPIPE_COMMAND_TABLE_H
#define SSTPIPE_COMMAND_TABLE_H

#include "pipeline/command/docs.def"

#include <stdbool.h>
#include <stddef.h>

/* What a flag's argument or an operand is, for shell completion. */
typedef enum sp_complete {
    SP_COMPLETE_NONE,  /* free text (a number, a size, a list) */
    SP_COMPLETE_FILE,  /* a file name */
    SP_COMPLETE_INI,   /* a config file: *.ini first, any file when none is */
    SP_COMPLETE_DIR,   /* a directory name */
    SP_COMPLETE_WORDS, /* one of the words in sp_flag.words / sp_operand.words */
    SP_COMPLETE_KEY,   /* section.key=value: a config key (--set) */
} sp_complete;

/* The config key a flag sets, as sp_flag.key (0: the flag sets no key). */
#define SP_KEY(k) ((int)(k) + 1)

typedef struct sp_flag {
    const char *name;  /* long name without "--": "block-size" */
    char short_name;   /* 'o', or 0 */
    const char *arg;   /* the argument's name in help ("SIZE"); NULL: a switch */
    int key;           /* SP_KEY(CONFIG_SST_BLOCK_SIZE), or 0 when run() reads it */
    const char *value; /* for a switch with a key: the value it sets ("skip") */
    const char *help;  /* one sentence; wrapped by the help printer */
    sp_complete complete;
    const char *words; /* SP_COMPLETE_WORDS: the choices, space separated */
} sp_flag;

typedef struct sp_operand {
    const char *name; /* "INPUT", "FILE" */
    sp_complete complete;
    const char *words; /* SP_COMPLETE_WORDS: the choices, space separated */
} sp_operand;

typedef struct sp_cmdline sp_cmdline;
struct sp_config; /* config/config.h */

typedef struct sp_command {
    const char *name;
    const char *summary;     /* one line, for `sstpipe --help` */
    const char *synopsis;    /* what follows "usage: sstpipe NAME "; "\n" starts an alternative */
    const char *description; /* the paragraph(s) of --help before the flags */
    const char *config_help; /* what -c FILE means here; NULL: no key applies */
    const char *config_example; /* an installed example of FILE (examples/NAME), or NULL */
    const char *notes;          /* the paragraph(s) after the flags, or NULL */
    const sp_flag *flags;
    size_t n_flags;
    const sp_operand *operands; /* the operands' names, for help and completion */
    size_t n_operands;
    int min_operands, max_operands; /* max -1: any number */
    const char *operand_error;      /* the usage error for another count; may use %d (the count) */
    /* A FILE operand that does not exist is run()'s to report (verify: a
     * file not checked while the others are; nightly: a failed run,
     * recorded under failed/ as when [input] path matches nothing), not
     * refused before any work. */
    bool reports_missing_files;
    /* Whether -o may name an existing directory, which is then replaced
     * whole (a cluster build's table set); NULL: only a table set's
     * directory is. */
    bool (*output_dir_ok)(const struct sp_config *cfg);
    /* Left out of `sstpipe --help`, the man page and the completion: a
     * command sstpipe runs itself (a cluster build's `task`). */
    bool hidden;
    int (*run)(sp_cmdline *cl);
} sp_command;

/* A flag with an argument that run() reads itself (no short name, no
 * config key). */
#define SP_ARG(name, arg, help, complete)                                                          \
    { (name), 0, (arg), 0, NULL, (help), (complete), NULL }

/* In an sp_command initializer: its flags and operands, counted. */
#define SP_FLAGS(array) .flags = (array), .n_flags = sizeof(array) / sizeof((array)[0])
#define SP_OPERANDS(array, min, max, error)                                                        \
    .operands = (array), .n_operands = sizeof(array) / sizeof((array)[0]), .min_operands = (min),  \
    .max_operands = (max), .operand_error = (error)

/* One command, `const sp_command build_command = SP_COMMAND(build, run, ...)`:
 * its name, its texts (SP_DOC_build, docs.def), the function that runs it and
 * the rest of its initializer (SP_FLAGS, SP_OPERANDS, .hidden, ...). */
#define SP_COMMAND(id, run_fn, ...)                                                                \
    { .name = #id, SP_DOC_##id, .run = (run_fn), __VA_ARGS__ }

/* The operands most commands take: one INPUT (a dump or a record stream,
 * stdin when left out or "-"), or one FILE (an SSTable). */
extern const sp_operand sp_input_operand[1];
extern const sp_operand sp_file_operand[1];

/* Most flags of one command (an array index bound, checked by a unit test). */
#define SP_MAX_FLAGS 32

/* -c FILE, --set and -h: taken by every command, listed in every --help.
 * -c's help says what the file means to each command (sp_command.config_help),
 * so it is written by sp_flag_help; the others' is their own. */
extern const sp_flag sp_common_flags[];
extern const size_t sp_n_common_flags;

/* Flag i of cmd's own and then the common ones, i < cmd->n_flags +
 * sp_n_common_flags: every flag cmd takes. */
static inline const sp_flag *sp_command_flag(const sp_command *cmd, size_t i) {
    return i < cmd->n_flags ? &cmd->flags[i] : &sp_common_flags[i - cmd->n_flags];
}

/* The config key flag f sets, or -1. */
int sp_flag_key(const sp_flag *f);

#endif
