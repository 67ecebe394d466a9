/*
 * command.h: the one table every sstpipe command is declared in.
 *
 * A command is a const sp_command: its name, one-line summary, synopsis,
 * description, flags, operands and the function that runs it. Each flag is
 * declared once, as one sp_flag (long and short name, argument, help text,
 * and the config key it sets, if any); the flags several commands share
 * (-o, -v, --tmp, --block-size, ...) are declared once in pipeline/command/flags.h.
 * From the table come:
 *
 *   - the parser (command.c): -c FILE and --set (config_parse_args), then the
 *     flags through getopt_long built from the table; a flag with a key is
 *     stored in the config with the flag as its origin, so the stage options
 *     all come from config keys (config/config_apply.h); the operand count
 *     is checked; then run() gets an sp_cmdline;
 *   - `sstpipe CMD --help` (help.c) and `sstpipe --help` (the summaries);
 *   - whatever else needs the option lists, by walking the same table:
 *     sp_commands[] (NULL-terminated, in `sstpipe --help` order), each
 *     command's flags[0..n_flags) and operands[0..n_operands); the flags
 *     every command takes besides its own (-c, --set, -h) are sp_common_flags.
 *     sp_flag_key() says which config key a flag sets, sp_flag_complete
 *     and sp_operand.complete what its argument is (a file, a directory,
 *     words), so a man page or a shell completion can be generated rather
 *     than written by hand, and can never disagree with --help.
 *
 * A new flag is one line in its command's flags[] (and an index in its
 * enum when run() reads it itself); a new command is one sp_command in its
 * *_cmd.c and one line in commands.c. The front ends (*_cmd.c) sit in their
 * stage's folder but are linked into this library (sp_command), above every
 * other: a stage library never depends on the config or on the command line.
 */
#ifndef SSTPIPE_COMMAND_COMMAND_H
#define SSTPIPE_COMMAND_COMMAND_H

#include "config/config.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* What a flag's argument or an operand is, for shell completion. */
typedef enum sp_complete {
    SP_COMPLETE_NONE,  /* free text (a number, a size, a list) */
    SP_COMPLETE_FILE,  /* a file name */
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

typedef struct sp_command {
    const char *name;
    const char *summary;     /* one line, for `sstpipe --help` */
    const char *synopsis;    /* what follows "usage: sstpipe NAME "; "\n" starts an alternative */
    const char *description; /* the paragraph(s) of --help before the flags */
    const char *config_help; /* what -c FILE means here; NULL: no key applies */
    const char *notes;       /* the paragraph(s) after the flags, or NULL */
    const sp_flag *flags;
    size_t n_flags;
    const sp_operand *operands; /* the operands' names, for help and completion */
    size_t n_operands;
    int min_operands, max_operands; /* max -1: any number */
    const char *operand_error;      /* the usage error for another count; may use %d (the count) */
    bool options_first; /* flags end at the first operand (get: a KEY may start with '-') */
    /* Left out of `sstpipe --help`, the man page and the completion: a
     * command sstpipe runs itself (a cluster build's `task`). */
    bool hidden;
    int (*run)(sp_cmdline *cl);
} sp_command;

/* In an sp_command initializer: its flags and operands, counted. */
#define SP_FLAGS(array) .flags = (array), .n_flags = sizeof(array) / sizeof((array)[0])
#define SP_OPERANDS(array, min, max, error)                                                        \
    .operands = (array), .n_operands = sizeof(array) / sizeof((array)[0]), .min_operands = (min),  \
    .max_operands = (max), .operand_error = (error)

/* The operands most commands take: one INPUT (a dump or a record stream,
 * stdin when left out or "-"), or one FILE (an SSTable). */
extern const sp_operand sp_input_operand[1];
extern const sp_operand sp_file_operand[1];

/* Most flags of one command (an array index bound, checked by a unit test). */
#define SP_MAX_FLAGS 32

/* One flag as given, for a command that reads its flags in order. */
typedef struct sp_given {
    size_t flag;       /* index in cmd->flags */
    const char *value; /* its argument, or NULL for a switch */
} sp_given;

/* What run() gets: the command line, parsed. */
struct sp_cmdline {
    const sp_command *cmd;
    sp_config cfg;                   /* defaults < -c FILE < --set < the flags with keys */
    const char *value[SP_MAX_FLAGS]; /* the last argument of each flag; NULL if not given */
    unsigned count[SP_MAX_FLAGS];    /* how many times each flag was given */
    sp_given *given;                 /* every flag without a key, in command-line order */
    size_t n_given;
    char **operands;
    int n_operands;
};

/* -c FILE, --set and -h: taken by every command, listed in every --help.
 * -c's help says what the file means to each command (sp_command.config_help),
 * so it is written by sp_flag_help; the others' is their own. */
extern const sp_flag sp_common_flags[];
extern const size_t sp_n_common_flags;

/* Every command, in `sstpipe --help` order; NULL-terminated (commands.c). */
extern const sp_command *const sp_commands[];

/* The command called name, or NULL. */
const sp_command *sp_command_find(const char *name);

/* The config key flag f sets, or -1. */
int sp_flag_key(const sp_flag *f);

/*
 * Parses argv (argv[0] is the command's name) and runs cmd; returns the exit
 * code. A bad flag, value or operand count is a usage error (exit 2) named
 * on stderr, reported before any work.
 */
int sp_command_main(const sp_command *cmd, int argc, char **argv);

/* The usage error for a wrong operand count (cmd->operand_error); returns 2. */
int sp_cmdline_operand_error(const sp_cmdline *cl);

/* The INPUT operand, "-" (stdin) when there is none. */
static inline const char *sp_cmdline_input(const sp_cmdline *cl) {
    return cl->n_operands ? cl->operands[0] : "-";
}

/* Whether to show the live progress line: [progress] show (--progress,
 * --no-progress), auto meaning when stderr is a terminal. */
bool sp_cmdline_progress(const sp_cmdline *cl);

/* Whether flag i was given. */
static inline bool sp_cmdline_has(const sp_cmdline *cl, size_t i) {
    return cl->count[i] > 0;
}

/* The help text of flag f (one of cmd's or of sp_common_flags) as
 * `sstpipe CMD --help` prints it, in buf or a constant (help.c), so the man
 * page (command/man_page.c) says the same. */
const char *sp_flag_help(const sp_command *cmd, const sp_flag *f, char *buf, size_t cap);

/* `sstpipe CMD --help` (help.c). */
void sp_command_help(const sp_command *cmd, FILE *out);
/* `sstpipe --help`: the usage line and every command's summary. */
void sp_commands_usage(FILE *out);

/* The whole command line: `sstpipe COMMAND ARGS...` (commands.c). */
int sp_main(int argc, char **argv);

#endif
